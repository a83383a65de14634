"""Issue 35: regression rules where the candidate proves it is not worse (non_inferiority), INCONCLUSIVE when the
golden set cannot tell, and threshold rules decided on an interval (confidence) or refused below min_queries.
Runs are built with dictated per-query values, so every delta, spread and interval is known in advance."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from clihelp import harness
from harness.core.errors import InputError
from harness.render.gate import junit_xml, summary_markdown
from harness.stats.gates import evaluate_gates, parse_rule, wilson
from resultfactory import fake_result

Z = 1.959963984540054 + 0.8416212335729143  # the MDE's z(0.975) + z(0.80)


def pair(base: list[float], cand: list[float], tags=None):
    n = len(base)
    tags = tags or [{"topic": "a"}] * n
    return (fake_result("main", base, ["ok"] * n, tags), fake_result("cand", cand, ["ok"] * n, tags))


RULE = {"regression": "ndcg@10", "budget": 0.02}


def decide(base, cand, **extra):
    b, c = pair(base, cand)
    return evaluate_gates(c, [parse_rule({**RULE, **extra})], b)[0]


@pytest.mark.parametrize("shape", ["two_losses", "uniform", "noisy"])
def test_a_drop_of_four_times_the_budget_on_25_queries_never_passes(shape):
    """The issue's case: -0.080 on 25 queries (0 wins, 2 losses) passed under the significant-drop rule."""
    base = [0.9] * 25
    if shape == "two_losses":
        base = [1.0, 1.0] + [0.9] * 23
        cand = [0.0, 0.0] + [0.9] * 23  # two queries drop 1.0 each: 2.0 / 25 = 0.080, 0 wins, 2 losses
    elif shape == "uniform":
        cand = [0.82] * 25
    else:
        rng = np.random.default_rng(7)
        d = rng.normal(0, 0.15, 25)
        d = d - d.mean() - 0.08  # a mean drop of exactly 0.08 around a wide spread
        base = [0.5] * 25
        cand = list(0.5 + d)
    res = decide(base, cand)
    assert res.observed == pytest.approx(-0.08)
    assert res.failed and res.verdict == "FAIL"
    if shape == "two_losses":  # the old rule passed it: not significant on 2 of 25 queries
        old = decide(base, cand, policy="significant_drop")
        assert old.passed and "policy significant_drop" in old.message and "not significant" in old.message


def test_a_true_no_change_on_300_queries_passes_a_budget_of_002():
    d = np.tile([0.1, -0.1], 150)  # mean 0, sd 0.1: the 95% interval is about +-1.96 * 0.1 / sqrt(300) = +-0.0113
    base = [0.5] * 300
    res = decide(base, list(0.5 + d))
    half = 1.959963984540054 * float(d.std(ddof=1)) / math.sqrt(300)
    assert res.verdict == "PASS" and res.passed
    assert res.interval[0] == pytest.approx(-half, abs=0.002) and res.interval[1] == pytest.approx(half, abs=0.002)
    assert f"lower bound {res.interval[0]:+.4f} > -0.02" in res.message


def underpowered():
    d = [0.1] * 12 + [-0.1] * 12 + [0.0]  # mean 0, sd sqrt(0.24 / 24) = 0.1: half-width 0.039 > 0.02
    return [0.5] * 25, [0.5 + x for x in d]


def test_an_underpowered_golden_set_is_inconclusive_with_the_queries_it_would_need():
    res = decide(*underpowered())
    assert res.verdict == "INCONCLUSIVE" and res.failed
    assert res.needed == math.ceil((Z * 0.1 / 0.02) ** 2) == 197  # the MDE falls to the budget at 197 queries
    assert "not enough queries to show doc.ndcg@10 is no worse than the baseline by more than 0.02" in res.message
    assert "about 197 queries would decide" in res.message and "the gate fails (on_inconclusive: fail)" in res.message
    accepted = decide(*underpowered(), on_inconclusive="pass")
    assert accepted.verdict == "INCONCLUSIVE" and accepted.passed and accepted.accepted
    b, c = pair(*underpowered())
    by_gate = evaluate_gates(c, [parse_rule(RULE)], b, on_inconclusive="pass")[0]
    assert by_gate.passed  # the gate's default for rules that do not say
    refused = evaluate_gates(c, [parse_rule({**RULE, "on_inconclusive": "fail"})], b, on_inconclusive="pass")[0]
    assert refused.failed  # a rule's own key wins


