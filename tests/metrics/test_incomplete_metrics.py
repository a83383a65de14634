"""judged@k, bpref and infAP as worked arithmetic, against pytrec_eval (bpref, infAP) and ir_measures (Judged@k)
on random runs, and their invariants. trec_eval 10 itself: test_incomplete_trec_eval.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from harness.core.errors import MetricError
from harness.core.runtable import Qrels, Run
from harness.metrics.engine import evaluate
from harness.metrics.spec import parse_metric

sys.path.insert(0, str(Path(__file__).parent))
from test_metrics_reference import random_batch, uniform_batch  # noqa: E402

EPS = 1e-5  # trec_eval's INFAP_EPSILON

# X is not in the judgments (outside the pool), F has grade -1 (pooled, not judged): both are unjudged.
QRELS = {"q": {"A": 1, "B": 0, "C": 1, "D": 0, "E": 0, "F": -1}}
RANKED = ["X", "B", "A", "F", "D", "C", "E"]


def per_query(qrels, run, names, **kw):
    return evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, **kw).per_query()


def ranked(docs):
    return {d: float(len(docs) - i) for i, d in enumerate(docs)}


def test_worked_example():
    got = per_query(QRELS, {"q": ranked(RANKED)}, ["bpref", "infAP", "judged@3", "judged@5", "judged@10", "judged"])
    q = got["q"]
    # R = 2 relevant (A, C), N = 3 judged non-relevant (B, D, E); min(N, R) = 2.
    # A has B above it: 1 - 1/2; C has B and D above it: 1 - 2/2.
    assert q["bpref"] == pytest.approx(((1 - 1 / 2) + (1 - 2 / 2)) / 2)
    # infAP at 0-based positions: A at j=2 (above: B non-relevant, X outside the pool),
    # C at j=5 (above: A relevant, B and D non-relevant, F pooled-unjudged, X outside).
    at_a = 1 / 3 + (2 / 3) * ((0 + 1 + 0) / 2) * ((0 + EPS) / (0 + 1 + 2 * EPS))
    at_c = 1 / 6 + (5 / 6) * ((1 + 2 + 1) / 5) * ((1 + EPS) / (1 + 2 + 2 * EPS))
    assert q["infAP"] == pytest.approx((at_a + at_c) / 2, abs=1e-15)
    assert q["judged@3"] == pytest.approx(2 / 3)  # X B A: B and A judged
    assert q["judged@5"] == pytest.approx(3 / 5)  # F (grade -1) is not a judgment
    assert q["judged@10"] == pytest.approx(5 / 7)  # 7 retrieved: divided by min(10, 7)
    assert q["judged"] == pytest.approx(5 / 7)


def test_rel_threshold_moves_relevant_to_non_relevant():
    qrels = {"q": {"A": 2, "B": 1, "C": 0}}
    # rel=2: R = {A}, N = {B, C}; B above A: 1 - min(1, 1) / min(2, 1) = 0
    got = per_query(qrels, {"q": ranked(["B", "A", "C"])}, ["bpref", "bpref(rel=2)"])["q"]
    assert got["bpref(rel=2)"] == 0.0
    assert got["bpref"] == pytest.approx((1.0 + 1.0) / 2)  # rel=1: B and A relevant, C below both


def test_first_relevant_at_rank_one_and_nothing_retrieved():
    qrels = {"q": {"A": 1, "B": 0}, "absent": {"A": 1}}
    got = per_query(qrels, {"q": ranked(["A", "B"])}, ["bpref", "infAP", "judged@5"], query_policy="zero")
    assert got["q"] == {"bpref": 1.0, "infAP": 1.0, "judged@5": 1.0}
    assert got["absent"] == {"bpref": 0.0, "infAP": 0.0, "judged@5": 0.0}


@pytest.mark.parametrize("seed", range(6))
def test_bpref_and_infap_equal_pytrec_eval(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(100 + seed)
    qrels, run = (random_batch if seed % 2 else uniform_batch)(rng, 40)  # grades -1..3, ties in float32 quarters
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"bpref", "infAP"}).evaluate(run)
    ours = per_query(qrels, run, ["bpref", "infAP"])
    assert reference
    for qid, values in reference.items():
        assert ours[qid]["bpref"] == pytest.approx(values["bpref"], abs=1e-12), qid
        assert ours[qid]["infAP"] == pytest.approx(values["infAP"], abs=1e-12), qid


@pytest.mark.parametrize("seed", range(4))
def test_judged_equals_ir_measures(seed):
    ir_measures = pytest.importorskip("ir_measures")
    rng = np.random.default_rng(200 + seed)
    qrels, run = random_batch(rng, 40)
    # ir_measures counts every listed document as judged and breaks ties by doc id ascending: grades >= 0 and
    # distinct scores here (both differences are documented); it divides by zero on an empty list: none here.
    qrels = {q: {d: g for d, g in docs.items() if g >= 0} for q, docs in qrels.items()}
    qrels = {q: docs for q, docs in qrels.items() if docs}
    run = {q: {d: s + 1e-3 * i for i, (d, s) in enumerate(sorted(h.items()))} for q, h in run.items() if h}
    measures = {ir_measures.Judged @ 5: "judged@5", ir_measures.Judged @ 10: "judged@10", ir_measures.Judged: "judged"}
    ours = per_query(qrels, run, list(measures.values()))
    n = 0
    for m in ir_measures.iter_calc(list(measures), qrels, run):
        assert ours[m.query_id][measures[m.measure]] == pytest.approx(m.value, abs=1e-15)
        n += 1
    assert n > 50


def test_infap_with_every_retrieved_document_judged_is_ap():
    rng = np.random.default_rng(7)
    for _ in range(30):
        docs = [f"d{i}" for i in range(int(rng.integers(2, 30)))]
        qrels = {"q": {d: int(rng.integers(0, 3)) for d in docs}}
        if not any(qrels["q"].values()):
            continue
        run = {"q": {d: float(rng.random()) for d in rng.choice(docs, int(rng.integers(1, len(docs))), False)}}
        got = per_query(qrels, run, ["infAP", "ap", "judged"])["q"]
        assert got["judged"] == 1.0
        assert got["infAP"] == pytest.approx(got["ap"], abs=1e-4)  # the eps of trec_eval's estimate, only


def test_values_stay_in_unit_interval_and_ideal_ranking_scores_one():
    rng = np.random.default_rng(11)
    qrels, run = random_batch(rng, 60)
    table = per_query(qrels, run, ["bpref", "infAP", "judged@5", "judged"])
    assert all(0.0 <= v <= 1.0 for row in table.values() for v in row.values())
    ideal = {"q": {"a": 3, "b": 1, "c": 0, "d": 0}}
    got = per_query(ideal, {"q": ranked(["a", "b", "c", "d"])}, ["bpref", "infAP"])["q"]
    assert got["bpref"] == 1.0
    # b at j=1 with a above: 1/2 + 1/2 * 1 * (1 + eps) / (1 + 2 eps), a hair under 1: the estimate's eps
    assert got["infAP"] == pytest.approx((1 + 1 / 2 + 1 / 2 * (1 + EPS) / (1 + 2 * EPS)) / 2, abs=1e-15)


def test_names():
    assert parse_metric("infap").name == "infAP" and parse_metric("infAP(rel=2)").name == "infAP(rel=2)"
    assert parse_metric("Judged@10").name == "judged@10" and parse_metric("judged").name == "judged"
    assert parse_metric("BPREF").name == "bpref"
    for bad in ("bpref@10", "infAP@5", "judged(rel=2)@5"):
        with pytest.raises(MetricError):
            parse_metric(bad)
