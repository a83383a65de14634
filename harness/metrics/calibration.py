"""Can a run's scores tell a miss? Confidence per query, MTEB's nAUC, and abstention at a score threshold.

Confidence of a query, from the scores of its ranked list (MTEB's ``confidence_scores``):
- ``top_score``: the highest score; ``margin``: the highest minus the second (0 with one hit); ``spread``: the
  population standard deviation of every score of the list (0 with one hit). A query with no hit is the least
  confident on every measure (-inf; MTEB gives 0, which outranks negative scores).

nAUC (MTEB ``nauc``, arXiv:2402.12997): abstain on the least confident share r of the queries (r = 0, 0.1, ..., 0.9;
``round(r * n)`` queries, at most n - 1); the curve is the metric's mean over the queries kept (a cut inside a
group of equal confidences keeps each at the group's mean value, as MTEB does since its #5613); its area
(trapezoids over r) is scaled between the flat curve's (no skill: the mean at r = 0 over the whole range,
0.9 x mean) and the oracle's (abstaining on the lowest metric values first):
(AUC - flat) / (oracle - flat). 1 is the oracle, 0 no better than abstaining at random, below 0 worse. None when
the oracle is no better than flat (every query has the same value, or fewer than two queries).

Abstention at a threshold t: a query is answered when its top score is at least t. The false answer rate is the
share of unanswerable queries answered; the lost answer rate the share of answerable queries not answered. The
suggested threshold minimises their sum over the candidates: every distinct top score, and one just above the
highest (answer nothing); a rate with no query to measure adds 0; among equal sums the lowest threshold (the one
answering most) wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

RULE = ("confidence of a query: its top score, the margin between its first two scores, the spread (population "
        "std) of its scores (no hit: least confident); nAUC: MTEB's normalised area under the metric-vs-abstention-"
        "rate curve (rates 0 to 0.9), between the flat curve (0) and the oracle (1); a query is answered when its top "
        "score >= the threshold; false answer rate: unanswerable queries answered; lost answer rate: answerable "
        "(counted) queries not answered; suggested threshold: minimises their sum over the run's top scores, the "
        "lowest of equal sums")
ABSTENTION_RATES = np.linspace(0, 1, 11)[:-1]  # MTEB's: 0.0, 0.1, ..., 0.9
CONFIDENCES = ("top_score", "margin", "spread")


def confidences(scores: Sequence[float]) -> tuple[float, float, float]:
    """(top score, margin, spread) of one query's list scores (see the module)."""
    s = np.asarray(scores, dtype=float)
    if not len(s):
        return -np.inf, -np.inf, -np.inf
    top2 = np.sort(s)[::-1][:2]
    return float(top2[0]), float(top2[0] - top2[1]) if len(top2) > 1 else 0.0, float(np.std(s))


def confidences_of_lists(offsets: np.ndarray, scores: np.ndarray, block: int = 1 << 22) -> np.ndarray:
    """(Q, 3): ``confidences`` of every query at once, query i's scores being ``scores[offsets[i]:offsets[i + 1]]``
    (a run's columns: a Python call per query took ~70 us, over a minute for 1M queries). Read ``block`` hits at a
    time, so the temporary arrays stay a few tens of MB whatever the run's size."""
    offsets = np.asarray(offsets, dtype=np.int64)
    out = np.full((len(offsets) - 1, 3), -np.inf)
    first = 0
    while first < len(offsets) - 1:
        last = max(int(np.searchsorted(offsets, offsets[first] + block, side="right")) - 1, first + 1)
        lo, hi = int(offsets[first]), int(offsets[last])
        out[first:last] = _block_confidences(offsets[first:last + 1] - lo, np.asarray(scores[lo:hi], dtype=float))
        first = last
    return out


def _block_confidences(offsets: np.ndarray, scores: np.ndarray) -> np.ndarray:
    lengths = np.diff(offsets)
    out = np.full((len(lengths), 3), -np.inf)
    has = lengths > 0
    if not has.any():
        return out
    rising = np.diff(scores) > 0
    inner = offsets[1:-1]
    rising[inner[(inner > 0) & (inner < len(scores))] - 1] = False  # one query's last hit to the next one's first
    if rising.any():  # not in descending order within a query (a run ordered by rank): sort each query's scores
        scores = scores[np.lexsort((-scores, np.repeat(np.arange(len(lengths)), lengths)))]
    starts, n = offsets[:-1][has], lengths[has]
    top = scores[starts]
    second = np.where(n > 1, scores[np.minimum(starts + 1, len(scores) - 1)], top)
    mean = np.add.reduceat(scores, starts) / n
    spread = np.sqrt(np.add.reduceat((scores - np.repeat(mean, n)) ** 2, starts) / n)
    out[has] = np.column_stack([top, top - second, spread])
    return out


