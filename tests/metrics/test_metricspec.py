import pytest
from hypothesis import given, strategies as st

from harness.core.errors import MetricError
from harness.metrics.spec import FAMILIES, MetricSpec, parse_metric, parse_metrics


@pytest.mark.parametrize("alias,canonical", [
    ("P@5", "precision@5"), ("R@10", "recall@10"), ("MAP", "ap"), ("map@10", "ap@10"), ("MRR@10", "rr@10"),
    ("nDCG@10", "ndcg@10"), ("Success@5", "hit@5"), ("hit_rate@5", "hit@5"), ("P_5", "precision@5"),
    ("ndcg_cut_10", "ndcg@10"), ("recip_rank", "rr"), ("Rprec", "rprec"),
    ("ndcg(gain=exp)@10", "ndcg(gain=exp)@10"), ("precision(rel=2)@5", "precision(rel=2)@5"),
    ("ndcg(ideal=retrieved, gain=exp)@5", "ndcg(gain=exp,ideal=retrieved)@5"), ("ndcg(gain=linear)@3", "ndcg@3"),
    ("hit@window", "hit@window"), ("Recall@Window", "recall@window"), ("P@window", "precision@window"),
    ("MRR@window", "rr@window"), ("precision(rel=2)@window", "precision(rel=2)@window"),
])
def test_aliases_normalise(alias, canonical):
    assert parse_metric(alias).name == canonical


@pytest.mark.parametrize("bad,fragment", [
    ("foo@5", "known metrics: ap, bpref, dcg, evidence_iou, evidence_precision, evidence_recall, hit, infAP, judged"), ("precision", "needs a cutoff"), ("rprec@5", "takes no cutoff"),
    ("ndcg(gain=cubic)@5", "gain must be one of linear, exp"), ("precision(rel=0)@5", "rel must be"),
    ("recall(gain=exp)@5", "unknown parameter 'gain'"), ("P@0", "cutoff must be >= 1"),
    ("ndcg@window", "ndcg takes no @window cutoff (window metrics: precision@window, recall@window, hit@window, "
                    "rr@window, evidence_recall@window, evidence_precision@window, evidence_iou@window, "
                    "sufficient@window)"), ("ap@window", "ap takes no @window"),
    ("rprec@window", "rprec takes no @window"),
    ("sufficient@5", "sufficient is measured at the context window only: sufficient@window"),
    ("sufficient", "sufficient is measured at the context window only"),
])
def test_bad_names_explain(bad, fragment):
    with pytest.raises(MetricError) as exc:
        parse_metric(bad)
    assert fragment in str(exc.value)


def test_all_bad_names_reported_at_once():
    with pytest.raises(MetricError) as exc:
        parse_metrics(["P@5", "nope@1", "precision"])
    assert len(exc.value.problems) == 2


specs = st.builds(
    lambda fam, k, rel, gain, ideal, window: MetricSpec(
        fam, None if FAMILIES[fam].k in ("forbidden", "window") or (window and FAMILIES[fam].window)
        else (k if FAMILIES[fam].k == "required" or k % 2 else None),
        rel if "rel" in FAMILIES[fam].params else 1,
        gain if "gain" in FAMILIES[fam].params else "linear",
        ideal if "ideal" in FAMILIES[fam].params else "judged",
        (window and FAMILIES[fam].window) or FAMILIES[fam].k == "window"),  # sufficient: @window only
    st.sampled_from(sorted(FAMILIES)), st.integers(1, 1000), st.integers(1, 4),
    st.sampled_from(["linear", "exp"]), st.sampled_from(["judged", "retrieved"]), st.booleans())


@given(specs)
def test_names_round_trip(spec):
    assert parse_metric(spec.name) == spec


def test_window_metrics_need_a_window():
    """``@window`` is each query's context window: only a pipeline run has one, so plain evaluation refuses it."""
    from harness.core.runtable import Run, Qrels
    from harness.metrics.engine import Window, evaluate

    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 1}, "q2": {"c": 1}})
    run = Run.from_dict({"q1": {"x": 3.0, "a": 2.0, "b": 1.0}, "q2": {"x": 3.0, "c": 2.0}})
    with pytest.raises(MetricError, match="needs each query's context window"):
        evaluate(qrels, run, ["hit@window"])
    # q1's window holds its first 2 hits (x, a), q2's only its first (x); P divides by the window's size
    t = evaluate(qrels, run, ["hit@window", "recall@window", "precision@window", "rr@window"],
                 window=Window(cut={"q1": 2, "q2": 1}, size={"q1": 2, "q2": 1}))
    assert t.per_query() == {"q1": {"hit@window": 1.0, "recall@window": 0.5, "precision@window": 0.5,
                                    "rr@window": 0.5},
                             "q2": {"hit@window": 0.0, "recall@window": 0.0, "precision@window": 0.0,
                                    "rr@window": 0.0}}
