"""Whether a run could measure anything: a golden set in which no query can enter a mean (every query a golden-set
error, or none with a relevant document) is refused before retrieval, so a run never passes with n/a everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..core.types import Chunk, GoldSet
    from ..gold.resolve import GoldProblem


def counted_before_retrieval(gold: GoldSet, chunks: Sequence[Chunk], problems: Sequence[GoldProblem],
                             query_policy: str, level: str) -> set[str]:
    """The queries a run will count at ``level``, known before it retrieves: ``metrics.table.included`` over the
    level's judgments as a run scores them (documents; at chunk level the evidence units, ``pipeline.levels``),
    the golden-set errors and the queries marked answerable: false. Whether a query is in the run's output does
    not matter (absent, it is scored 0)."""
    from ..gold.resolve import doc_qrels
    from ..hits.levelgrades import as_qrels
    from ..metrics.engine import relevant_counts
    from ..metrics.table import included
    from .levels import unit_qrels

    grades = doc_qrels(gold) if level == "doc" else unit_qrels(gold, chunks, problems)[1]
    qrels = as_qrels(grades)
    ids = [str(q) for q in qrels.query_ids.tolist()]
    errors = {p.query_id for p in problems}
    keep = included(relevant_counts(qrels), query_policy, np.array([q in errors for q in ids], dtype=bool),
                    np.array([q in gold.unanswerable for q in ids], dtype=bool))
    return {q for q, kept in zip(ids, keep.tolist()) if kept}


def nothing_counted(gold: GoldSet, problems: Sequence[GoldProblem], query_policy: str) -> str | None:
    """Why no query could be counted in any mean (a run would measure nothing and show n/a everywhere), or None.
    A query enters the means (``metrics.table.included``) when its judgments could be checked against the corpus
    (``problems``: the golden set's against it), it is not marked ``answerable: false`` and, under query_policy
    exclude, it has a relevant document (grade 1 or more)."""
    ids = list(gold.query_ids())
    errors = {p.query_id for p in problems}
    checkable = [q for q in ids if q not in errors]
    if not checkable:
        first = problems[0].message if problems else ""
        return (f"no query can be counted: every query ({len(ids)}) is a golden-set error (e.g. {first}), so a run "
                f"would measure nothing; fix the golden set or the corpus (harness goldset check)")
    ranked = [q for q in checkable if q not in gold.unanswerable]
    if not ranked:
        return (f"no query can be counted: every checkable query ({len(checkable)}) is marked answerable: false, so "
                f"no mean could be taken (nor a lost answer rate); add the questions the corpus answers, with their "
                f"relevant documents")
    if query_policy == "zero":
        return None
    relevant = _with_relevant(gold)
    if not any(q in relevant for q in checkable):
        return (f"no query can be counted: none of the {len(checkable)} checkable queries has a relevant document "
                f"(grade 1 or more), so nothing is relevant at either level and a run would measure nothing; judge "
                f"at least one document relevant (or set evaluation.query_policy: zero to score such queries 0)")
    return None


def _with_relevant(gold: GoldSet) -> set[str]:
    """The ids of the queries with a judgment of grade 1 or more: from a loaded golden set's columns when it has
    them (no Judgment object made a judgment)."""
    j = gold.judgments
    grades, offsets = getattr(j, "grades", None), getattr(j, "query_offsets", None)
    if grades is not None and offsets is not None:
        seen = np.concatenate([[0], np.cumsum(np.asarray(grades) > 0)])
        offsets = np.asarray(offsets)
        has = seen[offsets[1:]] - seen[offsets[:-1]] > 0
        return {str(q) for q in np.asarray(j.query_ids)[has].tolist()}
    return {x.query_id for x in j if x.relevance > 0}


def measured_something(result, cfg) -> None:
    """A run whose means are over no query at a level measured nothing there: not a run to keep or to gate
    (validate refuses most such golden sets before retrieval: ``nothing_counted``)."""
    from ..core.errors import GoldSetError

    for level in ("doc", "chunk"):
        counts = getattr(result.summary.counts, level)
        if counts.evaluated_queries == 0:
            why = (f"every query is a golden-set error ({counts.excluded_goldset_error})"
                   if counts.excluded_goldset_error == counts.judged_queries else
                   f"no query has anything relevant at {level} level")
            raise GoldSetError(f"{cfg.goldset.path}: no query can be counted at {level} level ({why}), so the run "
                               f"measured nothing there; nothing was written")
