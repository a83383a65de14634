"""``qdrant``: dense retrieval in a Qdrant collection (qdrant-client, imported only when the retriever is built).

Local mode (``path:`` a folder, or ``:memory:``, the default) needs no server; ``url:`` + ``api_key_env:`` reach
a production one. Build mode fills a collection with the ``dense`` encoder's (cached) vectors; connect mode
searches an existing collection read-only and maps each point's payload to a chunk through ``fields:``.
``index: flat`` searches exactly; ``index: hnsw`` through the HNSW graph (m, ef_construct, ef). qdrant-client's
local mode always searches exactly: HNSW settings take effect against a server. ``filter:`` is a Qdrant filter
(JSON/YAML form of ``models.Filter``) applied to every search."""

from __future__ import annotations

import os
from typing import Any, Literal, Sequence

import numpy as np
from pydantic import Field, field_validator, model_validator

from ..core.errors import ConfigError, RetrieverError
from ..core.schema import Strict
from ..core.types import Chunk
from .urls import service_url_problem
from .base import RetrieverKind, register
from .vectorstore import (MARKER_PREFIX, VectorStoreConfig, VectorStoreRetriever, marker_problem, need,
                          store_folder_problem)

UPLOAD_BATCH = 256


class QdrantHNSW(Strict):
    m: int = Field(16, ge=4, le=512)
    """graph neighbours per node"""
    ef_construct: int = Field(100, ge=4, le=10_000)
    """candidate list size while building"""
    ef: int = Field(128, ge=1, le=100_000)
    """candidate list size while searching"""


class QdrantConfig(VectorStoreConfig):
    kind: Literal["qdrant"] = "qdrant"
    path: str | None = None
    """a local folder, or :memory: (the default when neither path nor url is given)"""
    url: str | None = None
    """a Qdrant server, http(s)://host:port"""
    api_key_env: str | None = None
    """the environment variable holding the API key (never the key itself)"""
    collection: str | None = Field(None, min_length=1)
    """the collection; build mode: default a name harness derives from the vectors"""
    vector_name: str | None = None
    """a named vector of the collection (connect mode)"""
    index: Literal["flat", "hnsw"] = "flat"
    """flat: exact search; hnsw: approximate"""
    hnsw: QdrantHNSW = QdrantHNSW()
    """index: hnsw settings (a server only: local mode always searches exactly)"""
    filter: dict[str, Any] | None = None
    """a Qdrant payload filter applied to every search"""

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        why = None if url is None else qdrant_url_problem(url)
        if why:
            raise ValueError(why)
        return url

    @model_validator(mode="after")
    def _where(self):
        if self.path is not None and self.url is not None:
            raise ValueError("give path: (local mode) or url: (a server), not both")
        if self.api_key_env is not None and self.url is None:
            raise ValueError("api_key_env: is for a server (url:)")
        if self.mode == "connect" and self.collection is None:
            raise ValueError("mode: connect needs collection: (the existing collection to search)")
        if self.filter is not None:
            try:
                from qdrant_client import models
            except ImportError:
                return self  # reported when the retriever is built (the extra is missing)
            try:
                models.Filter.model_validate(self.filter)
            except Exception as exc:  # pydantic's first error, as one line naming where in the filter
                first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": (), "msg": str(exc)}
                at = ".".join(str(p) for p in first["loc"] if not (str(p)[:1].isupper() or "[" in str(p)))
                raise ValueError(f"filter: is not a Qdrant filter (at {at or 'the top'}: {first['msg']}); e.g. "
                                 f"{{must: [{{key: lang, match: {{value: en}}}}]}}") from None
        return self

    def check_installed(self) -> None:
        need("qdrant_client", "qdrant")

    def preflight(self, where: str) -> list[str]:
        problems = super().preflight(where)
        if self.api_key_env and not os.environ.get(self.api_key_env):
            problems.append(f"{where}.api_key_env: environment variable {self.api_key_env} is not set")
        problem = store_folder_problem(self.path, where, "Qdrant local store", _qdrant_store)
        if problem is None:
            problem = self.connect_path_problem(where)
        return problems + ([problem] if problem else [])

    def connect_path_problem(self, where: str) -> str | None:
        """Connect mode reads an existing local store: qdrant-client would make one at a missing (or empty) path,
        a .lock and a meta.json, and then find no collection there."""
        if self.mode != "connect" or self.path in (None, ":memory:"):
            return None
        from pathlib import Path

        if not Path(self.path).is_dir():
            return f"{where}.path: {self.path} does not exist (mode: connect reads an existing Qdrant local store)"
        if not _qdrant_store(Path(self.path)):
            return (f"{where}.path: {self.path} is not a Qdrant local store (no meta.json of one; mode: connect "
                    f"reads an existing store and creates nothing)")
        return None


def qdrant_url_problem(url: str) -> str | None:
    """Why ``url:`` is no Qdrant server address, said when the config is read: qdrant-client raised urllib3's
    LocationParseError from deep inside, a traceback."""
    return service_url_problem(url, "a Qdrant server URL", "e.g. http://localhost:6333",
                               "put the API key in the variable api_key_env: names")


def _qdrant_store(folder) -> bool:
    """A folder qdrant-client's local mode made: its meta.json lists collections."""
    import json

    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and isinstance(meta.get("collections"), dict)


