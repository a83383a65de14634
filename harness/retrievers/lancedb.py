"""``lancedb``: dense (or full-text) retrieval in an embedded LanceDB folder (lancedb, imported only when the
retriever is built).

Build mode writes a table to ``path:`` (kept, and reused while the vectors and settings are the same) or to a
temporary folder (removed after the run) with the ``dense`` encoder's (cached) vectors; connect mode searches an
existing table read-only, mapping columns to chunks through ``fields:``. ``index: flat`` searches exactly (no
vector index is used); ``ivf_flat``, ``ivf_pq`` and ``ivf_hnsw_sq`` build LanceDB's indexes (num_partitions,
nprobes, ...). ``search: fulltext`` is lexical instead: LanceDB's full-text index over the chunk text, scored by
its BM25 (no encoder; connect mode needs the text column's full-text index)."""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import Field, model_validator

from ..core.errors import RetrieverError
from ..core.types import Chunk, Query, RankedList
from .base import RetrieverKind, register
from .ranking import rank_hits
from .vectorstore import (MARKER_PREFIX, VectorStoreConfig, VectorStoreRetriever, marker_problem, need,
                          store_folder_problem)

class LanceConfig(VectorStoreConfig):
    kind: Literal["lancedb"] = "lancedb"
    path: str | None = None
    """the database folder; build mode: default a temporary one, removed after the run"""
    table: str | None = Field(None, min_length=1)
    """the table; build mode: default a name harness derives from the vectors"""
    column: str = "vector"
    """the vector column (connect mode)"""
    search: Literal["vector", "fulltext"] = "vector"
    """vector, or fulltext: LanceDB's BM25 over text_column (no model)"""
    text_column: str = "text"
    """search fulltext: the indexed text column"""
    index: Literal["flat", "ivf_flat", "ivf_pq", "ivf_hnsw_sq"] = "flat"
    """flat: exact search; ivf_flat, ivf_pq, ivf_hnsw_sq: approximate"""
    num_partitions: int | None = Field(None, ge=1)
    """IVF partitions built (default: LanceDB's choice, about the square root of the rows)"""
    num_sub_vectors: int | None = Field(None, ge=1)
    """ivf_pq: sub-vectors per vector"""
    m: int = Field(20, ge=4, le=512)
    """ivf_hnsw_sq: graph neighbours per node"""
    ef_construction: int = Field(300, ge=8, le=10_000)
    """ivf_hnsw_sq: candidate list size while building"""
    nprobes: int = Field(20, ge=1)
    """partitions searched per query"""
    ef: int | None = Field(None, ge=1)
    """hnsw: candidate list size while searching"""
    refine_factor: int | None = Field(None, ge=1)
    """re-rank refine_factor x k candidates exactly"""

    @model_validator(mode="after")
    def _where(self):
        if self.mode == "connect" and (self.path is None or self.table is None):
            raise ValueError("mode: connect needs path: (the database folder) and table:")
        if self.search == "fulltext" and self.index != "flat":
            raise ValueError("index: is a vector index; search: fulltext uses the full-text index")
        return self

    def check_installed(self) -> None:
        need("lancedb", "lancedb")
        if self.mode == "build":
            need("lancedb.index", "lancedb")

    def preflight(self, where: str) -> list[str]:
        problems = [] if self.search == "fulltext" else super().preflight(where)
        # A database folder holds a folder per table (name.lance) beside anything else: only a file is refused
        problem = store_folder_problem(self.path, where, "LanceDB database folder", lambda folder: True)
        if problem is None and self.mode == "connect" and self.path and not Path(self.path).is_dir():
            problem = f"{where}.path: {self.path} does not exist (mode: connect reads an existing database)"
        return problems + ([problem] if problem else [])


