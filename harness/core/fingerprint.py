"""Short content fingerprints of JSON-able values: the one rule for config hashes, corpus and golden-set
fingerprints and the query-id fingerprint that compare and the results.json loader check."""

from __future__ import annotations

import hashlib
import json
from itertools import islice
from typing import Iterable


def fingerprint(obj, *, ascii_only: bool = False) -> str:
    """The first 16 hex digits of sha256 over canonical JSON (keys sorted). ``ascii_only`` escapes non-ASCII text,
    as config hashes always have (kept so hashes of existing results stay comparable)."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=ascii_only)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint_of_items(items: Iterable, *, batch: int = 10_000) -> str:
    """``fingerprint(list(items))``, hashed ``batch`` items at a time: a golden set of 1M queries is never one
    JSON text (nor one list) in memory."""
    digest, items, sep = hashlib.sha256(b"["), iter(items), b""
    while part := list(islice(items, batch)):
        digest.update(sep + json.dumps(part, sort_keys=True, ensure_ascii=False)[1:-1].encode())
        sep = b", "
    digest.update(b"]")
    return digest.hexdigest()[:16]


def fingerprint_of_judgments(queries, docs, grades, keys=None) -> str:
    """The fingerprint of a set of (query, document, grade) rows (NumPy columns), whatever their order: sorted and
    hashed as Arrow columns when there are many (a table's key, compared within one session, never written).
    ``keys``: (query keys, doc keys), the rows' ids packed (``io.packed_ids``), when the caller has them: the same
    fingerprint, without making the ids text to pack them."""
    import numpy as np

    from .textcolumns import BULK_MIN, packed_keys, text_column

    if keys is not None and len(queries) >= BULK_MIN:
        order = _row_order(keys[0], keys[1], np.asarray(grades, np.int64))
        if order is not None:
            return _packed_digest(keys[0], keys[1], grades, order)
    q, d = (text_column(queries), text_column(docs)) if len(queries) >= BULK_MIN else (None, None)
    if q is None or d is None:  # few rows, or ids Arrow cannot hold as text (a lone surrogate): one at a time
        return fingerprint_of_items(sorted(zip(map(str, queries.tolist()), map(str, docs.tolist()), grades.tolist())))
    import pyarrow as pa
    import pyarrow.compute as pc

    q_keys, d_keys = packed_keys(q), packed_keys(d)
    order = None if q_keys is None or d_keys is None else _row_order(q_keys, d_keys, np.asarray(grades, np.int64))
    if order is not None:  # ids of up to 8 bytes: sorted as their integer keys by NumPy, not as text by Arrow
        return _packed_digest(q_keys, d_keys, grades, order)
    table = pa.table({"q": q, "d": d, "g": pa.array(grades, pa.int64())})
    table = table.take(pc.sort_indices(table, sort_keys=[("q", "ascending"), ("d", "ascending"),
                                                         ("g", "ascending")]))
    digest = hashlib.sha256()
    n = len(table)
    for name in ("q", "d"):  # each id column's offsets and bytes (only those in use: a buffer may be longer)
        column = table.column(name).combine_chunks()
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[column.offset:column.offset + n + 1]
        digest.update((offsets - offsets[0]).tobytes())
        digest.update(np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]].tobytes())
    digest.update(table.column("g").to_numpy().astype("<i8").tobytes())
    return digest.hexdigest()[:16]


def _packed_digest(q_keys, d_keys, grades, order) -> str:
    import numpy as np

    digest = hashlib.sha256(b"packed")
    for column in (q_keys, d_keys, np.asarray(grades, dtype=np.int64)):
        digest.update(column[order].astype("<u8" if column.dtype.kind == "u" else "<i8").tobytes())
    return digest.hexdigest()[:16]


def _row_order(q_keys, d_keys, grades):
    """The order that sorts rows by (query, document, grade): one sort of a single key made of each column's rank,
    or None when the ranks do not fit in one (rows equal in all three are the same row: their order changes nothing
    hashed). Ranks and order come from NumPy's SIMD sort (``textcolumns.key_codes``, ``key_order``)."""
    import numpy as np

    from .textcolumns import key_codes, key_order

    queries, q_rank = key_codes(q_keys)
    docs, d_rank = key_codes(d_keys)
    low = int(grades.min()) if len(grades) else 0
    span = int(grades.max()) - low + 1 if len(grades) else 1
    if len(queries) * len(docs) * span >= 2**63:
        return None
    return key_order(((q_rank.astype(np.int64) * len(docs) + d_rank) * span + (grades - low)).view(np.uint64))


def document_fingerprint(text: str) -> str:
    """A document's text fingerprint: ``run`` records one per judged document (results.json
    ``goldset.judged_documents``) so ``harness goldset check --against`` can tell which documents changed."""
    return fingerprint(text)
