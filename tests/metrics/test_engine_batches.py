"""The metric engine scores a large run a batch of judged queries at a time (``engine.BATCH_HITS``): the table is
the one a single pass gives, value for value, with the same counts, for every metric family, the window metrics,
golden-set errors, absent and unjudged queries, duplicates, ties and uneven depths."""

import numpy as np
import pytest

from harness.core.runtable import Run, Qrels
from harness.metrics import engine

METRICS = ["ap", "ap@5", "rr", "rr@3", "ndcg@10", "ndcg", "ndcg(gain=exp)@5", "precision(rel=2)@5", "ndcg(ideal=retrieved)@6", "dcg@4", "precision@5", "recall@8",
           "rprec", "hit@3", "bpref", "infAP(rel=2)", "judged@4", "judged", "nothing_found@5", "recall@window", "precision@window", "hit@window", "rr@window"]


def _data(seed: int):
    rng = np.random.default_rng(seed)
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(-1, 4)) for d in rng.choice(60, rng.integers(0, 9), replace=False)}
             for q in range(230)}
    lists = {}
    for q in rng.permutation(260):  # 30 run queries have no judgments; some judged queries are absent
        if rng.random() < 0.1:
            continue
        depth = int(rng.integers(0, 25))
        # Scores on a coarse grid (ties for the doc ids to break) and doc ids drawn with repeats (duplicates).
        lists[f"q{q}"] = [(f"d{rng.integers(0, 60)}", float(rng.integers(0, 6))) for _ in range(depth)]
    window = engine.Window(cut={q: int(rng.integers(0, 12)) for q in qrels},
                           size={q: int(rng.integers(1, 12)) for q in qrels})
    errors = {f"q{q}" for q in rng.choice(230, 7, replace=False)}
    return Qrels.from_dict(qrels), Run.from_lists(lists), window, errors


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("options", [{}, {"trec_compat": True}, {"order": "rank"}, {"query_policy": "zero"}])
def test_batches_score_as_one_pass(monkeypatch, seed, options):
    qrels, run, window, errors = _data(seed)
    if options.get("order") == "rank":
        run = Run(run.query_ids, run.offsets, run.doc_vocab, run.doc_codes, run.scores,
                          np.concatenate([np.arange(1, n + 1) for n in run.lengths]).astype(np.int64))
    whole = engine.evaluate(qrels, run, METRICS, gold_errors=errors, window=window, **options)
    monkeypatch.setattr(engine, "BATCH_HITS", 50)  # a few queries a batch at depth 24
    batched = engine.evaluate(qrels, run, METRICS, gold_errors=errors, window=window, **options)
    assert batched.per_query() == whole.per_query()
    assert batched.counts == whole.counts and batched.counted() == whole.counted()
    assert batched.mean() == whole.mean()
    assert whole.counts["absent_from_run"] > 0 and whole.counts["unjudged_run_queries"] > 0
    assert whole.counts["dropped_duplicates"] > 0


def test_a_run_of_exactly_the_judged_queries_in_their_order(monkeypatch):
    """The usual `harness eval` case: the run's queries are the qrels' queries, in the same order (no lookup)."""
    qrels, run, window, errors = _data(3)
    present = {q: i for i, q in enumerate(run.query_ids.tolist())}
    lists = {q: [(run.doc_vocab[c], s) for c, s in zip(run.doc_codes[run.offsets[present[q]]:run.offsets[present[q] + 1]],
                                                         run.scores[run.offsets[present[q]]:run.offsets[present[q] + 1]])]
             if q in present else [] for q in qrels.query_ids.tolist()}
    aligned = Run.from_lists(lists)
    assert aligned.query_ids.tolist() == qrels.query_ids.tolist()
    whole = engine.evaluate(qrels, aligned, METRICS, gold_errors=errors, window=window)
    monkeypatch.setattr(engine, "BATCH_HITS", 50)
    batched = engine.evaluate(qrels, aligned, METRICS, gold_errors=errors, window=window)
    assert batched.per_query() == whole.per_query() and batched.counts == whole.counts
