"""A TREC run whose queries are not together (a query's rows in two places: a run written rank by rank, or
concatenated from parts) read as batches of whole queries in bounded memory, for ``metrics.streamed``.

Its rows are first spread over temp files by query (Arrow IPC streams; a hash of the query id picks the file), a
block at a time as ``run_batches`` parses them; then each file is read back whole, and its rows are grouped by query,
in file order within a query (what reading the whole run gives). Memory holds one bucket (about ``BUCKET_BYTES`` of
the run's text), not the run."""

from __future__ import annotations

import tempfile
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

from .files import temp_space
from . import packed_ids
from .arrow_text import arrow, dictionary_of, indices_of
from .run_batches import Batch, blocks
from .trec_blocks import numeric_array, numpy_of

BUCKET_BYTES = 1 << 26  # run text a bucket holds, about: ~1.7M lines of a typical run
MAX_BUCKETS = 512  # temp files open at once (and bucket numbers fit 16 bits)
BATCH_ROWS = 1 << 20  # rows of whole queries a batch from a bucket (about the engine's ``BATCH_HITS``)
GZIP_RATIO = 4  # a gzip run's text, per byte of the file (a guess that only sets the number of buckets)


def query_batches(path: Path, packed: bool) -> Iterator[Batch]:
    """``run_batches.query_batches`` for a run whose queries are not together: the same batches of whole queries
    (their order aside), each query's rows in file order. ``Declined``/``LongIds`` as ``run_batches`` raises them."""
    import pyarrow.ipc as ipc

    size = path.stat().st_size * (GZIP_RATIO if path.suffix == ".gz" else 1)
    n = int(min(MAX_BUCKETS, max(1, -(-size // BUCKET_BYTES))))
    with temp_space("the run, spread by query"):
        files = [tempfile.TemporaryFile(prefix="harness-run-") for _ in range(n)]
    try:
        written = _spread(path, packed, files)
        for file, used in zip(files, written):
            if used:
                file.seek(0)
                yield from _grouped(ipc.open_stream(file).read_all())
    finally:
        for file in files:
            file.close()


def _spread(path: Path, packed: bool, files: list) -> list[bool]:
    """Every row of the run appended to its query's bucket; which buckets got rows."""
    pa = arrow()[0]
    import pyarrow.ipc as ipc

    n = len(files)
    writers: list = [None] * n
    for block in blocks(path, packed):
        if not len(block):
            continue
        # uint16 (n <= MAX_BUCKETS): NumPy's stable sort of 16-bit integers is a radix sort, linear
        bucket = bucket_of(block.query_vocab, n).astype(np.uint16)[block.query_codes]
        order = np.argsort(bucket, kind="stable")  # file order within a bucket
        edges = np.searchsorted(bucket[order], np.arange(n + 1))
        queries = block.query_vocab.take(numeric_array(block.query_codes))
        for b in np.flatnonzero(np.diff(edges)).tolist():
            rows = order[edges[b]:edges[b + 1]]
            take = numeric_array(rows)
            docs = numeric_array(block.docs[rows]) if isinstance(block.docs, np.ndarray) else block.docs.take(take)
            batch = pa.record_batch([queries.take(take), docs, numeric_array(block.scores[rows]),
                                     numeric_array(block.ranks[rows])], names=["query", "doc", "score", "rank"])
            with temp_space("the run, spread by query"):
                if writers[b] is None:
                    writers[b] = ipc.new_stream(files[b], batch.schema)
                writers[b].write_batch(batch)
    with temp_space("the run, spread by query"):
        for writer in writers:
            if writer is not None:
                writer.close()  # ends the stream; the file stays open
    return [writer is not None for writer in writers]


def bucket_of(names, n: int) -> np.ndarray:
    """Each query id's bucket of ``n``, the same for an id in every block: an id that packs (``packed_ids``) by a
    hash of its key (vectorised: a block of a run written rank by rank names every query), a longer one by a CRC of
    its bytes."""
    keys = packed_ids.pack(names)
    if keys is not None:
        return _hashed(keys, n)
    # Some id is longer than 8 bytes: those by CRC, the others packed as a block of short ids would be.
    buckets = np.fromiter((zlib.crc32(q.encode()) % n for q in names.to_pylist()), dtype=np.int64, count=len(names))
    short = np.flatnonzero(numpy_of(arrow()[1].binary_length(names)) <= packed_ids.MAX_BYTES)
    keys = packed_ids.pack(names.take(numeric_array(short)))
    if keys is not None:  # None only for an id holding a NUL byte, which the readers refuse anyway
        buckets[short] = _hashed(keys, n)
    return buckets


def _hashed(keys: np.ndarray, n: int) -> np.ndarray:
    """splitmix64's finaliser of each key, mod ``n``: every bit of a key moves the low bits (a packed id's low bytes
    are often zero padding)."""
    z = keys ^ (keys >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return ((z ^ (z >> np.uint64(31))) % np.uint64(n)).astype(np.int64)


def _grouped(table) -> Iterator[Batch]:
    """A bucket's rows as batches of whole queries (at most ``BATCH_ROWS`` rows, or one query), each query's rows
    in file order."""
    pa, pc, _ = arrow()
    encoded = pc.dictionary_encode(table.column("query"))
    codes, names = indices_of(encoded), dictionary_of(encoded)
    order = np.argsort(codes, kind="stable")
    grouped = codes[order]
    starts = np.flatnonzero(np.concatenate([[True], grouped[1:] != grouped[:-1]])) if len(grouped) else \
        np.zeros(0, dtype=np.int64)
    ends = np.append(starts[1:], len(grouped))
    docs = table.column("doc").combine_chunks()
    packed = pa.types.is_uint64(docs.type)
    docs = numpy_of(docs) if packed else docs
    scores = numpy_of(table.column("score").combine_chunks())
    ranks = numpy_of(table.column("rank").combine_chunks())
    first = 0
    while first < len(starts):
        # whole queries from ``first`` while they fit in BATCH_ROWS (one at least)
        last = max(first + 1, int(np.searchsorted(ends, starts[first] + BATCH_ROWS, side="right")))
        lo, hi = int(starts[first]), int(ends[last - 1])
        rows = order[lo:hi]
        offsets = np.append(starts[first:last], hi) - lo
        yield Batch(names.take(numeric_array(grouped[starts[first:last]])), offsets.astype(np.int64),
                    docs[rows] if packed else docs.take(numeric_array(rows)), scores[rows].astype(np.float64),
                    ranks[rows].astype(np.int64))
        first = last


__all__ = ["query_batches"]
