"""Issue 38 end to end: a run over a golden set with queries marked answerable: false. They leave the means (listed),
get the verdict ``unanswerable``, and are judged for abstention; every run has summary.calibration (MTEB's nAUC) and
summary.abstention, which report.md, report.html and the gate read. The scores are an external TREC run, so each
number below is worked from them by hand."""

from __future__ import annotations

import json
import math

import pytest

import harness
from harness.result.model import Result

CORPUS = [("d1", "alpha text"), ("d2", "beta text"), ("d3", "gamma text"), ("d4", "delta text")]
GOLD = [{"id": "a1", "query": "one", "relevant": ["d1"]},
        {"id": "a2", "query": "two", "relevant": ["d2"]},
        {"id": "a3", "query": "three", "relevant": ["d3"]},
        {"id": "u1", "query": "four", "answerable": False},
        {"id": "u2", "query": "five", "answerable": False, "tags": {"topic": "x"}}]
# query: (doc, score) by rank. a1 finds d1 first (nDCG@10 1), a2 finds d2 second (1 / log2 3), a3 misses (0).
RUN = {"a1": [("d1", 9.0), ("d2", 5.0)], "a2": [("d1", 6.0), ("d2", 5.5)], "a3": [("d4", 4.0), ("d1", 3.0)],
       "u1": [("d1", 7.0), ("d2", 2.0)], "u2": [("d4", 3.0)]}


def _config(tmp_path, **extra):
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "title": "", "text": t}) + "\n"
                                                   for d, t in CORPUS))
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GOLD))
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} {i + 1} {s} ext\n" for q, hits in RUN.items()
                                               for i, (d, s) in enumerate(hits)))
    return {"name": "calib", "corpus": {"path": str(tmp_path / "corpus.jsonl")}, "chunking": {"strategy": "none"},
            "goldset": {"path": str(tmp_path / "gold.jsonl")},
            "retriever": {"kind": "external", "path": str(tmp_path / "run.trec")},
            "cutoff": {"k": 2}, "depth": 10, "metrics": ["ndcg@10", "rr@10"], **extra}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("calib")
    result = harness.run(_config(tmp), out=tmp / "out")
    return result, tmp / "out"


