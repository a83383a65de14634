"""A run's placed hits held as columns: per query a CSR slice of chunk indices (into the run's chunks) and scores.

A run of 100k queries x depth 100 is 10M hits: as ``Hit`` objects in ``RankedList`` tuples that is several GB; here
it is ~12 bytes a hit (int32 chunk index + float64 score) plus the offsets. Ranks are implicit (1..n in row order:
placed lists are in the contract's order). ``HitTable`` is also a ``Sequence[RankedList]``: code that reads one
query at a time (diagnostics, a report's hit list) gets that query's ``RankedList`` made on demand, equal to the
placed list it was built from; code that reads the whole run (metrics, writers) reads the columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence, overload

import numpy as np

from ..core.runtable import offsets_of
from ..io.spilled import SpilledColumn
from ..core.types import Chunk, Hit, RankedList


@dataclass(frozen=True, eq=False)
class HitTable(Sequence[RankedList]):
    """Query ``i`` (``query_ids[i]``) owns hits ``offsets[i]:offsets[i+1]``, in rank order; hit ``j`` is
    ``chunks[chunk[j]]`` with score ``scores[j]`` and rank ``j - offsets[i] + 1``."""

    query_ids: np.ndarray  # (Q,) object
    offsets: np.ndarray  # (Q+1,) int64
    chunk: np.ndarray  # (n,) int32 (int64 past 2**31 chunks); a SpilledColumn in a large run: read by slices
    scores: np.ndarray  # (n,) float64: a retriever's score as given (placed hits carry Python floats); same
    chunks: Sequence[Chunk]  # the run's chunks: the corpus's, then those adopted for hits' own spans
    _columns: dict = field(default_factory=dict, repr=False, compare=False)  # derived arrays, made once

    # ---- Sequence[RankedList] ----

    def __len__(self) -> int:
        return len(self.query_ids)

    @overload
    def __getitem__(self, i: int) -> RankedList: ...

    @overload
    def __getitem__(self, i: slice) -> list[RankedList]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        lazy = self.lazy(i)
        return RankedList(lazy.query_id, tuple(lazy.hits))

    def __iter__(self) -> Iterator[RankedList]:
        for i in range(len(self)):
            yield self[i]

    def lazy(self, i: int) -> RankedList:
        """Query ``i``'s ranked list whose hits are made as they are read: diagnostics reads a window of a few hits
        and a few below it, and making all 100 of a query's ``Hit`` objects was 3/4 of its time."""
        return RankedList(str(self.query_ids[i]), LazyHits(self, int(self.offsets[i]), int(self.offsets[i + 1])))

    def __eq__(self, other: object) -> bool:
        """Equal to any list, tuple or table of the same ranked lists (it stands where a list of them stood)."""
        if not isinstance(other, (list, tuple, HitTable)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    # ---- columns ----

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_hits(self) -> int:
        return len(self.chunk)

    def ranks(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(hits of queries ``start:stop``,) int64: each hit's rank, 1.. within its query."""
        stop = len(self) if stop is None else stop
        lo, hi, lengths = self.span(start, stop)
        return np.arange(1, hi - lo + 1, dtype=np.int64) - np.repeat(self.offsets[start:stop] - lo, lengths)

    def row_of_hit(self) -> np.ndarray:
        """(n,) int64: each hit's query row."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths)

    def chunk_ids(self) -> np.ndarray:
        """(C,) object: the id of every chunk of the run, by chunk index."""
        return self._derived("chunk_ids", lambda: np.array([c.chunk_id for c in self.chunks], dtype=object))

    def doc_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(doc ids of the run's chunks, in order of first appearance; (C,) each chunk's index into them)."""
        def make():
            first: dict[str, int] = {}
            codes = np.fromiter((first.setdefault(c.doc_id, len(first)) for c in self.chunks), dtype=np.int64,
                                count=len(self.chunks))
            return np.array(list(first), dtype=object), codes
        return self._derived("doc_index", make)

    def best_per_doc(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(hits of queries ``start:stop``,) bool: the hit is its document's first (best-ranked) hit in its query,
        as ``types.best_hits``. Made for the span asked (a batch of queries), not kept: over every hit of a large
        run at once it held ~40 bytes a hit."""
        stop = len(self) if stop is None else stop
        lo, hi, lengths = self.span(start, stop)
        docs, doc_of_chunk = self.doc_index()
        key = np.repeat(np.arange(stop - start, dtype=np.int64), lengths) * max(len(docs), 1) + \
            doc_of_chunk[self.chunk[lo:hi]]
        _, first = np.unique(key, return_index=True)  # index of each key's first occurrence
        keep = np.zeros(hi - lo, dtype=bool)
        keep[first] = True
        return keep

    def span(self, start: int, stop: int) -> tuple[int, int, np.ndarray]:
        """(first hit, end of the hits, hits per query) of queries ``start:stop``."""
        return int(self.offsets[start]), int(self.offsets[stop]), np.diff(self.offsets[start:stop + 1])

    def trec_blocks(self, level: str, tag: str, batch: int = 1_000) -> Iterator[str]:
        """``types.Run.trec_lines`` from the columns, ``batch`` queries of lines at a time: at doc level each
        document's best chunk only, ranks renumbered 1.. within the query."""
        ids = self.chunk_ids() if level == "chunk" else self.doc_index()[0]
        item_of_chunk = None if level == "chunk" else self.doc_index()[1]
        for start in range(0, len(self), batch):
            stop = min(start + batch, len(self))
            lo, hi, lengths = self.span(start, stop)
            local = np.repeat(np.arange(stop - start), lengths)
            chunk, scores = self.chunk[lo:hi], self.scores[lo:hi]
            if level != "chunk":
                mask = self.best_per_doc(start, stop)
                local, chunk, scores = local[mask], chunk[mask], scores[mask]
                lengths = np.bincount(local, minlength=stop - start)
            items = ids[chunk if item_of_chunk is None else item_of_chunk[chunk]]
            ranks = np.arange(1, len(chunk) + 1) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            queries = self.query_ids[start:stop][local]
            yield "".join([f"{q} Q0 {d} {r} {s:.10g} {tag}\n" for q, d, r, s in
                           zip(queries.tolist(), items.tolist(), ranks.tolist(), scores.tolist())])

    def _derived(self, name: str, make):
        if name not in self._columns:
            self._columns[name] = make()
        return self._columns[name]


SPILL_HITS = 1 << 20  # hits a run holds in memory; past this its hit columns go to a temp file (core.spilled)


class HitTableBuilder:
    """Collects placed ranked lists batch by batch; each batch becomes arrays at once, so no ``Hit`` object outlives
    its batch. Chunk indices follow ``chunks`` and then the chunks adopted for hits' spans, in adoption order
    (``added``), which is the order ``Retrieved.chunks`` lists them in. Once the run holds more than ``spill_hits``
    hits (``SPILL_HITS``), they and every later batch's are appended to temp files instead (``SpilledColumn``): a
    large run's memory no longer grows by 12 bytes a hit, and the table is never concatenated in memory."""

    def __init__(self, chunks: Sequence[Chunk], spill_hits: int | None = None):
        self._index = {c.chunk_id: i for i, c in enumerate(chunks)}
        self._n_corpus = len(chunks)
        self._spill_hits = SPILL_HITS if spill_hits is None else spill_hits
        self._ids: list[str] = []
        self._lengths: list[np.ndarray] = []
        self._chunk: list[np.ndarray] = []
        self._scores: list[np.ndarray] = []
        self._held = 0  # hits in self._chunk / self._scores
        self._spilled: tuple[SpilledColumn, SpilledColumn] | None = None

    def added(self, chunks: Sequence[Chunk]) -> None:
        """Chunks adopted since the last call, in adoption order (their indices follow the corpus's)."""
        for c in chunks:
            self._index.setdefault(c.chunk_id, len(self._index))

    def add(self, lists: Sequence[RankedList]) -> None:
        index = self._index
        lengths = np.fromiter((len(r.hits) for r in lists), dtype=np.int64, count=len(lists))
        n = int(lengths.sum())
        self.add_indexed([r.query_id for r in lists], lengths,
                         np.fromiter((index[h.chunk_id] for r in lists for h in r.hits), dtype=np.int64, count=n),
                         np.fromiter((h.score for r in lists for h in r.hits), dtype=np.float64, count=n))

    def add_indexed(self, query_ids: Sequence[str], lengths: np.ndarray, chunk: np.ndarray, scores: np.ndarray
                    ) -> None:
        """A batch as columns: each hit's chunk index (the corpus's chunks, then the adopted ones) and score, in
        rank order, placed and checked (``add``'s lists, or a retriever's ``contract.IndexedLists``)."""
        self._ids.extend(query_ids)
        self._lengths.append(np.asarray(lengths, dtype=np.int64))
        self._chunk.append(chunk.astype(np.int32) if len(self._index) < 2**31 else chunk.astype(np.int64))
        self._scores.append(np.asarray(scores, dtype=np.float64))
        self._held += len(chunk)
        if self._spilled is not None or self._held > self._spill_hits:
            self._spill()

    def _spill(self) -> None:
        if self._spilled is None:  # int32 indices unless the corpus is near 2**31 (adopted chunks come after it)
            self._spilled = (SpilledColumn(np.int32 if self._n_corpus < 2**30 else np.int64),
                             SpilledColumn(np.float64))
        chunk, scores = self._spilled
        for part in self._chunk:
            if part.dtype.itemsize > chunk.dtype.itemsize and len(part) and int(part.max()) >= 2**31:
                raise OverflowError("more than 2**31 chunks in a run spilled with 32-bit chunk indices")
            chunk.append(part)
        for part in self._scores:
            scores.append(part)
        self._chunk, self._scores, self._held = [], [], 0

    def build(self, chunks: Sequence[Chunk]) -> HitTable:
        """The table over ``chunks``: the corpus's chunks, then every adopted one (as given to ``added``)."""
        assert len(chunks) == len(self._index), "every adopted chunk must be passed to added() in order"
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        query_ids = np.array(self._ids, dtype=object)
        if self._spilled is not None:
            return HitTable(query_ids, offsets_of(lengths), *self._spilled, tuple(chunks))
        dtype = np.int32 if len(chunks) < 2**31 else np.int64
        chunk = np.concatenate(self._chunk).astype(dtype, copy=False) if self._chunk else np.zeros(0, dtype)
        scores = np.concatenate(self._scores) if self._scores else np.zeros(0, np.float64)
        return HitTable(query_ids, offsets_of(lengths), chunk, scores, tuple(chunks))


class LazyHits(Sequence[Hit]):
    """The hits ``lo:hi`` of a ``HitTable`` as a sequence of ``Hit``: an index or a slice makes only the hits it
    names (a slice is a tuple); iteration makes one at a time."""

    __slots__ = ("_table", "_lo", "_n")

    def __init__(self, table: HitTable, lo: int, hi: int):
        self._table, self._lo, self._n = table, lo, hi - lo

    def __len__(self) -> int:
        return self._n

    def _hits(self, start: int, stop: int) -> Iterator[Hit]:
        if start >= stop:
            return iter(())
        lo, table = self._lo, self._table
        return hits_of(table.chunks, table.chunk[lo + start:lo + stop], table.scores[lo + start:lo + stop], start + 1)

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            return tuple(self._hits(start, stop)) if step == 1 else tuple(self._hits(0, self._n))[i]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return next(self._hits(i, i + 1))

    def __iter__(self) -> Iterator[Hit]:
        return self._hits(0, self._n)


def hits_of(chunks: Sequence[Chunk], codes: np.ndarray, scores: np.ndarray, first_rank: int = 1) -> Iterator[Hit]:
    """The hits on ``chunks[codes[j]]`` with ``scores[j]``, ranked from ``first_rank``, made one at a time."""
    for rank, (j, score) in enumerate(zip(codes.tolist(), scores.tolist()), first_rank):
        c = chunks[j]
        yield Hit(c.chunk_id, c.doc_id, score, rank, c.start, c.end)
