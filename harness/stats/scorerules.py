"""Gate rules on what a run's scores tell (``summary.abstention``, ``summary.calibration``): e.g.
``abstention.false_answer_rate <= 0.1`` or ``calibration.nauc_top_score >= 0.2``. The value is the summary's number
as the run computed it (``pipeline.calibrate``); a null value (no query measures it) fails the rule."""

from __future__ import annotations

from ..core.errors import InputError
from ..result.outcomes import GateResult, Rule
from .decisions import OPS, shown, written

FIELDS = {
    "abstention": ("false_answer_rate", "lost_answer_rate"),
    "calibration": ("nauc_top_score", "nauc_margin", "nauc_spread"),
}
RATES = {"false_answer_rate": ("false_answers", "unanswerable_queries"),
         "lost_answer_rate": ("lost_answers", "answerable_queries")}


def is_score_rule(lhs: str) -> bool:
    return lhs.split(".", 1)[0] in FIELDS


def parse_score_rule(lhs: str, op: str, value: float, item: dict, name: str | None, where: str,
                     has_slice: bool) -> Rule:
    section, _, field = lhs.partition(".")
    if field not in FIELDS[section]:
        raise InputError(f"{lhs}: {section} has {', '.join(f'{section}.{f}' for f in FIELDS[section])}")
    if has_slice:
        raise InputError(f"{section} rules take no slice ({section} is computed over the whole run)")
    for key in ("confidence", "min_queries", "on_inconclusive"):
        if key in item:
            raise InputError(f"{key}: {section} rules read the run's {section} number, which has no interval; "
                             f"drop it")
    return Rule(name or f"{lhs} {op} {written(value)}", "score", lhs, op, value, where=where)


def score_rule_problem(rule: Rule, result) -> str | None:
    section = rule.target.split(".", 1)[0]
    if getattr(result.summary, section) is None:
        return f"this run has no {section} (a results.json written before it was computed: run it again)"
    return None


def score_rule_result(rule: Rule, result) -> GateResult:
    section, field = rule.target.split(".", 1)
    record = getattr(result.summary, section)
    value = getattr(record, field)
    if section == "abstention":
        count, of = (getattr(record, key) for key in RATES[field])
        about = (f" ({count} of {of} {'unanswerable' if field == 'false_answer_rate' else 'answerable'} queries at "
                 f"threshold {record.threshold:.6g}, {record.threshold_from})" if record.threshold is not None
                 else "")
        n = of
    else:
        about, n = f" ({record.level}.{record.metric} over {record.queries} queries)", record.queries
    if value is None:
        why = ("no query is marked answerable: false" if field == "false_answer_rate" else "no query measures it")
        return GateResult(rule, False, None, f"{rule.target} is null: {why}, so the rule fails", n=n)
    return GateResult(rule, OPS[rule.op](value, rule.value), value,
                      f"{rule.target} is {shown(value, rule.value, 4)}{about}", n=n)
