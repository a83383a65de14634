"""The metric table of a run at one level, and THE rule for which queries enter a mean.

``included`` is the only place that decides it. The engine stores its answer in ``MetricTable.included``; a
pipeline run copies it into every query of the Result (``counted``), and every reader (summary, per_query.csv,
compare, gate and its slices, the HTML report and its curves, the sweep leaderboard, the verdicts' metric means)
uses those flags instead of deciding again from verdict kinds or relevant counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import chain
from typing import Collection, Sequence

import numpy as np

from ..core.errors import MetricError
from .spec import MetricSpec, parse_metric

QUERY_POLICIES = ("exclude", "zero")


def rule_text(query_policy: str) -> str:
    """The rule in words, for every result's conventions."""
    no_relevant = ("counted as 0" if query_policy == "zero" else "excluded at that level and listed")
    return ("a query enters the means of a level unless its golden-set entry cannot be checked against the corpus "
            "(goldset_error: excluded at both levels and listed, like a query without judgments); a query marked "
            "answerable: false is excluded at both levels under any policy and listed (unanswerable_queries); a "
            f"query with no relevant item at a level is {no_relevant} (query_policy {query_policy}); every other query counts, "
            "absent from the run or not (scored 0)")


def included(n_relevant: np.ndarray, query_policy: str, gold_error: np.ndarray | None = None,
             unanswerable: np.ndarray | None = None) -> np.ndarray:
    """Which queries enter the means at one level: THE rule (see ``rule_text``).

    ``n_relevant``: relevant items of each query at this level; ``gold_error``: the query's judgments could not be
    checked against the corpus (an unknown document, a quote or span not in its document); ``unanswerable``: marked
    ``answerable: false`` (nothing to rank: judged for abstention instead, under any policy). The rule is the same for
    every metric family: a query's row is either in every mean of its level or in none, so two metrics of one table
    are always over the same queries."""
    if query_policy not in QUERY_POLICIES:
        raise MetricError(f"unknown query policy {query_policy!r}; choose from {', '.join(QUERY_POLICIES)}")
    n_relevant = np.asarray(n_relevant)
    keep = np.ones(len(n_relevant), dtype=bool) if query_policy == "zero" else n_relevant > 0
    if gold_error is not None:
        keep &= ~np.asarray(gold_error, dtype=bool)
    if unanswerable is not None:
        keep &= ~np.asarray(unanswerable, dtype=bool)
    return keep


def mean_of(values) -> float:
    """THE mean of a metric over queries, wherever one is shown (summary, compare, gate and its slices, the verdicts'
    means): the values' exact sum (``math.fsum``, correctly rounded) over their count. Exact, so it does not depend
    on the order or the blocks the values are read in: a table spilled to disk, results.json's columns and a slice
    of them give one number to the last digit. ``values``: a non-empty 1-D array or sequence."""
    if not isinstance(values, np.ndarray):
        values = list(values)
        return math.fsum(values) / len(values)
    # fsum reads one stream of floats: a block of them is a list at a time (a list of every value would take
    # 32 bytes a query, 32 MB for a 1M-query column), and the sum is the same exact one
    block = 1 << 16
    return math.fsum(chain.from_iterable(values[i:i + block].tolist() for i in range(0, len(values), block))) \
        / len(values)


