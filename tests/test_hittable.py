"""The columnar in-memory run (core/hittable.HitTable) against the ranked lists it replaces: the same lists back,
and every per-query metric, count, window cut and verdict of a run identical on both paths."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from conftest import ROOT
from harness.config.schema import load_config
from harness.hits.table import HitTable, HitTableBuilder
from harness.core.types import Chunk, Hit, RankedList
from harness.metrics.spec import parse_metrics
from harness.pipeline.assemble import build_result, prepare
from harness.executors.retrieval import retrieve_all
from harness.pipeline.window import window_sizes
from harness.pipeline.levels import Coverage, evaluate_levels
from harness.retrievers import BuildContext, build_retriever
from harness.retrievers.ranking import rank_hits

METRICS = parse_metrics(["ap", "ndcg@5", "rr", "recall@3", "precision@2", "hit@1"])


def _chunks(rng: random.Random, n_docs: int) -> list[Chunk]:
    out = []
    for d in range(n_docs):
        for c in range(rng.randint(1, 4)):
            out.append(Chunk(f"d{d}#{c * 10}-{c * 10 + 10}", f"d{d}", c * 10, c * 10 + 10, "x", "x"))
    return out


def _lists(rng: random.Random, chunks: list[Chunk], n_queries: int, depth: int) -> list[RankedList]:
    out = []
    for q in range(n_queries):
        picked = rng.sample(chunks, rng.randint(0, min(depth, len(chunks))))
        # Coarse scores: ties are common, and ranking.rank_hits orders them as every retriever does.
        hits = [Hit(c.chunk_id, c.doc_id, float(rng.randint(0, 5)), 0, c.start, c.end) for c in picked]
        out.append(rank_hits(f"q{q}", hits))
    return out


def _table(lists: list[RankedList], chunks: list[Chunk], batch: int = 3, spill_hits: int | None = None) -> HitTable:
    builder = HitTableBuilder(chunks, spill_hits=spill_hits)
    for i in range(0, len(lists), batch):
        builder.add(lists[i:i + batch])
    return builder.build(chunks)


def _qrels(rng: random.Random, lists, chunks, level: str) -> dict[str, dict[str, int]]:
    ids = sorted({c.doc_id if level == "doc" else c.chunk_id for c in chunks})
    return {r.query_id: {i: rng.randint(-1, 3) for i in rng.sample(ids, rng.randint(0, min(4, len(ids))))} for r in lists}


@pytest.mark.parametrize("batch_hits", [1 << 20, 1, 7])
@pytest.mark.parametrize("seed", range(12))
def test_levels_identical_on_both_paths(seed, batch_hits, monkeypatch):
    """Also a batch of queries at a time (one query, a few), as a large run's levels are built and scored."""
    from harness.metrics import engine

    monkeypatch.setattr(engine, "BATCH_HITS", batch_hits)
    rng = random.Random(seed)
    chunks = _chunks(rng, rng.randint(1, 12))
    lists = _lists(rng, chunks, rng.randint(1, 15), depth=rng.randint(1, 9))
    table = _table(lists, chunks)
    assert list(table) == lists and table[-1] == lists[-1] and table[1:3] == lists[1:3]
    window_k = [rng.randint(0, 6) for _ in lists]
    dq, cq = _qrels(rng, lists, chunks, "doc"), _qrels(rng, lists, chunks, "chunk")
    ids = [r.query_id for r in lists]
    coverage = Coverage(tuple(rng.sample(ids, rng.randint(0, 2))), ("unknown-a", "unknown-b")[:rng.randint(0, 2)])
    gold_errors = set(rng.sample(ids, rng.randint(0, 1)))
    # The golden set's queries in the table's order (a pipeline run's), and in another order with one left out.
    other = tuple({q: g[q] for q in list(g)[::-1][1:]} for g in (dq, cq))
    for policy, (dq, cq) in (("exclude", (dq, cq)), ("zero", (dq, cq)), ("exclude", other), ("zero", other)):
        old = evaluate_levels(dq, cq, lists, window_k, METRICS, policy, gold_errors, coverage)
        new = evaluate_levels(dq, cq, table, window_k, METRICS, policy, gold_errors, coverage)
        for level in ("doc", "chunk"):
            a, b = old.table(level), new.table(level)
            assert a.per_query() == b.per_query(), (seed, level)
            assert a.counts == b.counts and a.counted() == b.counted()
            assert a.mean() == b.mean()


