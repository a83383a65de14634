"""``summary.calibration`` and ``summary.abstention`` as results.json records them (``metrics.calibration`` defines
every number; ``pipeline.calibrate`` computes them once, and the summary, report.md, the HTML and the gates read
these fields)."""

from __future__ import annotations

from pydantic import Field

from .records import Count, Record


class ScoreHistogram(Record):
    """The top score of each query in equal-width bins (``edges``: bins + 1 of them), counted per group: ``ok``
    (verdict ok), ``failing`` (a failing verdict), ``unanswerable`` (marked answerable: false); queries with no
    hit are in no bin (``without_hits``)."""

    edges: list[float]
    ok: list[Count]
    failing: list[Count]
    unanswerable: list[Count]
    without_hits: Count


class Calibration(Record):
    """How well each confidence ranks the queries by their own ``level``.``metric`` (MTEB's nAUC; null when the
    oracle is no better than flat: fewer than two counted queries, or all of one value)."""

    metric: str
    level: str
    queries: Count  # the queries counted in that metric's mean: the population of the nAUCs
    nauc_top_score: float | None
    nauc_margin: float | None
    nauc_spread: float | None
    top_scores: ScoreHistogram


class Abstention(Record):
    """Answer when the top score is at least ``threshold``: the config's ``abstention.threshold`` (``given``) or the
    suggested one (``suggested``; the rule in ``metrics.calibration``). A rate is null when no query measures it."""

    threshold: float | None
    threshold_from: str  # given | suggested
    suggested_threshold: float | None
    false_answer_rate: float | None = Field(ge=0, le=1)
    lost_answer_rate: float | None = Field(ge=0, le=1)
    false_answers: Count
    lost_answers: Count
    unanswerable_queries: Count
    answerable_queries: Count  # the queries counted in the calibration metric's mean
    false_answer_query_ids: list[str]
