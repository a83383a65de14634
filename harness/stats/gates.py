"""Pre-release gates: rules over a saved run (and optionally a baseline) -> pass/fail with reasons.

Rules file (YAML), a list under ``rules:``; each rule is a string or a mapping:
  - "chunk.recall@5 >= 0.80"                       # absolute threshold on a metric, doc (default) or chunk level
  - {check: "doc.ndcg@10 >= 0.7", slice: {topic: billing}}   # the same, on one slice
  - "buried_evidence <= 0.10"                      # a verdict share (of all queries)
  - {regression: doc.ndcg@10, budget: 0.02}        # non-inferiority: passes when the candidate is shown no worse
                                                   # than the baseline by more than the budget (see docs/gates.md)
  - {regression: doc.ndcg@10, budget: 0.02, policy: significant_drop}  # fails only on a significant drop
  - "latency.p95_ms <= 300"                        # the run's per-query latency (p50_ms, p95_ms, max_ms, mean_ms,
                                                   # queries_per_s), as recorded in results.json ``latency``
  - "abstention.false_answer_rate <= 0.1"          # summary.abstention / summary.calibration (``scorerules``)

A regression rule without a baseline is skipped (reported as such), not failed and not an error. A rule that cannot
be read, or that names a metric, slice tag or slice value the run does not have, is bad input: all such problems
are reported together, each located as ``rules.N``.

Regression rules decide on the paired delta's bootstrap interval (95%, widened Bonferroni-wise to 1 - 0.05/m across
the m regression rules of one gate): PASS when its lower bound is above -budget, FAIL when its upper bound is below
-budget or the point delta drops by more than the budget, INCONCLUSIVE otherwise. A threshold rule with
``confidence`` decides on its interval (bootstrap for means, Wilson for shares) the same way, and one with
``min_queries`` is INCONCLUSIVE over fewer counted queries. INCONCLUSIVE fails the gate unless accepted
(``on_inconclusive: pass``, or the gate's default).

A metric rule's observed value is the mean over the queries the run counts at the rule's level (each query's
``counted`` flag), within the slice if it has one: without a slice, exactly the summary's number.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import numpy as np

from ..metrics.spec import split_metric
from .compare import bootstrap_ci, compare_runs, paired_vectors
from .scorerules import is_score_rule, parse_score_rule, score_rule_problem, score_rule_result
from .decisions import OPS, non_inferiority, shown, significant_drop, threshold_result, wilson, written
from ..result import querycolumns
from ..core.errors import InputError
from ..result.outcomes import GateOutcome, GateResult, Rule
from ..metrics.table import mean_of
from ..result.model import KINDS, Result, as_result
from ..io.safeyaml import load_yaml
from ..io.textfile import require_file
from ..metrics.spec import parse_metric

# The threshold is any number Python's float() reads (0.8, .8, 8e-1, 0.5e0), nan and inf aside (``_threshold``).
_CHECK = re.compile(r"^\s*(?P<lhs>[A-Za-z0-9_.@()=,\-]+)\s*(?P<op><=|>=|<|>)\s*(?P<value>[^\s<>=]+)\s*$")
KEYS = ("check", "slice", "regression", "budget", "name", "policy", "on_inconclusive", "confidence", "min_queries")
POLICIES = ("non_inferiority", "significant_drop")
ON_INCONCLUSIVE = ("fail", "pass")
ALPHA = 0.05  # the gate's error rate, shared by the regression rules of one gate (Bonferroni)
LATENCY_FIELDS = ("p50_ms", "p95_ms", "max_ms", "mean_ms", "queries_per_s")


def read_rules(path: Path) -> tuple[list[Rule], list[str]]:
    """The rules that parse, and one located problem per rule that does not. A file that cannot be read at all
    raises at once: there is nothing else to report about it."""
    require_file(path, "rules file")
    data = load_yaml(path, InputError)  # bounded aliases, no cycles, duplicate keys refused
    items = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: expected a mapping with a non-empty list under 'rules'")
    rules, problems = [], []
    extra = sorted(str(k) for k in data if k != "rules")
    if extra:
        problems.append(f"unknown top-level key(s) {', '.join(extra)}; expected only 'rules'")
    for i, item in enumerate(items):
        where = f"rules.{i}"
        try:
            rules.append(parse_rule(item, where))
        except (InputError, ValueError) as exc:
            problems.append(f"{where}: {exc}")
    return rules, problems


def load_rules(path: Path) -> list[Rule]:
    """Parse a rules file; every malformed rule is reported, each with its place (``rules.N``)."""
    rules, problems = read_rules(path)
    if problems:
        raise InputError(f"{path}: invalid rules", problems)
    return rules


def check_rules(path: Path, result: Result | dict, baseline: Result | dict | None = None) -> list[Rule]:
    """Parse a rules file and check it against the run it will gate: a malformed rule and a rule that names a
    metric, tag or slice value this run does not have are all bad input, reported together in one error."""
    result, baseline = as_result(result), None if baseline is None else as_result(baseline)
    rules, problems = read_rules(path)
    problems += rule_problems(rules, result, baseline)
    if problems:
        raise InputError(f"{path}: invalid rules", sorted(problems, key=_rule_order))
    return rules


def _rule_order(problem: str) -> int:
    m = re.match(r"rules\.(\d+):", problem)
    return int(m[1]) if m else -1  # file-level problems first, then by rule, in file order


def _number(item: dict, key: str) -> float:
    value = item[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InputError(f"{key}: expected a number, got {value!r}")
    return float(value)


def parse_rule(item, where: str = "") -> Rule:
    """One rule as a gates file or the API gives it: a check string, or a mapping of ``KEYS``."""
    if isinstance(item, str):
        item = {"check": item}
    if not isinstance(item, dict):
        raise InputError("expected a string like 'chunk.recall@5 >= 0.8' or a mapping")
    unknown = set(map(str, item)) - set(KEYS)
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(KEYS)}")
    name = item.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InputError(f"name: expected a non-empty string, got {name!r}")
    # One rule, one meaning: keys that the rule's kind would ignore are errors, not silently dropped.
    if "regression" in item:
        if "check" in item:
            raise InputError("a rule has either 'check' or 'regression', not both")
        if "slice" in item:
            raise InputError("regression rules take no slice")
        level, metric = split_metric(str(item["regression"]))
        budget = _number(item, "budget") if "budget" in item else 0.0
        if budget < 0:
            raise InputError(f"budget: expected a number >= 0, got {item['budget']!r}")
        if budget >= 1 and parse_metric(metric).family != "dcg":  # every other family's values lie in [0, 1]
            # a drop of such a metric is at most 1, so the rule could never fail: a percentage meant as a fraction
            hint = f"; for {budget:g}%, write {budget / 100:g}" if budget <= 100 else ""
            raise InputError(f"budget: {level}.{metric} lies between 0 and 1, so it never drops by more than "
                             f"{budget:g} and the rule could never fail{hint}")
        if "confidence" in item or "min_queries" in item:
            raise InputError(f"{'confidence' if 'confidence' in item else 'min_queries'} applies to threshold rules "
                             f"only; a regression rule's interval is the gate's (95%, shared by its regression rules)")
        policy = _policy(item)
        on_inconclusive = _on_inconclusive(item)
        if policy == "significant_drop" and on_inconclusive is not None:
            raise InputError("on_inconclusive: a significant_drop rule is never inconclusive (it passes unless a drop "
                             "beyond the budget is significant); use policy non_inferiority, or drop on_inconclusive")
        default = (f"no significant regression of {level}.{metric} beyond {budget}" if policy == "significant_drop"
                   else f"{level}.{metric} no worse than the baseline by more than {budget}")
        return Rule(name or default, "regression", f"{level}.{metric}", budget=budget, where=where, policy=policy,
                    on_inconclusive=on_inconclusive)
    if "budget" in item:
        raise InputError("budget applies to regression rules only")
    if "policy" in item:
        raise InputError("policy applies to regression rules only (non_inferiority or significant_drop)")
    if not isinstance(item.get("check"), str):
        raise InputError(f"check: expected a string like 'chunk.recall@5 >= 0.80', got {item.get('check')!r}")
    m = _CHECK.match(item["check"])
    if not m:
        raise InputError(f"cannot read check {item.get('check')!r}; expected e.g. 'chunk.recall@5 >= 0.80'")
    lhs, op, value = m["lhs"], m["op"], _threshold(m["value"], item["check"])
    raw_slice = item.get("slice")
    if raw_slice is not None and (not isinstance(raw_slice, dict) or not raw_slice
                                  or any(isinstance(v, (dict, list)) or v is None for v in raw_slice.values())):
        raise InputError(f"slice: expected a mapping of tag to value, e.g. {{topic: billing}}, got {raw_slice!r}")
    sl = tuple(sorted((str(k), str(v)) for k, v in (raw_slice or {}).items()))
    if is_score_rule(lhs):
        return parse_score_rule(lhs, op, value, item, name, where, bool(sl))
    if lhs.startswith("latency."):
        if sl:
            raise InputError("latency rules take no slice (latency is recorded for the whole run)")
        if lhs[len("latency."):] not in LATENCY_FIELDS:
            raise InputError(f"{lhs}: latency has {', '.join(f'latency.{f}' for f in LATENCY_FIELDS)}")
        for key in ("confidence", "min_queries", "on_inconclusive"):
            if key in item:
                raise InputError(f"{key}: latency rules read the recorded latency, which has no interval; drop it")
        if value < 0:  # milliseconds and queries/s are never negative
            raise InputError(f"{lhs} is never negative, so a threshold of {value:g} is always or never met")
        return Rule(name or f"{lhs} {op} {written(value)}", "latency", lhs[len("latency."):], op, value, where=where)
    if lhs in KINDS:
        if sl:
            raise InputError("verdict-share rules take no slice")
        _unit_range(value, f"the {lhs} share")
        return Rule(name or f"{lhs} share {op} {written(value)}", "verdict", lhs, op, value, where=where,
                    **_decision_keys(item))
    if "." not in lhs and "@" not in lhs and "(" not in lhs:  # a bare word: a misspelt verdict kind, most likely
        near = difflib.get_close_matches(lhs, KINDS, n=1)
        if near:
            raise InputError(f"{lhs!r} is neither a metric nor a verdict kind; did you mean {near[0]!r}? (verdict "
                             f"kinds: {', '.join(KINDS)})")
    level, metric = split_metric(lhs)
    if parse_metric(metric).family != "dcg":  # every other family's values lie in [0, 1]
        _unit_range(value, f"{level}.{metric} value")
    label = f"{level}.{metric} {op} {written(value)}" + (f" on {', '.join(f'{k}={v}' for k, v in sl)}" if sl else "")
    return Rule(name or label, "metric", f"{level}.{metric}", op, value, sl, where=where, **_decision_keys(item))


def _policy(item: dict) -> str:
    policy = item.get("policy", POLICIES[0])
    if policy not in POLICIES:
        raise InputError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    return policy


def _on_inconclusive(item: dict) -> str | None:
    value = item.get("on_inconclusive")
    if value is not None and value not in ON_INCONCLUSIVE:  # YAML reads a bare `pass` as the text 'pass'
        raise InputError(f"on_inconclusive: expected pass or fail, got {value!r}")
    return value


def _decision_keys(item: dict) -> dict:
    """A threshold rule's confidence, min_queries and on_inconclusive, checked; without the first two the rule is
    decided on its point value and can never be inconclusive, so on_inconclusive alone means nothing."""
    out = {"on_inconclusive": _on_inconclusive(item)}
    if "confidence" in item:
        c = item["confidence"]
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 < c < 1:
            raise InputError(f"confidence: expected a number between 0 and 1 (exclusive), e.g. 0.95, got {c!r}")
        out["confidence"] = float(c)
    if "min_queries" in item:
        n = item["min_queries"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"min_queries: expected a whole number >= 1, got {n!r}")
        out["min_queries"] = n
    if out["on_inconclusive"] is not None and "confidence" not in out and "min_queries" not in out:
        raise InputError("on_inconclusive: this rule is decided on its point value and is never inconclusive; give "
                         "it confidence or min_queries, or drop on_inconclusive")
    return out




def _threshold(text: str, check: str) -> float:
    """A check's threshold: any literal float() reads (``0.5e0``, ``.5``, ``+0.5``); nan and inf compare as never
    or always met, so they are refused."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"cannot read check {check!r}: the threshold {text!r} is not a number; expected e.g. "
                         f"'chunk.recall@5 >= 0.80'") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"check {check!r}: the threshold {text!r} is not a finite number")
    return value


