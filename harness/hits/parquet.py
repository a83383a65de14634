"""hits.parquet (every hit of a run: one row per query x rank) and chunks.parquet (the texts of the chunks those
hits name), written a batch of queries at a time as Parquet row groups, and read back one query at a time or as
columns. ``RunHits`` is a run's hits in memory with their judgments; ``ParquetHits`` is the same read from files.
Both give a ``core.result.Result`` the hits and texts it does not keep (``core.records.StoredHits``).

hits.parquet's key-value metadata says where each batch of queries starts, so one query's hits are read from the row
group(s) holding it (``hitsindex``), not found by a filter over the whole query_id column."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..core.errors import InputError
from ..io.files import atomic_open
from .judge import BATCH_QUERIES, JudgedTable  # BATCH_QUERIES: queries per row group of hits.parquet
from .table import HitTable
from .levelgrades import grades_at
from ..result.records import HitRecord
from ..core.types import Chunk, RankedList, best_hits
from .parquet_index import index_metadata, query_rows, texts_by_group
from ..io.trec_blocks import numpy_of

HITS_FILE = "hits.parquet"
READ_ROWS = 65_536  # hits.parquet rows read at a time (arrow's default batch)
CHUNKS_FILE = "chunks.parquet"
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
    units: object = None  # hits.units.EvidenceUnits: a hit is relevant when it covers a new unit (else by grades)
    stages: Mapping | None = None  # query id -> a composite's stage records: hits.parquet gets ``stage_ranks``
    _position: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _judged: list = field(default_factory=list, init=False, repr=False, compare=False)  # the JudgedTable, made once

    def records(self, i: int) -> list[HitRecord]:
        """The hit records of the ``i``-th query."""
        ranked, k = self.lists[i], self.window_k[i]
        doc_grades = grades_at(self.doc_grades, i, ranked.query_id)
        relevant = self._flags(i, ranked)
        return [HitRecord(rank=h.rank, chunk_id=h.chunk_id, doc_id=h.doc_id, start=h.start, end=h.end,
                          score=float(h.score), relevant=flag,
                          doc_relevant=doc_grades.get(h.doc_id, 0) >= 1, grade=doc_grades.get(h.doc_id),
                          in_window=h.rank <= k)
                for h, flag in zip(ranked.hits, relevant)]

    def _flags(self, i: int, ranked: RankedList) -> list[bool]:
        """Each hit's chunk-level relevance: it covers a unit no hit above it covered (``hits.units``), or, with no
        units given, its chunk's grade >= 1."""
        hits = list(ranked.hits)
        if self.units is not None:
            from .units import hit_flags
            return hit_flags(self.units.at(i, ranked.query_id), hits)
        grades = grades_at(self.chunk_grades, i, ranked.query_id)
        return [grades.get(h.chunk_id, 0) >= 1 for h in hits]

    def hits(self, query_id: str) -> list[HitRecord]:
        if not self._position:
            ids = self.lists.query_ids.tolist() if isinstance(self.lists, HitTable) else (
                r.query_id for r in self.lists)
            self._position.update((q, i) for i, q in enumerate(ids))
        return self.records(self._position[query_id])

    def texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        return {c: self.chunks[c].text for c in chunk_ids if c in self.chunks}

    @property
    def judged(self) -> JudgedTable | None:
        """The run's hits judged as columns (a ``HitTable`` run, as every pipeline run is), else None."""
        if not isinstance(self.lists, HitTable):
            return None
        if not self._judged:
            self._judged.append(JudgedTable(self.lists, self.chunk_grades, self.doc_grades,
                                            np.asarray(self.window_k, dtype=np.int64), self.units))
        return self._judged[0]

    def relevance(self) -> Iterator[tuple[str, np.ndarray]]:
        if self.judged is not None:
            yield from self.judged.relevance()
            return
        for i, ranked in enumerate(self.lists):
            yield ranked.query_id, np.array(self._flags(i, ranked), dtype=bool)

    def doc_gains(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, the grades of its documents at their best chunk in rank order, negatives and unjudged as 0)."""
        if self.judged is not None:
            yield from self.judged.doc_gains()
            return
        for ranked in self.lists:
            grades = self.doc_grades.get(ranked.query_id, {})
            yield ranked.query_id, np.array([max(grades.get(h.doc_id, 0), 0) for h in best_hits(ranked.hits)],
                                            dtype=np.int64)

    def batches(self) -> Iterator:
        """hits.parquet's rows as record batches of ``BATCH_QUERIES`` queries (the columns ``records`` gives, built
        directly: a pydantic record per hit would be most of the writing time)."""
        return (batch for _, batch in self.positioned_batches())

    def positioned_batches(self) -> Iterator[tuple[int, object]]:
        """(position of the batch's first query in ``lists``, its record batch) for each of ``batches``."""
        import pyarrow as pa

        schema = hit_schema()
        if self.judged is not None:
            yield from _columnar_batches(self.judged, schema)
            return
        for start in range(0, len(self.lists), BATCH_QUERIES):
            columns: dict[str, list] = {name: [] for name in HIT_COLUMNS}
            for i in range(start, min(start + BATCH_QUERIES, len(self.lists))):
                ranked, k = self.lists[i], self.window_k[i]
                doc_grades = self.doc_grades.get(ranked.query_id, {})
                hits = ranked.hits
                columns["query_id"] += [ranked.query_id] * len(hits)
                columns["rank"] += [h.rank for h in hits]
                columns["chunk_id"] += [h.chunk_id for h in hits]
                columns["doc_id"] += [h.doc_id for h in hits]
                columns["start"] += [h.start for h in hits]
                columns["end"] += [h.end for h in hits]
                columns["score"] += [float(h.score) for h in hits]
                columns["relevant"] += self._flags(i, ranked)
                columns["doc_relevant"] += [doc_grades.get(h.doc_id, 0) >= 1 for h in hits]
                columns["grade"] += [doc_grades.get(h.doc_id) for h in hits]
                columns["in_window"] += [h.rank <= k for h in hits]
            yield start, pa.record_batch([pa.array(columns[f.name], f.type) for f in schema], schema=schema)

    def hit_chunk_ids(self) -> list[str]:
        """The chunks any hit names, in first-appearance order."""
        if self.judged is not None:
            return self.lists.chunk_ids()[self.judged.chunk_indices()].tolist()
        return list(dict.fromkeys(h.chunk_id for ranked in self.lists for h in ranked.hits))


def _columnar_batches(judged: JudgedTable, schema) -> Iterator:
    """hits.parquet's record batches from the judged columns: ids are taken from per-chunk arrays by index."""
    import pyarrow as pa

    table = judged.table
    chunks = table.chunks
    chunk_ids = pa.array(table.chunk_ids().tolist(), pa.string())
    doc_ids = pa.array([c.doc_id for c in chunks], pa.string())
    starts = np.fromiter((c.start for c in chunks), dtype=np.int64, count=len(chunks))
    ends = np.fromiter((c.end for c in chunks), dtype=np.int64, count=len(chunks))
    for b in judged.batches():
        query_ids = pa.array(table.query_ids[b.rows.start:b.rows.stop].tolist(), pa.string())
        local = pa.array(np.repeat(np.arange(len(b.rows)), b.lengths))
        index = pa.array(b.chunk)
        columns = {"query_id": query_ids.take(local), "rank": pa.array(b.rank, pa.int32()),
                   "chunk_id": chunk_ids.take(index), "doc_id": doc_ids.take(index),
                   "start": pa.array(starts[b.chunk]), "end": pa.array(ends[b.chunk]),
                   "score": pa.array(b.score, pa.float64()), "relevant": pa.array(b.relevant),
                   "doc_relevant": pa.array(b.doc_relevant), "grade": pa.array(b.grade, pa.int32(), mask=~b.judged),
                   "in_window": pa.array(b.in_window)}
        yield b.rows.start, pa.record_batch([columns[f.name] for f in schema], schema=schema)


RUN_KEY = "harness.run"  # footer metadata: the run the file belongs to (``Result.run_id``)


def write_hits(path: Path, source: RunHits, run_id: str = "") -> int:
    """hits.parquet, one row group per batch of queries, with where each batch starts (``hitsindex.INDEX_KEY``)
    and the run it belongs to (``RUN_KEY``); returns the rows written."""
    import pyarrow.parquet as pq

    from .stageranks import stage_field, with_stage_ranks

    rows, first_query, first_row = 0, [], []
    stages = getattr(source, "stages", None)
    schema = hit_schema() if stages is None else hit_schema().append(stage_field())
    with atomic_open(path, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
        for start, batch in source.positioned_batches():
            batch = batch if stages is None else with_stage_ranks(batch, stages)
            first_query.append(int(start))
            first_row.append(rows)
            writer.write_batch(batch)
            rows += batch.num_rows
        writer.add_key_value_metadata({**index_metadata(len(source.lists), first_query, first_row),
                                       RUN_KEY: run_id})
    return rows


def write_chunks(path: Path, chunks: Sequence[Chunk], run_id: str = "") -> None:
    """chunks.parquet: id, document, span and text of ``chunks``, in row groups of ``BATCH_CHUNKS``, and the run
    it belongs to."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = chunk_schema()
    with atomic_open(path, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
        for start in range(0, len(chunks), BATCH_CHUNKS):
            part = chunks[start:start + BATCH_CHUNKS]
            writer.write_batch(pa.record_batch([pa.array([getattr(c, f.name) for c in part], f.type)
                                                for f in schema], schema=schema))
        writer.add_key_value_metadata({RUN_KEY: run_id})


class ParquetHits:
    """The hits and chunk texts of a saved run, read from the Parquet files beside its results.json."""

    def __init__(self, hits_path: Path, chunks_path: Path | None = None, queries: Sequence | None = None,
                 run_id: str | None = None):
        """``queries``: the result's records in results.json order (a list or a ``core.querystore.QueryStore``),
        which give a query's position; without them (or without ``hitsindex.INDEX_KEY`` in the file) a query's
        hits are found by a filter over the whole file unless the query_id statistics find its row group.
        ``run_id``: the run's (``Result.run_id``); a file another run wrote is refused (one written before the
        files named their run is read as it is)."""
        self.hits_path, self.chunks_path = Path(hits_path), chunks_path and Path(chunks_path)
        self.queries = queries
        self.run_id = run_id
        self._positions: dict[str, int] = {}  # a list's ids, built at the first look-up
        self._checked: set[Path] = set()  # the files whose schema was read

    def _file(self, path: Path | None, what: str) -> Path:
        """``path``, once it is known to be a Parquet file with the columns harness writes there (its schema
        is read once): a damaged or foreign file is an InputError naming it, not an Arrow error later."""
        if path is None or not path.is_file():
            raise InputError(f"{path or CHUNKS_FILE}: not found; results.json keeps {what} of a bounded set of "
                             "queries only, and the rest are read from this file beside it")
        if path not in self._checked:
            import pyarrow.parquet as pq

            with _reading(path):
                schema = pq.read_schema(path)
                footer = pq.ParquetFile(path).metadata.metadata or {}  # (the key-value metadata writers add)
            expected = hit_schema() if path == self.hits_path else chunk_schema()
            lacking = [f.name for f in expected if schema.get_field_index(f.name) < 0
                       or not schema.field(f.name).type.equals(f.type)]
            if lacking:
                raise InputError(f"{path}: not {what} as harness run writes them (no column {', '.join(lacking)} of "
                                 f"the expected type); was the file replaced?")
            written_by = footer.get(RUN_KEY.encode())
            if self.run_id and written_by and written_by.decode("utf-8", "replace") != self.run_id:
                raise InputError(f"{path}: {what} of another run ({written_by.decode('utf-8', 'replace')}), not of "
                                 f"the results.json beside it ({self.run_id}); keep a run's files together")
            self._checked.add(path)
        return path

    def hits(self, query_id: str) -> list[HitRecord]:
        path = self._file(self.hits_path, "the hits")
        with _reading(path):
            table = query_rows(path, query_id, None if self.queries is None else len(self.queries),
                               lambda: self._position(query_id))
            if table is None:
                table = self._filtered(path, query_id)
            rows = sorted(table.select(list(HIT_COLUMNS[1:])).to_pylist(), key=lambda r: r["rank"])
        return [HitRecord(**row) for row in rows]

    def _filtered(self, path: Path, query_id: str):
        """The query's rows found by a filter over the file (reads its whole query_id column) when
        ``hitsindex.query_rows`` cannot tell where they are: see there."""
        import pyarrow.parquet as pq

        return pq.read_table(path, filters=[("query_id", "==", query_id)])

    def _position(self, query_id: str) -> int | None:
        """The query's position in results.json's record order."""
        queries = self.queries
        if hasattr(queries, "index_of"):  # a QueryStore: found by the records' bytes
            return queries.index_of(query_id)
        if not self._positions:
            self._positions.update((q.id, i) for i, q in enumerate(queries))
        return self._positions.get(query_id)

    def texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        import pyarrow.parquet as pq

        ids = list(chunk_ids)
        if not ids:
            return {}
        path = self._file(self.chunks_path, "the chunk texts")
        with _reading(path):
            found = texts_by_group(path, set(ids))
            if found is not None:
                return found
            table = pq.read_table(path, columns=["chunk_id", "text"], filters=[("chunk_id", "in", ids)])
            return dict(zip(table.column("chunk_id").to_pylist(), table.column("text").to_pylist()))

    def all_hits(self, max_rank: int | None = None) -> Iterator[tuple[str, list[HitRecord]]]:
        """(query id, its hits down to ``max_rank``) per query with hits, in the file's order (results.json's),
        streamed over the row groups."""
        names = list(HIT_COLUMNS[1:])
        for ids, lengths, columns in self._whole_queries(names):
            rows = [dict(zip(names, values)) for values in zip(*(c.to_pylist() for c in columns))]
            at = 0
            for query_id, n in zip(ids, lengths.tolist()):
                yield query_id, [HitRecord(**row) for row in rows[at:at + n]
                                 if max_rank is None or row["rank"] <= max_rank]
                at += n

    def relevance(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, relevant flags in rank order) per query, streamed over the row groups."""
        for ids, lengths, (relevant,) in self._whole_queries(["relevant"]):
            flags = relevant.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
            yield from zip(ids, np.split(flags, np.cumsum(lengths)[:-1]))

    def doc_gains(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, the grades of its documents at their best chunk in rank order, negatives and unjudged as 0):
        each document's first row in its query found for a batch of queries at once (its doc ids as codes)."""
        import pyarrow.compute as pc

        for ids, lengths, (docs, grades) in self._whole_queries(["doc_id", "grade"]):
            encoded = pc.dictionary_encode(docs)
            codes = numpy_of(encoded.indices).astype(np.int64)
            local = np.repeat(np.arange(len(ids), dtype=np.int64), lengths)
            _, first = np.unique(local * max(len(encoded.dictionary), 1) + codes, return_index=True)
            keep = np.zeros(len(codes), dtype=bool)
            keep[first] = True
            gains = np.maximum(np.nan_to_num(numpy_of(grades.fill_null(0)).astype(float)), 0).astype(np.int64)
            counts = np.bincount(local[keep], minlength=len(ids))
            yield from zip(ids, np.split(gains[keep], np.cumsum(counts)[:-1]))

    def _whole_queries(self, columns: list[str]) -> Iterator[tuple[list[str], np.ndarray, list]]:
        """(query ids, their row counts, each of ``columns`` as an arrow array) for batches of whole queries,
        streamed over the file (a query's rows are written together, in rank order; the last query of a batch is
        carried into the next, where it may go on)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        carried = None
        path = self._file(self.hits_path, "the hits")
        with _reading(path):
            for batch in pq.ParquetFile(path).iter_batches(batch_size=READ_ROWS, columns=["query_id", *columns]):
                table = pa.Table.from_batches([batch])
                table = table if carried is None else pa.concat_tables([carried, table])
                changes = np.flatnonzero(_changes(table.column(0).combine_chunks())) + 1
                tail = int(changes[-1]) if len(changes) else 0  # where the batch's last query starts
                if tail:
                    yield _queries_of(table.slice(0, tail))
                carried = table.slice(tail)
            if carried is not None and carried.num_rows:
                yield _queries_of(carried)


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Arrow's errors reading ``path`` (a damaged file: no footer, a page cut short) as an InputError naming it."""
    import pyarrow as pa

    try:
        yield
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).strip().split("\n", 1)[0]
        raise InputError(f"{path}: cannot be read as the Parquet file harness run writes ({first})") from None


def _changes(ids) -> np.ndarray:
    """(n - 1,) bool: row i + 1's query is not row i's."""
    import pyarrow.compute as pc

    n = len(ids)
    return pc.not_equal(ids.slice(1), ids.slice(0, n - 1)).to_numpy(zero_copy_only=False) if n > 1 else \
        np.zeros(0, dtype=bool)


def _queries_of(table) -> tuple[list[str], np.ndarray, list]:
    ids, n = table.column(0).combine_chunks(), table.num_rows
    starts = np.concatenate([[0], np.flatnonzero(_changes(ids)) + 1])
    lengths = np.diff(np.append(starts, n))
    columns = [table.column(i).combine_chunks() for i in range(1, table.num_columns)]
    return ids.take(starts).to_pylist(), lengths, columns
