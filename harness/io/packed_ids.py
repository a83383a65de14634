"""Ids of up to 8 bytes as integers: the fast run reader's way to intern doc ids without hashing strings.

An id's UTF-8 bytes, zero-padded to 8 and read most significant byte first, are one uint64 ``key``. Equal ids have
equal keys and keys order as the ids do: byte-wise, which for UTF-8 is Python's (and trec_eval's strcmp) order,
the zero padding putting a prefix first. That holds because no id holds a NUL byte (``pack`` refuses them). Hashing
a uint64 is several times cheaper than hashing a string and comparing its bytes, and sorting the distinct keys is
sorting the ids, so a 10M-line run's vocabulary and its sorted order cost a fraction of the string path's.
Most benchmark ids fit: MS MARCO passages and documents, SciFact, TREC-COVID, FiQA, HotpotQA, Quora.
"""

from __future__ import annotations

import numpy as np

MAX_BYTES = 8
# The mask that keeps an id's first n bytes of a little-endian word; index 8 keeps all of them.
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(MAX_BYTES)] + [(1 << 64) - 1], dtype=np.uint64)


def pack(strings) -> np.ndarray | None:
    """The uint64 key of every id of ``strings`` (a pyarrow StringArray), or None when one is longer than 8 bytes
    or holds a NUL byte (the caller then interns the strings themselves)."""
    n = len(strings)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    _, offset_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=np.int32, count=n + 1, offset=strings.offset * 4)
    lengths = np.diff(offsets)
    if lengths.max() > MAX_BYTES:
        return None
    start, end = int(offsets[0]), int(offsets[-1])
    text = np.frombuffer(data_buffer, dtype=np.uint8)[start:end] if data_buffer is not None else np.zeros(0, np.uint8)
    if not text.all():
        return None  # a NUL would pack like the end of a shorter id
    padded = np.zeros(len(text) + MAX_BYTES, dtype=np.uint8)  # so the word at the last id's start stays in bounds
    padded[:len(text)] = text
    # Word i is bytes i..i+7 (an unaligned view: one gather per id, no loop over bytes).
    words = np.ndarray((len(text) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    return (words[offsets[:-1] - start] & _MASKS[lengths]).byteswap()


def unpack(keys: np.ndarray):
    """The ids of ``keys`` as a pyarrow StringArray (what ``pack`` was given, for each key)."""
    import pyarrow as pa

    raw = np.ascontiguousarray(keys, dtype=np.uint64).byteswap().view(np.uint8).reshape(-1, MAX_BYTES)
    nonzero = raw != 0  # an id has no NUL, so its bytes are the non-zero ones, first to last
    offsets = np.zeros(len(keys) + 1, dtype=np.int32)
    np.cumsum(np.count_nonzero(nonzero, axis=1), out=offsets[1:])
    return pa.StringArray.from_buffers(len(keys), pa.py_buffer(offsets), pa.py_buffer(raw[nonzero]))


def sort_order(keys: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``keys`` (equal keys in their given order), as int64 positions."""
    order, _ = _sorted(keys)
    return order


def _sorted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(the permutation that sorts ``keys``, stable; where each sorted key differs from the one before, if known).

    NumPy sorts a uint64 column with SIMD several times faster than it argsorts one, so when the keys leave room, the
    permutation is read off a plain sort: the bits that differ between keys (those every key shares do not change
    their order) are moved to the top of a word, each key's position fills the bits below, and sorting the words
    sorts the keys with their positions in tow. Ids drawn from a small alphabet leave that room (digits, the common
    case, vary in 4 to 6 bits a byte); others are argsorted."""
    n = len(keys)
    index_bits = max(int(n - 1).bit_length(), 1)
    varying = int(np.bitwise_or.reduce(keys ^ keys[0])) if n else 0
    spans = _bit_spans(varying, 64 - index_bits)
    if spans is None:
        return np.argsort(keys, kind="stable"), None
    words = np.arange(n, dtype=np.uint64)  # the positions, below the key bits
    part = np.empty_like(keys)  # (one buffer for every step: a fresh 24 MB array a step costs its page faults)
    top = 64
    for low, width in spans:  # highest first: the words order as the keys do
        top -= width
        np.right_shift(keys, np.uint64(low), out=part)
        if top + width < 64:  # (the top span's higher bits fall off the word's end by themselves)
            np.bitwise_and(part, np.uint64((1 << width) - 1), out=part)
        np.left_shift(part, np.uint64(top), out=part)
        np.bitwise_or(words, part, out=words)
    words.sort()
    np.right_shift(words, np.uint64(index_bits), out=part)  # each sorted word's key bits
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(part[1:], part[:-1], out=new[1:])
    np.bitwise_and(words, np.uint64((1 << index_bits) - 1), out=words)
    return words.view(np.int64), new  # (positions: below 2**63)


def _bit_spans(varying: int, room: int) -> list[tuple[int, int]] | None:
    """The bits set in ``varying`` as (lowest bit, width) spans, highest span first, taking in a gap of shared bits
    wherever the room left allows (fewer spans: fewer passes over the keys); None if they need more than ``room``."""
    spans: list[list[int]] = []
    bit = 0
    while varying >> bit:
        if varying >> bit & 1:
            if spans and spans[-1][0] + spans[-1][1] == bit:
                spans[-1][1] += 1
            else:
                spans.append([bit, 1])
        bit += 1
    spare = room - sum(width for _, width in spans)
    if spare < 0:
        return None
    while len(spans) > 1:  # join the two spans with the narrowest gap between them while the gap fits
        gaps = [spans[i + 1][0] - spans[i][0] - spans[i][1] for i in range(len(spans) - 1)]
        i = min(range(len(gaps)), key=gaps.__getitem__)
        if gaps[i] > spare:
            break
        spare -= gaps[i]
        spans[i:i + 2] = [[spans[i][0], spans[i + 1][0] + spans[i + 1][1] - spans[i][0]]]
    return [(low, width) for low, width in reversed(spans)]


def sorted_positions(keys: np.ndarray) -> np.ndarray:
    """Each key's position when the ids are sorted (keys sort as their ids do)."""
    order = sort_order(keys)  # unique keys: no ties for a stable sort to keep
    position = np.empty(len(keys), dtype=np.int64)
    position[order] = np.arange(len(keys))
    return position


def sorted_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys, sorted; each key's code into them, int32). Sorting is several times quicker here than
    arrow's hashing of uint64 keys, and the codes then compare as the ids do."""
    order, first = _sorted(keys)
    if first is None:
        ordered = keys[order]
        first = np.empty(len(keys), dtype=bool)
        first[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    codes = np.empty(len(keys), dtype=np.int32)
    codes[order] = np.cumsum(first, dtype=np.int32) - 1
    return keys[order[first]], codes


def printable(keys: np.ndarray) -> bool:
    """Every id printable ASCII (bytes 0x21-0x7e, or the zero padding) and none empty (key 0): nothing for the
    readers' id check (``arrow_text.check_ids``) to find, seen without unpacking the ids."""
    raw = keys.view(np.uint8)
    return bool((keys != 0).all() and ((raw == 0) | ((raw > 0x20) & (raw < 0x7f))).all())
