"""The retriever contract and the hit contract (harness/retrievers/contract.py), the one tie rule, and third-party kinds.

A kind registered from outside the package (a tiny package with an entry point, found by importlib.metadata on
PYTHONPATH) runs through `harness run`. It wraps the built-in BM25 and returns the same hits named in each way the
hit contract allows (chunk ids only, doc + span, text), so each must score exactly as BM25 itself does; and in the
ways it forbids (ids that are not our chunks, an unsorted list), which must fail with exit 2 naming what is wrong.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pydantic
import pytest

from clihelp import DEMO, Case, assert_input_error, demo_config, harness, run_case
from harness.core.errors import ConfigError, RetrieverError
from harness.core.types import Chunk, Document, Hit, Query, RankedList, RankedRun, best_hits
from harness.retrievers import REGISTRY, BuildContext, HitPlacer, build_retriever, check_output, rank_hits
from harness.retrievers.ranking import id_order, top_k

import harness as harness_api

PLUGIN = '''
from typing import Literal

from pydantic import BaseModel, ConfigDict

import harness
from harness.core.types import Hit, RankedList
from harness.retrievers import build_retriever


class ScriptedConfig(BaseModel):  # a plain pydantic model without a `kind` field: the registry strips it
    model_config = ConfigDict(extra="forbid")
    mode: Literal["ids", "spans", "text", "foreign-spans", "foreign-ids", "unsorted", "crash"]


class Scripted:
    """BM25's hits, renamed as ``mode`` says."""

    def __init__(self, config, context):
        self.mode = config.mode
        self.inner = build_retriever({"kind": "bm25"}, context)
        self.documents = context.documents

    def index(self, chunks):
        self.inner.index(chunks)
        self.text = {c.chunk_id: c.text for c in chunks}

    def retrieve(self, queries, k):
        if self.mode == "crash":
            raise RuntimeError("boom")
        out = []
        for ranked in self.inner.retrieve(queries, k):
            hits = [self.rename(h) for h in ranked.hits]
            if self.mode == "unsorted":
                hits = [Hit(h.chunk_id, h.doc_id, h.score, r, h.start, h.end)
                        for r, h in enumerate(reversed(hits), 1)]
            out.append(RankedList(ranked.query_id, tuple(hits)))
        return out

    def rename(self, h):
        m = self.mode
        if m == "ids":
            return Hit(h.chunk_id, "", h.score, h.rank)
        if m == "spans":
            return Hit("", h.doc_id, h.score, h.rank, h.start, h.end)
        if m == "text":
            return Hit("", h.doc_id, h.score, h.rank, text=self.text[h.chunk_id])
        if m == "foreign-spans":  # one character later: spans that are not the chunker's
            return Hit("", h.doc_id, h.score, h.rank, h.start + 1, h.end)
        if m == "foreign-ids" and h.rank % 3 == 0:  # a vector store's ids, no span: nothing to place them by
            return Hit(f"vec-{h.rank}", h.doc_id, h.score, h.rank)
        return h


def register():
    harness.register_retriever("scripted", ScriptedConfig, Scripted, "BM25's hits named in other ways")
