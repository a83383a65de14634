"""``pgvector``: dense retrieval in PostgreSQL with the pgvector extension (psycopg + pgvector + pgserver, imported
only when the retriever is built).

Production: ``dsn_env:`` names the environment variable holding the connection string (never the DSN itself).
Without it the retriever starts a real PostgreSQL from pip (``pgserver``) in ``path:`` (kept) or in a temporary
folder (removed), and stops it when the run ends. Build mode creates the extension and a table and fills it with
the ``dense`` encoder's (cached) vectors; connect mode reads an existing table, mapping columns to chunks through
``fields:``. ``index: flat`` is exact (``ORDER BY embedding <#> q``, or ``<=>`` for cosine, no index used);
``hnsw`` and ``ivfflat`` build pgvector's indexes and search through them (ef_search, probes)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Literal, Sequence

import numpy as np
from pydantic import Field, model_validator

from ..core.errors import ConfigError, RetrieverError
from ..core.schema import Strict
from ..core.types import Chunk
from .base import RetrieverKind, register
from .vectorstore import (MARKER_PREFIX, VectorStoreConfig, VectorStoreRetriever, identifier_problem,
                          marker_problem, need, store_folder_problem)


class PgHNSW(Strict):
    m: int = Field(16, ge=2, le=100)
    """graph neighbours per node"""
    ef_construction: int = Field(64, ge=4, le=1000)
    """candidate list size while building"""
    ef_search: int = Field(100, ge=1, le=1000)
    """candidate list size while searching (raised to depth: pgvector returns at most ef_search rows)"""


class PgIVFFlat(Strict):
    lists: int = Field(100, ge=1, le=32768)
    """inverted lists built"""
    probes: int = Field(10, ge=1, le=32768)
    """lists searched per query"""


class PgvectorConfig(VectorStoreConfig):
    kind: Literal["pgvector"] = "pgvector"
    dsn_env: str | None = None
    """the environment variable holding the DSN (postgresql://...); without it a PostgreSQL is started with pgserver"""
    path: str | None = None
    """pgserver's data folder, kept; default a temporary one, removed after the run"""
    table: str | None = None
    """the table; build mode: default a name harness derives from the vectors"""
    column: str = "embedding"
    """the vector column"""
    index: Literal["flat", "hnsw", "ivfflat"] = "flat"
    """flat: exact search, no index; hnsw or ivfflat: approximate"""
    hnsw: PgHNSW = PgHNSW()
    """index: hnsw settings"""
    ivfflat: PgIVFFlat = PgIVFFlat()
    """index: ivfflat settings"""

    @model_validator(mode="after")
    def _names(self):
        if self.dsn_env is not None and self.path is not None:
            raise ValueError("give dsn_env: (a server) or path: (pgserver's folder), not both")
        if self.mode == "connect" and self.table is None:
            raise ValueError("mode: connect needs table: (the existing table to search)")
        problems = [identifier_problem(self.table, "table"), identifier_problem(self.column, "column")]
        problems += [identifier_problem(v, f"fields.{k}") for k, v in
                     (self.fields.model_dump() if self.fields else {}).items() if v]
        problems = [p for p in problems if p]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def check_installed(self) -> None:
        for module in ("psycopg", "pgvector.psycopg") + (() if self.dsn_env else ("pgserver",)):
            need(module, "pgvector")

    def preflight(self, where: str) -> list[str]:
        problems = super().preflight(where)
        if self.dsn_env and not os.environ.get(self.dsn_env):
            problems.append(f"{where}.dsn_env: environment variable {self.dsn_env} is not set")
        elif self.dsn_env:
            why = dsn_problem(os.environ[self.dsn_env])
            if why:
                problems.append(f"{where}.dsn_env: environment variable {self.dsn_env} {why}")
        # pgserver runs initdb there and gives the folder to its own user: only a new folder or a data folder
        problem = store_folder_problem(self.path, where, "PostgreSQL data folder",
                                       lambda folder: (folder / "PG_VERSION").is_file())
        return problems + ([problem] if problem else [])


def dsn_problem(dsn: str) -> str | None:
    """Why ``dsn`` is no PostgreSQL connection string, as libpq parses it offline (psycopg's conninfo_to_dict: an
    unknown option, a missing '='), or None (also when psycopg is missing: its extra is said on its own). The DSN
    itself is never printed: it may hold a password."""
    try:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        conninfo_to_dict(dsn)
    except ProgrammingError as exc:
        # libpq's message quotes the token it stopped at, which may be (part of) a password: only its kind is said,
        # and an unknown option's name, which is a keyword, never a secret.
        message = str(exc)
        unknown = re.match(r'invalid connection option "([A-Za-z_]+)"', message)
        what = (f"unknown option {unknown[1]!r}" if unknown else
                "a word without '=' (quote a value with spaces)" if 'missing "="' in message or "separator" in message
                else "not readable")
        return (f"does not hold a PostgreSQL connection string ({what}); e.g. postgresql://user@host:5432/db or "
                f"'host=localhost port=5432 dbname=db'")
    return None


_OPS = {"dot": ("<#>", "vector_ip_ops"), "cosine": ("<=>", "vector_cosine_ops")}


class PgvectorRetriever(VectorStoreRetriever):
    kind = "pgvector"
    config: PgvectorConfig

    def settings(self) -> tuple:
        c = self.config
        return {"flat": ("flat",), "hnsw": ("hnsw", c.hnsw.m, c.hnsw.ef_construction),
                "ivfflat": ("ivfflat", c.ivfflat.lists)}[c.index]

    def _connect(self) -> None:
        psycopg = need("psycopg", "pgvector")
        reg = need("pgvector.psycopg", "pgvector")
        self._server, self._tmp = None, None
        c = self.config
        if c.dsn_env:
            dsn = os.environ.get(c.dsn_env)
            if not dsn:
                raise ConfigError(f"retriever.dsn_env: environment variable {c.dsn_env} is not set")
            why = dsn_problem(dsn)
            if why:
                raise ConfigError(f"retriever.dsn_env: environment variable {c.dsn_env} {why}")
        else:
            pgserver = need("pgserver", "pgvector")
            folder = c.path or tempfile.mkdtemp(prefix="harness-pg-")
            self._tmp = None if c.path else folder
            # pgserver also stops (a temporary folder: deletes) at exit, e.g. for a hybrid's child nobody closes.
            self._server = pgserver.get_server(folder, cleanup_mode="stop" if c.path else "delete")
            dsn = self._server.get_uri()
        try:
            # No server-side prepared statements: a cached plan would ignore the exact/index settings made per search.
            self.conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=None)
        except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:  # no server there; a DSN libpq refuses
            raise RetrieverError(f"retriever: cannot connect to PostgreSQL ({str(exc).strip().splitlines()[0]})") \
                from None
        if c.mode == "build":
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        reg.register_vector(self.conn)

    def _q(self, text: str, **names):
        from psycopg import sql

        return sql.SQL(text).format(**{k: sql.Identifier(v) for k, v in names.items()})

    def _open(self) -> None:
        self._connect()
        c = self.config
        found = self.conn.execute("SELECT to_regclass(%s)", (c.table,)).fetchone()[0]
        if found is None:
            raise RetrieverError(f"retriever.table: table {c.table!r} does not exist")
        cols = {r[0]: r[1] for r in self.conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0 AND NOT attisdropped", (c.table,)).fetchall()}
        missing = [n for n in [c.column, *c.fields.names()] if n not in cols]
        if missing:
            raise RetrieverError(f"retriever: table {c.table!r} has no column(s) {missing} (it has {sorted(cols)})")
        kind = cols[c.column]
        if not kind.startswith("vector"):
            raise RetrieverError(f"retriever.column: {c.table}.{c.column} is {kind}, not a pgvector vector")
        if kind.startswith("vector("):
            self._dims = int(kind[7:-1])

    def _build(self, vectors: np.ndarray, chunks: Sequence[Chunk], marker: str) -> None:
        self._connect()
        c = self.config
        name = c.table or "harness_" + marker.removeprefix(MARKER_PREFIX)[:16]
        self._name = name
        if self.conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None:
            found = self.conn.execute("SELECT obj_description(%s::regclass, 'pg_class')", (name,)).fetchone()[0]
            count = self.conn.execute(self._q("SELECT count(*) FROM {t}", t=name)).fetchone()[0]
            if found == marker and count == len(chunks):
                self._reused = True
                return
            if not (isinstance(found, str) and found.startswith(MARKER_PREFIX)):
                raise marker_problem("pgvector", "table", name, found)
            self.conn.execute(self._q("DROP TABLE {t}", t=name))  # an older build of harness's own: replaced
        with self.conn.transaction():
            self.conn.execute(self._q(
                "CREATE TABLE {t} (pos integer PRIMARY KEY, chunk_id text NOT NULL, doc_id text NOT NULL, "
                "start_offset integer NOT NULL, end_offset integer NOT NULL, {col} vector(%d))" % vectors.shape[1],
                t=name, col=c.column))
            with self.conn.cursor().copy(self._q(
                    "COPY {t} (pos, chunk_id, doc_id, start_offset, end_offset, {col}) FROM STDIN WITH (FORMAT BINARY)",
                    t=name, col=c.column)) as copy:
                copy.set_types(["int4", "text", "text", "int4", "int4", "vector"])
                for i, ch in enumerate(chunks):
                    copy.write_row((i, ch.chunk_id, ch.doc_id, ch.start, ch.end, vectors[i]))
            ops = _OPS[c.metric][1]
            if c.index == "hnsw":
                self.conn.execute(self._q("CREATE INDEX ON {t} USING hnsw ({col} %s) WITH (m = %d, "
                                          "ef_construction = %d)" % (ops, c.hnsw.m, c.hnsw.ef_construction),
                                          t=name, col=c.column))
            elif c.index == "ivfflat":
                self.conn.execute(self._q("CREATE INDEX ON {t} USING ivfflat ({col} %s) WITH (lists = %d)"
                                          % (ops, min(c.ivfflat.lists, max(1, len(chunks)))), t=name, col=c.column))
            self.conn.execute(self._q("COMMENT ON TABLE {t} IS ", t=name) + _literal(marker))
            self.conn.execute(self._q("ANALYZE {t}", t=name))

    def _search(self, vectors: np.ndarray, n: int, exact: bool) -> list[list[tuple[float, object]]]:
        c = self.config
        op = _OPS[c.metric][0]
        connect = c.mode == "connect"
        table = c.table if connect else self._name
        names = c.fields.names() if connect else ["pos"]
        from psycopg import sql

        cols = sql.SQL(", ").join(sql.Identifier(n_) for n_ in names)
        query = sql.SQL("SELECT {d}, {cols} FROM {t} ORDER BY {d} LIMIT %s").format(
            d=sql.SQL("{} %s %%s" % op).format(sql.Identifier(c.column)), cols=cols, t=sql.Identifier(table))
        out = []
        with self.conn.transaction():
            # Exact = no index scan: every row sorted by distance (what `flat` promises). Otherwise the configured
            # index is what is measured, so the planner may not fall back to a scan of the table on a small one.
            self.conn.execute("SET LOCAL enable_indexscan = %s" % ("off" if exact else "on"))
            self.conn.execute("SET LOCAL enable_seqscan = %s" % ("on" if exact else "off"))
            if not exact:
                self.conn.execute("SET LOCAL hnsw.ef_search = %d" % max(c.hnsw.ef_search, min(n, 1000)))
                self.conn.execute("SET LOCAL ivfflat.probes = %d" % c.ivfflat.probes)
            for v in vectors:
                rows = self.conn.execute(query, (v, v, n)).fetchall()
                out.append([(_score(c.metric, r[0]), dict(zip(names, r[1:])) if connect else int(r[1]))
                            for r in rows])
        return out

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
            self.conn = None
        if getattr(self, "_server", None) is not None:
            self._server.cleanup()
            self._server = None
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _score(metric: str, distance: float) -> float:
    # <#> is the negative inner product, <=> the cosine distance: both become "higher is more similar".
    return -float(distance) if metric == "dot" else 1.0 - float(distance)


def _literal(text: str):
    from psycopg import sql

    return sql.Literal(text)


register(RetrieverKind("pgvector", PgvectorConfig, lambda cfg, ctx: PgvectorRetriever(cfg, ctx),
                       "dense search in PostgreSQL + pgvector (pgserver or a DSN; build or connect)"))
