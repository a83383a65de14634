"""``milvus``: dense retrieval in a Milvus collection (pymilvus, imported only when the retriever is built).

Milvus Lite (``path:`` a local ``name.db``, run by the ``milvus-lite`` package; build mode defaults to a temporary
one, removed after the run) or a server (``uri:``, the token read from the variable ``token_env:`` names). Build
mode fills a collection with the ``dense`` encoder's (cached) vectors; connect mode searches an existing collection
read-only and maps each entity to a chunk through ``fields:``. ``index: flat`` (Milvus's FLAT) searches exactly;
``ivf_flat`` (nlist, nprobe) and ``hnsw`` (m, ef_construction, ef) are approximate, and their recall@10 against
exact search over the same vectors is reported."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import Field, field_validator, model_validator

from ..core.errors import ConfigError, RetrieverError
from ..core.types import Chunk
from .base import RetrieverKind, register
from .urls import service_url_problem
from .vectorstore import (MARKER_PREFIX, VectorStoreConfig, VectorStoreRetriever, exact_top, marker_problem, need)

INSERT_BATCH = 1000
MAX_TOPK = 16384  # Milvus refuses a larger limit
METRIC = {"dot": "IP", "cosine": "COSINE"}


class MilvusConfig(VectorStoreConfig):
    kind: Literal["milvus"] = "milvus"
    path: str | None = None
    """a Milvus Lite database (a name ending .db); build mode: default a temporary one, removed after the run"""
    uri: str | None = None
    """a Milvus server, http(s)://host:port (instead of path:)"""
    token_env: str | None = None
    """the environment variable holding the server's token, user:password or an API key (never the token itself)"""
    collection: str | None = Field(None, min_length=1, max_length=255, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """the collection; build mode: default a name harness derives from the vectors"""
    column: str = "vector"
    """the vector field (connect mode)"""
    index: Literal["flat", "ivf_flat", "hnsw"] = "flat"
    """flat: exact search (Milvus FLAT); ivf_flat, hnsw: approximate"""
    nlist: int | None = Field(None, ge=1, le=65536)
    """ivf_flat: clusters built (default: about the square root of the rows)"""
    nprobe: int = Field(8, ge=1, le=65536)
    """ivf_flat: clusters searched per query"""
    m: int = Field(16, ge=2, le=2048)
    """hnsw: graph neighbours per node"""
    ef_construction: int = Field(200, ge=1, le=100_000)
    """hnsw: candidate list size while building"""
    ef: int = Field(64, ge=1, le=100_000)
    """hnsw: candidate list size while searching (raised to the number of results asked for)"""

    @field_validator("uri")
    @classmethod
    def _uri(cls, uri: str | None) -> str | None:
        why = None if uri is None else service_url_problem(uri, "a Milvus server URL", "e.g. http://localhost:19530",
                                                           "put the token in the variable token_env: names")
        if why:
            raise ValueError(why)
        return uri

    @model_validator(mode="after")
    def _where(self):
        if self.path is not None and self.uri is not None:
            raise ValueError("give path: (Milvus Lite) or uri: (a server), not both")
        if self.path is not None and not self.path.endswith(".db"):
            raise ValueError(f"path: {self.path} must be a Milvus Lite database name ending .db")
        if self.token_env is not None and self.uri is None:
            raise ValueError("token_env: is for a server (uri:)")
        if self.mode == "connect" and (self.collection is None or (self.path is None and self.uri is None)):
            raise ValueError("mode: connect needs collection: and path: (a Milvus Lite file) or uri: (a server)")
        return self

    def check_installed(self) -> None:
        need("pymilvus", "milvus")
        if self.uri is None:
            need("milvus_lite", "milvus")

    def preflight(self, where: str) -> list[str]:
        problems = super().preflight(where)
        if self.token_env and not os.environ.get(self.token_env):
            problems.append(f"{where}.token_env: environment variable {self.token_env} is not set")
        if self.path is not None:
            store = Path(self.path)
            if self.mode == "connect" and not store.exists():
                problems.append(f"{where}.path: {self.path} does not exist (mode: connect reads an existing Milvus "
                                f"Lite database)")
            elif store.is_dir() and any(store.iterdir()) and not _milvus_lite_store(store):
                problems.append(f"{where}.path: {self.path} holds other files and is not a Milvus Lite database; "
                                f"give a new name (harness does not hand a folder of yours to it)")
        return problems


def _milvus_lite_store(folder: Path) -> bool:
    # milvus-lite 3 keeps a database as a folder named like the file older versions wrote
    return (folder / "collections").is_dir() or (folder / "databases").is_dir()


class MilvusRetriever(VectorStoreRetriever):
    kind = "milvus"
    config: MilvusConfig

    @property
    def exact(self) -> bool:
        # connect mode: what the collection's index is, whatever the config says
        found = getattr(self, "_index_type", None)
        return found == "FLAT" if self.config.mode == "connect" and found else self.config.index == "flat"

    def settings(self) -> tuple:
        c = self.config
        return {"flat": ("flat",), "ivf_flat": ("ivf_flat", c.nlist), "hnsw": ("hnsw", c.m, c.ef_construction)}[c.index]

    def where(self) -> str:
        return self.config.uri or self.config.path or "a temporary Milvus Lite file"

    def backend_errors(self) -> tuple[type[BaseException], ...]:
        try:
            from pymilvus.exceptions import MilvusException
        except ImportError:
            return RuntimeError, OSError
        return MilvusException, RuntimeError, OSError, ConnectionError

    def _client(self):
        pymilvus = need("pymilvus", "milvus")
        c = self.config
        self._tmp = None
        if c.uri is not None:
            token = os.environ.get(c.token_env) if c.token_env else None
            if c.token_env and not token:
                raise ConfigError(f"retriever.token_env: environment variable {c.token_env} is not set")
            self.client = pymilvus.MilvusClient(uri=c.uri, token=token or "")
            return
        need("milvus_lite", "milvus")
        file = c.path
        if file is None:
            self._tmp = tempfile.mkdtemp(prefix="harness-milvus-")
            weakref.finalize(self, shutil.rmtree, self._tmp, True)  # a hybrid's child nobody closes
            file = str(Path(self._tmp) / "milvus.db")
        self.client = pymilvus.MilvusClient(file)

    def _open(self) -> None:
        self._client()
        c = self.config
        if not self.client.has_collection(c.collection):
            raise RetrieverError(f"retriever.collection: Milvus collection {c.collection!r} does not exist "
                                 f"(at {self.where()})")
        desc = self.client.describe_collection(c.collection)
        fields = {f["name"]: f for f in desc["fields"]}
        missing = [n for n in [c.column, *c.fields.names()] if n not in fields]
        if missing:
            raise RetrieverError(f"retriever: collection {c.collection!r} has no field(s) {missing} "
                                 f"(it has {sorted(fields)})")
        self._dims = int(fields[c.column].get("params", {}).get("dim", 0)) or None
        self._pk = next((n for n, f in fields.items() if f.get("is_primary")), None)
        self._metric = self._index_metric(c.collection, c.column)
        self._name, self._stored = c.collection, None
        self.client.load_collection(c.collection)

    def _index_metric(self, name: str, column: str) -> str:
        for index in self.client.list_indexes(name, field_name=column) or []:
            found = self.client.describe_index(name, index)
            self._index_type = str(found.get("index_type", "")).upper()
            return str(found.get("metric_type", "L2")).upper()
        raise RetrieverError(f"retriever.collection: Milvus collection {name!r} has no index on {column!r} "
                             f"(Milvus searches only an indexed vector field)")

    def _build(self, vectors: np.ndarray, chunks: Sequence[Chunk], marker: str) -> None:
        self._client()
        pymilvus = need("pymilvus", "milvus")
        DataType, MilvusClient = pymilvus.DataType, pymilvus.MilvusClient
        c = self.config
        name = c.collection or "harness_" + marker.removeprefix(MARKER_PREFIX)[:16]
        self._name, self._metric, self._pk = name, METRIC[c.metric], "pos"
        self._stored = (vectors, list(range(len(chunks))))
        if self.client.has_collection(name):
            found = (self.client.describe_collection(name).get("properties") or {}).get("harness_build")
            rows = int(self.client.get_collection_stats(name).get("row_count", -1))
            if found == marker and rows == len(chunks):
                self.client.load_collection(name)
                self._reused = True
                return
            if not (isinstance(found, str) and found.startswith(MARKER_PREFIX)):
                raise marker_problem("milvus", "collection", name, found)
            self.client.drop_collection(name)  # an older build of harness's own: replaced
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pos", DataType.INT64, is_primary=True)
        schema.add_field("chunk_id", DataType.VARCHAR, max_length=65535)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(vectors.shape[1]))
        params = self.client.prepare_index_params()
        index_type, build = {"flat": ("FLAT", {}),
                             "ivf_flat": ("IVF_FLAT", {"nlist": c.nlist or max(1, min(4096, int(np.sqrt(len(chunks)))))}),
                             "hnsw": ("HNSW", {"M": c.m, "efConstruction": c.ef_construction})}[c.index]
        params.add_index(field_name="vector", index_type=index_type, metric_type=METRIC[c.metric], params=build)
        self.client.create_collection(name, schema=schema, index_params=params,
                                      properties={"harness_build": marker})
        for lo in range(0, len(chunks), INSERT_BATCH):
            hi = min(lo + INSERT_BATCH, len(chunks))
            self.client.insert(name, [{"pos": i, "chunk_id": chunks[i].chunk_id, "vector": vectors[i].tolist()}
                                      for i in range(lo, hi)])
        self.client.flush(name)
        self.client.load_collection(name)

    def _params(self, n: int) -> dict:
        c = self.config
        extra = {"ivf_flat": {"nprobe": c.nprobe}, "hnsw": {"ef": max(c.ef, n)}}.get(c.index, {})
        return {"metric_type": self._metric, "params": extra} if c.mode == "build" else {"params": extra}

    def _score(self, distance: float) -> float:
        return -float(distance) if self._metric == "L2" else float(distance)  # L2: squared distance, lower = closer

    def _record(self, hit: dict) -> object:
        if self.config.mode == "build":
            return int(hit.get("pos", hit.get("id")))
        entity = hit.get("entity") or {}
        return self.mapped({**entity, **({self._pk: hit.get(self._pk, hit.get("id"))} if self._pk else {})})

    def _output_fields(self) -> list[str]:
        if self.config.mode == "build":
            return ["pos"]
        return [n for n in self.config.fields.names() if n != self._pk]

    def _search(self, vectors: np.ndarray, n: int, exact: bool) -> list[list[tuple[float, object]]]:
        if exact and not self.exact:
            return self._exact(vectors, n)
        out = []
        column = self.config.column if self.config.mode == "connect" else "vector"
        for lo in range(0, len(vectors), 64):
            res = self.client.search(self._name, data=[v.tolist() for v in vectors[lo:lo + 64]],
                                     limit=min(n, MAX_TOPK), anns_field=column, search_params=self._params(n),
                                     output_fields=self._output_fields())
            out.extend([(self._score(h["distance"]), self._record(h)) for h in hits] for hits in res)
        return out

    def _exact(self, vectors: np.ndarray, n: int) -> list[list[tuple[float, object]]]:
        if self._stored is None:  # connect mode: every stored vector, read once
            column = self.config.column
            names = list(dict.fromkeys([column, *self._output_fields()]))
            rows = []
            iterator = self.client.query_iterator(self._name, batch_size=1000, output_fields=names)
            while batch := iterator.next():
                rows.extend(batch)
            iterator.close()
            self._stored = (np.asarray([r[column] for r in rows], dtype=np.float32),
                            [self._record({"entity": r, **r}) for r in rows])
        stored, records = self._stored
        space = {"IP": "ip", "COSINE": "cosine"}.get(self._metric, "l2")
        return exact_top(vectors, stored, records, n, space)

    def info(self) -> dict:
        out = super().info()
        if self.config.mode == "connect":
            out["metric"] = getattr(self, "_metric", None)
            out["index"] = (getattr(self, "_index_type", None) or out["index"]).lower()
        return out

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


register(RetrieverKind("milvus", MilvusConfig, lambda cfg, ctx: MilvusRetriever(cfg, ctx),
                       "dense search in Milvus (Milvus Lite file or a server; build or connect)"))
