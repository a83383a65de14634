"""A gate rule's decision from its numbers: PASS, FAIL or INCONCLUSIVE, and the one line that says why (the point
value, the interval, the threshold or budget). ``stats.gates`` reads the rules and the runs and calls these.

Regression rules: ``non_inferiority`` (the candidate must show it is no worse than the budget) or
``significant_drop`` (fails only on a significant drop beyond the budget). Threshold rules: the point value, or
with ``confidence`` an interval (bootstrap percentile for means, Wilson for shares), with ``min_queries`` a count."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .compare import bootstrap_ci, queries_needed
from ..result.outcomes import GateResult, Rule

OPS = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


def written(value: float) -> str:
    """A threshold in a rule's name as it was most likely written: ``300``, not ``300.0``; ``0.1`` as itself."""
    return str(int(value)) if value.is_integer() else repr(value)


def wilson(count: int, total: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of a share ``count / total`` at ``confidence`` (two-sided)."""
    if total == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = count / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def _percent(confidence: float) -> str:
    return f"{confidence * 100:.4g}%"


def _queries(n: int | None) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def _inconclusive(rule: Rule, value: float, message: str, accept: str, *, n: int, interval=None,
                  needed: int | None = None) -> GateResult:
    accepted = accept == "pass"
    message += "; accepted (on_inconclusive: pass)" if accepted else "; the gate fails (on_inconclusive: fail)"
    return GateResult(rule, accepted, value, message, n=n, decision="INCONCLUSIVE", interval=interval, needed=needed)


def threshold_result(rule: Rule, value: float, n: int, said: str, values: np.ndarray, interval, method: str,
                     accept: str) -> GateResult:
    """A threshold rule: on its point value (today's rule), unless it asks for min_queries or confidence."""
    what = f"{rule.target}{' share' if rule.kind == 'verdict' else ''} {rule.op} {written(rule.value)}"
    if rule.slice:
        what += f" on {', '.join(f'{k}={v}' for k, v in rule.slice)}"
    if rule.min_queries and n < rule.min_queries:
        return _inconclusive(rule, value, f"{said}: INCONCLUSIVE, not enough queries to show {what}: {_queries(n)} "
                                          f"counted, fewer than min_queries {rule.min_queries}", accept, n=n,
                             needed=rule.min_queries)
    if interval is None:
        return GateResult(rule, OPS[rule.op](value, rule.value), value, said, n=n)
    lo, hi = interval
    shown = f"{said}, {_percent(rule.confidence)} {method} interval {lo:.4f}..{hi:.4f}, threshold {rule.op} " \
            f"{written(rule.value)}"
    passes = [OPS[rule.op](end, rule.value) for end in (lo, hi)]
    if all(passes):
        return GateResult(rule, True, value, f"{shown}: PASS, the whole interval meets it", n=n, decision="PASS",
                          interval=(lo, hi))
    if not any(passes):
        return GateResult(rule, False, value, f"{shown}: FAIL, the whole interval misses it", n=n, decision="FAIL",
                          interval=(lo, hi))
    needed = queries_needed(values, abs(value - rule.value))
    more = f"; about {needed} queries would decide at this spread" if needed else ""
    return _inconclusive(rule, value, f"{shown}: INCONCLUSIVE, not enough queries to show {what}: the interval "
                                      f"straddles the threshold at {_queries(n)}{more}", accept, n=n,
                         interval=(lo, hi), needed=needed)


def non_inferiority(rule: Rule, row, d: np.ndarray, level: float, accept: str) -> GateResult:
    """PASS when the interval's lower bound is above -budget; FAIL when the drop beyond the budget is shown (the
    upper bound below -budget) or the point delta drops by more than the budget; INCONCLUSIVE otherwise."""
    lo, hi = (row.ci95 if level == 0.95 else bootstrap_ci(d, confidence=level)[:2])  # one number: compare's CI
    budget = rule.budget
    said = (f"delta {shown(row.delta, -budget, 4, '+')} ({_percent(level)} CI {lo:+.4f}..{hi:+.4f}) over "
            f"{_queries(row.n)}, {row.wins} wins, {row.losses} losses, budget {budget}")
    if -row.delta > budget:
        why = (f"the drop beyond the budget is shown (upper bound {hi:+.4f} < -{budget})" if hi < -budget
               else f"the point delta drops by more than the budget (the interval reaches {hi:+.4f})")
        return GateResult(rule, False, row.delta, f"{said}: FAIL, {why}", n=row.n, decision="FAIL",
                          interval=(lo, hi))
    if hi < -budget:
        return GateResult(rule, False, row.delta, f"{said}: FAIL, the drop beyond the budget is shown (upper bound "
                                                  f"{hi:+.4f} < -{budget})", n=row.n, decision="FAIL",
                          interval=(lo, hi))
    if not d.any():  # identical on every query: nothing to estimate (with budget 0 no interval could clear it)
        return GateResult(rule, True, row.delta, f"{said}: PASS, no query changed", n=row.n, decision="PASS",
                          interval=(lo, hi))
    if lo > -budget:
        return GateResult(rule, True, row.delta, f"{said}: PASS, shown no worse than the baseline by more than the "
                                                 f"budget (lower bound {lo:+.4f} > -{budget})", n=row.n,
                          decision="PASS", interval=(lo, hi))
    needed = queries_needed(d, row.delta + budget)
    more = (f"about {needed} queries would decide at this spread (the MDE is {row.mde:.4f} now)" if needed
            else "no golden set can show it while the delta sits on the budget")
    return _inconclusive(rule, row.delta, f"{said}: INCONCLUSIVE, not enough queries to show {rule.target} is no "
                                          f"worse than the baseline by more than {budget}: lower bound {lo:+.4f} "
                                          f"<= -{budget} at {_queries(row.n)}; {more}", accept, n=row.n,
                         interval=(lo, hi), needed=needed)


def significant_drop(rule: Rule, row) -> GateResult:
    """policy significant_drop: fails only when the drop exceeds the budget AND is significant (corrected p)."""
    dropped = -row.delta > rule.budget
    failed = dropped and row.significant
    msg = (f"delta {shown(row.delta, -rule.budget, 4, '+')} (95% CI {row.ci95[0]:+.4f}..{row.ci95[1]:+.4f}), "
           f"corrected p {row.p_corrected:.4f}, budget {rule.budget}, policy significant_drop: "
           f"{'FAIL, a significant drop beyond the budget' if failed else 'PASS'}")
    if dropped and not row.significant:
        msg += f", the drop is not significant (MDE {row.mde:.4f})"
    return GateResult(rule, not failed, row.delta, msg, n=row.n, decision="FAIL" if failed else "PASS",
                      interval=tuple(row.ci95))


def shown(value: float, threshold: float, digits: int, sign: str = "") -> str:
    """``value`` with ``digits`` decimals, or as many more as tell it apart from ``threshold`` when the two would
    print alike: a failing `doc.ndcg@10 >= 0.6771` shows `is 0.67705`, not `is 0.6771`."""
    if value != threshold:
        for places in range(digits, 18):
            shown = format(value, f"{sign}.{places}f")
            if shown != format(threshold, f"{sign}.{places}f"):
                return shown
        return format(value, sign)  # (1e-20 against 0) the shortest repr that is this value
    return format(value, f"{sign}.{digits}f")
