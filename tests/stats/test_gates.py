import xml.etree.ElementTree as ET

import pytest

from harness.core.errors import InputError
from harness.render.gate import junit_xml, summary_markdown
from harness.stats.gates import evaluate_gates, load_rules, parse_rule
from resultfactory import fake_result


def fake(name, ndcg, kinds, topics, gold="g", counted=None):
    return fake_result(name, ndcg, kinds, [{"topic": t} for t in topics], gold=gold, counted=counted)


RUN = fake("cand", [0.9, 0.5, 0.7, 0.3], ["ok", "ok", "buried_evidence", "missing_document"], ["a", "a", "b", "b"])


def test_thresholds_slices_and_verdict_shares():
    rules = [parse_rule(r) for r in ["ndcg@10 >= 0.55", {"check": "doc.ndcg@10 >= 0.6", "slice": {"topic": "b"}},
                                      "missing_document <= 0.25", "buried_evidence < 0.25"]]
    res = evaluate_gates(RUN, rules)
    assert [r.passed for r in res] == [True, False, True, False]
    assert res[0].observed == pytest.approx(0.6) and res[1].observed == pytest.approx(0.5)


def test_metric_rules_observe_the_counted_queries_only():
    """A query the run does not count (its flag, not its verdict kind) is in no rule's value, sliced or not."""
    run = fake("cand", [0.9, 0.0, 0.7, 0.3], ["ok", "ok", "ok", "ok"], ["a", "a", "b", "b"],
               counted=[True, False, True, True])
    res = evaluate_gates(run, [parse_rule("ndcg@10 >= 0.5"), parse_rule({"check": "ndcg@10 >= 0.5",
                                                                           "slice": {"topic": "a"}})])
    assert res[0].observed == pytest.approx((0.9 + 0.7 + 0.3) / 3) == run.summary.doc["ndcg@10"] and res[0].n == 3
    assert res[1].observed == pytest.approx(0.9) and res[1].n == 1
    none = fake("none", [0.2, 0.4], ["ok", "ok"], ["a", "b"], counted=[False, True])
    sliced = evaluate_gates(none, [parse_rule({"check": "ndcg@10 >= 0.1", "slice": {"topic": "a"}})])[0]
    assert sliced.failed and sliced.observed is None and "no query is counted in this slice" in sliced.message


def test_regression_policies_on_a_drop_of_one_query():
    """The default policy (non_inferiority) fails a point drop beyond the budget; significant_drop (today's rule
    before issue 35) passes it when it is not significant."""
    base = fake("main", [0.9] * 40, ["ok"] * 40, ["a"] * 40)
    small = fake("c1", [0.89] * 40, ["ok"] * 40, ["a"] * 40)
    large = fake("c2", [0.6] * 40, ["ok"] * 40, ["a"] * 40)
    noisy = fake("c3", [0.0] + [0.9] * 39, ["ok"] * 40, ["a"] * 40)
    rule = [parse_rule({"regression": "ndcg@10", "budget": 0.02})]
    assert rule[0].policy == "non_inferiority"
    assert evaluate_gates(small, rule, base)[0].passed  # every query drops 0.01: the interval is -0.01..-0.01
    assert not evaluate_gates(large, rule, base)[0].passed
    noisy_res = evaluate_gates(noisy, rule, base)[0]  # mean drop 0.9 / 40 = 0.0225 > budget: FAIL on the point
    assert noisy_res.failed and noisy_res.verdict == "FAIL" and noisy_res.observed == pytest.approx(-0.0225)
    old = [parse_rule({"regression": "ndcg@10", "budget": 0.02, "policy": "significant_drop"})]
    assert old[0].name == "no significant regression of doc.ndcg@10 beyond 0.02"
    noisy_old = evaluate_gates(noisy, old, base)[0]  # one query: not significant, so this policy passes it
    assert noisy_old.passed and "not significant" in noisy_old.message and "policy significant_drop" in noisy_old.message
    assert not evaluate_gates(large, old, base)[0].passed  # large and significant
    skipped = evaluate_gates(small, rule)[0]  # no baseline: reported as skipped, neither passed nor failed
    assert skipped.skipped and not skipped.passed and not skipped.failed and "need --baseline" in skipped.message


