"""hits.parquet (every hit of a run: one row per query x rank) and chunks.parquet (the texts of the chunks those
hits name), written a batch of queries at a time as Parquet row groups, and read back one query at a time or as
columns. ``RunHits`` is a run's hits in memory with their judgments; ``ParquetHits`` is the same read from files.
Both give a ``core.result.Result`` the hits and texts it does not keep (``core.records.StoredHits``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.files import atomic_open
from ..core.records import HitRecord
from ..core.types import Chunk, RankedList

HITS_FILE = "hits.parquet"
CHUNKS_FILE = "chunks.parquet"
BATCH_QUERIES = 1_000  # queries per row group: memory while writing is bounded by one batch's rows
BATCH_CHUNKS = 20_000  # chunks per row group of chunks.parquet

HIT_COLUMNS = ("query_id", "rank", "chunk_id", "doc_id", "start", "end", "score", "relevant", "doc_relevant",
               "grade", "in_window")


def hit_schema():
    import pyarrow as pa

    return pa.schema([("query_id", pa.string()), ("rank", pa.int32()), ("chunk_id", pa.string()),
                      ("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64()),
                      ("relevant", pa.bool_()), ("doc_relevant", pa.bool_()), ("grade", pa.int32()),
                      ("in_window", pa.bool_())])


def chunk_schema():
    import pyarrow as pa

    return pa.schema([("chunk_id", pa.string()), ("doc_id", pa.string()), ("start", pa.int64()),
                      ("end", pa.int64()), ("text", pa.string())])


@dataclass(frozen=True)
class RunHits:
    """A run's placed hits with what judges them: chunk and document grades per query, each query's window."""

    lists: Sequence[RankedList]
    chunk_grades: Mapping[str, Mapping[str, int]]
    doc_grades: Mapping[str, Mapping[str, int]]
    window_k: Sequence[int]
    chunks: Mapping[str, Chunk]
    _position: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def records(self, i: int) -> list[HitRecord]:
        """The hit records of the ``i``-th query."""
        ranked, k = self.lists[i], self.window_k[i]
        grades, doc_grades = self.chunk_grades.get(ranked.query_id, {}), self.doc_grades.get(ranked.query_id, {})
        return [HitRecord(rank=h.rank, chunk_id=h.chunk_id, doc_id=h.doc_id, start=h.start, end=h.end,
                          score=float(h.score), relevant=grades.get(h.chunk_id, 0) >= 1,
                          doc_relevant=doc_grades.get(h.doc_id, 0) >= 1, grade=doc_grades.get(h.doc_id),
                          in_window=h.rank <= k)
                for h in ranked.hits]

    def hits(self, query_id: str) -> list[HitRecord]:
        if not self._position:
            self._position.update((r.query_id, i) for i, r in enumerate(self.lists))
        return self.records(self._position[query_id])

    def texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        return {c: self.chunks[c].text for c in chunk_ids if c in self.chunks}

    def relevance(self) -> Iterator[tuple[str, np.ndarray]]:
        for ranked in self.lists:
            grades = self.chunk_grades.get(ranked.query_id, {})
            yield ranked.query_id, np.fromiter((grades.get(h.chunk_id, 0) >= 1 for h in ranked.hits), dtype=bool)

    def batches(self) -> Iterator:
        """hits.parquet's rows as record batches of ``BATCH_QUERIES`` queries (the columns ``records`` gives, built
        directly: a pydantic record per hit would be most of the writing time)."""
        import pyarrow as pa

        schema = hit_schema()
        for start in range(0, len(self.lists), BATCH_QUERIES):
            columns: dict[str, list] = {name: [] for name in HIT_COLUMNS}
            for i in range(start, min(start + BATCH_QUERIES, len(self.lists))):
                ranked, k = self.lists[i], self.window_k[i]
                grades = self.chunk_grades.get(ranked.query_id, {})
                doc_grades = self.doc_grades.get(ranked.query_id, {})
                hits = ranked.hits
                columns["query_id"] += [ranked.query_id] * len(hits)
                columns["rank"] += [h.rank for h in hits]
                columns["chunk_id"] += [h.chunk_id for h in hits]
                columns["doc_id"] += [h.doc_id for h in hits]
                columns["start"] += [h.start for h in hits]
                columns["end"] += [h.end for h in hits]
                columns["score"] += [float(h.score) for h in hits]
                columns["relevant"] += [grades.get(h.chunk_id, 0) >= 1 for h in hits]
                columns["doc_relevant"] += [doc_grades.get(h.doc_id, 0) >= 1 for h in hits]
                columns["grade"] += [doc_grades.get(h.doc_id) for h in hits]
                columns["in_window"] += [h.rank <= k for h in hits]
            yield pa.record_batch([pa.array(columns[f.name], f.type) for f in schema], schema=schema)

    def hit_chunk_ids(self) -> list[str]:
        """The chunks any hit names, in first-appearance order."""
        return list(dict.fromkeys(h.chunk_id for ranked in self.lists for h in ranked.hits))


def write_hits(path: Path, source: RunHits) -> int:
    """hits.parquet, one row group per batch of queries; returns the rows written."""
    import pyarrow.parquet as pq

    rows = 0
    with atomic_open(path, "wb") as fh, pq.ParquetWriter(fh, hit_schema()) as writer:
        for batch in source.batches():
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def write_chunks(path: Path, chunks: Sequence[Chunk]) -> None:
    """chunks.parquet: id, document, span and text of ``chunks``, in row groups of ``BATCH_CHUNKS``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = chunk_schema()
    with atomic_open(path, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
        for start in range(0, len(chunks), BATCH_CHUNKS):
            part = chunks[start:start + BATCH_CHUNKS]
            writer.write_batch(pa.record_batch([pa.array([getattr(c, f.name) for c in part], f.type)
                                                for f in schema], schema=schema))


class ParquetHits:
    """The hits and chunk texts of a saved run, read from the Parquet files beside its results.json."""

    def __init__(self, hits_path: Path, chunks_path: Path | None = None):
        self.hits_path, self.chunks_path = Path(hits_path), chunks_path and Path(chunks_path)

    def _file(self, path: Path | None, what: str) -> Path:
        if path is None or not path.is_file():
            raise InputError(f"{path or CHUNKS_FILE}: not found; results.json keeps {what} of a bounded set of "
                             "queries only, and the rest are read from this file beside it")
        return path

    def hits(self, query_id: str) -> list[HitRecord]:
        import pyarrow.parquet as pq

        table = pq.read_table(self._file(self.hits_path, "the hits"), filters=[("query_id", "==", query_id)])
        rows = sorted(table.drop(["query_id"]).to_pylist(), key=lambda r: r["rank"])
        return [HitRecord(**row) for row in rows]

    def texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        import pyarrow.parquet as pq

        ids = list(chunk_ids)
        if not ids:
            return {}
        table = pq.read_table(self._file(self.chunks_path, "the chunk texts"), columns=["chunk_id", "text"],
                              filters=[("chunk_id", "in", ids)])
        return dict(zip(table.column("chunk_id").to_pylist(), table.column("text").to_pylist()))

    def relevance(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, relevant flags in rank order) per query, streamed over the row groups (a query's rows are
        written together, in rank order)."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        current, parts = None, []
        for batch in pq.ParquetFile(self._file(self.hits_path, "the hits")).iter_batches(
                columns=["query_id", "relevant"]):
            ids, n = batch.column(0), batch.num_rows
            rel = batch.column(1).to_numpy(zero_copy_only=False)
            changes = pc.not_equal(ids.slice(1), ids.slice(0, n - 1)).to_numpy(zero_copy_only=False) if n > 1 else []
            cuts = [0, *(np.flatnonzero(changes) + 1).tolist(), n]
            for a, b in zip(cuts, cuts[1:]):
                if a == b:
                    continue
                query_id = ids[a].as_py()
                if query_id != current:
                    if current is not None:
                        yield current, np.concatenate(parts)
                    current, parts = query_id, []
                parts.append(rel[a:b])
        if current is not None:
            yield current, np.concatenate(parts)