'''


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plugins")
    (root / "harness_scripted.py").write_text(PLUGIN)
    info = root / "harness_scripted-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[harness.retrievers]\nscripted = harness_scripted:register\n")
    # A second plugin that cannot be imported: runs that do not use it go on; kind listings name its problem.
    broken = root / "harness_broken-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-broken\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text("[harness.retrievers]\nbroken = harness_not_there:register\n")
    return root


@pytest.fixture
def plugins(plugin_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(plugin_path))  # clihelp.harness puts the checkout before it


def scripted(tmp: Path, mode: str, **overrides) -> Path:
    return demo_config(tmp, retriever=f"{{kind: scripted, mode: {mode}}}", **overrides)


def run_ok(tmp: Path, config: Path, out: str, *flags: str) -> tuple[dict, str]:
    proc = harness("run", config, "--out", tmp / out, *flags, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return json.loads((tmp / out / "results.json").read_text()), proc.stderr


@pytest.fixture(scope="module")
def bm25_result(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("bm25")
    result, _ = run_ok(tmp, demo_config(tmp, retriever="{kind: bm25}"), "out", "--quiet")
    return result


def ranking(result: dict) -> list[list[tuple]]:
    return [[(h["chunk_id"], h["doc_id"], h["start"], h["end"], h["score"], h["rank"]) for h in q["hits"]]
            for q in result["queries"]]


@pytest.mark.parametrize("mode", ["ids", "spans", "text"])
def test_hits_named_by_id_span_or_text_score_exactly_as_the_builtin(mode, plugins, bm25_result, tmp_path):
    result, _ = run_ok(tmp_path, scripted(tmp_path, mode), "out", "--quiet")
    assert ranking(result) == ranking(bm25_result)
    assert result["summary"]["doc"] == bm25_result["summary"]["doc"]
    assert result["summary"]["chunk"] == bm25_result["summary"]["chunk"]
    assert result["corpus"]["chunks"] == 79 and result["hit_problems"]["skipped"] == 0


def test_spans_that_are_not_our_chunks_become_chunks_judged_by_evidence(plugins, bm25_result, tmp_path):
    result, _ = run_ok(tmp_path, scripted(tmp_path, "foreign-spans"), "out", "--quiet")
    ours = {(h[1], h[2], h[3]) for q in ranking(bm25_result) for h in q}
    adopted = {(h["doc_id"], h["start"], h["end"]) for q in result["queries"] for h in q["hits"]}
    assert not adopted & ours and result["corpus"]["chunks"] == 79 + len(adopted)
    # A judgment whose evidence failed to resolve (q45's quote) keeps its document's grade, but is no evidence unit
    # (hits.units); adopted chunks follow the same rule.
    broken = {(p["query_id"], p["doc_id"]) for p in result["goldset"]["problems"]
              if p["kind"] in ("quote_not_found", "span_out_of_range")}
    assert ("q45", "sync-bandwidth") in broken
    # the same evidence in the window whoever cut the text: the chunk level's numbers are BM25's own (issue 34:
    # each span beside the config's chunk was a second relevant item, and recall halved)
    assert result["summary"]["chunk"] == pytest.approx(bm25_result["summary"]["chunk"], abs=1e-12)
    for q, base in zip(result["queries"], bm25_result["queries"]):
        # Each hit is BM25's, one character shorter, with its id made from the span.
        assert [(h["doc_id"], h["start"], h["end"]) for h in q["hits"]] == \
            [(h["doc_id"], h["start"] + 1, h["end"]) for h in base["hits"]]
        assert all(h["chunk_id"] == f"{h['doc_id']}#{h['start']}-{h['end']}" for h in q["hits"])
        # relevant iff it covers an evidence unit (a relevant judgment: its spans, or its whole document without
        # one) that no hit above it covered (docs/evidence.md)
        units = [(g["doc_id"], g["evidence"]) for g in q["gold"] if g["grade"] >= 1
                 and (g["evidence"] or (q["id"], g["doc_id"]) not in broken)]
        covered = set()
        for h in q["hits"]:
            new = {i for i, (doc, spans) in enumerate(units) if i not in covered and doc == h["doc_id"] and
                   (not spans or any(s < h["end"] and h["start"] < e for s, e in spans))}
            covered |= new
            assert h["relevant"] == bool(new), (q["id"], h)


def test_unplaceable_hits_skipped_are_counted_listed_and_the_rest_ranked(plugins, bm25_result, tmp_path):
    # With a token budget too: the cutoff counts the cost of every hit's chunk (it raised KeyError: 'vec-3').
    cfg = scripted(tmp_path, "foreign-ids", retriever_hits="{unplaceable: skip}", cutoff="{token_budget: 60}")
    proc = harness("run", cfg, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    dropped = [(q["id"], h["rank"]) for q in bm25_result["queries"] for h in q["hits"] if h["rank"] % 3 == 0]
    report = result["hit_problems"]
    assert report["unplaceable"] == "skip" and report["skipped"] == len(dropped) == 46 * 26
    assert report["queries"] == 46 and report["by_reason"] == {"unknown_chunk": len(dropped)}
    assert len(report["examples"]) == 20
    assert report["examples"][0] == {"query_id": "q01", "rank": 3, "reason": "unknown_chunk", "message":
                                     "chunk 'vec-3' is not a chunk of this corpus and has no span or text"}
    assert f"warning: retriever.kind 'scripted': skipped {len(dropped)} hit(s) in 46 queries" in proc.stderr
    assert "  - query 'q01', rank 3: chunk 'vec-3' is not a chunk of this corpus and has no span or text" \
        in proc.stderr and f"... and {len(dropped) - 20} more" in proc.stderr
    for q, base in zip(result["queries"], bm25_result["queries"]):
        kept = [h["chunk_id"] for h in base["hits"] if h["rank"] % 3]
        assert [h["chunk_id"] for h in q["hits"]] == kept
        assert [h["rank"] for h in q["hits"]] == list(range(1, len(kept) + 1))


CASES = [
    Case("ids-without-span-fail", lambda t: ["run", scripted(t, "foreign-ids"), "--out", t / "out"],
         ("error: retriever.kind 'scripted': 1196 hit(s) in 46 of 46 queries name no chunk of the corpus "
          "(retriever_hits.unplaceable: fail;",
          "  - query 'q01', rank 3: chunk 'vec-3' is not a chunk of this corpus and has no span or text",
          "  - ... and 1176 more"),
         check=lambda t, p: (not (t / "out" / "results.json").exists()) or pytest.fail("results written")),
    Case("unsorted-hits", lambda t: ["run", scripted(t, "unsorted"), "--out", t / "out"],
         ("error: retriever.kind 'scripted': its output breaks the retriever contract",
          "  - query 'q01', rank 37: score 0.65", "is higher than rank 36's (0.0): hits come by score descending")),
    Case("plugin-crash", lambda t: ["run", scripted(t, "crash"), "--out", t / "out"],
         ("error: retriever.kind 'scripted' (entry point scripted = harness_scripted:register) failed in "
          "retrieve: RuntimeError: boom (at ",), code=1),
    Case("plugin-config-invalid", lambda t: ["validate", scripted(t, "nope")],
         ("retriever.mode: Input should be 'ids', 'spans'",)),
    Case("unknown-kind-lists-plugins", lambda t: ["validate", demo_config(t, retriever="{kind: scriptd}")],
         # the built-in list grows (live retrievers, backends): check its start and the plugin, not every name
         ("retriever.kind: unknown retriever kind 'scriptd'; registered kinds: bm25, chroma, dense, ", ", scripted",
          "retriever.kind: (not registered) entry point broken = harness_not_there:register: cannot be loaded "
          "(ModuleNotFoundError")),
    Case("bad-hits-policy", lambda t: ["validate", demo_config(t, retriever_hits="{unplaceable: maybe}")],
         ("retriever_hits.unplaceable: Input should be 'fail' or 'skip' (got 'maybe')",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_contract_breaches_are_located_errors(case, plugins, tmp_path):
    run_case(case, tmp_path)


def test_an_external_run_s_unplaceable_hits_fail_by_line_or_skip(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q01", "hits": [
        {"doc_id": "install-desktop", "score": 3}, {"doc_id": "ghost", "score": 2},
        {"doc_id": "install-desktop", "text": "not in it", "score": 1}]}) + "\n"
        + json.dumps({"query_id": "not-asked", "hits": [{"doc_id": "install-desktop", "chunk_id": "v1", "score": 1}]})
        + "\n")
    cfg = demo_config(tmp_path, retriever=f"{{kind: external, path: {run}}}")
    assert_input_error(harness("run", cfg, "--out", tmp_path / "a", cwd=tmp_path),
                       f"error: {run}: 3 hit(s) could not be placed in the corpus (retriever_hits.unplaceable: fail",
                       f"  - {run}:1: query 'q01': document 'ghost' is not in the corpus",
                       f"  - {run}:1: query 'q01': hit text 'not in it' not found in document 'install-desktop'",
                       f"  - {run}:2: query 'not-asked': chunk 'v1' is not a chunk of this corpus and has no span "
                       f"or text")
    assert not (tmp_path / "a").exists()
    skip = demo_config(tmp_path, "skip.yaml", retriever=f"{{kind: external, path: {run}}}",
                       retriever_hits="{unplaceable: skip}")
    result, stderr = run_ok(tmp_path, skip, "b")
    q01 = result["queries"][0]
    assert [(h["chunk_id"], h["start"], h["end"], h["rank"]) for h in q01["hits"]] == [("install-desktop#0-472", 0,
                                                                                         472, 1)]
    assert result["hit_problems"]["skipped"] == 2 and result["hit_problems"]["by_reason"] == \
        {"unknown_document": 1, "text_not_found": 1}  # the query the run does not ask for is not counted
    assert "skipped 2 hit(s) in 1 queries" in stderr


# ---- the contracts as library calls ---------------------------------------------------------------------------

DOC = Document("d", "Alpha beta. Gamma delta. Alpha beta.")
CHUNKS = [Chunk.of_span(DOC, 0, 11, False), Chunk.of_span(DOC, 12, 24, False), Chunk.of_span(DOC, 25, 36, False)]


@pytest.mark.parametrize("hit,placed", [
    (Hit("d#12-24", "", 1.0, 1), ("d#12-24", 12, 24)),
    (Hit("anything", "d", 1.0, 1, 12, 24), ("d#12-24", 12, 24)),  # our span, whatever the id
    (Hit("", "d", 1.0, 1, 3, 9), ("d#3-9", 3, 9)),  # adopted
    (Hit("", "d", 1.0, 1, text="Gamma"), ("d#12-17", 12, 17)),
    (Hit("d#0-11", "d", 1.0, 1, 0, 11), ("d#0-11", 0, 11)),
    (Hit("", "d", 1.0, 1, 0, 11, text="Alpha beta."), ("d#0-11", 0, 11)),  # the span tells which occurrence
], ids=["id-only", "span-ours", "span-foreign", "text", "all-agree", "span-and-repeated-text"])
def test_placement(hit, placed):
    c = HitPlacer(CHUNKS, {"d": DOC}).chunk(hit)
    assert (c.chunk_id, c.start, c.end) == placed and c.text == DOC.text[c.start:c.end]


@pytest.mark.parametrize("hit,reason,message", [
    (Hit("vec-1", "d", 1.0, 1), "unknown_chunk", "chunk 'vec-1' is not a chunk of this corpus and has no span or "
                                                 "text"),
    (Hit("vec-1", "", 1.0, 1), "unknown_chunk", "chunk 'vec-1' is not a chunk of this corpus, and the hit names "
                                                "no document to place a span or text in"),
    (Hit("", "ghost", 1.0, 1, 0, 3), "unknown_document", "document 'ghost' is not in the corpus"),
    (Hit("", "d", 1.0, 1, 30, 99), "bad_span", "span 30..99 is outside document 'd' (0..36) or empty"),
    (Hit("", "d", 1.0, 1, 5, 5), "bad_span", "span 5..5 is outside document 'd' (0..36) or empty"),
    (Hit("", "d", 1.0, 1, 5, -1), "bad_span", "span 5..-1 is outside document 'd' (0..36) or empty"),
    (Hit("", "d", 1.0, 1, text="Omega"), "text_not_found", "hit text 'Omega' not found in document 'd'"),
    (Hit("", "d", 1.0, 1, text="Alpha beta."), "ambiguous_text",
     "hit text 'Alpha beta.' occurs more than once in document 'd' (at 0 and 25); give start and end"),
    (Hit("", "d", 1.0, 1, 0, 5, text="Gamma"), "mismatch",
     "hit text 'Gamma' is not the text of document 'd' at 0..5"),
    (Hit("d#0-11", "e", 1.0, 1), "mismatch", "chunk 'd#0-11' belongs to document 'd', the hit names 'e'"),
    (Hit("d#0-11", "d", 1.0, 1, 0, 12), "mismatch", "chunk 'd#0-11' spans 0..11, the hit says 0..12"),
    (Hit("", "d", 1.0, 1), "unlocated", "the hit names document 'd' but no chunk id, span or text in it"),
    (Hit("", "", 1.0, 1), "unlocated", "the hit names no chunk id and no document"),
])
def test_unplaceable_hits_name_their_value(hit, reason, message):
    assert HitPlacer(CHUNKS, {"d": DOC}).chunk(hit) == (reason, message)


def test_place_drops_renumbers_reorders_by_final_ids_and_merges_duplicates():
    placer = HitPlacer(CHUNKS, {"d": DOC})
    ranked = RankedList("q", (Hit("", "d", 2.0, 1, text="Gamma delta."), Hit("vec", "d", 2.0, 2),
                              Hit("", "d", 2.0, 3, 25, 36), Hit("d#12-24", "d", 1.0, 4, 12, 24)))
    placed, problems, duplicates = placer.place(ranked)
    # Tied at 2.0: by final chunk id descending ("d#25-36" > "d#12-24"); the later naming of d#12-24 merged.
    assert [(h.chunk_id, h.rank, h.score) for h in placed.hits] == [("d#25-36", 1, 2.0), ("d#12-24", 2, 2.0)]
    assert [(p.query_id, p.rank, p.reason) for p in problems] == [("q", 2, "unknown_chunk")] and duplicates == 1
    untouched = RankedList("q", (Hit("d#12-24", "d", 1.0, 1, 12, 24),))
    assert placer.place(untouched)[0] is untouched  # nothing to do: the list itself, no copy


def test_top_k_and_rank_hits_break_ties_by_chunk_id_descending():
    chunks = [Chunk(cid, "d", 0, 1, "x", "x") for cid in ["b", "d", "a", "c", "e"]]
    scores = np.array([1.0, 2.0, 1.0, 1.0, 0.5])
    ids = id_order(chunks)
    assert [chunks[i].chunk_id for i in top_k(scores, 3, ids)] == ["d", "c", "b"]
    assert [chunks[i].chunk_id for i in top_k(scores, 5, ids)] == ["d", "c", "b", "a", "e"]
    assert top_k(scores, 3).tolist() == [1, 0, 2]  # no ids: by position (benchmarks)
    ranked = rank_hits("q", [Hit(c.chunk_id, "d", float(s), 9) for c, s in zip(chunks, scores)], 4)
    assert [(h.chunk_id, h.rank) for h in ranked.hits] == [("d", 1), ("c", 2), ("b", 3), ("a", 4)]


def test_bm25_ties_follow_the_rule_without_a_re_sort():
    # Three chunks with the same text score the same: the larger chunk id ranks first.
    chunks = [Chunk(f"d{i}#0-5", f"d{i}", 0, 5, "alpha", "alpha") for i in (2, 10, 1)]
    for backend in ("rank_bm25", "fast"):
        r = build_retriever({"kind": "bm25", "backend": backend})
        r.index(chunks)
        (ranked,) = r.retrieve([Query("q", "alpha")], 2)
        assert [h.chunk_id for h in ranked.hits] == ["d2#0-5", "d10#0-5"]


@pytest.mark.parametrize("lists,k,problem", [
    ([RankedList("b", ()), RankedList("a", ())], 5, "query 'a': got the list of 'b' in its place"),
    ([RankedList("a", ())], 5, "returned 1 ranked lists for 2 queries"),
    ([RankedList("a", (Hit("x", "d", 1.0, 1), Hit("y", "d", 0.5, 2))), RankedList("b", ())], 1,
     "query 'a': 2 hits, asked for at most 1"),
    ([RankedList("a", (Hit("x", "d", 1.0, 2),)), RankedList("b", ())], 5,
     "query 'a', rank 1: rank 2 where 1 belongs"),
    ([RankedList("a", (Hit("x", "d", math.nan, 1),)), RankedList("b", ())], 5,
     "query 'a', rank 1: score nan is not a number"),
    ([RankedList("a", (Hit("x", "d", math.inf, 1),)), RankedList("b", ())], 5,
     "query 'a', rank 1: score inf is not a finite number"),
    ([RankedList("a", (Hit("x", "d", 1.0, 1), Hit("y", "d", 1.5, 2))), RankedList("b", ())], 5,
     "query 'a', rank 2: score 1.5 is higher than rank 1's (1.0): hits come by score descending"),
], ids=["order", "count", "too-many", "ranks", "nan", "inf", "rising"])
def test_check_output_names_the_kind_and_the_breach(lists, k, problem):
    with pytest.raises(RetrieverError) as exc:
        check_output("mine", [Query("a", ""), Query("b", "")], lists, k)
    assert str(exc.value).startswith("retriever.kind 'mine': its output breaks the retriever contract")
    assert exc.value.problems[0].startswith(problem), exc.value.problems


def test_builtin_kinds_keep_the_contract_on_the_demo(tmp_path):
    from harness.config.schema import load_config
    from harness.pipeline.assemble import prepare

    p = prepare(load_config(Path(__file__).parents[2] / "configs" / "demo-bm25.yaml"), log=lambda m: None)
    queries = list(p.gold.queries)
    for section in [{"kind": "bm25"}, {"kind": "bm25", "backend": "fast", "variant": "plus"},
                    {"kind": "hybrid", "children": [{"kind": "bm25"}, {"kind": "bm25", "variant": "l", "depth": 7}],
                     "fusion": "zscore"}]:
        r = build_retriever(section, BuildContext(progress=False))
        r.index(p.chunks)
        check_output(section["kind"], queries, r.retrieve(queries, 30), 30)  # raises on any breach


def test_register_retriever_refuses_what_it_cannot_run(monkeypatch):
    import harness
    from pydantic import BaseModel

    monkeypatch.setattr("harness.retrievers.base.REGISTRY", dict(REGISTRY))

    class Cfg(BaseModel):
        size: int = 1

    def factory(cfg, ctx):
        return cfg

    with pytest.raises(ConfigError, match="retriever kind 'bm25' is already registered \\(by harness\\)"):
        harness.register_retriever("bm25", Cfg, factory)
    with pytest.raises(ConfigError, match="config_model must be a pydantic model class"):
        harness.register_retriever("mine", dict, factory)
    with pytest.raises(ConfigError, match="retriever kind name 'my kind'"):
        harness.register_retriever("my kind", Cfg, factory)
    kind = harness.register_retriever("mine", Cfg, factory)
    assert harness.register_retriever("mine", Cfg, factory) == kind  # the same again: a no-op
    assert build_retriever({"kind": "mine", "size": 3}).size == 3


def test_build_context_documents_are_read_only():
    docs = {"d": DOC}
    ctx = BuildContext(documents=docs)
    docs["e"] = DOC  # the caller's dict is copied, not shared
    assert list(ctx.documents) == ["d"]
    with pytest.raises(TypeError):
        ctx.documents["x"] = DOC


def test_best_hit_per_document_is_one_rule_for_run_files_and_dicts():
    hits = (Hit("a#0-1", "a", 3.0, 1), Hit("b#0-1", "b", 2.0, 2), Hit("a#2-3", "a", 1.0, 3))
    assert [h.chunk_id for h in best_hits(hits)] == ["a#0-1", "b#0-1"]
    run = RankedRun("r", (RankedList("q", hits),))
    assert run.to_trec() == "q Q0 a 1 3 r\nq Q0 b 2 2 r\n"
    assert run.to_dict() == {"q": {"a": 3.0, "b": 2.0}}
    assert run.to_dict("chunk") == {"q": {"a#0-1": 3.0, "b#0-1": 2.0, "a#2-3": 1.0}}


def test_retrievers_do_not_import_the_config():
    import subprocess
    import sys

    code = textwrap.dedent("""
        import sys
        import harness.retrievers.base, harness.retrievers.contract, harness.retrievers.bm25, harness.retrievers.compose
        import harness.retrievers.dense, harness.retrievers.external
        print(sorted(m for m in sys.modules if m.startswith("harness.config")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[2], check=True).stdout
    assert out.strip() == "[]"


class MeddlerConfig(pydantic.BaseModel):
    mode: str  # reverse, pop or tags


class Meddler:
    """BM25's lists, after changing what it was given: the batch's order or length, or a query's tags."""

    def __init__(self, config, context):
        self.mode, self.inner = config.mode, build_retriever({"kind": "bm25"}, context)

    def index(self, chunks):
        self.inner.index(chunks)

    def retrieve(self, queries, k):
        lists = self.inner.retrieve(queries, k)
        if self.mode == "tags":
            queries[0].tags["topic"] = "changed"
        else:
            getattr(queries, self.mode)()
        return lists


def test_a_retriever_cannot_change_the_queries_it_is_given():
    """The walk of 2026-12-05: a retriever that reversed the batch it was given had its lists checked against the
    reversed batch (q01 showed q46's hits and verdict; the counts changed, the means did not), one that emptied it
    crashed with an IndexError, and one that changed a query's tags changed the golden set's slices."""
    harness_api.register_retriever("meddler", MeddlerConfig, Meddler)
    try:
        _meddle()
    finally:
        from harness.retrievers import base

        base.REGISTRY.pop("meddler", None)  # (registered kinds live for the process)
    # a query without tags too: its empty dict is the golden set's own when the set was built by hand
    from harness.executors.retrieval import _handed

    mine = (Query("q1", "a"), Query("q2", "b", {"t": "x"}))
    handed = _handed(mine)
    assert type(handed) is tuple and handed == mine and all(h.tags is not q.tags for h, q in zip(handed, mine))


def _meddle():
    import warnings

    base = {"name": "m", "corpus": {"path": str(DEMO / "corpus.jsonl")}, "goldset": {"path": str(DEMO / "goldset.jsonl")},
            "chunking": {"strategy": "sentences", "size": 2}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the demo golden set's two flagged queries
        honest = harness_api.run({**base, "retriever": {"kind": "bm25"}})
        for mode in ("reverse", "pop"):
            with pytest.raises(harness_api.HarnessError, match=rf"retriever.kind 'meddler' .* failed in retrieve: "
                                                           rf"AttributeError: 'tuple' object has no attribute '{mode}'"):
                harness_api.run({**base, "retriever": {"kind": "meddler", "mode": mode}})
        tagged = harness_api.run({**base, "retriever": {"kind": "meddler", "mode": "tags"}})
    assert [q.tags for q in tagged.queries] == [q.tags for q in honest.queries]
    assert tagged.summary == honest.summary
