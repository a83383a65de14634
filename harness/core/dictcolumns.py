"""The dict-of-dicts that pytrec_eval and ranx take (``{qid: {doc: score}}``, ``{qid: {doc: grade}}``) read as
columns in bulk: the entries are flattened by C loops (``chain``, ``map``), types and values checked a column at a
time, ids coded by Arrow. This is ``core.dictinput``'s rules for the usual input (string ids, float scores, int
grades); anything a bulk check is not sure of gives None, and the caller reads the dict entry by entry with
``dictinput``, which names each problem. So the two paths accept exactly the same dicts and read them the same.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Mapping

import numpy as np

from .ids import GRADE_LIMIT
from . import textcolumns
from .textcolumns import ids_clean, joined_column, sorted_codes, text_column

SCORE_TYPES = frozenset({float, int, np.float64, np.float32})
GRADE_TYPES = frozenset({int, float, np.int64, np.int32, np.float64})


def _flat(data: Any) -> tuple[np.ndarray, np.ndarray, list, list] | None:
    """(query ids, entries per query, the inner dicts, every value) in order, when the ids are strings and each inner
    value is a plain dict (then ids are unique within their dict: no two spellings of one id)."""
    if not isinstance(data, Mapping):
        return None
    qids, inner = list(data), list(data.values())
    if not set(map(type, inner)) <= {dict}:
        return None
    lengths = np.fromiter(map(len, inner), dtype=np.int64, count=len(inner))
    if len(qids) + int(lengths.sum()) < textcolumns.BULK_MIN:
        return None
    query_ids = text_column(qids)
    if query_ids is None or not ids_clean(query_ids):
        return None
    return _object_array(qids), lengths, inner, list(chain.from_iterable(map(dict.values, inner)))


def _object_array(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def bulk_scores(data: Any) -> tuple | None:
    """``{qid: {doc: score}}`` as (query ids, entries per query, the sorted doc vocabulary as a ``TextVocab``, doc
    codes, scores), or None when the entry-by-entry reader must look."""
    flat = _flat(data)
    if flat is None:
        return None
    query_ids, lengths, inner, values = flat
    if not set(map(type, values)) <= SCORE_TYPES:  # bool is its own type: refused as a score, as dictinput does
        return None
    try:
        scores = np.fromiter(values, dtype=np.float64, count=len(values))
    except (OverflowError, ValueError, TypeError):
        return None
    if not np.isfinite(scores).all():
        return None
    column = joined_column(inner, len(values))  # the doc ids read once, into Arrow text
    if column is None:
        return None
    vocab, codes = sorted_codes(column)
    if not vocab.clean():
        return None
    return query_ids, lengths, vocab, codes, scores


def bulk_grades(data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``{qid: {doc: grade}}`` as (query ids, entries per query, doc ids, grades), or None when the entry-by-entry
    reader must look (a fractional grade, say, which it names)."""
    flat = _flat(data)
    if flat is None:
        return None
    query_ids, lengths, inner, values = flat
    if not set(map(type, values)) <= GRADE_TYPES:
        return None
    try:
        given = np.array(values)
    except (OverflowError, ValueError, TypeError):
        return None
    if given.dtype.kind == "f" and not (np.isfinite(given) & (given == np.floor(given))).all():
        return None  # 1.0 is 1 (as in a qrels file); 1.5 is an error the reader words
    if given.dtype.kind not in "iuf" or len(given) and not (np.abs(given) < GRADE_LIMIT).all():
        return None
    docs = list(chain.from_iterable(inner))
    column = text_column(docs)
    if column is None or not ids_clean(column):
        return None
    return query_ids, lengths, _object_array(docs), given.astype(np.int64)
