"""The verdicts as results.json records them: one query's ``Verdict`` and a run's ``VerdictSummary`` (counts and
shares per kind, flags, slices, where the evidence was, advice). The kinds come from ``diagnostics.kinds``."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

from ..diagnostics.kinds import FLAGS, KINDS
from .records import Count, GeometryCounts, MetricValue, Record

Kind = Literal[KINDS]  # type: ignore[valid-type]
Flag = Literal[FLAGS]  # type: ignore[valid-type]
JsonObject = dict[str, JsonValue]


class Verdict(Record):
    """One query's diagnosis (``harness.diagnostics.verdicts``): exactly one kind, its reason, the evidence, any flags."""

    kind: Kind
    reason: str
    detail: JsonObject
    flags: list[Flag]

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")


VerdictRecord = Verdict  # the name this model had while it only validated loaded files


class KindCounts(Record):
    """One count per verdict kind (fields = ``KINDS``, checked by a test)."""

    goldset_error: Count
    unanswerable: Count = 0  # (absent from results written before answerable: false)
    no_gold: Count
    missing_document: Count
    wrong_chunk: Count
    incomplete: Count = 0  # (absent from results written before evidence groups)
    buried_evidence: Count
    ok: Count


class KindShares(Record):
    goldset_error: float
    unanswerable: float = 0.0
    no_gold: float
    missing_document: float
    wrong_chunk: float
    incomplete: float = 0.0
    buried_evidence: float
    ok: float


class FlagCounts(Record):
    partial: Count
    noisy_context: Count
    unjudged_in_window: Count


class WhereCounts(Record):
    beyond_cutoff: Count
    not_retrieved: Count
    near_cutoff: Count
    absent_from_run: Count  # the run has no ranking for the query at all (an external run that lacks it)


class VerdictSummary(Record):
    """``diagnostics.summarize_verdicts``."""

    total: Count
    counts: KindCounts
    shares: KindShares
    flags: FlagCounts
    by_slice: dict[str, dict[str, KindCounts]]  # tag -> value -> counts
    by_where: WhereCounts
    # kind -> "level.metric" -> mean over the kind's queries counted at that level (absent when none is)
    metric_means: dict[Kind, dict[str, MetricValue]]
    wrong_chunk_possible: bool
    advice: list[str]
    geometry: GeometryCounts | None = None  # (absent from results written before it was counted)
    # queries per stage that lost their evidence (``diagnostics.stages``); null: the retriever has no stages
    lost_at: dict[str, Count] | None = None