class QdrantRetriever(VectorStoreRetriever):
    kind = "qdrant"
    config: QdrantConfig

    def settings(self) -> tuple:
        h = self.config.hnsw
        return (self.config.index, h.m, h.ef_construct) if self.config.index == "hnsw" else ("flat",)

    @property
    def local(self) -> bool:
        return self.config.url is None

    def backend_errors(self) -> tuple[type[BaseException], ...]:
        # no server at url: (refused, 404...), a local folder another client holds (RuntimeError), or unreadable
        try:
            from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
        except ImportError:  # (the client is missing: need() has said so in one line)
            return RuntimeError, OSError
        return ResponseHandlingException, UnexpectedResponse, RuntimeError, OSError

    def _client(self):
        qc = need("qdrant_client", "qdrant")
        c = self.config
        if c.url is not None:
            key = os.environ.get(c.api_key_env) if c.api_key_env else None
            if c.api_key_env and not key:
                raise ConfigError(f"retriever.api_key_env: environment variable {c.api_key_env} is not set")
            self.client = qc.QdrantClient(url=c.url, api_key=key)
        elif c.path in (None, ":memory:"):
            self.client = qc.QdrantClient(location=":memory:")
        else:
            problem = c.connect_path_problem("retriever")
            if problem:  # (preflight said so; a run from Python reaches here) before the client makes anything
                raise ConfigError(problem)
            self.client = qc.QdrantClient(path=c.path)
        from qdrant_client import models

        self.models = models
        self.filter = models.Filter.model_validate(c.filter) if c.filter else None

    def _open(self) -> None:
        self._client()
        name = self.config.collection
        if not self.client.collection_exists(name):
            raise RetrieverError(f"retriever.collection: Qdrant collection {name!r} does not exist "
                                 f"(at {self.config.url or self.config.path or ':memory:'})")
        vectors = self.client.get_collection(name).config.params.vectors
        if isinstance(vectors, dict):
            if self.config.vector_name not in vectors:
                raise RetrieverError(f"retriever.vector_name: collection {name!r} has named vectors "
                                     f"{sorted(vectors)}; name one with vector_name:")
            vectors = vectors[self.config.vector_name]
        self._dims = vectors.size

    def _build(self, vectors: np.ndarray, chunks: Sequence[Chunk], marker: str) -> None:
        self._client()
        m, c = self.models, self.config
        name = c.collection or "harness_" + marker.removeprefix(MARKER_PREFIX)[:16]
        if self.client.collection_exists(name):
            info = self.client.get_collection(name)
            found = (info.config.metadata or {}).get("harness_build")
            if found == marker and info.points_count == len(chunks):
                self._reused, self._name = True, name
                return
            if not (isinstance(found, str) and found.startswith(MARKER_PREFIX)):
                raise marker_problem("qdrant", "collection", name, found)
            self.client.delete_collection(name)  # an older build of harness's own: replaced
        distance = m.Distance.DOT if c.metric == "dot" else m.Distance.COSINE
        # A flat collection needs no graph (m=0 turns HNSW building off on a server); exact search reads vectors.
        hnsw = m.HnswConfigDiff(m=c.hnsw.m, ef_construct=c.hnsw.ef_construct) if c.index == "hnsw" \
            else m.HnswConfigDiff(m=0)
        self.client.create_collection(name, vectors_config=m.VectorParams(size=vectors.shape[1], distance=distance),
                                      hnsw_config=hnsw, metadata={"harness_build": marker})
        documents = self.context.documents
        for lo in range(0, len(chunks), UPLOAD_BATCH):
            points = [m.PointStruct(id=i, vector=vectors[i].tolist(), payload=_payload(chunks[i], documents))
                      for i in range(lo, min(lo + UPLOAD_BATCH, len(chunks)))]
            self.client.upsert(name, points=points, wait=True)
        self._name = name

    def _search(self, vectors: np.ndarray, n: int, exact: bool) -> list[list[tuple[float, object]]]:
        m, c = self.models, self.config
        name = c.collection if c.mode == "connect" else self._name
        # Local mode is brute force whatever the params say (and warns about them): none are passed there.
        params = None if self.local else m.SearchParams(exact=exact, hnsw_ef=None if exact else max(c.hnsw.ef, n))
        connect = c.mode == "connect"
        requests = [m.QueryRequest(query=v.tolist(), limit=n, filter=self.filter, params=params, using=c.vector_name,
                                   with_payload=self.config.fields.names() if connect else False)
                    for v in vectors]
        out = []
        for lo in range(0, len(requests), 64):
            for res in self.client.query_batch_points(name, requests=requests[lo:lo + 64]):
                out.append([(float(p.score), self.mapped(p.payload or {}) if connect else int(p.id))
                            for p in res.points])
        return out

    def info(self) -> dict:
        out = super().info()
        if self.local and self.config.index == "hnsw":
            out["note"] = "qdrant-client local mode searches exactly; HNSW settings take effect on a server (url:)"
        return out

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None


def _payload(chunk: Chunk, documents) -> dict:
    """What a built point carries: the chunk's identity, and its document's scalar metadata (for ``filter:``)."""
    doc = documents.get(chunk.doc_id)
    meta = {k: v for k, v in (doc.metadata if doc is not None else {}).items()
            if isinstance(v, (str, int, float, bool)) and k not in ("chunk_id", "doc_id", "start", "end")}
    return {**meta, "chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "start": chunk.start, "end": chunk.end}


register(RetrieverKind("qdrant", QdrantConfig, lambda cfg, ctx: QdrantRetriever(cfg, ctx),
                       "dense search in Qdrant (local folder, :memory: or a server; build or connect)"))
