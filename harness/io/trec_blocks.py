"""The pieces of the fast run reader (``fast_trec``): a file's bytes in blocks cut at line ends, each
checked for whitespace other than the delimiter as it passes (so the file is read once, not twice), and the codes of
ids interned block by block joined into one vocabulary at the end (each block's distinct ids are hashed again
once, instead of unifying a growing vocabulary block by block, which cost O(vocabulary) a block)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np


@dataclass(frozen=True)
class Block:
    """``data[start:end]``: whole lines of the file, uncopied out of one read."""
    data: bytes
    start: int
    end: int

    def view(self) -> memoryview:
        return memoryview(self.data)[self.start:self.end]


def line_blocks(read: Callable[[int], bytes], size: int, where: str = "") -> Iterator[Block]:
    """The bytes ``read`` gives, about ``size`` at a time, in blocks of whole lines, in file order. The line that
    spans two reads is a block of its own (so no read is copied to join it to its end); a line longer than
    ``size`` is a longer block, up to the ``line`` limit (``io.limits``: ``where``, the file, names it)."""
    from .limits import max_bytes, too_large

    longest = max_bytes("line")
    carried: list[bytes] = []  # the start of a line that began in an earlier read
    held = 0  # bytes in ``carried``
    while data := read(size):
        first = data.find(b"\n") + 1
        if first == 0:
            carried.append(data)
            held += len(data)
            if held > longest:
                raise too_large(where or "input", "a line", "line")
            continue
        if held + first > longest:
            raise too_large(where or "input", "a line", "line")
        held = 0
        start = 0
        if carried:
            joint = b"".join([*carried, data[:first]])
            yield Block(joint, 0, len(joint))
            start = first
        cut = data.rfind(b"\n") + 1
        if cut > start:
            yield Block(data, start, cut)
        carried = [data[cut:]] if cut < len(data) else []
        held = len(data) - cut
    if carried:
        tail = b"".join(carried)
        yield Block(tail, 0, len(tail))


def only_delimiter_separates(block: Block, delimiter: bytes) -> bool:
    """No ASCII whitespace but the delimiter inside the block's lines, and no CR except in CRLF line ends (a block
    holds whole lines, so no CRLF is split between two blocks). bytes methods search memchr-fast."""
    data, start, end = block.data, block.start, block.end
    if any(data.find(c, start, end) >= 0 for c in (b" ", b"\t", b"\v", b"\f") if c != delimiter):
        return False
    if data.find(b"\r", start, end) < 0:  # the usual case, in one memchr pass (count is a slower loop)
        return True
    return data.count(b"\r", start, end) == data.count(b"\r\n", start, end)


def memory_pool():
    """jemalloc's pool (the C allocator's where pyarrow has no jemalloc), for what the readers allocate. Arrow's
    default pool (mimalloc) gives freed memory back to the kernel and faults it in again: reading a 100 MB qrels
    file spent 1.6-2.1 s in the kernel on this 2-core machine against 0.2 s. On `harness eval` of 1M queries x 10:
    default pool peak 1.67 GB / 15.0 s system time, C allocator 2.02 GB / 11.3 s, jemalloc 1.41 GB / 11.7 s."""
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.system_memory_pool()


def one_chunk(column):
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks(memory_pool=memory_pool())


# pyarrow's own to_numpy and pa.array go through its pandas bridge, whose first use imports pandas: 0.4 s of a
# `harness eval` that takes 4. The readers move their integer and float columns with these two instead.

def numpy_of(array) -> np.ndarray:
    """A numeric arrow array (or chunked array) without nulls as NumPy: a read-only view of its buffer."""
    if hasattr(array, "num_chunks"):
        array = one_chunk(array)
    dtype = np.dtype(str(array.type))  # int32, int64, uint64, double: arrow's names are NumPy's
    if array.null_count or dtype == np.bool_:
        raise ValueError(f"numpy_of: {array.type} with {array.null_count} nulls")  # a caller's mistake
    if len(array) == 0:  # (an empty array may have no buffer at all)
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def uint64_array(values: np.ndarray):
    """A uint64 NumPy array as an arrow array, uncopied."""
    return numeric_array(np.ascontiguousarray(values, dtype=np.uint64))


def numeric_array(values: np.ndarray):
    """A NumPy array of numbers as an arrow array, uncopied when contiguous (``pa.array`` would import pandas)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def join_vocabularies(seed, dictionaries: list, local_codes: list) -> tuple:
    """(one vocabulary: ``seed``'s entries where they are, then every block's other ids in order of first
    appearance; each row's code into it) from each block's dictionary and codes into it. Every block's distinct ids
    are hashed once more; the lists are emptied as they are used."""
    import pyarrow as pa
    import pyarrow.compute as pc

    seeded = 0 if seed is None else len(seed)
    lengths = [len(d) for d in dictionaries]
    every = pa.concat_arrays([pa.array([], pa.string()) if seed is None else seed, *dictionaries],
                             memory_pool=memory_pool())
    dictionaries.clear()
    joined = pc.dictionary_encode(every, memory_pool=memory_pool())
    del every
    maps = np.split(numpy_of(joined.indices)[seeded:], np.cumsum(lengths)[:-1])
    codes = join_codes(local_codes, maps)
    local_codes.clear()
    return joined.dictionary, codes


def join_codes(local_codes: Sequence[np.ndarray], maps: Sequence[np.ndarray]) -> np.ndarray:
    """Each block's codes into its own dictionary, turned into codes into the joined vocabulary (``maps[i]``: the
    joined code of block i's dictionary entries), written once into one array."""
    out = np.empty(sum(len(c) for c in local_codes), dtype=np.int32)
    at = 0
    for codes, mapping in zip(local_codes, maps):
        np.take(mapping, codes, out=out[at:at + len(codes)])
        at += len(codes)
    return out
