"""Differential tests: the engine against pytrec_eval (trec_eval 9) on random graded runs with ties, and
invariants every metric must keep."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from harness.metrics.engine import evaluate
from harness.core.runtable import Run, Qrels

pytrec_eval = pytest.importorskip("pytrec_eval")

# trec_eval measure -> our canonical name
PAIRS = {"map": "ap", "recip_rank": "rr", "Rprec": "rprec", "ndcg": "ndcg", "ndcg_cut_5": "ndcg@5",
         "ndcg_cut_10": "ndcg@10", "P_5": "precision@5", "P_10": "precision@10", "recall_5": "recall@5",
         "recall_10": "recall@10", "map_cut_5": "ap@5", "map_cut_10": "ap@10", "success_1": "hit@1",
         "success_5": "hit@5"}


def random_batch(rng, n_queries):
    qrels, run = {}, {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in range(int(rng.integers(1, 16)))]
        judged = rng.choice(docs, size=int(rng.integers(1, len(docs) + 1)), replace=False)
        qrels[f"q{q}"] = {str(d): int(rng.integers(-1, 4)) for d in judged}
        if rng.random() < 0.9:
            pool = docs + [f"x{i}" for i in range(6)]
            hits = rng.choice(pool, size=int(rng.integers(0, len(pool))), replace=False)
            # quarters are exact in float32, so trec_eval's single-precision ties equal ours
            run[f"q{q}"] = {str(d): float(rng.integers(0, 6)) / 4 for d in hits}
    return qrels, run


def compare(qrels, run, reference=None):
    if reference is None:
        reference = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS)).evaluate(run)
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), list(PAIRS.values())).per_query()
    assert reference, "pytrec_eval evaluated nothing"
    for qid, values in reference.items():
        for trec_name, name in PAIRS.items():
            assert ours[qid][name] == pytest.approx(values[trec_name], abs=1e-9), (qid, trec_name, qrels[qid], run.get(qid))
    return len(reference)


def uniform_batch(rng, n_queries, depth=12):
    """Every run query has exactly ``depth`` hits (the engine's reshape path); some judged queries are absent,
    some run queries are unjudged, and the run lists its queries in another order than the qrels."""
    qrels, run = {}, {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in range(30)]
        judged = rng.choice(docs, size=int(rng.integers(1, 8)), replace=False)
        if rng.random() < 0.9:
            qrels[f"q{q}"] = {str(d): int(rng.integers(-1, 4)) for d in judged}
        if rng.random() < 0.9:
            run[f"q{q}"] = {str(d): float(rng.integers(0, 6)) / 4 for d in rng.choice(docs, depth, replace=False)}
    shuffled = list(run)
    rng.shuffle(shuffled)
    return qrels, {q: run[q] for q in shuffled}


def test_agrees_with_pytrec_eval_on_uniform_depth_runs():
    qrels, run = uniform_batch(np.random.default_rng(11), 2000)
    assert compare(qrels, run) > 1500
    both = {q: run[q] for q in qrels if q in run}  # the same queries in the same order on both sides
    assert compare({q: qrels[q] for q in both}, both) == len(both)


def test_agrees_with_pytrec_eval_on_3000_random_queries():
    # One evaluator over many queries: pytrec_eval hangs after many evaluator instances in one process.
    assert compare(*random_batch(np.random.default_rng(7), 3000)) > 2500


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.integers(0, 2**32 - 1))
def test_agrees_with_pytrec_eval_hypothesis_seeds(seed):
    from pytrec_worker import reference

    qrels, run = random_batch(np.random.default_rng(seed), 40)
    ref = reference(qrels, run, PAIRS)
    assume(ref is not None)  # the reference hung in its child process; that example says nothing about us
    compare(qrels, run, ref)


@st.composite
def ranked_query(draw):
    n = draw(st.integers(1, 12))
    grades = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    extra_relevant = draw(st.integers(0, 3))
    return grades, extra_relevant


ALL = ["precision@1", "precision@5", "recall@1", "recall@3", "recall@5", "recall@20", "hit@1", "hit@3", "hit@5",
       "ap", "ap@5", "rr", "rr@3", "rprec", "ndcg", "ndcg@5", "ndcg(gain=exp)@5", "ndcg(ideal=retrieved)@5"]


def table_for(grades, extra_relevant, order=None):
    docs = [f"d{i:02d}" for i in range(len(grades))]
    qrels = {"q": {d: g for d, g in zip(docs, grades)}}
    qrels["q"].update({f"unretrieved{i}": 1 for i in range(extra_relevant)})
    if not any(g > 0 for g in qrels["q"].values()):
        qrels["q"]["unretrieved_x"] = 1
    ranked = order if order is not None else docs
    run = {"q": [(d, float(len(ranked) - i)) for i, d in enumerate(ranked)]}
    return evaluate(Qrels.from_dict(qrels), Run.from_lists(run), ALL).per_query()["q"]


@given(ranked_query())
def test_metrics_bounded_and_monotone_in_k(case):
    values = table_for(*case)
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in values.values())
    assert values["recall@1"] <= values["recall@3"] <= values["recall@5"] <= values["recall@20"]
    assert values["hit@1"] <= values["hit@3"] <= values["hit@5"]


@given(ranked_query())
def test_ideal_ordering_scores_one(case):
    grades, _ = case
    docs = [f"d{i:02d}" for i in range(len(grades))]
    ideal = [d for _, d in sorted(zip(grades, docs), key=lambda p: -p[0])]
    values = table_for(grades, 0, order=ideal)
    if any(g > 0 for g in grades):
        assert values["ndcg"] == pytest.approx(1.0)
        assert values["ndcg(ideal=retrieved)@5"] == pytest.approx(1.0)


@given(ranked_query(), st.data())
def test_moving_a_nonrelevant_hit_below_the_last_relevant_never_lowers_a_metric(case, data):
    grades, extra = case
    docs = [f"d{i:02d}" for i in range(len(grades))]
    non_rel = [i for i, g in enumerate(grades) if g == 0]
    rel = [i for i, g in enumerate(grades) if g > 0]
    if not non_rel or not rel:
        return
    i = data.draw(st.sampled_from(non_rel))
    if i > rel[-1]:
        return
    moved = docs[:i] + docs[i + 1:rel[-1] + 1] + [docs[i]] + docs[rel[-1] + 1:]
    before, after = table_for(grades, extra), table_for(grades, extra, order=moved)
    for name in ALL:
        assert after[name] >= before[name] - 1e-12, name


def test_repeated_doc_ids_count_once_at_their_best_rank_like_a_deduplicated_run():
    # A chunk-level run read as documents: most rows repeat doc ids. The engine keeps each doc's first copy in
    # evaluation order; the reference gets that deduplication done in Python, then pytrec_eval.
    rng = np.random.default_rng(5)
    qrels, run, deduplicated, dropped = {}, {}, {}, 0
    for q in range(400):
        docs = [f"d{i}" for i in range(12)]
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in rng.choice(docs, 4, replace=False)}
        hits = [(str(rng.choice(docs)), float(rng.integers(0, 8)) / 4) for _ in range(int(rng.integers(1, 20)))]
        run[f"q{q}"] = hits
        best = {}
        for d, s in sorted(hits, key=lambda h: (h[1], h[0]), reverse=True):  # trec_eval's order
            best.setdefault(d, s)
        deduplicated[f"q{q}"] = best
        dropped += len(hits) - len(best)
    table = evaluate(Qrels.from_dict(qrels), Run.from_lists(run), list(PAIRS.values()))
    assert table.counts["dropped_duplicates"] == dropped > 1000
    reference = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS)).evaluate(deduplicated)
    ours = table.per_query()
    for qid, values in reference.items():
        for trec_name, name in PAIRS.items():
            assert ours[qid][name] == pytest.approx(values[trec_name], abs=1e-9), (qid, trec_name)


def test_files_read_with_unsorted_vocabulary_break_ties_like_trec_eval(tmp_path):
    # fast_trec keeps doc ids in order of appearance and gives the engine their sorted positions; with scores
    # drawn from four values nearly every row has ties, so the doc-id tie rule decides most ranks.
    from harness.io import fast_trec

    rng = np.random.default_rng(13)
    names = [f"{p}{i}" for p in ("zeta", "Alpha", "beta-", "é", "10") for i in range(8)]
    qrels, run = {}, {}
    for q in range(300):
        judged = rng.choice(names, 6, replace=False)
        qrels[f"q{q}"] = {str(d): int(rng.integers(-1, 4)) for d in judged}
        run[f"q{q}"] = {str(d): float(rng.integers(0, 4)) / 2 for d in rng.choice(names, 20, replace=False)}
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()),
                                        encoding="utf-8")
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} {r} {s} t\n" for q, ds in run.items()
                                               for r, (d, s) in enumerate(ds.items(), 1)), encoding="utf-8")
    q, r = fast_trec.read_qrels_and_run(tmp_path / "qrels.txt", tmp_path / "run.trec")
    assert r.doc_order is not None and r.doc_vocab.tolist() != sorted(r.doc_vocab.tolist())
    ours = evaluate(q, r, list(PAIRS.values())).per_query()
    reference = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS)).evaluate(run)
    for qid, values in reference.items():
        for trec_name, name in PAIRS.items():
            assert ours[qid][name] == pytest.approx(values[trec_name], abs=1e-9), (qid, trec_name)
