"""A TREC run read as batches of whole queries, each with its own doc vocabulary: what lets ``harness eval`` score a
run as it is read, in memory bounded by a block, not by the run (``metrics.streamed``).

A run lists each query's hits together (trec_eval's output and every system's we know do): a block's rows up to its
last query are whole queries; the last one's rows are carried into the next batch, since they may go on there. A
run whose queries are not together (a query's rows in two places) raises ``Interleaved``; the caller then reads it
through ``run_buckets``, which spreads its rows over temp files by query and groups each file.

A batch's doc ids and the judged ones of its queries are coded together so that codes compare as the ids do
(trec_eval's tie rule): packed ids (``io.packed_ids``) by sorting their keys, longer ids by hashing, with each
code's sorted position (``doc_order``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from . import packed_ids
from .arrow_text import Declined, arrow, check_ids, dictionary_of, indices_of, sorted_positions
from .run_stream import parsed_blocks
from .trec_blocks import numpy_of

# Blocks of this many bytes: ~800k lines of a typical run, about the engine's batch (``metrics.engine.BATCH_HITS``).
BATCH_BYTES = 1 << 25


class Interleaved(Exception):
    """A query's rows are not together in the run."""


@dataclass
class Batch:
    """Whole queries of a run: query ``i`` owns rows ``offsets[i]:offsets[i+1]``, in file order."""

    query_ids: object  # (Q,) pyarrow StringArray, distinct
    offsets: np.ndarray  # (Q+1,) int64
    docs: object  # (n,) uint64 packed keys, or a pyarrow StringArray
    scores: np.ndarray  # (n,) float64
    ranks: np.ndarray  # (n,) int64


@dataclass
class _Rows:
    """A block's rows (or the carried rows of one query): query codes into ``query_vocab``, and the columns."""

    query_codes: np.ndarray
    query_vocab: object  # pyarrow StringArray
    docs: object
    scores: np.ndarray
    ranks: np.ndarray

    def __len__(self) -> int:
        return len(self.query_codes)

    def rows(self, start: int, stop: int | None = None) -> "_Rows":
        cut = slice(start, stop)
        return _Rows(self.query_codes[cut], self.query_vocab, self.docs[cut], self.scores[cut], self.ranks[cut])


def _concat(parts: list) -> object:
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return arrow()[0].concat_arrays(parts)


def _batch(pieces: list[_Rows]) -> Batch:
    """The rows of ``pieces`` (each one's queries together, a query running on from one piece into the next at
    most) as one batch; ``Interleaved`` when a query shows up twice."""
    pa, pc, _ = arrow()
    ids, lengths = [], []
    for piece in pieces:
        codes = piece.query_codes
        starts = np.flatnonzero(np.concatenate([[True], codes[1:] != codes[:-1]]))
        piece_ids = piece.query_vocab.take(codes[starts])
        piece_lengths = np.diff(np.append(starts, len(codes)))
        if ids and piece_ids[0].as_py() == ids[-1][-1].as_py():  # the carried query goes on into this piece
            lengths[-1] = lengths[-1].copy()
            lengths[-1][-1] += piece_lengths[0]
            piece_ids, piece_lengths = piece_ids[1:], piece_lengths[1:]
        if len(piece_ids):
            ids.append(piece_ids)
            lengths.append(piece_lengths)
    query_ids = pa.concat_arrays(ids)
    if pc.count_distinct(query_ids).as_py() != len(query_ids):
        raise Interleaved
    offsets = np.zeros(len(query_ids) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return Batch(query_ids, offsets, _concat([p.docs for p in pieces]), np.concatenate([p.scores for p in pieces]),
                 np.concatenate([p.ranks for p in pieces]).astype(np.int64, copy=False))


def blocks(path: Path, packed: bool) -> Iterator[_Rows]:
    """The run's rows a parsed block at a time (queries coded into each block's own vocabulary)."""
    for docs, _, queries, scores, ranks in parsed_blocks(path, packed, encode_docs=False, size=BATCH_BYTES):
        vocab = queries.dictionary
        check_ids(vocab, first_column=True)
        yield _Rows(numpy_of(queries.indices), vocab, docs, scores.astype(np.float64, copy=False), ranks)


def query_batches(path: Path, packed: bool) -> Iterator[Batch]:
    """The run's whole queries, a block at a time. ``Declined`` as the fast readers decline a file; ``LongIds``
    (``packed``) when an id does not pack; ``Interleaved`` as the module docstring says."""
    carried: list[_Rows] = []  # the rows of the last query seen, which may go on in the next block
    for block in blocks(path, packed):
        if not len(block):
            continue
        codes = block.query_codes
        last = np.flatnonzero(codes != codes[-1])
        tail = int(last[-1]) + 1 if len(last) else 0  # where the block's last query starts
        if tail:
            yield _batch([*carried, block.rows(0, tail)])
            carried = []
        carried.append(block.rows(tail))
    if carried:
        yield _batch(carried)


@dataclass
class Coded:
    """A batch's doc ids and the judged ones of its queries as codes into one vocabulary, and, unless the codes
    order as the ids do, each code's sorted position (``core.runtable.Run.doc_order``)."""

    vocab: object  # (V,) the distinct packed keys (uint64), sorted; or the distinct strings (pyarrow)
    codes: np.ndarray  # (n,) int32: the batch's docs
    judged_codes: np.ndarray  # (m,) int32: the judged docs
    doc_order: np.ndarray | None  # (V,) int64 for strings; None for sorted keys (the codes order as the ids)


def coded(docs, judged) -> Coded:
    """``docs`` (a batch's uint64 keys or pyarrow strings) and ``judged`` (the same kind) coded together, the
    vocabulary checked as the fast readers check ids (``Declined`` for one only the line reader can judge)."""
    if isinstance(docs, np.ndarray):
        return _coded_keys(docs, judged)
    pa, pc, _ = arrow()
    encoded = pc.dictionary_encode(pa.chunked_array([judged, docs]))
    codes, vocab = indices_of(encoded), dictionary_of(encoded)
    check_ids(vocab, first_column=False)
    return Coded(vocab, codes[len(judged):], codes[:len(judged)], sorted_positions(vocab))


def _coded_keys(docs: np.ndarray, judged: np.ndarray) -> Coded:
    """Packed keys coded by sorting the batch's (``packed_ids.sorted_codes``); the judged ones, few, are found in
    the sorted vocabulary in their own sorted order (a binary search with sorted needles stays in cache), and a
    judged doc the batch lacks gets -1. The vocabulary is sorted: codes compare as the ids do."""
    vocab, codes = packed_ids.sorted_codes(docs)
    if len(vocab) and not packed_ids.printable(vocab):
        check_ids(packed_ids.unpack(vocab), first_column=False)
    judged_codes = np.full(len(judged), -1, dtype=np.int32)
    if len(vocab) and len(judged):
        order = np.argsort(judged)
        at = np.minimum(np.searchsorted(vocab, judged[order]), len(vocab) - 1)
        judged_codes[order] = np.where(vocab[at] == judged[order], at, -1)
    return Coded(vocab, codes, judged_codes, None)


__all__ = ["Batch", "Coded", "Declined", "Interleaved", "blocks", "coded", "query_batches"]