def _unit_range(value: float, what: str) -> None:
    """A threshold outside [0, 1] on a number that lies in it can never fail (or never pass): it is almost always a
    count or a percentage meant as a fraction, so it is refused rather than read one way."""
    if not 0.0 <= value <= 1.0:
        hint = f"; for {value:g}%, write {value / 100:g}" if 1 < value <= 100 else ""
        raise InputError(f"{what} lies between 0 and 1, so a threshold of {value:g} is always or never met{hint}")


def _has_metric(result: Result, level: str, metric: str) -> bool:
    return metric in result.summary.means(level)


def rule_problems(rules: list[Rule], result: Result, baseline: Result | None = None) -> list[str]:
    """What each rule needs from this run (and the baseline) but does not find, one located line per problem."""
    problems, first = [], {}
    for rule in rules:
        where = rule.where or repr(rule.name)
        other = first.setdefault(rule.name, where)
        if other != where:  # the summary and the JUnit testcases tell rules apart by name alone
            problems.append(f"{where}: named {rule.name!r} like {other}; give each rule its own name (or drop the "
                            f"repeated rule)")
        if rule.kind == "verdict":
            if rule.target not in KINDS:
                problems.append(f"{where}: this run has no {rule.target} share")
            continue
        if rule.kind == "score":
            problems += [f"{where}: {p}" for p in [score_rule_problem(rule, result)] if p]
            continue
        if rule.kind == "latency":
            if result.latency is None:
                problems.append(f"{where}: this run has no latency (a results.json written before latency was "
                                f"recorded: run it again)")
            continue
        level, metric = rule.target.split(".", 1)
        runs = [("this run", result)] + ([("the baseline", baseline)] if rule.kind == "regression" and baseline else [])
        for label, run in runs:
            if not _has_metric(run, level, metric):
                problems.append(f"{where}: metric {rule.target} is not in {label}; it has "
                                f"{', '.join(run.summary.means(level)) or 'none'}")
        if not rule.slice:
            continue
        columns = querycolumns.of(result)
        for key, value in rule.slice:
            values = sorted(columns.tag_values.get(key, ()))
            if not values:
                tags = sorted(columns.tags)
                problems.append(f"{where}: slice tag {key!r} is not in this run; its tags are {', '.join(tags) or 'none'}")
            elif value not in values:
                problems.append(f"{where}: slice {key}={value} matches no query; {key} values in this run are "
                                f"{', '.join(values)}")
        if not any(problem.startswith(f"{where}: slice") for problem in problems) and not _slice_mask(result, rule).any():
            problems.append(f"{where}: slice {', '.join(f'{k}={v}' for k, v in rule.slice)} matches no query")
    return problems