def test_rules_file_errors_listed(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_text("rules:\n  - 'ndcg@10 => 3'\n  - {check: 'ok >= 0.5', slice: {t: x}}\n  - {chek: 'x'}\n")
    with pytest.raises(InputError) as exc:
        load_rules(p)
    msg = str(exc.value)
    assert "rules.0: cannot read check" in msg and "rules.1: verdict-share rules take no slice" in msg
    assert "rules.2: unknown key(s) chek" in msg


def test_summary_and_junit():
    res = evaluate_gates(RUN, [parse_rule("ndcg@10 >= 0.55"), parse_rule("ok >= 0.9")])
    md = summary_markdown("cand", res)
    assert md.startswith("## Retrieval gate for `cand`: FAIL (1 of 2 rules)")
    suite = ET.fromstring(junit_xml("cand", res).split("?>", 1)[1])
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert [c.find("failure") is not None for c in suite.findall("testcase")] == [False, True]


def test_skipped_regression_in_summary_and_junit():
    res = evaluate_gates(RUN, [parse_rule("ndcg@10 >= 0.55"), parse_rule({"regression": "ndcg@10", "name": "a|b"})])
    assert [(r.passed, r.skipped, r.failed) for r in res] == [(True, False, False), (False, True, False)]
    md = summary_markdown("cand", res)
    assert md.startswith("## Retrieval gate for `cand`: PASS, 1 rule SKIPPED\n")
    assert "| ⏭️ SKIPPED | a\\|b | regression rules need --baseline" in md  # a '|' in a name cannot break the table
    suite = ET.fromstring(junit_xml("cand", res).split("?>", 1)[1])
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "1")
    assert [[c.tag for c in case] for case in suite.findall("testcase")] == [["system-out"], ["skipped"]]


def test_rules_that_do_not_fit_the_run_are_input_errors():
    rules = [parse_rule(r, f"rules.{i}") for i, r in enumerate(
        ["ndcg@7 >= 0.5", {"check": "ndcg@10 >= 0.5", "slice": {"topic": "c"}},
         {"check": "ndcg@10 >= 0.5", "slice": {"lang": "en"}}, {"check": "ndcg@10 >= 0.5", "slice": {"topic": "b"}}])]
    with pytest.raises(InputError) as exc:
        evaluate_gates(RUN, rules)
    assert exc.value.problems == ["rules.0: metric doc.ndcg@7 is not in this run; it has ndcg@10",
                                  "rules.1: slice topic=c matches no query; topic values in this run are a, b",
                                  "rules.2: slice tag 'lang' is not in this run; its tags are topic"]


def test_a_budget_of_1_or_more_is_refused_except_on_dcg():
    for budget in (1, 2, 1.5):
        with pytest.raises(InputError, match="budget: doc.ndcg@10 lies between 0 and 1"):
            parse_rule({"regression": "ndcg@10", "budget": budget})
    assert parse_rule({"regression": "dcg@10", "budget": 2}).budget == 2.0  # dcg is not bounded by 1
    assert parse_rule({"regression": "chunk.recall@5", "budget": 0.99}).budget == 0.99


@pytest.mark.parametrize("text, value", [("doc.ndcg@10 >= 0.5e0", 0.5), ("ndcg@10 >= .5", 0.5), ("ndcg@10>=+5E-1", 0.5),
                                         ("ndcg@10 > 1_0e-1", 1.0), ("latency.p95_ms <= 3e2", 300.0)])
def test_a_threshold_is_any_float_literal(text, value):
    assert parse_rule(text).value == value


