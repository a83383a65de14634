"""The judgments of a run's two levels as columns (core/levelgrades.LevelGrades, issue 14) against the dict per query
they replace: the same grades from an independent dict-building reference, read by id, by position and as the
engine's Qrels; every per-query metric, verdict and hit of a run the same with the columns as with the dicts; each
query's judgments in golden-set order without a dict; the golden-set fingerprint hashed a batch at a time."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.core.fingerprint import fingerprint, fingerprint_of_items
from harness.hits.levelgrades import LevelGrades, as_qrels, grades_at
from harness.core.runtable import Qrels
from harness.core.types import Chunk, GoldSet, Judgment, Query, Span
from harness.gold.resolve import GoldProblem, chunk_qrels, doc_qrels


def _reference(gold: GoldSet, chunks, problems) -> tuple[dict, dict]:
    """The dict-of-dicts the pipeline built before the columns (written out again here, one judgment at a time)."""
    dq = {q.query_id: {} for q in gold.queries}
    cq = {q.query_id: {} for q in gold.queries}
    for j in gold.judgments:
        dq[j.query_id][j.doc_id] = j.relevance
        for c in (c for c in chunks if c.doc_id == j.doc_id):
            if j.relevance > 0 and j.evidence:
                hit = any(s.start < c.end and c.start < s.end for s in j.evidence)
                cq[j.query_id][c.chunk_id] = max(cq[j.query_id].get(c.chunk_id, 0), j.relevance if hit else 0)
            else:
                cq[j.query_id][c.chunk_id] = j.relevance
    with_spans = {(j.query_id, j.doc_id) for j in gold.judgments if j.evidence}
    for p in problems:
        if p.kind in ("quote_not_found", "span_out_of_range") and (p.query_id, p.doc_id) not in with_spans:
            for c in chunks:
                if c.doc_id == p.doc_id:
                    cq[p.query_id][c.chunk_id] = 0
    return dq, cq


def _golden_set(rng: random.Random, shuffled: bool) -> tuple[GoldSet, list[Chunk], list[GoldProblem]]:
    chunks = [Chunk(f"d{d}#{c * 10}-{c * 10 + 10}", f"d{d}", c * 10, c * 10 + 10, "x", "x")
              for d in range(rng.randint(1, 8)) for c in range(rng.randint(1, 4))]
    docs = sorted({c.doc_id for c in chunks}) + ["not-in-corpus"]
    queries = [Query(f"q{i}", "text") for i in range(rng.randint(0, 12))]
    judgments, problems = [], []
    for q in queries:
        for _ in range(rng.randint(0, 4)):  # a document may be judged twice: the last grade wins, spans take the max
            doc = rng.choice(docs)
            spans = tuple(Span(a, a + rng.randint(1, 15)) for a in rng.sample(range(40), rng.randint(0, 2)))
            judgments.append(Judgment(q.query_id, doc, rng.randint(-1, 3), spans))
            if rng.random() < 0.2:
                problems.append(GoldProblem(q.query_id, doc, rng.choice(["quote_not_found", "span_out_of_range",
                                                                         "unknown_document"]), "m"))
    if shuffled:
        rng.shuffle(judgments)
    return GoldSet("g", tuple(queries), tuple(judgments)), chunks, problems


@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("seed", range(25))
def test_the_columns_hold_the_reference_grades(seed, shuffled):
    gold, chunks, problems = _golden_set(random.Random(seed), shuffled)
    want_doc, want_chunk = _reference(gold, chunks, problems)
    for got, want in ((doc_qrels(gold), want_doc), (chunk_qrels(gold, chunks, problems), want_chunk)):
        assert isinstance(got, LevelGrades)
        assert got == want and list(got) == list(want) and len(got) == len(want)
        for i, (qid, grades) in enumerate(want.items()):
            assert got.row(i) == grades and got[qid] == grades and qid in got
            assert got.at(i, qid) == grades and grades_at(got, i, qid) == grades
            assert got.at(i + 1, qid) == grades and got.at(-1, qid) == grades  # not at that row: found by id
        assert "nobody" not in got and got.get("nobody") is None and got.at(0, "nobody") == {}
        with pytest.raises(KeyError):
            got["nobody"]
        a, b = as_qrels(got), Qrels.from_dict(want)
        assert list(a.query_ids) == list(b.query_ids) and np.array_equal(a.offsets, b.offsets)
        assert list(a.doc_ids) == list(b.doc_ids) and np.array_equal(a.grades, b.grades)


def test_ids_that_look_like_sequences_stay_whole():
    grades = LevelGrades.from_rows(["ab", "cd"], [{"xy": 1}, {}])
    assert grades.qrels.query_ids.shape == (2,) and grades == {"ab": {"xy": 1}, "cd": {}}
    with pytest.raises(ValueError):
        LevelGrades.from_rows(["ab"], [{}, {}])


@pytest.mark.parametrize("seed", range(10))
def test_judgments_per_query_in_golden_set_order(seed):
    gold, _, _ = _golden_set(random.Random(seed), shuffled=seed % 2 == 1)
    by_query = gold.judgments_by_query()
    assert [list(js) for js in gold.judgments_per_query()] == [by_query[q.query_id] for q in gold.queries]


def test_a_judgment_of_an_unknown_query_is_left_out_not_misplaced():
    q1, q2 = Query("q1", "a"), Query("q2", "b")
    judgments = (Judgment("q1", "d", 1), Judgment("zz", "d", 1), Judgment("q2", "e", 2))
    gold = GoldSet("g", (q1, q2), judgments)
    assert [list(js) for js in gold.judgments_per_query()] == [[judgments[0]], [judgments[2]]]


@pytest.mark.parametrize("n", [0, 1, 2, 9, 10, 11, 31])
def test_fingerprint_a_batch_at_a_time(n):
    items = [[f"q{i}", "tëxt \"quoted\" \u2028", i, [[1, 2]] * (i % 3)] for i in range(n)]
    for batch in (1, 3, 10, 10_000):
        assert fingerprint_of_items(iter(items), batch=batch) == fingerprint(items)
    assert fingerprint_of_items(items) != fingerprint(items + [["extra"]])


def test_a_run_judged_by_columns_equals_one_judged_by_dicts():
    """Verdicts, levels and hit records of the demo with the pipeline's columns and with plain dicts."""
    from conftest import ROOT
    from harness.config.schema import load_config
    from harness.diagnostics.verdicts import diagnose
    from harness.hits.parquet import RunHits
    from harness.metrics.spec import parse_metrics
    from harness.pipeline.assemble import prepare
    from harness.executors.retrieval import retrieve_all
    from harness.pipeline.window import window_sizes
    from harness.pipeline.levels import evaluate_levels, level_qrels
    from harness.retrievers import BuildContext, build_retriever

    config = load_config(ROOT / "configs/demo-bm25.yaml")
    p = prepare(config, log=lambda m: None)
    got = retrieve_all(build_retriever(config.retriever, BuildContext(progress=False)), p.chunks, p.gold.queries,
                       config.depth, progress=False)
    window_k = window_sizes(got.lists, config.cutoff, {c.chunk_id: c.text for c in got.chunks})
    dq, cq = level_qrels(p.gold, got.chunks, p.problems)
    plain = _reference(p.gold, got.chunks, p.problems)
    assert (dq, cq) == plain and p.problems  # the demo has golden-set problems (q44, q45)
    errors = {x.query_id for x in p.problems}
    specs = parse_metrics(config.metrics)
    columns = evaluate_levels(dq, cq, got.lists, window_k, specs, "exclude", errors)
    dicts = evaluate_levels(*plain, got.lists, window_k, specs, "exclude", errors)
    for level in ("doc", "chunk"):
        assert columns.table(level).per_query() == dicts.table(level).per_query()
    args = (p.gold, p.problems, config.diagnostics, got.lists, window_k)
    assert {q: v.to_dict() for q, v in diagnose(*args, dq, cq).items()} == \
        {q: v.to_dict() for q, v in diagnose(*args, *plain).items()}
    by_id = {c.chunk_id: c for c in got.chunks}
    a, b = RunHits(got.lists, cq, dq, window_k, by_id), RunHits(got.lists, plain[1], plain[0], window_k, by_id)
    assert [a.records(i) for i in range(len(got.lists))] == [b.records(i) for i in range(len(got.lists))]
    assert [(q, r.tolist()) for q, r in a.relevance()] == [(q, r.tolist()) for q, r in b.relevance()]
    assert [(q, g.tolist()) for q, g in a.doc_gains()] == [(q, g.tolist()) for q, g in b.doc_gains()]
    columns_judged, dicts_judged = list(a.judged.batches(size=3)), list(b.judged.batches(size=3))
    assert len(columns_judged) == len(dicts_judged) > 1
    for x, y in zip(columns_judged, dicts_judged):
        for name in ("relevant", "grade", "judged", "in_window", "chunk", "rank"):
            assert np.array_equal(getattr(x, name), getattr(y, name)), name