def test_window_sizes_from_columns():
    rng = random.Random(5)
    chunks = _chunks(rng, 6)
    lists = _lists(rng, chunks, 10, 7)
    cutoff = load_config(ROOT / "configs" / "demo-bm25.yaml").cutoff
    assert window_sizes(_table(lists, chunks), cutoff, {}) == window_sizes(lists, cutoff, {})


def test_adopted_chunks_are_indexed_after_the_corpus():
    corpus = [Chunk("a#0-5", "a", 0, 5, "x", "x")]
    extra = Chunk("a#2-4", "a", 2, 4, "x", "x")
    builder = HitTableBuilder(corpus)
    builder.added([extra])
    lists = [RankedList("q", (Hit("a#2-4", "a", 2.0, 1, 2, 4), Hit("a#0-5", "a", 1.0, 2, 0, 5)))]
    builder.add(lists)
    table = builder.build(corpus + [extra])
    assert table.chunk.tolist() == [1, 0] and list(table) == lists
    assert table.chunk.dtype == np.int32 and table.scores.dtype == np.float64


@pytest.mark.parametrize("cutoff", ["{k: 3}", "{token_budget: 40, tokenizer: words}"])
def test_demo_run_identical_on_both_paths(tmp_path, cutoff):
    """The demo through retrieve_all (which makes a HitTable) and the same lists as plain RankedLists: every
    per-query metric, count, verdict and hit of the Result is the same."""
    from clihelp import demo_config

    config = load_config(demo_config(tmp_path, cutoff=cutoff, depth=100))
    prepared = prepare(config, log=lambda m: None)
    retriever = build_retriever(config.retriever, BuildContext(progress=False))
    got = retrieve_all(retriever, prepared.chunks, prepared.gold.queries, config.depth, batch_size=7, progress=False)
    assert isinstance(got.lists, HitTable) and got.lists.n_hits > 0
    plain = list(got.lists)
    prepared = replace(prepared, chunks=got.chunks)
    new, old = build_result(prepared, got.lists, got.timings), build_result(prepared, plain, got.timings)
    new_d, old_d = new.to_dict(), old.to_dict()
    new_d.pop("created_at"), old_d.pop("created_at")
    assert new_d == old_d
    assert any(q.counted.doc for q in new.queries)


@pytest.mark.parametrize("seed", range(8))
def test_diagnose_gives_the_same_verdicts_from_lazy_hits(seed):
    """diagnose reads a HitTable's lists lazily (only the hits a verdict looks at are made): every verdict equals the
    one from the fully made lists, over random rankings, windows, evidence spans, grades and absent queries."""
    from harness.config.schema import DiagnosticsConfig
    from harness.core.types import GoldSet, Judgment, Query, Span
    from harness.diagnostics.verdicts import diagnose
    from harness.gold.resolve import chunk_qrels, doc_qrels

    rng = random.Random(seed)
    chunks = _chunks(rng, 12)
    lists = _lists(rng, chunks, 60, 20)
    table = _table(lists, chunks, spill_hits=1 if seed % 2 else None)
    docs = sorted({c.doc_id for c in chunks})
    queries, judgments = [], []
    for r in lists:
        queries.append(Query(r.query_id, "text"))
        for doc in rng.sample(docs, rng.randint(0, 3)):
            spans = tuple(Span(a, a + rng.randint(1, 8)) for a in rng.sample(range(0, 35), rng.randint(0, 2)))
            judgments.append(Judgment(r.query_id, doc, rng.randint(-1, 2), spans))
    gold = GoldSet("g", tuple(queries), tuple(judgments))
    dq, cq = doc_qrels(gold), chunk_qrels(gold, chunks)
    window_k = [rng.randint(0, 8) for _ in lists]
    absent = {r.query_id for r in rng.sample(lists, 5)}
    settings = DiagnosticsConfig(buried_after=rng.randint(1, 4), edge=rng.randint(0, 2), middle_min_window=3)
    lazy = diagnose(gold, [], settings, table, window_k, dq, cq, absent)
    made = diagnose(gold, [], settings, list(table), window_k, dq, cq, absent)
    assert list(lazy.items()) == list(made.items())
    assert len({v.kind for v in made.values()}) >= 3  # (missing, wrong chunk, buried, ok, no gold: most of them)
    hits = table.lazy(3).hits
    assert tuple(hits) == lists[3].hits and hits[1:4] == lists[3].hits[1:4] and hits[::2] == lists[3].hits[::2]


