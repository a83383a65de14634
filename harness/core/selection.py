"""Which queries a bounded output carries in full: the hits results.json keeps and the rows report.html shows.

One rule, read from what results.json holds (ids, verdict kinds, chunk ``rr@window``), so a run's writer and a later
``harness report`` of its results.json pick the same queries, and every query shown has its hits kept."""

from __future__ import annotations

import hashlib
from typing import Sequence

# results.json keeps every query's hits up to this many queries (small runs stay one readable file); above it, the
# hits of the shown queries only, and every hit is in hits.parquet beside it.
KEEP_ALL_HITS_UP_TO = 5_000
# report.html's per-query table (and its drill-down) shows at most this many queries, whatever the run's size.
SHOWN_QUERIES = 500
# Of those, this many are a fixed sample of the queries not picked as failing (ok ones included), so a healthy run
# still shows what passing looks like. Fixed = chosen by a hash of the query id: the same queries in every run.
SAMPLE = 50
# The verdict kinds whose worst queries are shown, taken in turn so each kind gets its share of the table.
FAILING = ("goldset_error", "no_gold", "missing_document", "wrong_chunk", "buried_evidence")

Row = tuple[str, str, float]  # (query id, verdict kind, chunk rr@window)


def rows_of(queries) -> list[Row]:
    """The selection's inputs of ``QueryResult``s."""
    return [(q.id, q.verdict.kind, q.metrics.chunk.get("rr@window", 0.0)) for q in queries]


def select(rows: Sequence[Row], cap: int = SHOWN_QUERIES) -> list[int]:
    """Indexes (in ``rows`` order) of at most ``cap`` queries: all when there are no more; else the worst of each
    failing kind (lowest rr@window, then id, as report.md lists them), one kind after the other, then the sample."""
    if len(rows) <= cap:
        return list(range(len(rows)))
    ranked = []
    for order, kind in enumerate(FAILING):
        mine = sorted((i for i, r in enumerate(rows) if r[1] == kind), key=lambda i: (rows[i][2], rows[i][0]))
        ranked += [(position, order, i) for position, i in enumerate(mine)]
    ranked.sort()
    picked = {i for _, _, i in ranked[: max(cap - SAMPLE, 0)]}
    rest = sorted((i for i in range(len(rows)) if i not in picked), key=lambda i: _hash(rows[i][0]))
    picked.update(rest[: min(SAMPLE, cap - len(picked))])
    return sorted(picked)


def kept(rows: Sequence[Row]) -> list[int] | None:
    """Indexes of the queries whose hits results.json keeps; None: all of them."""
    return None if len(rows) <= KEEP_ALL_HITS_UP_TO else select(rows)


def _hash(query_id: str) -> bytes:
    return hashlib.blake2b(query_id.encode("utf-8"), digest_size=8).digest()
