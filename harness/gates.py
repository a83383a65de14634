"""Pre-release gates: rules over a saved run (and optionally a baseline) -> pass/fail with reasons.

Rules file (YAML), a list under ``rules:``; each rule is a string or a mapping:
  - "chunk.recall@5 >= 0.80"                       # absolute threshold on a metric, doc (default) or chunk level
  - {check: "doc.ndcg@10 >= 0.7", slice: {topic: billing}}   # the same, on one slice
  - "buried_evidence <= 0.10"                      # a verdict share (of all queries)
  - {regression: doc.ndcg@10, budget: 0.02}        # fails only if the drop exceeds the budget AND is significant
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import yaml

from .compare import compare_runs, split_metric
from .diagnostics import KINDS
from .errors import InputError

_CHECK = re.compile(r"^\s*(?P<lhs>[A-Za-z0-9_.@()=,\-]+)\s*(?P<op><=|>=|<|>)\s*(?P<value>-?[0-9.]+)\s*$")
OPS = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str  # metric | verdict | regression
    target: str
    op: str = ""
    value: float = 0.0
    slice: tuple = ()
    budget: float = 0.0


@dataclass(frozen=True)
class GateResult:
    rule: Rule
    passed: bool
    observed: float | None
    message: str


def load_rules(path: Path) -> list[Rule]:
    if not path.is_file():
        raise InputError(f"{path}: rules file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from None
    items = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: expected a mapping with a non-empty list under 'rules'")
    rules, problems = [], []
    for i, item in enumerate(items):
        where = f"rules.{i}"
        try:
            rules.append(_parse_rule(item))
        except (InputError, ValueError) as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise InputError(f"{path}: invalid rules", problems)
    return rules


def _parse_rule(item) -> Rule:
    if isinstance(item, str):
        item = {"check": item}
    if not isinstance(item, dict):
        raise InputError("expected a string like 'chunk.recall@5 >= 0.8' or a mapping")
    unknown = set(item) - {"check", "slice", "regression", "budget", "name"}
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}; expected check, slice, regression, budget, name")
    if "regression" in item:
        level, metric = split_metric(str(item["regression"]))
        budget = float(item.get("budget", 0.0))
        return Rule(item.get("name") or f"no significant regression of {level}.{metric} beyond {budget}",
                    "regression", f"{level}.{metric}", budget=budget)
    m = _CHECK.match(str(item.get("check", "")))
    if not m:
        raise InputError(f"cannot read check {item.get('check')!r}; expected e.g. 'chunk.recall@5 >= 0.80'")
    lhs, op, value = m["lhs"], m["op"], float(m["value"])
    sl = tuple(sorted((str(k), str(v)) for k, v in (item.get("slice") or {}).items()))
    if lhs in KINDS:
        if sl:
            raise InputError("verdict-share rules take no slice")
        return Rule(item.get("name") or f"{lhs} share {op} {value}", "verdict", lhs, op, value)
    level, metric = split_metric(lhs)
    label = f"{level}.{metric} {op} {value}" + (f" on {', '.join(f'{k}={v}' for k, v in sl)}" if sl else "")
    return Rule(item.get("name") or label, "metric", f"{level}.{metric}", op, value, sl)


def _metric_value(result: dict, rule: Rule) -> tuple[float | None, int]:
    level, metric = rule.target.split(".", 1)
    if not rule.slice:
        if metric not in result["summary"][level]:
            raise InputError(f"metric {rule.target} is not in this run; it has {', '.join(result['summary'][level])}")
        return result["summary"][level][metric], result["summary"]["counts"][level]["evaluated_queries"]
    rows = [q for q in result["queries"] if all(q["tags"].get(k) == v for k, v in rule.slice)
            and q["n_relevant"][level] > 0]
    if not rows:
        return None, 0
    return sum(q["metrics"][level][metric] for q in rows) / len(rows), len(rows)


def evaluate_gates(result: dict, rules: list[Rule], baseline: dict | None = None) -> list[GateResult]:
    out: list[GateResult] = []
    regressions = [r for r in rules if r.kind == "regression"]
    if regressions and baseline is None:
        raise InputError("regression rules need --baseline reports/<main>/results.json")
    comparison = {}
    if regressions:
        c = compare_runs([baseline, dict(result, name=result["name"] + " (candidate)")],
                         [r.target for r in regressions])
        comparison = {row["metric"]: row for row in c["rows"]}
    for rule in rules:
        if rule.kind == "verdict":
            share = result["summary"]["verdicts"]["shares"][rule.target]
            ok = OPS[rule.op](share, rule.value)
            out.append(GateResult(rule, ok, share, f"{rule.target} share is {share:.3f} "
                                                    f"({result['summary']['verdicts']['counts'][rule.target]} queries)"))
        elif rule.kind == "metric":
            value, n = _metric_value(result, rule)
            if value is None:
                out.append(GateResult(rule, False, None, "no queries with relevant gold in this slice"))
                continue
            out.append(GateResult(rule, OPS[rule.op](value, rule.value), value, f"{rule.target} is {value:.4f} over {n} queries"))
        else:
            row = comparison[rule.target]
            dropped = -row["delta"] > rule.budget
            failed = dropped and row["significant"]
            msg = (f"delta {row['delta']:+.4f} (95% CI {row['ci95'][0]:+.4f}..{row['ci95'][1]:+.4f}), "
                   f"corrected p {row['p_corrected']:.4f}, budget {rule.budget}")
            if dropped and not row["significant"]:
                msg += f"; the drop is not significant (MDE {row['mde']:.4f})"
            out.append(GateResult(rule, not failed, row["delta"], msg))
    return out


def summary_markdown(name: str, results: list[GateResult]) -> str:
    failed = sum(not r.passed for r in results)
    head = f"## Retrieval gate for `{name}`: {'PASS' if not failed else f'FAIL ({failed} of {len(results)} rules)'}"
    rows = [f"| {'✅' if r.passed else '❌'} | {r.rule.name} | {r.message} |" for r in results]
    return "\n".join([head, "", "| | rule | observed |", "|---|---|---|", *rows]) + "\n"


def junit_xml(name: str, results: list[GateResult]) -> str:
    suite = ET.Element("testsuite", name=f"harness gate {name}", tests=str(len(results)),
                       failures=str(sum(not r.passed for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="harness.gate", name=r.rule.name)
        if not r.passed:
            ET.SubElement(case, "failure", message=r.message).text = r.message
        else:
            ET.SubElement(case, "system-out").text = r.message
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
