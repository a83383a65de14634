"""A run's ``summary.calibration`` and ``summary.abstention``, computed once from its ranked lists, its metric table
and its verdicts (the definitions: ``metrics.calibration``)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config.schema import ExperimentConfig
from ..core.types import GoldSet
from ..diagnostics.kinds import FAILING
from ..hits.table import HitTable
from ..metrics.calibration import confidences, confidences_of_lists, histogram, nauc, rates_at, suggested_threshold
from ..metrics.spec import parse_metrics
from ..result.calibration import Abstention, Calibration, ScoreHistogram

LEVEL = "doc"  # as a sweep ranks runs: the first metric at doc level


def calibration_metric(config: ExperimentConfig) -> str:
    """nDCG@10 when the config computes it, else its first metric (canonical names)."""
    names = [s.name for s in parse_metrics(config.metrics)]
    return "ndcg@10" if "ndcg@10" in names else names[0]


def query_confidences(lists: Sequence) -> np.ndarray:
    """(Q, 3): each query's top score, margin and spread, from every hit of its list (a HitTable read by slices)."""
    if isinstance(lists, HitTable):
        return confidences_of_lists(lists.offsets, lists.scores)
    return np.array([confidences([h.score for h in ranked.hits]) for ranked in lists]).reshape(-1, 3)


def calibrate(config: ExperimentConfig, gold: GoldSet, lists: Sequence, table, kinds: np.ndarray
              ) -> tuple[Calibration, Abstention]:
    """``table``: the doc level's ``MetricTable`` (its ``included`` mask: the answerable queries); ``kinds``: each
    query's verdict kind, in golden-set order."""
    conf = query_confidences(lists)
    metric = calibration_metric(config)
    counted = np.asarray(table.included, dtype=bool)
    values = np.asarray(table.column(metric), dtype=float)[counted]
    naucs = [nauc(conf[counted, j], values) for j in range(3)]
    marked = np.array([q in gold.unanswerable for q in gold.query_ids()], dtype=bool)
    tops = conf[:, 0]
    failing = np.isin(kinds, np.array(FAILING, dtype=object))
    edges, counts = histogram(tops, {"ok": (kinds == "ok") & ~marked, "failing": failing & ~marked,
                                     "unanswerable": marked})
    calibration = Calibration(
        metric=metric, level=LEVEL, queries=int(counted.sum()),
        nauc_top_score=naucs[0], nauc_margin=naucs[1], nauc_spread=naucs[2],
        top_scores=ScoreHistogram(edges=edges, **counts, without_hits=int((~np.isfinite(tops)).sum())))
    answerable, unanswerable = tops[counted], tops[marked]
    suggested = suggested_threshold(answerable, unanswerable)
    given = config.abstention.threshold
    threshold = float(given) if given is not None else suggested
    rates = rates_at(threshold, answerable, unanswerable) if threshold is not None else None
    ids = gold.query_ids()
    false_ids = [ids[i] for i in np.flatnonzero(marked & (tops >= threshold))] if threshold is not None else []
    abstention = Abstention(
        threshold=threshold, threshold_from="given" if given is not None else "suggested",
        suggested_threshold=suggested,
        false_answer_rate=rates.false_answer_rate if rates else None,
        lost_answer_rate=rates.lost_answer_rate if rates else None,
        false_answers=rates.false_answers if rates else 0, lost_answers=rates.lost_answers if rates else 0,
        unanswerable_queries=int(marked.sum()), answerable_queries=int(counted.sum()),
        false_answer_query_ids=false_ids)
    return calibration, abstention
