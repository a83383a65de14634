"""Pre-release gates: rules over a saved run (and optionally a baseline) -> pass/fail with reasons.

Rules file (YAML), a list under ``rules:``; each rule is a string or a mapping:
  - "chunk.recall@5 >= 0.80"                       # absolute threshold on a metric, doc (default) or chunk level
  - {check: "doc.ndcg@10 >= 0.7", slice: {topic: billing}}   # the same, on one slice
  - "buried_evidence <= 0.10"                      # a verdict share (of all queries)
  - {regression: doc.ndcg@10, budget: 0.02}        # fails only if the drop exceeds the budget AND is significant
  - "latency.p95_ms <= 300"                        # the run's per-query latency (p50_ms, p95_ms, max_ms, mean_ms,
                                                   # queries_per_s), as recorded in results.json ``latency``

A regression rule without a baseline is skipped (reported as such), not failed and not an error. A rule that cannot
be read, or that names a metric, slice tag or slice value the run does not have, is bad input: all such problems
are reported together, each located as ``rules.N``.

A metric rule's observed value is the mean over the queries the run counts at the rule's level (each query's
``counted`` flag), within the slice if it has one: without a slice, exactly the summary's number.
"""

from __future__ import annotations

import difflib

import re
from pathlib import Path

import numpy as np

from .compare import compare_runs, split_metric
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
OPS = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}
KEYS = ("check", "slice", "regression", "budget", "name")
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
        raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}; expected check, slice, regression, budget, name")
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
        return Rule(name or f"no significant regression of {level}.{metric} beyond {budget}",
                    "regression", f"{level}.{metric}", budget=budget, where=where)
    if "budget" in item:
        raise InputError("budget applies to regression rules only")
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
    if lhs.startswith("latency."):
        if sl:
            raise InputError("latency rules take no slice (latency is recorded for the whole run)")
        if lhs[len("latency."):] not in LATENCY_FIELDS:
            raise InputError(f"{lhs}: latency has {', '.join(f'latency.{f}' for f in LATENCY_FIELDS)}")
        if value < 0:  # milliseconds and queries/s are never negative
            raise InputError(f"{lhs} is never negative, so a threshold of {value:g} is always or never met")
        return Rule(name or f"{lhs} {op} {_written(value)}", "latency", lhs[len("latency."):], op, value, where=where)
    if lhs in KINDS:
        if sl:
            raise InputError("verdict-share rules take no slice")
        _unit_range(value, f"the {lhs} share")
        return Rule(name or f"{lhs} share {op} {_written(value)}", "verdict", lhs, op, value, where=where)
    if "." not in lhs and "@" not in lhs and "(" not in lhs:  # a bare word: a misspelt verdict kind, most likely
        near = difflib.get_close_matches(lhs, KINDS, n=1)
        if near:
            raise InputError(f"{lhs!r} is neither a metric nor a verdict kind; did you mean {near[0]!r}? (verdict "
                             f"kinds: {', '.join(KINDS)})")
    level, metric = split_metric(lhs)
    if parse_metric(metric).family != "dcg":  # every other family's values lie in [0, 1]
        _unit_range(value, f"{level}.{metric} value")
    label = f"{level}.{metric} {op} {_written(value)}" + (f" on {', '.join(f'{k}={v}' for k, v in sl)}" if sl else "")
    return Rule(name or label, "metric", f"{level}.{metric}", op, value, sl, where=where)


def _written(value: float) -> str:
    """A threshold in a rule's name as it was most likely written: ``300``, not ``300.0``; ``0.1`` as itself."""
    return str(int(value)) if value.is_integer() else repr(value)


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


def evaluate_gates(result: Result | dict, rules: list[Rule], baseline: Result | dict | None = None) -> GateOutcome:
    """Check every rule. Regression rules need a baseline: without one they are skipped (reported, not failed),
    and the other rules are still checked. A rule that does not fit this run raises InputError (all of them)."""
    result, baseline = as_result(result), None if baseline is None else as_result(baseline)
    problems = rule_problems(rules, result, baseline)
    if problems:
        raise InputError("the gate rules do not fit this run", problems)
    out: list[GateResult] = []
    regressions = [r for r in rules if r.kind == "regression"]
    comparison = {}
    if regressions and baseline is not None:
        c = compare_runs([baseline, result.model_copy(update={"name": result.name + " (candidate)"})],
                         sorted({r.target for r in regressions}))
        comparison = {row.metric: row for row in c.rows}
    shares, counts = result.summary.verdicts.shares, result.summary.verdicts.counts
    for rule in rules:
        if rule.kind == "verdict":
            share = getattr(shares, rule.target)
            ok = OPS[rule.op](share, rule.value)
            count = getattr(counts, rule.target)
            out.append(GateResult(rule, ok, share, f"{rule.target} share is {_shown(share, rule.value, 3)} "
                                                   f"({count} quer{'y' if count == 1 else 'ies'})"))
        elif rule.kind == "latency":
            value = float(getattr(result.latency, rule.target))
            out.append(GateResult(rule, OPS[rule.op](value, rule.value), value,
                                  f"latency.{rule.target} is {_shown(value, rule.value, 1)} over "
                                  f"{result.latency.queries} quer{'y' if result.latency.queries == 1 else 'ies'} "
                                  f"(measured {result.latency.measured})", n=result.latency.queries))
        elif rule.kind == "metric":
            value, n = metric_value(result, rule)
            if value is None:
                where = "in this slice" if rule.slice else f"at {rule.target.split('.')[0]} level"
                out.append(GateResult(rule, False, None, f"no query is counted {where} (none with relevant, checkable gold)", n=0))
                continue
            out.append(GateResult(rule, OPS[rule.op](value, rule.value), value,
                                  f"{rule.target} is {_shown(value, rule.value, 4)} over {n} quer{'y' if n == 1 else 'ies'}", n=n))
        elif baseline is None:
            out.append(GateResult(rule, False, None, "regression rules need --baseline "
                                                     "(a results.json of the main branch)", skipped=True))
        else:
            row = comparison[rule.target]
            if row.delta is None:  # like a threshold rule with no counted query: not checkable is not a pass
                out.append(GateResult(rule, False, None, f"no query is counted at {rule.target.split('.')[0]} level "
                                                         f"in both runs: the regression cannot be checked", n=0))
                continue
            dropped = -row.delta > rule.budget
            failed = dropped and row.significant
            msg = (f"delta {_shown(row.delta, -rule.budget, 4, '+')} (95% CI {row.ci95[0]:+.4f}..{row.ci95[1]:+.4f}), "
                   f"corrected p {row.p_corrected:.4f}, budget {rule.budget}")
            if dropped and not row.significant:
                msg += f"; the drop is not significant (MDE {row.mde:.4f})"
            out.append(GateResult(rule, not failed, row.delta, msg, n=row.n))
    return GateOutcome(result.name, out)


def _shown(value: float, threshold: float, digits: int, sign: str = "") -> str:
    """``value`` with ``digits`` decimals, or as many more as tell it apart from ``threshold`` when the two would
    print alike: a failing `doc.ndcg@10 >= 0.6771` shows `is 0.67705`, not `is 0.6771`."""
    if value != threshold:
        for places in range(digits, 18):
            shown = format(value, f"{sign}.{places}f")
            if shown != format(threshold, f"{sign}.{places}f"):
                return shown
        return format(value, sign)  # (1e-20 against 0) the shortest repr that is this value
    return format(value, f"{sign}.{digits}f")