@dataclass(frozen=True)
class MetricTable:
    """Per-query x metric values; every judged query has a row, ``included`` says which enter the means."""

    query_ids: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    values: np.ndarray  # (Q, M); a large pipeline run's are ``core.spilled.SpilledRows``, read a block at a time
    n_relevant: np.ndarray  # (Q,)
    in_run: np.ndarray  # (Q,) bool
    included: np.ndarray  # (Q,) bool: the answer of ``included()``
    conventions: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    # A fingerprint of the judgments scored against (``harness.evaluate`` sets it, made when first read:
    # ``Deferred``), so a paired comparison of two tables can tell other judgments apart, not only other relevant
    # counts; None: not recorded.
    judgments: str | None = None

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def column(self, metric: str | MetricSpec) -> np.ndarray:
        """One metric's per-query values; ``metric`` as the table names it or any spelling of it ("nDCG@10")."""
        names = self.names
        name = metric.name if isinstance(metric, MetricSpec) else metric
        if name not in names:
            try:
                name = parse_metric(str(metric)).name
            except MetricError:
                pass
            if name not in names:
                raise MetricError(f"metric {metric!r} is not in this table; it has {', '.join(names)}")
        return self.values[:, names.index(name)]

    def mean(self, rows: np.ndarray | None = None) -> dict[str, float | None]:
        """Means (``mean_of``) over the included queries (and, with ``rows``, only those of them ``rows`` selects);
        None when no query is in."""
        return self.means([rows])[0]

    def means(self, selections: Sequence[np.ndarray | None]) -> list[dict[str, float | None]]:
        """``mean(rows)`` for each of ``selections``, each metric's column read once for all of them (a spilled
        table's file is read once a metric, not once a metric and a selection: the verdicts' means ask for six)."""
        if isinstance(selections, (str, bytes, np.ndarray)) or not isinstance(selections, Sequence):
            raise MetricError(f"selections: expected a list of row masks (or None for every row), got "
                              f"{type(selections).__name__}; for one mean of the table, table.mean()")
        masks = [self._counted_in(rows) for rows in selections]
        out: list[dict[str, float | None]] = [{} for _ in masks]
        for j, name in enumerate(self.names):
            column = self.values[:, j] if any(mask.any() for mask in masks) else None
            for mask, means in zip(masks, out):
                means[name] = mean_of(column[mask]) if mask.any() else None
        return out

    def _counted_in(self, rows: np.ndarray | None) -> np.ndarray:
        if rows is None:
            return self.included
        rows = np.asarray(rows)
        if rows.dtype != bool or rows.shape != self.included.shape:
            raise MetricError(f"rows: expected a boolean mask of the table's {len(self.included)} queries, got "
                              f"{rows.dtype} of shape {rows.shape} (for one metric's mean: table.mean()[name])")
        return self.included & rows

    def per_query(self) -> dict[str, dict[str, float]]:
        return {q: {n: float(v) for n, v in zip(self.names, row)} for q, row in zip(self.query_ids, self.values)}

    def counted(self) -> dict[str, bool]:
        return {q: bool(c) for q, c in zip(self.query_ids, self.included)}


class Deferred:
    """A value made when it is first read: ``function(*args)``, then kept (``MetricTable.judgments``)."""

    def __init__(self, function, *args):
        self.function, self.args = function, args


class _Judgments:
    """``MetricTable.judgments``, in front of the field: a ``Deferred`` fingerprint is made when first read (a
    table nobody compares never hashes its judgments; until then it holds them)."""

    def __get__(self, table, owner=None):
        if table is None:
            return None  # (the field's default)
        value = vars(table)["judgments"]
        if isinstance(value, Deferred):  # (two threads may each make it: equal strings)
            value = vars(table)["judgments"] = value.function(*value.args)
        return value

    def __set__(self, table, value) -> None:  # (the frozen dataclass's __init__ assigns through object.__setattr__)
        vars(table)["judgments"] = value


MetricTable.judgments = _Judgments()  # type: ignore[assignment]  (after @dataclass, which made the field)


def with_column(table: MetricTable, spec: MetricSpec, column: np.ndarray) -> MetricTable:
    """``table`` with one more metric, its per-query values ``column`` (a metric the engine cannot score from grades
    alone: ``sufficient@window`` reads the evidence groups). Same rows, same ``included`` mask, so it enters the
    means by the same rule. A spilled table's values are copied a block at a time into a new spilled matrix."""
    from dataclasses import replace
    column = np.asarray(column, dtype=np.float64)
    if len(column) != len(table.query_ids):
        raise MetricError(f"{spec.name}: {len(column)} values for {len(table.query_ids)} queries")
    if isinstance(table.values, np.ndarray):
        values = np.column_stack([table.values, column]) if table.values.size or len(column) == 0 \
            else column.reshape(-1, 1)
    else:  # io.spilled.SpilledRows
        values = type(table.values)(len(column), table.values.shape[1] + 1)
        for lo, block in table.values.blocks():
            values[np.arange(lo, lo + len(block))] = np.column_stack([block, column[lo:lo + len(block)]])
    return replace(table, metrics=table.metrics + (spec,), values=values)