@pytest.mark.parametrize("text, fragment", [
    ("ndcg@10 >= nan", "the threshold 'nan' is not a finite number"),
    ("latency.p95_ms <= inf", "the threshold 'inf' is not a finite number"),
    ("ndcg@10 >= -Infinity", "not a finite number"),
    ("latency.p95_ms <= 1e999", "not a finite number"),
    ("ndcg@10 >= 1.2.3", "cannot read check 'ndcg@10 >= 1.2.3': the threshold '1.2.3' is not a number"),
    ("ndcg@10 >= 0.5 0.6", "cannot read check"),
    ("latency.p95_ms <= -5", "latency.p95_ms is never negative, so a threshold of -5 is always or never met"),
    ("latency.queries_per_s >= -0.5e1", "latency.queries_per_s is never negative"),
])
def test_unreadable_or_meaningless_thresholds_are_refused(text, fragment):
    with pytest.raises(InputError) as exc:
        parse_rule(text)
    assert fragment in str(exc.value)


def test_a_negative_latency_bound_is_located_to_its_rule(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_text("rules:\n  - 'latency.p95_ms <= 300'\n  - 'latency.p95_ms <= -5'\n  - 'doc.ndcg@10 >= 0.5e0'\n")
    with pytest.raises(InputError) as exc:
        load_rules(p)
    assert exc.value.problems == ["rules.1: latency.p95_ms is never negative, so a threshold of -5 is always or "
                                  "never met"]


def test_an_observed_value_that_prints_like_its_threshold_shows_the_digits_that_differ():
    """`❌ | doc.ndcg@10 >= 0.6771 | doc.ndcg@10 is 0.6771` could not be explained: the mean was 0.67705."""
    run = fake("cand", [0.67705, 0.67705], ["ok", "buried_evidence"], ["a", "b"])
    rules = [parse_rule("doc.ndcg@10 >= 0.6771"), parse_rule("doc.ndcg@10 >= 0.5"),
             parse_rule("doc.ndcg@10 >= 0.67705"), parse_rule("buried_evidence <= 0.4999")]
    res = evaluate_gates(run, rules)
    assert [r.passed for r in res] == [False, True, True, False]
    assert [r.message.split(" over ")[0] for r in res[:3]] == ["doc.ndcg@10 is 0.67705", "doc.ndcg@10 is 0.6771",
                                                               "doc.ndcg@10 is 0.6771"]  # equal: 4 decimals
    assert res[3].message.startswith("buried_evidence share is 0.5000 (1 query)")
    md = summary_markdown("cand", res)
    assert "| ❌ | doc.ndcg@10 >= 0.6771 | doc.ndcg@10 is 0.67705 over 2 queries |" in md
    suite = ET.fromstring(junit_xml("cand", res).split("?>", 1)[1])
    assert suite.find("testcase/failure").get("message") == "doc.ndcg@10 is 0.67705 over 2 queries"


def test_a_regression_just_past_its_budget_shows_the_digits_that_pass_it():
    base = fake("main", [0.9] * 40, ["ok"] * 40, ["a"] * 40)
    cand = fake("c", [0.9 - 0.02004] * 40, ["ok"] * 40, ["a"] * 40)
    res = evaluate_gates(cand, [parse_rule({"regression": "ndcg@10", "budget": 0.02})], base)[0]
    assert res.failed and res.message.startswith("delta -0.02004 (95% CI")


def test_a_misspelt_verdict_kind_is_named_as_one():
    """'burried_evidence <= 0.1' said 'unknown metric ... known metrics: ap, dcg, ...' without the verdict kinds."""
    with pytest.raises(InputError, match=r"'burried_evidence' is neither a metric nor a verdict kind; did you mean "
                                         r"'buried_evidence'\?"):
        parse_rule("burried_evidence <= 0.1")
    assert parse_rule("ap >= 0.1").target == "doc.ap"  # a bare metric name still reads as one


def test_a_rules_threshold_is_named_as_written():
    assert parse_rule("latency.p95_ms <= 300").name == "latency.p95_ms <= 300"  # not 300.0
    assert parse_rule("buried_evidence <= 0.10").name == "buried_evidence share <= 0.1"
    assert parse_rule("ndcg@10 >= 0.55").name == "doc.ndcg@10 >= 0.55"
