"""A ``HitTable``'s hits with their judgments, as columns, a batch of queries at a time: what hits.parquet, the TREC
files and the report's curves read, without making a ``Hit`` or a ``HitRecord`` per hit.

The judgments are looked up by sorted integer keys (query row x chunk or document), so judging a batch is a few
NumPy operations whatever its size, and memory holds one batch's columns plus the judgments themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

import numpy as np

from .table import HitTable
from .levelgrades import LevelGrades, grades_at
from ..core.runtable import encode

BATCH_QUERIES = 1_000  # queries judged at a time: memory is bounded by one batch's hits


@dataclass(frozen=True)
class JudgedBatch:
    """Queries ``rows`` (a range of the table) and their hits ``lo:hi`` with every column hits.parquet holds."""

    rows: range
    lo: int
    hi: int
    lengths: np.ndarray  # (len(rows),) hits per query
    chunk: np.ndarray  # (m,) chunk index into the table's chunks
    rank: np.ndarray  # (m,) int64, 1.. within its query
    score: np.ndarray  # (m,) float64
    relevant: np.ndarray  # (m,) bool: the hit covers an evidence unit no hit above it covered (``hits.units``)
    grade: np.ndarray  # (m,) int64: the document's grade (0 where unjudged: see ``judged``)
    judged: np.ndarray  # (m,) bool: the document is judged for the query
    in_window: np.ndarray  # (m,) bool

    @property
    def doc_relevant(self) -> np.ndarray:
        return self.judged & (self.grade >= 1)


@dataclass(frozen=True, eq=False)
class JudgedTable:
    """``table``'s hits judged by ``chunk_grades``/``doc_grades`` (query id -> id -> grade) at ``window_k``."""

    table: HitTable
    chunk_grades: Mapping[str, Mapping[str, int]]
    doc_grades: Mapping[str, Mapping[str, int]]
    window_k: np.ndarray
    units: object = None  # hits.units.EvidenceUnits: relevance by the unit rule, else by ``chunk_grades``
    _keys: dict = field(default_factory=dict, repr=False, compare=False)

    def _judgments(self):
        """(sorted relevant row x chunk keys, sorted row x document keys, their grades), made once."""
        if not self._keys:
            t = self.table
            n_chunks = max(len(t.chunks), 1)
            docs, _ = t.doc_index()
            n_docs = max(len(docs), 1)
            rows, chunks, chunk_grades = _coded(self.chunk_grades, t, t.chunk_ids())
            relevant = rows[chunk_grades >= 1] * n_chunks + chunks[chunk_grades >= 1]
            rows, doc_codes, grades = _coded(self.doc_grades, t, docs)
            doc_keys = rows * n_docs + doc_codes
            order = np.argsort(doc_keys, kind="stable")
            self._keys.update(relevant=np.sort(relevant), doc_keys=doc_keys[order], grades=grades[order],
                              n_chunks=n_chunks, n_docs=n_docs)
        return self._keys

    def batch(self, start: int, stop: int) -> JudgedBatch:
        t, keys = self.table, self._judgments()
        lo, hi, lengths = t.span(start, stop)
        rows = np.repeat(np.arange(start, stop, dtype=np.int64), lengths)
        rank = t.ranks(start, stop)
        chunk = t.chunk[lo:hi]
        if self.units is not None:
            from .units import table_items
            relevant = table_items(t, self.units, start, stop, self.window_k, {}, codes=False).new > 0
        else:
            relevant, _ = _lookup(rows * keys["n_chunks"] + chunk, keys["relevant"])
        _, doc_of_chunk = t.doc_index()
        found, position = _lookup(rows * keys["n_docs"] + doc_of_chunk[chunk], keys["doc_keys"])
        grades = keys["grades"]
        grade = np.where(found, grades[position], 0) if len(grades) else np.zeros(len(chunk), dtype=np.int64)
        in_window = rank <= np.repeat(self.window_k[start:stop], lengths)
        return JudgedBatch(range(start, stop), lo, hi, lengths, chunk, rank, t.scores[lo:hi], relevant,
                           grade.astype(np.int64), found, in_window)

    def batches(self, size: int = BATCH_QUERIES) -> Iterator[JudgedBatch]:
        for start in range(0, len(self.table), size):
            yield self.batch(start, min(start + size, len(self.table)))

    def relevance(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, each hit's relevant flag in rank order) per query, in table order."""
        ids = self.table.query_ids
        for b in self.batches():
            for row, part in zip(b.rows, np.split(b.relevant, np.cumsum(b.lengths)[:-1])):
                yield str(ids[row]), part

    def doc_gains(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, the grades (negatives and unjudged as 0) of its documents at their best chunk, in rank
        order) per query: the gains of a doc-level ranking."""
        ids = self.table.query_ids
        for b in self.batches():
            keep = self.table.best_per_doc(b.rows.start, b.rows.stop)
            gains = np.maximum(b.grade, 0)[keep]
            local = np.repeat(np.arange(len(b.rows)), b.lengths)[keep]
            counts = np.bincount(local, minlength=len(b.rows))
            for row, part in zip(b.rows, np.split(gains, np.cumsum(counts)[:-1])):
                yield str(ids[row]), part

    def chunk_indices(self) -> np.ndarray:
        """The chunks any hit names, in order of first appearance: found a batch of queries at a time (the hit
        columns of a large run are read by slices, and a sort of every hit would hold ~20 bytes a hit)."""
        t = self.table
        seen = np.zeros(len(t.chunks), dtype=bool)
        found = [np.zeros(0, dtype=t.chunk.dtype)]
        for start in range(0, len(t), BATCH_QUERIES):
            lo, hi, _ = t.span(start, min(start + BATCH_QUERIES, len(t)))
            chunk = t.chunk[lo:hi]
            _, first = np.unique(chunk, return_index=True)
            new = chunk[np.sort(first)]  # the batch's chunks in order of first appearance
            new = new[~seen[new]]
            seen[new] = True
            found.append(new)
        return np.concatenate(found)


def _lookup(values: np.ndarray, sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whether each value is a key, its position in ``sorted_keys`` where it is)."""
    if not len(sorted_keys):
        return np.zeros(len(values), dtype=bool), np.zeros(len(values), dtype=np.int64)
    position = np.searchsorted(sorted_keys, values)
    clipped = np.minimum(position, len(sorted_keys) - 1)
    return sorted_keys[clipped] == values, clipped


def _coded(grades: Mapping[str, Mapping[str, int]], table: HitTable, vocab: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(table row, code in ``vocab``, grade) of every judgment of ``table``'s queries whose id is in ``vocab``. From
    ``LevelGrades`` in the table's query order (every pipeline run's), by arrays alone; else a query at a time."""
    q = grades.qrels if isinstance(grades, LevelGrades) else None
    if q is not None and len(q.query_ids) == len(table) and np.array_equal(q.query_ids, table.query_ids):
        rows = np.repeat(np.arange(len(table), dtype=np.int64), np.diff(q.offsets))
        codes = encode(vocab, q.doc_ids.tolist())
        known = codes >= 0
        return rows[known], codes[known], q.grades[known]
    code = {v: i for i, v in enumerate(vocab.tolist())}
    rows, codes, values = [], [], []
    for row, qid in enumerate(table.query_ids.tolist()):
        for item, grade in grades_at(grades, row, qid).items():
            if item in code:
                rows.append(row)
                codes.append(code[item])
                values.append(grade)
    return (np.asarray(rows, dtype=np.int64), np.asarray(codes, dtype=np.int64),
            np.asarray(values, dtype=np.int64))
