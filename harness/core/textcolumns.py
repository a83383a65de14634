"""Ids as Arrow string columns, checked and coded in bulk: what lets a million ids be read without a Python step per
id. Each check here says exactly what the per-id rules say (``core.ids.id_problem``), or says "not sure" (None,
False) and leaves it to the per-id readers, which name the bad entry: a bulk check never words an error itself.

Arrow compares strings by their UTF-8 bytes, which orders them as Python orders str (by code point), so a
vocabulary sorted here is sorted for the engine's tie rule too.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .ids import BAD_ID_CHAR

# Below this many items the per-item path is about as fast, and pyarrow is not asked to convert a list (which
# loads pandas, seconds on a busy machine): evaluating a small dict stays light.
BULK_MIN = 10_000

def text_column(values: Sequence | np.ndarray) -> pa.StringArray | None:
    """``values`` as an Arrow string array when every one is a ``str`` (not bytes, None, a number, or text with a
    lone surrogate, which UTF-8 cannot hold); else None."""
    items = values.tolist() if isinstance(values, np.ndarray) else values
    try:  # straight into Arrow's buffers: one join with NUL between the items, no conversion per item
        column = _from_joined("\0".join(items), len(items))  # (TypeError: not all str)
    except (TypeError, UnicodeEncodeError):  # (UnicodeEncodeError: a lone surrogate, which UTF-8 cannot hold)
        return None
    if column is not None:
        return column
    try:  # Arrow infers string only when every item is a str (bytes make it binary; a number raises)
        column = pa.array(items)
    except (pa.ArrowException, UnicodeEncodeError, TypeError, ValueError, OverflowError):
        return None
    if len(column) == 0:
        return pa.array([], pa.string())
    return column if pa.types.is_string(column.type) and column.null_count == 0 else None


def joined_column(groups: Iterable[Iterable], n: int) -> pa.StringArray | None:
    """``text_column`` of the ``n`` items of ``groups`` (dicts' keys, say: no list of them is kept); None also where
    ``text_column`` would look at each item (one holding a NUL, 2 GB of text): the caller's slow path decides. Each
    group is joined on its own, then the groups: a join reads each item three times (to list, measure, copy it),
    and a hundred items stay in cache between the reads where three million scattered ones do not (a third less
    time for a 3M-hit run's doc ids)."""
    try:
        return _from_joined("\0".join(["\0".join(group) for group in groups if group]), n)
    except (TypeError, UnicodeEncodeError):
        return None


def _from_joined(text: str, n: int) -> pa.StringArray | None:
    """The ``n`` items that ``text`` joins with NUL, as Arrow text; None if that is not what it holds."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    cuts = np.flatnonzero(data == 0)  # UTF-8 has no 0 byte but NUL itself
    if not n or len(cuts) != n - 1 or len(data) >= 2**31:  # (an item holding a NUL: the slow way)
        return None
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[0], offsets[-1] = 0, len(data) - len(cuts)
    offsets[1:-1] = cuts - np.arange(len(cuts))  # each NUL removed shifts the rest by one
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data[data != 0]))


def as_string(column: pa.Array | pa.ChunkedArray) -> pa.StringArray | None:
    """An Arrow column of text (string or large_string) or of whole numbers (their decimal text, as an id given as
    an integer reads) as one string array; None for any other type or a column with a null."""
    if isinstance(column, pa.ChunkedArray):
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()  # (one chunk: no copy)
    if column.null_count:
        return None
    if pa.types.is_integer(column.type) or pa.types.is_large_string(column.type):
        return pc.cast(column, pa.string())
    return column if pa.types.is_string(column.type) else None


def ids_clean(column: pa.StringArray) -> bool:
    """No id empty, none holding whitespace or a control character: ``id_problem``'s rule, by one regex over all
    the text at once (the rule is about characters, so joining the ids makes no match that was not in one)."""
    if len(column) == 0:
        return True
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[column.offset:column.offset + len(column) + 1]
    if not (offsets[1:] > offsets[:-1]).all():  # an empty id
        return False
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[lo:hi]
    printable = np.subtract(data, 0x21, dtype=np.uint8) < 0x5E  # 0x21-0x7E (bytes below 0x21 wrap round, above)
    if printable.all():  # printable ASCII, the usual ids: one pass says so
        return True
    if (data < 0x80).all():  # ASCII: the refused characters are the bytes up to the space, and DEL
        return False
    return BAD_ID_CHAR.search(data.tobytes().decode("utf-8")) is None


def unique(column: pa.StringArray) -> bool:
    return pc.count_distinct(column).as_py() == len(column)


def strictly_sorted(column: pa.StringArray) -> bool:
    if len(column) < 2:
        return True
    return pc.all(pc.less(column[:-1], column[1:])).as_py()


class TextVocab:
    """A sorted vocabulary as Arrow text, and its packed keys (sorted too) when every id fits in 8 bytes. Given keys,
    the text is unpacked when first asked for: evaluating a run codes judgments against the keys alone, and a run
    read from a table or a dict keeps its vocabulary in this form until its ``doc_vocab`` is read
    (``core.runtable.Run``)."""

    def __init__(self, text: pa.StringArray | None, keys: np.ndarray | None = None):
        if text is None and keys is None:
            raise ValueError("a TextVocab is its text, its packed keys, or both")
        self._text, self.keys = text, keys

    @property
    def text(self) -> pa.StringArray:
        if self._text is None:
            from ..io.packed_ids import unpack

            self._text = unpack(self.keys)
        return self._text

    def __len__(self) -> int:
        return len(self.keys) if self.keys is not None else len(self._text)

    def clean(self) -> bool:
        """``ids_clean`` of the vocabulary; printable ASCII keys are seen clean without unpacking them."""
        from ..io.packed_ids import printable

        return (self.keys is not None and printable(self.keys)) or ids_clean(self.text)

    def objects(self) -> np.ndarray:
        return objects(self.text)


def sorted_codes(column: pa.StringArray) -> tuple[TextVocab, np.ndarray]:
    """(the distinct values, sorted; each value's position in them), as int32 or int64 codes. Ids of up to 8 bytes (most
    benchmarks') are sorted as their packed integer keys, several times quicker than hashing and sorting text."""
    from ..io.packed_ids import pack, sorted_codes as packed_codes

    keys = pack(column)
    if keys is not None:
        distinct_keys, codes = packed_codes(keys)
        return TextVocab(None, distinct_keys), codes  # (int32: a Run's codes may be, and the engine's are)
    encoded = column.dictionary_encode()
    distinct = encoded.dictionary
    order = pc.sort_indices(distinct).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return TextVocab(distinct.take(pa.array(order)), None), rank[encoded.indices.to_numpy(zero_copy_only=False)]


def first_seen_codes(column: pa.StringArray) -> tuple[pa.StringArray, np.ndarray]:
    """(the distinct values in order of first appearance; each value's position in them), as int64 codes."""
    encoded = column.dictionary_encode()
    return encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def grouped_starts(column: pa.StringArray) -> tuple[pa.StringArray, np.ndarray] | None:
    """(the distinct values in order, the row where each begins) of a column whose equal values are together (a run
    table's query ids, the usual case): found where a value differs from the one before, not by hashing every
    value, and no per-row code is made; None when a value comes back after another (then ``first_seen_codes``)."""
    if len(column) < 2:
        return None
    starts = np.empty(len(column), dtype=bool)
    starts[0] = True
    starts[1:] = pc.not_equal(column[1:], column[:-1]).to_numpy(zero_copy_only=False)
    distinct = column.filter(pa.array(starts))
    if not unique(distinct):
        return None
    return distinct, np.flatnonzero(starts)


def packed_keys(column: pa.StringArray) -> np.ndarray | None:
    """Each id's uint64 key (``io.packed_ids``: they sort and compare as the ids do), None if one is over 8 bytes."""
    from ..io.packed_ids import pack

    return pack(column)


def key_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct uint64 keys, sorted; each key's code into them): ``io.packed_ids``' SIMD sort."""
    from ..io.packed_ids import sorted_codes as packed_codes

    return packed_codes(keys)


def key_order(keys: np.ndarray) -> np.ndarray:
    """The stable order that sorts uint64 keys: ``io.packed_ids``' SIMD sort (NumPy's argsort of uint64 has none)."""
    from ..io.packed_ids import sort_order

    return sort_order(keys)


def objects(column: pa.StringArray) -> np.ndarray:
    """An Arrow string array as the 1-D object array of str that a Run or Qrels holds."""
    out = column.to_numpy(zero_copy_only=False)
    return out if out.dtype == object else out.astype(object)


def positions_in(vocab: np.ndarray | TextVocab, ids: Sequence[str]) -> np.ndarray | None:
    """Each id's position in ``vocab`` (distinct ids), -1 where it is not there; None when either will not go to
    Arrow text. Packed keys are matched by a binary search, other ids by Arrow's hashing."""
    from ..io.packed_ids import pack, sort_order

    wanted = text_column(ids)
    if not isinstance(vocab, TextVocab):
        text = text_column(vocab)
        vocab = None if text is None else TextVocab(text)
    if wanted is None or vocab is None:
        return None
    known_keys = vocab.keys if vocab.keys is not None else pack(vocab.text)
    wanted_keys = pack(wanted)
    if known_keys is None or wanted_keys is None:
        return pc.index_in(wanted, value_set=vocab.text).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return key_positions(known_keys, wanted_keys)


def key_positions(known_keys: np.ndarray, wanted_keys: np.ndarray) -> np.ndarray:
    """Each wanted key's position in ``known_keys`` (distinct packed keys), -1 where it is not there."""
    from ..io.packed_ids import sort_order

    order = None if len(known_keys) < 2 or (known_keys[1:] > known_keys[:-1]).all() else sort_order(known_keys)
    ordered = known_keys if order is None else known_keys[order]
    if len(ordered) == 0:
        return np.full(len(wanted_keys), -1, dtype=np.int64)
    by_key = sort_order(wanted_keys)  # searching in key order walks the vocabulary once, cache-friendly
    at = np.empty(len(wanted_keys), dtype=np.int64)
    at[by_key] = np.minimum(np.searchsorted(ordered, wanted_keys[by_key]), len(ordered) - 1)
    return np.where(ordered[at] == wanted_keys, at if order is None else order[at], -1).astype(np.int64)
