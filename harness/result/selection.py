"""Which queries a bounded output carries in full: the hits results.json keeps and the rows report.html shows.

One rule, read from what results.json holds (ids, verdict kinds, chunk ``rr@window``), so a run's writer and a later
``harness report`` of its results.json pick the same queries, and every query shown has its hits kept."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..core.runtable import object_array
from ..diagnostics import kinds

# results.json keeps every query's hits up to this many queries (small runs stay one readable file); above it, the
# hits of the shown queries only, and every hit is in hits.parquet beside it.
KEEP_ALL_HITS_UP_TO = 5_000
# report.html's per-query table (and its drill-down) shows at most this many queries, whatever the run's size.
SHOWN_QUERIES = 500
# Of those, this many are a fixed sample of the queries not picked as failing (ok ones included), so a healthy run
# still shows what passing looks like. Fixed = chosen by a hash of the query id: the same queries in every run.
SAMPLE = 50
# The verdict kinds whose worst queries are shown, taken in turn so each kind gets its share of the table.
FAILING = kinds.FAILING

# A query's drill-down shows its ranking down to its target (the first relevant chunk, else the first chunk of a
# relevant document) at most this deep, and the target's row after a gap when it ranks deeper.
SHOWN_ABOVE = 30

Row = tuple[str, str, float]  # (query id, verdict kind, chunk rr@window)


def drill_target(relevant: Iterable[bool], doc_relevant: Iterable[bool], checkable: bool = True) -> int | None:
    """The rank a query's drill-down leads to, given its hits' flags in rank order: its first relevant chunk, else
    its first chunk of a relevant document; none when its judgments are no evidence (``checkable`` False: a
    golden-set error)."""
    if not checkable:
        return None
    relevant, doc_relevant = list(relevant), list(doc_relevant)
    first = next((r for r, flag in enumerate(relevant, 1) if flag), None)
    return first if first is not None else next((r for r, flag in enumerate(doc_relevant, 1) if flag), None)


def drill_ranks(window: int, target: int | None, shown: int = SHOWN_ABOVE) -> tuple[int, int | None]:
    """(how many top ranks a query's drill-down shows, the target's rank shown after them when it is deeper, else
    None): the one rule for the reports that draw it and for results.json, which carries those rows' texts."""
    return min(max(window, target or 0), shown), (target if target and target > shown else None)


@dataclass(frozen=True)
class Rows:
    """The selection's inputs as columns, in run order: each query's id, verdict kind and chunk rr@window (a tuple
    a query would hold ~110 bytes a query for a 1M-query run while the selection is made)."""

    ids: Sequence[str]
    kinds: Sequence[str]
    rr: Sequence[float]

    def __len__(self) -> int:
        return len(self.ids)


def rows_of(queries) -> list[Row]:
    """The selection's inputs of ``QueryResult``s."""
    return [(q.id, q.verdict.kind, q.metrics.chunk.get("rr@window", 0.0)) for q in queries]


def select(rows: Sequence[Row] | Rows, cap: int = SHOWN_QUERIES) -> list[int]:
    """Indexes (in ``rows`` order) of at most ``cap`` queries: all when there are no more; else the worst of each
    failing kind (lowest rr@window, then id, as report.md lists them), one kind after the other, then the sample."""
    if len(rows) <= cap:
        return list(range(len(rows)))
    if not isinstance(rows, Rows):
        rows = Rows(*zip(*rows))
    ids = object_array(rows.ids)
    rr = np.asarray(rows.rr, dtype=np.float64)
    order_of = {kind: order for order, kind in enumerate(FAILING)}
    kind = np.fromiter((order_of.get(k, -1) for k in rows.kinds), dtype=np.int8, count=len(ids))
    wanted = max(cap - SAMPLE, 0)
    ranked = []
    for order in range(len(FAILING)):
        mine = np.flatnonzero(kind == order)
        mine = mine[np.argsort(ids[mine], kind="stable")]  # by id, then (stable) by rr@window: worst first
        mine = mine[np.argsort(rr[mine], kind="stable")][:wanted]  # no more than this many can be picked
        ranked += [(position, order, i) for position, i in enumerate(mine.tolist())]
    ranked.sort()
    picked = {i for _, _, i in ranked[:wanted]}
    rest = np.ones(len(ids), dtype=bool)
    rest[list(picked)] = False
    rest = np.flatnonzero(rest)
    by_hash = np.argsort(np.fromiter(map(_hash, ids[rest]), dtype=np.uint64, count=len(rest)), kind="stable")
    picked.update(rest[by_hash[: min(SAMPLE, cap - len(picked))]].tolist())
    return sorted(picked)


def kept(rows: Sequence[Row]) -> list[int] | None:
    """Indexes of the queries whose hits results.json keeps; None: all of them."""
    return None if len(rows) <= KEEP_ALL_HITS_UP_TO else select(rows)


def _hash(query_id: str) -> int:
    """A query's place in the fixed sample: its id's 8-byte BLAKE2b digest, read big-endian (so the numbers order
    as the digests do)."""
    return int.from_bytes(hashlib.blake2b(query_id.encode("utf-8"), digest_size=8).digest(), "big")
