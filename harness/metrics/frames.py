"""Judgments and runs given as tables, read as columns in bulk: a pandas DataFrame or a pyarrow Table with columns
``query_id``, ``doc_id`` and ``relevance`` (judgments) or ``score`` (a run; ``rank`` too for ``order="rank"``).

Ids are text columns (or whole numbers, read as their decimal text), a score column holds numbers, a relevance
column whole numbers. The usual table is read by Arrow kernels; whenever a bulk check is not sure (a missing cell,
ids of mixed types, a fractional grade, a pair judged twice), ``metrics.inputs`` reads the table row by row and
names each problem. Rows of one query need not be together: queries keep the order of their first row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.ids import GRADE_LIMIT
from ..core.dictinput import RANK_LIMIT
from ..core.runtable import Qrels, Run, checked, offsets_of


def is_arrow_table(value: Any) -> bool:
    import sys

    pyarrow = sys.modules.get("pyarrow")  # as pandas: a Table exists only if its caller imported pyarrow
    return pyarrow is not None and isinstance(value, pyarrow.Table)


def arrow_columns(value: Any, wanted: tuple[str, ...]) -> dict | None:
    """The ``wanted`` columns of a DataFrame or an Arrow table as Arrow arrays (None: one will not convert)."""
    import pyarrow as pa

    try:
        if is_arrow_table(value):
            return {c: _one_chunk(value.column(c)) for c in wanted}
        return {c: pa.Array.from_pandas(value[c]) for c in wanted}
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None


def _one_chunk(column):
    """A chunked column as one array: its only chunk as it is (``combine_chunks`` would copy it)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _numbers(column, kinds: str) -> np.ndarray | None:
    """A column of plain numbers (no nulls, no booleans) as NumPy, if its type is one of ``kinds`` (NumPy kinds)."""
    import pyarrow as pa

    if column.null_count or not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        return None
    values = column.to_numpy(zero_copy_only=False)
    return values if values.dtype.kind in kinds else None


def _ids(columns: dict):
    """(query column, doc column) as Arrow text with clean ids, or None."""
    from ..core.textcolumns import as_string, ids_clean

    queries, docs = as_string(columns["query_id"]), as_string(columns["doc_id"])
    if queries is None or docs is None:
        return None
    return (queries, docs) if ids_clean(queries) and ids_clean(docs) else None


def _grouped(queries):
    """(query ids in order of first appearance, the row order that groups each query's rows, rows per query, each
    row's query code or None when the rows are together: then they are ``np.repeat`` of the queries' codes)."""
    from ..core.textcolumns import first_seen_codes, grouped_starts, objects

    together = grouped_starts(queries)  # (each query's rows together: the usual table)
    if together is not None:
        distinct, starts = together
        return objects(distinct), slice(None), np.diff(np.append(starts, len(queries))), None
    distinct, codes = first_seen_codes(queries)
    grouped = len(codes) < 2 or bool((codes[1:] >= codes[:-1]).all())
    order = slice(None) if grouped else np.argsort(codes, kind="stable")
    return objects(distinct), order, np.bincount(codes, minlength=len(distinct)), codes


def bulk_run(value: Any, read_ranks: bool) -> Run | None:
    """A run table as a Run, or None when it must be read row by row."""
    from ..core.textcolumns import packed_keys, sorted_codes
    from ..core.vocab import UncodedHits

    columns = arrow_columns(value, ("query_id", "doc_id", "score") + (("rank",) if read_ranks else ()))
    ids = None if columns is None else _ids(columns)
    if ids is None:
        return None
    scores = _numbers(columns["score"], "iuf")
    if scores is None or not np.isfinite(scores).all():
        return None
    ranks = None
    if read_ranks:
        ranks = _numbers(columns["rank"], "iu")
        if ranks is None or len(ranks) and np.abs(ranks).max() >= RANK_LIMIT:
            return None
    query_ids, order, lengths, _ = _grouped(ids[0])
    keys = packed_keys(ids[1])
    if keys is not None:  # ids of up to 8 bytes: coded when first read (the engine scores the keys themselves)
        vocab = codes = UncodedHits(keys[order])
    else:
        vocab, codes = sorted_codes(ids[1])
        codes = codes[order]
    return checked(Run(query_ids, offsets_of(lengths), vocab, codes,  # (vocab: strings when first read)
                       scores.astype(np.float64)[order], None if ranks is None else ranks.astype(np.int64)[order]),
                   None if keys is not None else vocab)


def bulk_qrels(value: Any) -> Qrels | None:
    """A judgments table as Qrels, or None when it must be read row by row. Doc ids of up to 8 bytes are coded as
    their packed keys (``io.packed_ids``' SIMD sort, not Arrow's hashing of text), and the keys are kept on the Qrels
    (``core.runtable.doc_keys``): coding the judgments into a run's vocabulary and their fingerprint read them
    instead of making the ids text and packing them again."""
    from ..core.runtable import remembered
    from ..core.textcolumns import first_seen_codes, key_codes, objects, packed_keys

    columns = arrow_columns(value, ("query_id", "doc_id", "relevance"))
    ids = None if columns is None else _ids(columns)
    if ids is None:
        return None
    grades = _numbers(columns["relevance"], "iuf")
    whole = grades is not None and (np.isfinite(grades) & (grades == np.floor(grades))).all()
    if not whole or not (np.abs(grades) < GRADE_LIMIT).all():
        return None
    query_ids, order, lengths, q_codes = _grouped(ids[0])
    if q_codes is None:
        q_codes = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    keys = packed_keys(ids[1])
    if keys is not None:
        distinct, d_codes = key_codes(keys)
        n_docs = len(distinct)
    else:
        doc_vocab, d_codes = first_seen_codes(ids[1])
        n_docs = len(doc_vocab)
    pairs = np.sort(q_codes * max(n_docs, 1) + d_codes)  # (a sort: NumPy's hashed unique is slower here)
    if (pairs[1:] == pairs[:-1]).any():
        return None  # a pair judged twice: the row reader names it
    doc_ids = objects(ids[1])
    qrels = checked(Qrels(query_ids, offsets_of(lengths), doc_ids[order], grades.astype(np.int64)[order]))
    if keys is not None:
        remembered(qrels, "doc_keys", lambda: keys[order])
    return qrels
