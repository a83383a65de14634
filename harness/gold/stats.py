"""``harness goldset stats``: what a golden set holds (queries, judgments per query, grades, evidence coverage,
slices) and, given a run, the minimum detectable effect: the smallest difference in a metric's mean that a paired
two-sided test at alpha 0.05 finds with 80% power over these queries. It is computed from the run's per-query
standard deviation (counted queries only, ``counted`` flags), taking the paired differences' spread to be about the
metric's own: MDE = (z(1 - alpha/2) + z(power)) * sd / sqrt(n)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

from ..core.errors import InputError
from ..result.model import Result
from .load import RawQuery

ALPHA, POWER = 0.05, 0.8


def goldset_stats(raw: Sequence[RawQuery]) -> dict:
    per_query = [len(q.relevant) for q in raw]
    judgments = [j for q in raw for j in q.relevant]
    relevant = [j for j in judgments if j.grade > 0]
    with_evidence = sum(bool(j.evidence) for j in relevant)
    grades = Counter(j.grade for j in judgments)
    slices: dict[str, Counter] = {}
    for q in raw:
        for tag, value in q.tags.items():
            slices.setdefault(tag, Counter())[value] += 1
    return {
        "queries": len(raw),
        "judgments": len(judgments),
        "judgments_per_query": {"mean": round(sum(per_query) / len(per_query), 4) if per_query else 0.0,
                                "min": min(per_query, default=0), "max": max(per_query, default=0)},
        # (the unanswerable ones among them: marked answerable: false, judged for abstention)
        "queries_without_relevant": sum(not any(j.grade > 0 for j in q.relevant) for q in raw),
        "unanswerable_queries": sum(not q.answerable for q in raw),
        "grades": {str(g): grades[g] for g in sorted(grades)},
        "evidence": {"relevant_judgments": len(relevant), "with_evidence": with_evidence,
                     "evidence_spans": sum(len(j.evidence) for j in relevant),
                     "coverage": round(with_evidence / len(relevant), 4) if relevant else 0.0},
        "slices": {tag: dict(sorted(c.items())) for tag, c in sorted(slices.items())},
    }


def pick_metric(result: Result, metric: str | None) -> tuple[str, str]:
    """(level, name): ``metric`` as given (``chunk.`` prefix for the chunk level), else ndcg@10 when the run has
    it, else the run's first doc-level metric."""
    names = list(result.summary.doc)
    if metric:
        level, _, name = metric.rpartition(".") if metric.startswith(("doc.", "chunk.")) else ("doc", "", metric)
        have = list(result.summary.means(level))
        if name not in have:
            raise InputError(f"--metric {metric}: not in the run {result.name!r} (its {level} metrics: "
                             f"{', '.join(have)})")
        return level, name
    if not names:
        raise InputError(f"run {result.name!r} has no metrics")
    return "doc", "ndcg@10" if "ndcg@10" in names else names[0]


def detectable_effect(result: Result, metric: str | None = None) -> dict:
    from scipy.stats import norm  # heavy: only when a run is given

    level, name = pick_metric(result, metric)
    from ..result import querycolumns

    columns = querycolumns.of(result)  # the counted queries' values, not their records (a large run's are spooled)
    values = columns.value(level, name)[columns.counted[level]].tolist()
    n = len(values)
    out = {"run": result.name, "metric": f"{level}.{name}" if level == "chunk" else name, "queries": n,
           "alpha": ALPHA, "power": POWER, "mean": None, "sd": None, "mde": None}
    if n < 2:
        return out
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    z = norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER)
    out.update(mean=round(mean, 4), sd=round(sd, 4), mde=round(z * sd / math.sqrt(n), 4))
    return out