def test_inconclusive_in_summary_and_junit():
    b, c = pair(*underpowered())
    rules = [parse_rule(RULE), parse_rule({**RULE, "regression": "chunk.ndcg@10", "on_inconclusive": "pass"})]
    out = evaluate_gates(c, rules, b)
    md = summary_markdown("cand", out)
    assert md.startswith("## Retrieval gate for `cand`: FAIL (1 of 2 rules, 1 of them INCONCLUSIVE), "
                         "1 INCONCLUSIVE accepted\n")
    assert "| ❌ INCONCLUSIVE | doc.ndcg@10 no worse than the baseline by more than 0.02 | delta +0.0000" in md
    assert "| ⚠️ INCONCLUSIVE (accepted) | chunk.ndcg@10" in md
    suite = ET.fromstring(junit_xml("cand", out).split("?>", 1)[1])
    failure = suite.find("testcase/failure")
    assert suite.get("failures") == "1" and "not enough queries to show" in failure.get("message")
    # two regression rules share the gate's 5%: each interval is at 97.5%
    assert "(97.5% CI" in out[0].message
    assert out.to_dict()["results"][0]["decision"] == "INCONCLUSIVE"
    assert out.to_dict()["results"][1]["accepted_inconclusive"] is True


def test_the_gate_exits_1_on_inconclusive_and_0_when_accepted(tmp_path):
    b, c = pair(*underpowered())
    for name, run in (("base", b), ("cand", c)):
        (tmp_path / f"{name}.json").write_text(json.dumps(run.to_dict()))
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: [{regression: doc.ndcg@10, budget: 0.02}]\n")
    args = ("gate", tmp_path / "cand.json", "--rules", rules, "--baseline", tmp_path / "base.json")
    proc = harness(*args, "--junit", tmp_path / "g.xml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "❌ INCONCLUSIVE" in proc.stdout and "note: 1 rule INCONCLUSIVE" in proc.stderr
    assert "not enough queries to show" in (tmp_path / "g.xml").read_text()
    assert harness(*args, "--on-inconclusive", "pass").returncode == 0
    rules.write_text("rules: [{regression: doc.ndcg@10, budget: 0.02, on_inconclusive: pass}]\n")
    proc = harness(*args)
    assert proc.returncode == 0 and "⚠️ INCONCLUSIVE (accepted)" in proc.stdout, proc.stdout + proc.stderr


RUN = fake_result("cand", [0.9, 0.5, 0.7, 0.3, 0.8, 0.6], ["ok", "ok", "buried_evidence", "ok", "ok", "ok"],
                  [{"topic": t} for t in "aabbbb"])


def test_a_slice_under_min_queries_is_inconclusive_with_its_count():
    rule = parse_rule({"check": "ndcg@10 >= 0.8", "slice": {"topic": "a"}, "min_queries": 5})
    res = evaluate_gates(RUN, [rule])[0]
    assert res.verdict == "INCONCLUSIVE" and res.failed and res.n == 2
    assert "2 queries counted, fewer than min_queries 5" in res.message
    assert evaluate_gates(RUN, [rule], on_inconclusive="pass")[0].passed
    enough = parse_rule({"check": "ndcg@10 >= 0.5", "slice": {"topic": "b"}, "min_queries": 4})
    assert evaluate_gates(RUN, [enough])[0].verdict == "PASS"  # (0.7 + 0.3 + 0.8 + 0.6) / 4 = 0.6, 4 queries


def test_a_share_threshold_with_confidence_reads_the_wilson_interval():
    # 1 buried of 6: Wilson 95% is 0.0301..0.5635 (p = 1/6, z = 1.96)
    lo, hi = wilson(1, 6, 0.95)
    assert (round(lo, 4), round(hi, 4)) == (0.0301, 0.5635)
    straddles = evaluate_gates(RUN, [parse_rule({"check": "buried_evidence <= 0.3", "confidence": 0.95})])[0]
    assert straddles.verdict == "INCONCLUSIVE" and "95% Wilson interval 0.0301..0.5635" in straddles.message
    assert evaluate_gates(RUN, [parse_rule({"check": "buried_evidence <= 0.6", "confidence": 0.95})])[0].verdict == "PASS"
    assert evaluate_gates(RUN, [parse_rule({"check": "buried_evidence <= 0.02", "confidence": 0.95})])[0].verdict == "FAIL"
    plain = evaluate_gates(RUN, [parse_rule("buried_evidence <= 0.3")])[0]  # without the key: as before issue 35
    assert plain.passed and plain.decision == "" and plain.message == "buried_evidence share is 0.167 (1 query)"


def test_a_mean_threshold_with_confidence_reads_the_bootstrap_interval():
    values = [0.4, 0.6] * 50  # mean 0.5, sd ~0.1005: the 95% interval is about 0.5 +- 0.0197
    run = fake_result("r", values, ["ok"] * 100)
    res = evaluate_gates(run, [parse_rule({"check": "ndcg@10 >= 0.45", "confidence": 0.95})])[0]
    assert res.verdict == "PASS" and res.interval[0] == pytest.approx(0.5 - 1.96 * 0.1005 / 10, abs=0.003)
    unsure = evaluate_gates(run, [parse_rule({"check": "ndcg@10 >= 0.49", "confidence": 0.95})])[0]
    assert unsure.verdict == "INCONCLUSIVE" and "bootstrap interval" in unsure.message
    assert unsure.needed == math.ceil((Z * float(np.std(values, ddof=1)) / 0.01) ** 2)
    assert evaluate_gates(run, [parse_rule({"check": "ndcg@10 >= 0.6", "confidence": 0.95})])[0].verdict == "FAIL"


@pytest.mark.parametrize("rule, fragment", [
    ({**RULE, "policy": "strict"}, "policy: expected one of non_inferiority, significant_drop, got 'strict'"),
    ({"check": "ndcg@10 >= 0.5", "confidence": 1.0}, "confidence: expected a number between 0 and 1"),
    ({"check": "ndcg@10 >= 0.5", "confidence": 0}, "confidence: expected a number between 0 and 1"),
    ({"check": "ndcg@10 >= 0.5", "min_queries": 0}, "min_queries: expected a whole number >= 1, got 0"),
    ({"check": "ndcg@10 >= 0.5", "min_queries": 2.5}, "min_queries: expected a whole number >= 1"),
    ({**RULE, "on_inconclusive": "maybe"}, "on_inconclusive: expected pass or fail, got 'maybe'"),
    ({**RULE, "on_inconclusive": True}, "on_inconclusive: expected pass or fail"),
    ({"check": "ndcg@10 >= 0.5", "policy": "significant_drop"}, "policy applies to regression rules only"),
    ({**RULE, "policy": "significant_drop", "on_inconclusive": "pass"}, "never inconclusive"),
    ({"check": "ndcg@10 >= 0.5", "on_inconclusive": "pass"}, "give it confidence or min_queries"),
    ({**RULE, "confidence": 0.9}, "confidence applies to threshold rules only"),
    ({"check": "latency.p95_ms <= 300", "confidence": 0.9}, "latency rules read the recorded latency"),
])
def test_bad_decision_keys_are_refused(rule, fragment):
    with pytest.raises(InputError) as exc:
        parse_rule(rule)
    assert fragment in str(exc.value)


def test_bad_decision_keys_in_a_rules_file_are_located_and_exit_2(tmp_path):
    run = tmp_path / "r.json"
    run.write_text(json.dumps(RUN.to_dict()))
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {regression: ndcg@10, policy: strict}\n  - {check: 'ndcg@10 >= 0.5', confidence: 2}\n"
                     "  - {check: 'ndcg@10 >= 0.5', min_queries: 0}\n  - {regression: ndcg@10, on_inconclusive: x}\n")
    proc = harness("gate", run, "--rules", rules)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    for i in range(4):
        assert f"rules.{i}: " in proc.stderr
    assert harness("gate", run, "--rules", rules, "--on-inconclusive", "maybe").returncode == 2


def test_identical_runs_pass_even_a_budget_of_0():
    same = decide([0.5, 0.7, 0.9] * 5, [0.5, 0.7, 0.9] * 5, budget=0.0)
    assert same.verdict == "PASS" and same.message.endswith("PASS, no query changed")
    up = decide([0.5] * 30, [0.6] * 30, budget=0.0)  # every query better: shown no worse at all
    assert up.verdict == "PASS"
    mixed = decide([0.5] * 30, [0.6, 0.4] * 15, budget=0.0)  # no change on average: cannot show "not worse at all"
    assert mixed.verdict == "INCONCLUSIVE" and "no golden set can show it" in mixed.message