def abstention_curve(conf: np.ndarray, values: np.ndarray, rates: np.ndarray = ABSTENTION_RATES) -> np.ndarray:
    """The mean of ``values`` over the queries kept after abstaining on the least confident share r, per rate. A cut
    inside a group of equal confidences keeps each of them at the group's mean value (MTEB since #5613: what
    abstaining at random among the tied would keep on average), so the curve does not depend on query order."""
    order = np.argsort(conf, kind="stable")
    n = len(order)
    ranked_conf, ranked = conf[order], values[order]
    start = np.flatnonzero(np.r_[True, ranked_conf[1:] != ranked_conf[:-1]])
    size = np.diff(np.r_[start, n])
    ranked = np.repeat(np.add.reduceat(ranked, start) / size, size)
    # Python's round (half to even) as MTEB's: round(0.5 * 5) abstains on 2 of 5 queries, not 3
    return np.array([ranked[min(round(float(r) * n), n - 1):].mean() for r in rates])


def nauc(conf: Sequence[float], values: Sequence[float], rates: np.ndarray = ABSTENTION_RATES) -> float | None:
    """MTEB's normalised area under the abstention curve of ``values`` (one per query) ranked by ``conf``."""
    conf, values = np.asarray(conf, dtype=float), np.asarray(values, dtype=float)
    if len(values) < 2:
        return None
    raw = _trapezoid(abstention_curve(conf, values, rates), rates)
    oracle_curve = abstention_curve(values, values, rates)
    oracle = _trapezoid(oracle_curve, rates)
    flat = oracle_curve[0] * (rates[-1] - rates[0])
    if oracle == flat:
        return None
    return float((raw - flat) / (oracle - flat))


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


@dataclass(frozen=True)
class Rates:
    threshold: float
    false_answers: int  # unanswerable queries answered (top score >= threshold)
    unanswerable: int
    lost_answers: int  # answerable queries not answered (top score < threshold, or no hit)
    answerable: int

    @property
    def false_answer_rate(self) -> float | None:
        return self.false_answers / self.unanswerable if self.unanswerable else None

    @property
    def lost_answer_rate(self) -> float | None:
        return self.lost_answers / self.answerable if self.answerable else None


def rates_at(threshold: float, answerable_top: Sequence[float], unanswerable_top: Sequence[float]) -> Rates:
    """Both rates at ``threshold``; the inputs are top scores (-inf: no hit, never answered)."""
    a, u = np.asarray(answerable_top, dtype=float), np.asarray(unanswerable_top, dtype=float)
    return Rates(float(threshold), int((u >= threshold).sum()), len(u), int((a < threshold).sum()), len(a))


def suggested_threshold(answerable_top: Sequence[float], unanswerable_top: Sequence[float]) -> float | None:
    """The threshold minimising false answer rate + lost answer rate (see the module); None with no top score."""
    a, u = np.asarray(answerable_top, dtype=float), np.asarray(unanswerable_top, dtype=float)
    tops = np.concatenate([a, u])
    tops = np.unique(tops[np.isfinite(tops)])  # ascending
    if not len(tops):
        return None
    candidates = np.append(tops, np.nextafter(tops[-1], np.inf))
    # a query is answered when its top score >= the candidate; the sum of rates compared exactly, in whole numbers
    # (lost / |A| + false / |U|, times |A| x |U|): 1/3 + 2/3 and 1.0 are equal sums here, as they are
    lost = np.searchsorted(np.sort(a), candidates, side="left")
    false = len(u) - np.searchsorted(np.sort(u), candidates, side="left")
    total = lost * max(len(u), 1) + false * max(len(a), 1)
    return float(candidates[int(np.argmin(total))])  # argmin: the first (lowest) of equal sums


def histogram(tops: np.ndarray, groups: dict[str, np.ndarray], bins: int = 20) -> tuple[list[float], dict]:
    """Equal-width bins over the finite top scores, and each group's (boolean mask over ``tops``) count per bin;
    queries without a hit are in no bin."""
    finite = np.isfinite(tops)
    if not finite.any():
        return [], {name: [] for name in groups}
    lo, hi = float(tops[finite].min()), float(tops[finite].max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    return edges.tolist(), {name: np.histogram(tops[mask & finite], edges)[0].tolist()
                            for name, mask in groups.items()}
