"""A run's per-query numbers as columns: one NumPy array per metric and level, the ``counted`` flags, the verdict
kinds and the tags, in golden-set order, read from the records in ONE pass.

compare, gate and report read these instead of the records: a large run's records are spooled
(``core.querystore``) and every pass over them decodes 100k JSON records, while the columns take a few bytes per
query (16 metrics x 100k queries = 13 MB). ``io.results_stream`` builds them while it loads a results.json, so
those commands decode each record once; ``of(result)`` builds them for any other result (and keeps them on it).

Nothing here decides which queries count: ``counted`` is each record's flag (``metrics.table.included``)."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Iterable, Sequence

import numpy as np

LEVELS = ("doc", "chunk")
# What a run's own reports read of its per-query values (report.html's selection of queries to show): the columns a
# slim builder keeps. The others it only sums, for the check that every summary mean is its queries' mean.
REPORTED = {"chunk": ("rr@window",)}
BLOCK = 1 << 16  # queries whose values a slim builder holds before summing them


@dataclass(frozen=True, eq=False)
class QueryColumns:
    source: Any = field(repr=False, compare=False)  # the ``Result.queries`` they were read from
    ids: list[str]
    counted: dict[str, np.ndarray]  # level -> bool per query
    n_relevant: dict[str, np.ndarray]  # level -> int64 per query
    ideal_offsets: np.ndarray  # query i's judged grades > 0, sorted descending (its ideal doc-level gains), are
    ideal_values: np.ndarray  # ideal_values[ideal_offsets[i]:ideal_offsets[i + 1]]
    values: dict[str, dict[str, np.ndarray]]  # level -> metric -> float64 per query (NaN: the record lacks it)
    missing: dict[tuple[str, str], np.ndarray]  # (level, metric) -> which records lack it (none in a valid result)
    kind_names: list[str]  # the verdict kinds met, in order of first appearance
    kinds: np.ndarray  # per query, an index into ``kind_names``
    tag_values: dict[str, list[str]]  # tag -> its values, in order of first appearance
    tags: dict[str, np.ndarray]  # tag -> per query, an index into ``tag_values[tag]``, -1 when the query lacks it
    # A slim builder's metrics without a column: (level, metric) -> (the counted queries' values summed exactly
    # (math.fsum), how many). ``value`` of one reads the records once more and keeps every column from then on.
    summed: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def metrics(self, level: str) -> list[str]:
        """Every metric the records have at ``level`` (a slim set's summed ones too)."""
        return list(self.values[level]) + [m for lv, m in self.summed if lv == level]

    def value(self, level: str, metric: str) -> np.ndarray:
        if metric not in self.values[level] and (level, metric) in self.summed:
            self._read_every_column()
        return self.values[level][metric]

    def counted_sum(self, level: str, metric: str) -> tuple[float, int]:
        """(the exact sum of the metric over the queries counted at ``level`` that have it, how many)."""
        if (level, metric) in self.summed:
            return self.summed[(level, metric)]
        values = self.value(level, metric)[self.counted[level] & self.has(level, metric)]
        return math.fsum(values.tolist()), len(values)

    def _read_every_column(self) -> None:
        full = ColumnsBuilder({level: list(self.values[level]) + [m for lv, m in self.summed if lv == level]
                               for level in LEVELS})
        for q in self.source:
            full.add(q)
        built = full.build(self.source)
        for level in LEVELS:
            self.values[level].update(built.values[level])
        self.missing.update(built.missing)
        self.summed.clear()

    def ideal(self, i: int) -> list[int]:
        return self.ideal_values[self.ideal_offsets[i]:self.ideal_offsets[i + 1]].tolist()

    def has(self, level: str, metric: str) -> np.ndarray:
        """Which queries' records have this metric (all, in a result that passed its checks)."""
        missing = self.missing.get((level, metric))
        return np.ones(len(self), dtype=bool) if missing is None else ~missing

    def kind_of(self) -> list[str]:
        """Each query's verdict kind."""
        return [self.kind_names[k] for k in self.kinds.tolist()]

    def tag(self, key: str) -> list[str | None]:
        """Each query's value of tag ``key`` (None when it has none)."""
        if key not in self.tags:
            return [None] * len(self)
        values = self.tag_values[key]
        return [values[c] if c >= 0 else None for c in self.tags[key].tolist()]

    def query_tags(self) -> list[dict[str, str]]:
        """Each query's tags as the record has them (tag order aside): for the few readers that need rows."""
        out: list[dict[str, str]] = [{} for _ in self.ids]
        for key, codes in self.tags.items():
            values = self.tag_values[key]
            for i in np.flatnonzero(codes >= 0).tolist():
                out[i][key] = values[codes[i]]
        return out


class ColumnsBuilder:
    """Records added one at a time (``add``), then ``build``. ``names``: level -> the metric names to read (the
    summary's). ``slim``: keep a column only of the metrics the run's own reports read (``REPORTED``) and sum the
    others a block of queries at a time (8 bytes a query and metric less for the rest of a large run's writing)."""

    def __init__(self, names: dict[str, Iterable[str]], slim: bool = False, known_ids: Sequence[str] | None = None):
        self._ids: list[str] = []
        # The ids the records are expected to carry, in order (a run in memory: its golden set's id strings). A
        # record's id equal to the known one is kept as that string, not as the one decoded from the record: a large
        # run's records come back from their spool file, and a second string of each id would hold ~60 bytes a query.
        self._known = known_ids
        self._names = {level: list(names.get(level, ())) for level in LEVELS}
        self._slim = slim
        self._kept = {level: {n: array("d") for n in self._names[level] if not slim or n in REPORTED.get(level, ())}
                      for level in LEVELS}
        self._partials: dict[tuple[str, str], list[float]] = {}  # a slim builder's per-block exact sums
        self._summed_n: dict[tuple[str, str], int] = {}
        self._done = 0  # queries whose values were moved out of ``_flat`` (a slim builder's)
        # a level's values row by row in one flat array (one C call a query, not one per metric)
        self._get = {level: (itemgetter(*ns) if len(ns) > 1 else (lambda m, n=ns[0]: (m[n],)) if ns else
                             (lambda m: ())) for level, ns in self._names.items()}
        self._flat = {level: array("d") for level in LEVELS}
        self._missing: dict[tuple[str, str], list[int]] = {}  # (level, metric) -> queries whose record lacks it
        self._counted = {level: array("b") for level in LEVELS}
        self._n_relevant = {level: array("q") for level in LEVELS}
        self._ideal_lengths, self._ideal = array("q"), array("q")
        self._kind_code: dict[str, int] = {}
        self._kinds = array("b")
        self._tag_code: dict[str, dict[str, int]] = {}
        self._tags: dict[str, array] = {}

    def add(self, q: Any) -> None:
        i = len(self._ids)
        known = self._known
        self._ids.append(known[i] if known is not None and i < len(known) and known[i] == q.id else q.id)
        counted = q.counted
        self._counted["doc"].append(counted.doc)
        self._counted["chunk"].append(counted.chunk)
        # (absent from the partial records ``api.compare`` makes of metric tables: zeros and no gold there)
        n_relevant = getattr(q, "n_relevant", None)
        self._n_relevant["doc"].append(n_relevant.doc if n_relevant is not None else 0)
        self._n_relevant["chunk"].append(n_relevant.chunk if n_relevant is not None else 0)
        ideal = sorted((g.grade for g in getattr(q, "gold", None) or () if g.grade > 0), reverse=True)
        self._ideal.extend(ideal)
        self._ideal_lengths.append(len(ideal))
        for level in LEVELS:
            metrics = getattr(q.metrics, level)
            try:
                self._flat[level].extend(self._get[level](metrics))
            except KeyError:  # a record without one of the summary's metrics (refused by the checks): NaN there
                for name in self._names[level]:
                    if name not in metrics:
                        self._missing.setdefault((level, name), []).append(i)
                self._flat[level].extend(metrics.get(name, float("nan")) for name in self._names[level])
        self._kinds.append(self._kind_code.setdefault(q.verdict.kind, len(self._kind_code)))
        if q.tags or self._tags:
            self._add_tags(i, q.tags)
        if self._slim and len(self._ids) - self._done == BLOCK:
            self._reduce()

    def _reduce(self) -> None:
        """Move the block's values out of ``_flat``: the kept metrics to their columns, the others into exact sums
        over the block's counted queries (a metric a record lacks is NaN here: not summed, as ``has`` says)."""
        start, n = self._done, len(self._ids) - self._done
        for level in LEVELS:
            names = self._names[level]
            if not names:
                continue
            table = np.frombuffer(self._flat[level], dtype=np.float64).reshape(n, len(names))
            counted = np.frombuffer(self._counted[level], dtype=np.int8)[start:start + n].astype(bool)
            for j, name in enumerate(names):
                column = table[:, j]
                if name in self._kept[level]:
                    self._kept[level][name].extend(column.tolist())
                    continue
                values = column[counted & ~np.isnan(column)]
                self._partials.setdefault((level, name), []).append(math.fsum(values.tolist()))
                self._summed_n[(level, name)] = self._summed_n.get((level, name), 0) + len(values)
            self._flat[level] = array("d")
        self._done += n

    def _add_tags(self, i: int, tags: dict[str, str]) -> None:
        for key, value in tags.items():
            codes = self._tag_code.get(key)
            if codes is None:
                codes = self._tag_code[key] = {}
                self._tags[key] = array("i", [-1]) * i
            self._tags[key].append(codes.setdefault(value, len(codes)))
        for column in self._tags.values():  # the tags this query lacks
            if len(column) == i:
                column.append(-1)

    def build(self, source: Any) -> QueryColumns:
        n = len(self._ids)
        values, summed = {}, {}
        if self._slim:
            self._reduce()
            values = {level: {name: np.frombuffer(column, dtype=np.float64).copy()
                              for name, column in self._kept[level].items()} for level in LEVELS}
            # (a metric no query counts at: an empty sum, as the full columns would give)
            summed = {(level, name): (math.fsum(self._partials.get((level, name), ())),
                                      self._summed_n.get((level, name), 0))
                      for level in LEVELS for name in self._names[level] if name not in self._kept[level]}
        else:
            for level, names in self._names.items():
                # a view of the collected values (not a copy of them): only each metric's column is made
                table = np.frombuffer(self._flat[level], dtype=np.float64).reshape(n, len(names)) if names else None
                values[level] = {name: np.ascontiguousarray(table[:, j]) for j, name in enumerate(names)}
        missing = {}
        for key, at in self._missing.items():
            missing[key] = np.zeros(n, dtype=bool)
            missing[key][at] = True
        return QueryColumns(
            source=source, ids=self._ids,
            counted={level: np.array(col, dtype=np.int8).astype(bool) for level, col in self._counted.items()},
            n_relevant={level: np.array(col, dtype=np.int64) for level, col in self._n_relevant.items()},
            ideal_offsets=np.concatenate([[0], np.cumsum(np.array(self._ideal_lengths, dtype=np.int64))]).astype(
                np.int64), ideal_values=np.array(self._ideal, dtype=np.int64),
            values=values, missing=missing,
            kind_names=list(self._kind_code), kinds=np.asarray(self._kinds, dtype=np.int16),
            tag_values={key: list(codes) for key, codes in self._tag_code.items()},
            tags={key: np.asarray(col, dtype=np.int32) for key, col in self._tags.items()}, summed=summed)


def builder_for(summary: Any, slim: bool = False, known_ids: Sequence[str] | None = None) -> ColumnsBuilder:
    """A builder reading every metric of the summary (``core.result.Summary``); ``slim``, ``known_ids``: see
    ``ColumnsBuilder``."""
    return ColumnsBuilder({level: list(summary.means(level)) for level in LEVELS}, slim, known_ids)


class Cache:
    """Where a Result keeps its columns once read (its private ``_columns``). They are derived from its records,
    not part of its value: any two caches compare equal (pydantic compares private attributes in ``==``)."""

    __slots__ = ("columns",)

    def __init__(self) -> None:
        self.columns: QueryColumns | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cache)

    __hash__ = None  # type: ignore[assignment]


def of(result: Any) -> QueryColumns:
    """The columns of ``result`` (a ``core.result.Result``): those it was loaded with, else read in one pass over
    its records and kept on it (a copy with other records reads its own)."""
    cache = result._columns
    if cache.columns is not None and cache.columns.source is result.queries:
        return cache.columns
    builder = builder_for(result.summary)
    for q in result.queries:
        builder.add(q)
    cache.columns = builder.build(result.queries)
    return cache.columns