class LanceRetriever(VectorStoreRetriever):
    kind = "lancedb"
    config: LanceConfig

    @property
    def exact(self) -> bool:
        return self.config.index == "flat" or self.config.search == "fulltext"

    def settings(self) -> tuple:
        c = self.config
        return (c.search, c.index, c.num_partitions, c.num_sub_vectors, c.m, c.ef_construction)

    def backend_errors(self) -> tuple[type[BaseException], ...]:
        # lancedb raises ValueError for a column that holds no vectors, OSError/RuntimeError for its folder
        return ValueError, OSError, RuntimeError

    def _db(self):
        import os

        os.environ.setdefault("LANCEDB_LOG", "error")  # its k-means warnings on small corpora are noise on stderr
        lancedb = need("lancedb", "lancedb")
        self._tmp = None
        folder = self.config.path
        if folder is None:
            folder = self._tmp = tempfile.mkdtemp(prefix="harness-lancedb-")
            # Removed by close(), or when the retriever is collected (a hybrid's child nobody closes).
            weakref.finalize(self, shutil.rmtree, folder, True)
        self.db = lancedb.connect(folder)

    def _tables(self) -> list[str]:
        listed = self.db.list_tables()
        return list(getattr(listed, "tables", listed))

    def _open(self) -> None:
        self._db()
        c = self.config
        if c.table not in self._tables():
            raise RetrieverError(f"retriever.table: LanceDB table {c.table!r} is not in {c.path}")
        self.table = self.db.open_table(c.table)
        schema = self.table.schema
        wanted = [c.text_column if c.search == "fulltext" else c.column, *c.fields.names()]
        missing = [n for n in wanted if n not in schema.names]
        if missing:
            raise RetrieverError(f"retriever: table {c.table!r} has no column(s) {missing} (it has {schema.names})")
        if c.search == "vector":
            size = getattr(schema.field(c.column).type, "list_size", -1)
            self._dims = size if size and size > 0 else None

    def index(self, chunks: Sequence[Chunk]) -> None:
        if self.config.search == "fulltext" and self.config.mode == "build":
            self._chunks = tuple(chunks)
            with self._refusals("building the index"):
                self._build(None, self._chunks, MARKER_PREFIX + _fts_key(self._chunks, self.settings()))
            return
        super().index(chunks)

    def _build(self, vectors: np.ndarray | None, chunks: Sequence[Chunk], marker: str) -> None:
        import pyarrow as pa

        self._db()
        index = need("lancedb.index", "lancedb")
        c = self.config
        name = c.table or "harness_" + marker.removeprefix(MARKER_PREFIX)[:16]
        if name in self._tables():
            table = self.db.open_table(name)
            found = (table.schema.metadata or {}).get(b"harness_build", b"").decode() or None
            if found == marker and table.count_rows() == len(chunks):
                self.table, self._reused = table, True
                return
            if not (found or "").startswith(MARKER_PREFIX):
                raise marker_problem("lancedb", "table", name, found)
            self.db.drop_table(name)  # an older build of harness's own: replaced
        columns = {"pos": pa.array(range(len(chunks)), pa.int64()),
                   "chunk_id": pa.array([ch.chunk_id for ch in chunks], pa.string()),
                   "text": pa.array([ch.index_text for ch in chunks], pa.string())}
        if vectors is not None:
            columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()),
                                                                  vectors.shape[1])
        data = pa.table(columns).replace_schema_metadata({b"harness_build": marker.encode()})
        self.table = self.db.create_table(name, data)
        if c.search == "fulltext":
            self.table.create_index("text", config=index.FTS())
        elif c.index != "flat":
            # IVF training needs rows: a small corpus gets fewer partitions than LanceDB's default would ask for.
            parts = c.num_partitions or max(1, min(256, int(np.sqrt(len(chunks)))))
            if c.index == "ivf_flat":
                config = index.IvfFlat(distance_type=c.metric, num_partitions=parts)
            elif c.index == "ivf_pq":
                config = index.IvfPq(distance_type=c.metric, num_partitions=parts,
                                     num_sub_vectors=c.num_sub_vectors or _sub_vectors(vectors.shape[1]))
            else:
                config = index.HnswSq(distance_type=c.metric, num_partitions=parts, m=c.m,
                                      ef_construction=c.ef_construction)
            self.table.create_index("vector", config=config)

    def _retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        if self.config.search == "vector":
            return super()._retrieve(queries, k)
        return [rank_hits(q.query_id, (self._hit(s, r) for s, r in self._text_search(q.text, k)), k)
                for q in queries]

    def _columns(self) -> list[str]:
        return self.config.fields.names() if self.config.mode == "connect" else ["pos"]

    def _record(self, row: dict) -> object:
        return {n: row[n] for n in self.config.fields.names()} if self.config.mode == "connect" else int(row["pos"])

    def _text_search(self, text: str, k: int) -> list[tuple[float, object]]:
        # Unlike vector search, widening does not apply: ties are cut by LanceDB's order at k (like any BM25 top-k
        # of another engine); the pipeline orders what is returned by the tie rule.
        col = self.config.text_column if self.config.mode == "connect" else "text"
        rows = (self.table.search(text, query_type="fts", fts_columns=col).select([*self._columns(), "_score"]).limit(k)
                .to_arrow().to_pylist())
        return [(float(r["_score"]), self._record(r)) for r in rows]

    def _search(self, vectors: np.ndarray, n: int, exact: bool) -> list[list[tuple[float, object]]]:
        c = self.config
        column = c.column if c.mode == "connect" else "vector"
        out = []
        for v in vectors:
            # "_distance" named among the columns: LanceDB adds it anyway and warns once a query that it will stop
            q = (self.table.search(v, vector_column_name=column).metric(c.metric)
                 .select(self._columns() + ["_distance"]).limit(n))
            if exact:
                q = q.bypass_vector_index()
            else:
                q = q.nprobes(c.nprobes)
                if c.ef is not None:
                    q = q.ef(max(c.ef, n))
                if c.refine_factor is not None:
                    q = q.refine_factor(c.refine_factor)
            # LanceDB's dot "distance" is 1 - dot, cosine's 1 - cosine: both become "higher is more similar".
            out.append([(1.0 - float(r["_distance"]), self._record(r)) for r in q.to_arrow().to_pylist()])
        return out

    def close(self) -> None:
        self.table = self.db = None
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _sub_vectors(dims: int) -> int:
    # PQ needs dims divisible by the number of sub-vectors; 8 dimensions per sub-vector is LanceDB's usual choice.
    for n in (dims // 8, dims // 4, dims // 2, 1):
        if n >= 1 and dims % n == 0:
            return n
    return 1


def _fts_key(chunks: Sequence[Chunk], settings: tuple) -> str:
    from ..cache import cache_key

    return cache_key("lancedb-fts", settings, [(c.chunk_id, c.index_text) for c in chunks])[:32]


register(RetrieverKind("lancedb", LanceConfig, lambda cfg, ctx: LanceRetriever(cfg, ctx),
                       "dense or full-text search in an embedded LanceDB folder (build or connect)"))
