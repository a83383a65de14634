"""Reading one query's rows of hits.parquet, and a few chunks' texts of chunks.parquet, without the whole file.

hits.parquet's row groups are batches of queries in results.json's record order (``hitsfile.write_hits``), and its
key-value metadata ``INDEX_KEY`` says where each batch starts: its first query's position in that order and its
first row (two numbers per batch, never one per query). A query's rows are in the one row group whose query_id
statistics (min and max, in the footer) admit its id when only one does (ids in sorted order), else in the
group(s) of its batch, found by its position. Anything else (a file written before the index, a result that does
not match the file, a query with no hit) is answered by the caller's filter over the whole file, so every answer
is the filter's. The rows are found in Python, not with arrow compute: a compute call on a Python value (pc.equal,
pa.scalar, a filter's list) first imports pandas, ~0.2 s of explain's time."""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path
from typing import Callable, Mapping

INDEX_KEY = "harness.query_batches"  # hits.parquet metadata: {"queries": n, "first_query": [...], "first_row": [...]}


def index_metadata(n_queries: int, first_query: list[int], first_row: list[int]) -> dict[str, str]:
    """What ``write_hits`` adds to hits.parquet's footer."""
    return {INDEX_KEY: json.dumps({"queries": n_queries, "first_query": first_query, "first_row": first_row})}


def query_rows(path: Path, query_id: str, n_queries: int | None, position: Callable[[], int | None]):
    """The query's rows (an arrow table) read from the row group(s) that hold it, or None when they are not known
    or hold none of its rows. ``n_queries``: the records of the result the file is read for (None: unknown);
    ``position``: the query's position among them (called only when the statistics do not find its group)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except (pa.ArrowException, OSError):
        return None  # a bad file: the caller's filter raises as it always did
    meta = file.metadata
    if "query_id" not in meta.schema.names:
        return None
    groups = admitting(meta, query_id)
    if not groups:  # no group can hold it (what the filter's own pruning finds): the query has no hit
        return file.schema_arrow.empty_table()
    if len(groups) > 1:
        index = None if n_queries is None else batch_index(meta.metadata or {}, n_queries)
        at = None if index is None else position()
        groups = [] if at is None else batch_groups(meta, index, at)
    if not groups:
        return None
    try:  # one thread: a row group of ~100k rows decodes faster than a thread pool starts
        table = file.read_row_groups(groups, use_threads=False)
    except (pa.ArrowException, OSError):
        return None
    rows = [i for i, q in enumerate(table.column("query_id").to_pylist()) if q == query_id]
    if not rows:
        return None
    if rows[-1] - rows[0] + 1 == len(rows):  # a query's rows are written together
        return table.slice(rows[0], len(rows))
    return table.take(rows)


def admitting(meta, query_id: str) -> list[int]:
    """The row groups whose query_id statistics admit ``query_id`` (a group without them admits every id)."""
    column = meta.schema.names.index("query_id")
    groups = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max or stats.min <= query_id <= stats.max:
            groups.append(g)
    return groups


def batch_index(metadata: Mapping[bytes, bytes], n_queries: int) -> tuple[list[int], list[int]] | None:
    """(first query position, first row) of each batch from ``INDEX_KEY``, or None when the file has none (written
    before it) or it does not fit a result of ``n_queries`` records."""
    raw = metadata.get(INDEX_KEY.encode())
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        first_query, first_row = data["first_query"], data["first_row"]
        ok = (data["queries"] == n_queries and len(first_query) == len(first_row)
              and all(type(v) is int for v in (*first_query, *first_row))
              and first_query == sorted(first_query) and first_row == sorted(first_row))
    except (ValueError, TypeError, KeyError):
        return None
    return (first_query, first_row) if ok else None


def batch_groups(meta, index: tuple[list[int], list[int]], position: int) -> list[int]:
    """The row groups of the batch holding the query at ``position``: one, unless the writer split a batch longer
    than its row group limit."""
    first_query, first_row = index
    b = bisect_right(first_query, position) - 1
    if b < 0:
        return []
    lo, hi = first_row[b], first_row[b + 1] if b + 1 < len(first_row) else meta.num_rows
    groups, at = [], 0
    for g in range(meta.num_row_groups):
        n = meta.row_group(g).num_rows
        if at < hi and at + n > lo:
            groups.append(g)
        at += n
    return groups


def texts_by_group(path: Path, wanted: set[str]) -> dict[str, str] | None:
    """The texts of the ``wanted`` chunk ids in chunks.parquet, a row group at a time: its ids, then its texts when
    it holds one (a few groups for explain). Several times faster and ~100 MB smaller than the filter (the arrow
    dataset, and pandas imported for its list of ids); None for a file it cannot read, which the filter then
    reports as it always did."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        if not {"chunk_id", "text"} <= set(file.metadata.schema.names):
            return None
        out: dict[str, str] = {}
        for g in range(file.metadata.num_row_groups):
            ids = file.read_row_group(g, columns=["chunk_id"], use_threads=False).column(0).to_pylist()
            rows = [i for i, c in enumerate(ids) if c in wanted]
            if rows:
                texts = file.read_row_group(g, columns=["text"], use_threads=False).column(0)
                out.update((ids[i], texts[i].as_py()) for i in rows)
        return out
    except (pa.ArrowException, OSError):
        return None