def test_unanswerable_queries_leave_the_means_listed_with_their_own_verdict(run):
    result, _ = run
    s = result.summary
    assert s.doc["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3) + 0) / 3)
    for level in ("doc", "chunk"):
        c = s.level_counts(level)
        assert (c.judged_queries, c.evaluated_queries, c.unanswerable_queries) == (5, 3, 2)
        assert c.unanswerable_query_ids == ["u1", "u2"] and c.no_relevant_query_ids == []
    assert [q.verdict.kind for q in result.queries] == ["ok", "ok", "missing_document", "unanswerable", "unanswerable"]
    assert result.query("u1").verdict.detail == {"top_score": 7.0}
    assert s.verdicts.counts.unanswerable == 2


def trapezoid(curve):
    return sum(0.1 * (a + b) / 2 for a, b in zip(curve, curve[1:]))


def test_calibration_is_mteb_nauc_over_the_counted_queries(run):
    c = run[0].summary.calibration
    assert (c.metric, c.level, c.queries) == ("ndcg@10", "doc", 3)
    # top scores 9, 6, 4 rank a1, a2, a3 as their nDCG does (1, 0.63, 0): the oracle itself
    assert c.nauc_top_score == pytest.approx(1.0)
    # margins 4, 0.5, 1 and spreads 2, 0.25, 0.5 both abstain on a2 first, then a3. With 3 queries, round(r * 3)
    # abstains on none at r = 0, 0.1; one at 0.2 to 0.4; two from 0.5 (1.5 rounds to 2) to 0.9 (capped at n - 1).
    v1, v2 = 1.0, 1 / math.log2(3)
    mean = (v1 + v2) / 3
    kept = [mean, mean] + [(v1 + 0) / 2] * 3 + [v1] * 5
    oracle = [mean, mean] + [(v1 + v2) / 2] * 3 + [v1] * 5
    expected = (trapezoid(kept) - 0.9 * mean) / (trapezoid(oracle) - 0.9 * mean)
    assert c.nauc_margin == pytest.approx(expected) and c.nauc_spread == pytest.approx(expected)
    h = c.top_scores  # top scores 9, 6, 4 (ok, ok, missing_document), 7, 3 (unanswerable) over 20 bins of [3, 9]
    assert (h.edges[0], h.edges[-1], len(h.edges)) == (3.0, 9.0, 21)
    assert (sum(h.ok), sum(h.failing), sum(h.unanswerable), h.without_hits) == (2, 1, 2, 0)
    assert h.unanswerable[0] == 1 and h.ok[-1] == 1


def test_the_suggested_threshold_and_both_rates(run):
    a = run[0].summary.abstention
    # answerable top scores 9, 6, 4; unanswerable 7, 3. t = 4: nothing lost, u1 answered: 0 + 1/2, the least sum
    assert (a.threshold, a.threshold_from, a.suggested_threshold) == (4.0, "suggested", 4.0)
    assert (a.false_answer_rate, a.lost_answer_rate, a.false_answers, a.lost_answers) == (0.5, 0.0, 1, 0)
    assert (a.unanswerable_queries, a.answerable_queries, a.false_answer_query_ids) == (2, 3, ["u1"])


def test_summary_report_page_and_gate_read_the_same_numbers(run):
    result, out = run
    written = Result.from_dict(json.loads((out / "results.json").read_text()))
    assert written.summary.abstention == result.summary.abstention
    assert written.summary.calibration == result.summary.calibration
    md = (out / "report.md").read_text()
    assert "| false answer rate | 50.0% (1 of 2) |" in md and "| nAUC top score | 1.0000 |" in md
    assert "Answered though unanswerable: u1." in md
    page = (out / "report.html").read_text()
    assert 'id="top-score-histogram"' in page and "<td>lost answer rate</td><td>0.0% (0 of 3)</td>" in page
    outcome = harness.gate(written, ["abstention.false_answer_rate <= 0.1", "abstention.lost_answer_rate <= 0.1",
                                     "calibration.nauc_top_score >= 0.9"])
    assert [(r.passed, r.observed) for r in outcome.results] == [(False, 0.5), (True, 0.0), (True, 1.0)]
    assert outcome.results[0].message == ("abstention.false_answer_rate is 0.5000 (1 of 2 unanswerable queries at "
                                          "threshold 4, suggested)")


def test_a_given_threshold_is_used_and_the_suggested_one_still_shown(tmp_path):
    result = harness.run(_config(tmp_path, abstention={"threshold": 6.5}))
    a = result.summary.abstention
    # answered at 6.5: a1 (9), u1 (7); lost a2 (6) and a3 (4)
    assert (a.threshold, a.threshold_from, a.suggested_threshold) == (6.5, "given", 4.0)
    assert (a.false_answer_rate, a.lost_answer_rate) == (0.5, pytest.approx(2 / 3))


@pytest.mark.parametrize("value, says", [("'0.4'", "is text here (quoted)"), ("high", "Input should be a valid number"),
                                         ("true", "is a boolean here"), ("[0.4]", "Input should be a valid number"),
                                         # YAML reads a plain inf as text: "write it without quotes" misled
                                         ("inf", "is not a finite number"), (".nan", "Input should be a finite number")])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_threshold_that_is_not_a_number_is_one_located_line(tmp_path, value, says, command):
    from clihelp import assert_input_error, harness as cli

    cfg = _config(tmp_path)
    text = json.dumps({k: v for k, v in cfg.items()}).replace('"depth": 10', f'"depth": 10, "abstention": '
                                                                             f'{{"threshold": {value}}}')
    (tmp_path / "c.yaml").write_text(text)
    proc = cli(command, tmp_path / "c.yaml", *(["--out", tmp_path / "out"] if command == "run" else []))
    assert_input_error(proc, f"{tmp_path / 'c.yaml'}: invalid config")
    lines = [line for line in proc.stderr.splitlines() if "abstention.threshold" in line]
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("  - abstention.threshold: ")
    assert not (tmp_path / "out").exists()


def test_a_golden_set_of_unanswerable_queries_only_measures_nothing(tmp_path):
    from clihelp import harness as cli

    cfg = _config(tmp_path, evaluation={"query_policy": "zero"})
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GOLD if r.get("answerable") is False))
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    proc = cli("validate", tmp_path / "c.yaml")
    assert proc.returncode == 2 and "every checkable query (2) is marked answerable: false" in proc.stderr


def test_a_hand_edited_abstention_count_is_refused(run):
    from harness.core.errors import InputError

    data = json.loads((run[1] / "results.json").read_text())
    data["summary"]["abstention"]["unanswerable_queries"] = 1
    with pytest.raises(InputError) as info:
        Result.from_dict(data)
    assert info.value.problems == ["results.json: summary.abstention.unanswerable_queries: says 1, but 2 queries "
                                   "have the verdict unanswerable (edited by hand?)"]
    data["summary"]["abstention"]["false_answer_rate"] = "0.5"
    with pytest.raises(InputError) as info:
        Result.from_dict(data)
    assert any(p.startswith("results.json: summary.abstention.false_answer_rate:") for p in info.value.problems)