def build_table(query_ids: Sequence[str], specs: Sequence[MetricSpec], values: np.ndarray, n_relevant: np.ndarray,
                in_run: np.ndarray, *, query_policy: str, conventions: dict,
                gold_errors: Collection[str] | None = None, unjudged_run_queries: int = 0,
                dropped_duplicates: int = 0, unanswerable: Collection[str] = ()) -> MetricTable:
    """A table with its ``included`` mask (from ``included``) and counts that match the mask exactly: each query
    not included is listed once, under a golden-set error or under no relevant item. ``gold_errors`` (the queries
    whose judgments could not be checked) is known to a pipeline run only: given, even empty, the counts list it;
    ``harness eval`` (plain qrels) passes None and its counts keep trec_eval's shape. ``unanswerable`` queries are
    listed under their own reason (only when there are some: counts written before keep their shape)."""
    qids = tuple(map(str, query_ids))
    errors = set(gold_errors or ())
    error = np.array([q in errors for q in qids], dtype=bool) if errors else np.zeros(len(qids), dtype=bool)
    marked = set(unanswerable)
    unanswered = (np.array([q in marked for q in qids], dtype=bool) if marked
                  else np.zeros(len(qids), dtype=bool))
    keep = included(n_relevant, query_policy, error, unanswered)
    # Lists by position, not by a Python pass over every query: a 1M-query `harness eval` spent ~0.7 s here.
    no_relevant = [qids[i] for i in np.flatnonzero((np.asarray(n_relevant) == 0) & ~error & ~unanswered)]
    counts = {
        "judged_queries": len(qids),
        "evaluated_queries": int(keep.sum()),
        "no_relevant_queries": len(no_relevant),
        "no_relevant_query_ids": no_relevant,
    }
    if gold_errors is not None:
        counts["excluded_goldset_error"] = int(error.sum())
        counts["excluded_goldset_error_query_ids"] = [qids[i] for i in np.flatnonzero(error)]
    if marked:
        counts["unanswerable_queries"] = int(unanswered.sum())
        counts["unanswerable_query_ids"] = [qids[i] for i in np.flatnonzero(unanswered)]
    counts.update({
        "absent_from_run": int((~in_run).sum()),
        "absent_from_run_query_ids": [qids[i] for i in np.flatnonzero(~np.asarray(in_run, dtype=bool))],
        "unjudged_run_queries": int(unjudged_run_queries),
        "dropped_duplicates": int(dropped_duplicates),
    })
    return MetricTable(qids, tuple(specs), values, n_relevant, in_run, keep, conventions, counts)


def conventions(*, order: str, query_policy: str, trec_compat: bool) -> dict:
    return {
        "order": "rank as given" if order == "rank" else "score descending, ties by doc id descending (trec_eval)",
        "score_precision": "float32 (trec_eval)" if trec_compat else "float64",
        "duplicates": "first (best-ranked) occurrence of a doc id counts; the rest are dropped and counted",
        "relevance_threshold": "grade >= 1 unless a metric says rel=N; negative grades never relevant",
        "precision_denominator": "k",
        "recall_ap_denominator": "all relevant documents of the query (R)",
        "ndcg_gain": "linear (grade) unless gain=exp (2^grade - 1)",
        "ndcg_discount": "1/log2(rank + 1)",
        "ndcg_ideal": "all judged documents sorted by grade unless ideal=retrieved",
        "absent_from_run": "scored 0",
        "no_relevant_queries": "counted as 0 in means" if query_policy == "zero" else "excluded from means, listed",
        "unjudged_run_queries": "ignored, counted",
    }