def _slice_mask(result: Result, rule: Rule) -> np.ndarray:
    """Which queries are in the rule's slice (every query when it has none), read from the run's columns."""
    columns = querycolumns.of(result)
    mask = np.ones(len(columns), dtype=bool)
    for key, value in rule.slice:  # YAML reads `slice: {year: 2020}` as a number; the rule's value is text
        codes, values = columns.tags.get(key), columns.tag_values.get(key, [])
        mask &= False if codes is None or value not in values else codes == values.index(value)
    return mask


def metric_value(result: Result, rule: Rule) -> tuple[float | None, int]:
    """The rule's metric over the queries the run counts at the rule's level, within the slice if the rule has
    one; None when no such query is counted. Without a slice this is the summary's mean over the same queries."""
    level, metric = rule.target.split(".", 1)
    columns = querycolumns.of(result)
    rows = _slice_mask(result, rule) & columns.counted[level]
    n = int(rows.sum())
    if not n:
        return None, 0
    if not rule.slice:  # the summary's number itself (the same mask: the schema checks the counts against it)
        return result.summary.means(level)[metric], n
    return mean_of(columns.value(level, metric)[rows]), n


def evaluate_gates(result: Result | dict, rules: list[Rule], baseline: Result | dict | None = None,
                   on_inconclusive: str | None = None) -> GateOutcome:
    """Check every rule. Regression rules need a baseline: without one they are skipped (reported, not failed),
    and the other rules are still checked. A rule that does not fit this run raises InputError (all of them).
    ``on_inconclusive`` (pass | fail, default fail) is what an INCONCLUSIVE does to a rule that does not say."""
    result, baseline = as_result(result), None if baseline is None else as_result(baseline)
    if on_inconclusive is not None and on_inconclusive not in ON_INCONCLUSIVE:
        raise InputError(f"on_inconclusive: expected pass or fail, got {on_inconclusive!r}")
    problems = rule_problems(rules, result, baseline)
    if problems:
        raise InputError("the gate rules do not fit this run", problems)
    out: list[GateResult] = []
    regressions = [r for r in rules if r.kind == "regression"]
    comparison = {}
    candidate = result
    if regressions and baseline is not None:
        candidate = result.model_copy(update={"name": result.name + " (candidate)"})
        c = compare_runs([baseline, candidate], sorted({r.target for r in regressions}))
        comparison = {row.metric: row for row in c.rows}
    # The regression rules share the gate's error rate: each interval is widened to 1 - ALPHA/m (Bonferroni).
    tested = sum(1 for r in regressions if comparison.get(r.target) and comparison[r.target].delta is not None)
    level = 1 - ALPHA / max(tested, 1)
    shares, counts = result.summary.verdicts.shares, result.summary.verdicts.counts
    for rule in rules:
        accept = rule.on_inconclusive or on_inconclusive or "fail"
        if rule.kind == "verdict":
            share = getattr(shares, rule.target)
            count = getattr(counts, rule.target)
            total = result.summary.verdicts.total
            said = f"{rule.target} share is {shown(share, rule.value, 3)} ({count} quer{'y' if count == 1 else 'ies'})"
            values = np.r_[np.ones(count), np.zeros(total - count)]
            out.append(threshold_result(rule, share, total, said, values, wilson(count, total, rule.confidence)
                                         if rule.confidence else None, "Wilson", accept))
        elif rule.kind == "score":
            out.append(score_rule_result(rule, result))
        elif rule.kind == "latency":
            value = float(getattr(result.latency, rule.target))
            out.append(GateResult(rule, OPS[rule.op](value, rule.value), value,
                                  f"latency.{rule.target} is {shown(value, rule.value, 1)} over "
                                  f"{result.latency.queries} quer{'y' if result.latency.queries == 1 else 'ies'} "
                                  f"(measured {result.latency.measured})", n=result.latency.queries))
        elif rule.kind == "metric":
            value, n = metric_value(result, rule)
            if value is None:
                where = "in this slice" if rule.slice else f"at {rule.target.split('.')[0]} level"
                out.append(GateResult(rule, False, None, f"no query is counted {where} (none with relevant, checkable "
                                                         f"gold): nothing was measured, so the rule fails", n=0))
                continue
            values = _rule_values(result, rule)
            said = f"{rule.target} is {shown(value, rule.value, 4)} over {n} quer{'y' if n == 1 else 'ies'}"
            interval = bootstrap_ci(values, confidence=rule.confidence)[:2] if rule.confidence else None
            out.append(threshold_result(rule, value, n, said, values, interval, "bootstrap", accept))
        elif baseline is None:
            out.append(GateResult(rule, False, None, "regression rules need --baseline "
                                                     "(a results.json of the main branch)", skipped=True))
        else:
            row = comparison[rule.target]
            if row.delta is None:  # like a threshold rule with no counted query: not checkable is not a pass
                out.append(GateResult(rule, False, None, f"no query is counted at {rule.target.split('.')[0]} level "
                                                         f"in both runs: the regression cannot be checked", n=0))
                continue
            if rule.policy == "significant_drop":
                out.append(significant_drop(rule, row))
                continue
            lvl, metric = rule.target.split(".", 1)
            _, xa, xb = paired_vectors(baseline, candidate, lvl, metric)
            out.append(non_inferiority(rule, row, xb - xa, level, accept))
    return GateOutcome(result.name, out)


def _rule_values(result: Result, rule: Rule) -> np.ndarray:
    """The per-query values a metric rule's mean is over (counted at its level, within its slice)."""
    level, metric = rule.target.split(".", 1)
    columns = querycolumns.of(result)
    return np.asarray(columns.value(level, metric)[_slice_mask(result, rule) & columns.counted[level]], dtype=float)