@pytest.mark.parametrize("backend", ["fast", "rank_bm25"])
def test_bm25_indexed_lists_give_the_result_of_ranked_lists(tmp_path, monkeypatch, backend):
    """bm25 answers with positions in its chunks (retrieve_indexed: no Hit made, checked as columns); the run is
    the one its ranked lists give, hit for hit, metric for metric, verdict for verdict."""
    from clihelp import demo_config
    from harness.pipeline.assemble import run_experiment
    from harness.retrievers.bm25 import BM25Retriever

    config = load_config(demo_config(tmp_path, retriever=f"{{kind: bm25, backend: {backend}}}", depth=20,
                                     cutoff="{k: 3}", metrics="[ndcg@10, recall@20, rr@10, hit@3]"))
    used = []
    add_indexed = HitTableBuilder.add_indexed
    monkeypatch.setattr(HitTableBuilder, "add_indexed", lambda self, *a: used.append(1) or add_indexed(self, *a))
    fast = run_experiment(config, progress=False, log=lambda m: None)
    assert used  # the columns were taken as they came, not made into lists
    monkeypatch.delattr(BM25Retriever, "retrieve_indexed")
    slow = run_experiment(config, progress=False, log=lambda m: None)
    a, b = fast.to_dict(), slow.to_dict()
    for d in (a, b):
        for key in ("created_at", "timings", "latency"):
            d.pop(key)
    assert a == b
    assert sum(len(q.hits) for q in fast.queries) > 0


def test_indexed_lists_that_break_a_contract_go_the_way_of_ranked_lists():
    """A batch that is not clean (too many hits, a tie out of order, a chunk twice, an unknown chunk, NaN) is made
    into ranked lists and checked or placed as any retriever's: the same error, or the same repaired ranking."""
    from harness.core.types import Query
    from harness.retrievers.contract import IndexedLists

    rng = random.Random(3)
    chunks = _chunks(rng, 6)
    id_rank = np.empty(len(chunks), dtype=np.int64)
    id_rank[sorted(range(len(chunks)), key=lambda i: chunks[i].chunk_id)] = np.arange(len(chunks))
    by_rank = np.argsort(id_rank)  # chunk positions in id order
    top, second = int(by_rank[-1]), int(by_rank[-2])
    q = [Query("q", "x")]

    def lists(chunk, scores, lengths=None):
        return IndexedLists(np.array([len(chunk)] if lengths is None else lengths, dtype=np.int64),
                            np.array(chunk, dtype=np.int64), np.array(scores, dtype=np.float64))

    assert lists([top, second], [1.0, 1.0]).is_clean(1, 5, id_rank)  # a tie, ids descending
    assert not lists([second, top], [1.0, 1.0]).is_clean(1, 5, id_rank)  # a tie out of order
    assert not lists([top, second], [1.0, 2.0]).is_clean(1, 5, id_rank)  # scores ascending
    assert not lists([top, top], [2.0, 1.0]).is_clean(1, 5, id_rank)  # a chunk twice
    assert not lists([top, second], [2.0, 1.0]).is_clean(1, 1, id_rank)  # more than k
    assert not lists([top, len(chunks)], [2.0, 1.0]).is_clean(1, 5, id_rank)  # no such chunk
    assert not lists([top, second], [2.0, float("nan")]).is_clean(1, 5, id_rank)
    assert not lists([top], [1.0]).is_clean(2, 5, id_rank)  # one list for two queries
    assert lists([], [], [0]).is_clean(1, 5, id_rank)
    made = lists([second, top], [1.0, 1.0]).as_lists(q, chunks)[0]
    assert [h.chunk_id for h in made.hits] == [chunks[second].chunk_id, chunks[top].chunk_id]
    assert [h.rank for h in made.hits] == [1, 2]


def test_lazy_hits_slice_as_a_tuple_does():
    rng = random.Random(5)
    chunks = _chunks(rng, 8)
    lists = [r for r in _lists(rng, chunks, 10, 6) if len(r.hits) >= 3]
    table = _table(lists, chunks)
    for i, ranked in enumerate(lists):
        lazy = table.lazy(i).hits
        for cut in (slice(None, None, -1), slice(-2, None), slice(1, -1, 2), slice(5, 1), slice(None, 2)):
            assert lazy[cut] == ranked.hits[cut], cut
        assert lazy[-1] == ranked.hits[-1]


def test_a_subclass_that_overrides_retrieve_is_not_bypassed_by_the_fast_path():
    from harness.executors.retrieval import _indexed
    from harness.retrievers.bm25 import BM25Retriever, BM25Config

    class Filtered(BM25Retriever):
        def retrieve(self, queries, k):
            return [r for r in super().retrieve(queries, k)]

    assert _indexed(BM25Retriever(BM25Config())) is not None
    assert _indexed(Filtered(BM25Config())) is None
