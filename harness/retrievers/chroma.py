"""``chroma``: dense retrieval in a Chroma collection (chromadb, imported only when the retriever is built).

Embedded (``path:`` a folder, ``PersistentClient``; build mode defaults to a temporary one, removed after the run)
or a server (``host:``/``port:``, the token read from the variable ``token_env:`` names and sent as a bearer
token). Build mode fills a collection with the ``dense`` encoder's (cached) vectors; connect mode searches an
existing collection read-only and maps each record to a chunk through ``fields:`` (metadata keys; ``id`` and
``document`` name Chroma's own record id and stored text). Chroma indexes with HNSW only: every run reports its
recall@10 against exact search over the same vectors (``ann_recall_at_10``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import Field, model_validator

from ..core.errors import ConfigError, RetrieverError
from ..core.schema import Strict
from ..core.types import Chunk
from .base import RetrieverKind, register
from .vectorstore import (MARKER_PREFIX, VectorStoreConfig, VectorStoreRetriever, exact_top, marker_problem, need,
                          store_folder_problem)

SPACE = {"dot": "ip", "cosine": "cosine"}
OWN_FIELDS = ("id", "document")  # not metadata keys: Chroma's record id and stored text


class ChromaHNSW(Strict):
    m: int = Field(16, ge=2, le=512)
    """graph neighbours per node (Chroma's max_neighbors)"""
    ef_construction: int = Field(100, ge=4, le=10_000)
    """candidate list size while building"""
    ef_search: int = Field(100, ge=1, le=100_000)
    """candidate list size while searching (raised to the number of results asked for)"""


class ChromaConfig(VectorStoreConfig):
    kind: Literal["chroma"] = "chroma"
    path: str | None = None
    """the PersistentClient folder; build mode: default a temporary one, removed after the run"""
    host: str | None = None
    """a Chroma server's host (instead of path:)"""
    port: int = Field(8000, ge=1, le=65535)
    """the server's port"""
    ssl: bool = False
    """reach the server over https"""
    token_env: str | None = None
    """the environment variable holding the server's token (never the token itself), sent as a bearer token"""
    collection: str | None = Field(None, min_length=3, max_length=512)
    """the collection; build mode: default a name harness derives from the vectors"""
    hnsw: ChromaHNSW = ChromaHNSW()
    """build mode: the HNSW index's settings (Chroma has no exact index)"""

    @model_validator(mode="after")
    def _where(self):
        if self.path is not None and self.host is not None:
            raise ValueError("give path: (embedded) or host: (a server), not both")
        if self.token_env is not None and self.host is None:
            raise ValueError("token_env: is for a server (host:)")
        if self.mode == "connect" and (self.collection is None or (self.path is None and self.host is None)):
            raise ValueError("mode: connect needs collection: and path: (the folder) or host: (a server)")
        return self

    def check_installed(self) -> None:
        need("chromadb", "chroma")

    def preflight(self, where: str) -> list[str]:
        problems = super().preflight(where)
        if self.token_env and not os.environ.get(self.token_env):
            problems.append(f"{where}.token_env: environment variable {self.token_env} is not set")
        problem = store_folder_problem(self.path, where, "Chroma folder", _chroma_folder)
        if problem is None and self.mode == "connect" and self.path and not _chroma_folder(Path(self.path)):
            problem = (f"{where}.path: {self.path} is not a Chroma folder (no chroma.sqlite3; mode: connect reads "
                       f"an existing one and creates nothing)")
        return problems + ([problem] if problem else [])


def _chroma_folder(folder: Path) -> bool:
    return (folder / "chroma.sqlite3").is_file()


class ChromaRetriever(VectorStoreRetriever):
    kind = "chroma"
    config: ChromaConfig

    @property
    def exact(self) -> bool:
        return False  # HNSW only; exact search is done here, over the stored vectors, to measure recall

    def settings(self) -> tuple:
        h = self.config.hnsw
        return ("hnsw", h.m, h.ef_construction)

    def where(self) -> str:
        c = self.config
        return f"{c.host}:{c.port}" if c.host else (c.path or "a temporary folder")

    def backend_errors(self) -> tuple[type[BaseException], ...]:
        try:
            from chromadb.errors import ChromaError
        except ImportError:
            return RuntimeError, OSError
        # a server that is not there raises ValueError ("Could not connect to a Chroma server") or httpx's errors
        return ChromaError, ValueError, RuntimeError, OSError, ConnectionError

    def _client(self):
        chromadb = need("chromadb", "chroma")
        c = self.config
        self._tmp = None
        if c.host is not None:
            token = os.environ.get(c.token_env) if c.token_env else None
            if c.token_env and not token:
                raise ConfigError(f"retriever.token_env: environment variable {c.token_env} is not set")
            self.client = chromadb.HttpClient(host=c.host, port=c.port, ssl=c.ssl,
                                              headers={"Authorization": f"Bearer {token}"} if token else None)
            return
        folder = c.path
        if folder is None:
            folder = self._tmp = tempfile.mkdtemp(prefix="harness-chroma-")
            weakref.finalize(self, shutil.rmtree, folder, True)  # a hybrid's child nobody closes
        self.client = chromadb.PersistentClient(path=folder)

    def _names(self) -> list[str]:
        return [getattr(col, "name", col) for col in self.client.list_collections()]

    def _open(self) -> None:
        self._client()
        c = self.config
        if c.collection not in self._names():
            raise RetrieverError(f"retriever.collection: Chroma collection {c.collection!r} does not exist "
                                 f"(at {self.where()})")
        self.collection = self.client.get_collection(c.collection, embedding_function=None)
        space = ((self.collection.configuration_json or {}).get("hnsw") or {}).get("space") \
            or (self.collection.metadata or {}).get("hnsw:space", "l2")
        self._space = space
        first = self.collection.get(limit=1, include=["embeddings"])["embeddings"]
        self._dims = len(first[0]) if first is not None and len(first) else None
        self._stored = None  # read on the first recall measurement

    def _build(self, vectors: np.ndarray, chunks: Sequence[Chunk], marker: str) -> None:
        self._client()
        c = self.config
        name = c.collection or "harness_" + marker.removeprefix(MARKER_PREFIX)[:16]
        self._space, self._stored = SPACE[c.metric], (vectors, list(range(len(chunks))))
        if name in self._names():
            found_col = self.client.get_collection(name, embedding_function=None)
            found = (found_col.metadata or {}).get("harness_build")
            if found == marker and found_col.count() == len(chunks):
                self.collection, self._reused = found_col, True
                return
            if not (isinstance(found, str) and found.startswith(MARKER_PREFIX)):
                raise marker_problem("chroma", "collection", name, found)
            self.client.delete_collection(name)  # an older build of harness's own: replaced
        h = c.hnsw
        self.collection = self.client.create_collection(
            name, embedding_function=None, metadata={"harness_build": marker},
            configuration={"hnsw": {"space": SPACE[c.metric], "max_neighbors": h.m,
                                    "ef_construction": h.ef_construction, "ef_search": h.ef_search}})
        step = max(1, min(1000, self.client.get_max_batch_size()))
        for lo in range(0, len(chunks), step):
            part = chunks[lo:lo + step]
            self.collection.add(ids=[str(i) for i in range(lo, lo + len(part))], embeddings=vectors[lo:lo + len(part)],
                                metadatas=[{"chunk_id": ch.chunk_id, "doc_id": ch.doc_id, "start": ch.start,
                                            "end": ch.end} for ch in part])

    def _score(self, distance: float) -> float:
        # Chroma's "ip" distance is 1 - dot, "cosine" 1 - cosine, "l2" the squared distance: higher = more similar.
        return -float(distance) if self._space == "l2" else 1.0 - float(distance)

    def _include(self) -> list[str]:
        f = self.config.fields
        wanted = ["distances", "metadatas"]
        return wanted + (["documents"] if f is not None and "document" in f.names() else [])

    def _record(self, rid: str, meta: dict | None, doc: str | None) -> object:
        if self.config.mode == "build":
            return int(rid)
        return self.mapped({**(meta or {}), "id": rid, "document": doc})

    def _search(self, vectors: np.ndarray, n: int, exact: bool) -> list[list[tuple[float, object]]]:
        if exact:
            return self._exact(vectors, n)
        out = []
        for lo in range(0, len(vectors), 64):
            res = self.collection.query(query_embeddings=vectors[lo:lo + 64], n_results=n, include=self._include())
            docs = res.get("documents") or [None] * len(res["ids"])
            for ids, dists, metas, texts in zip(res["ids"], res["distances"], res["metadatas"], docs):
                out.append([(self._score(d), self._record(i, m, None if texts is None else t))
                            for i, d, m, t in zip(ids, dists, metas, texts or [None] * len(ids))])
        return out

    def _exact(self, vectors: np.ndarray, n: int) -> list[list[tuple[float, object]]]:
        if self._stored is None:  # connect mode: every stored vector, read once
            got = self.collection.get(include=self._include()[1:] + ["embeddings"])
            docs = got.get("documents") or [None] * len(got["ids"])
            records = [self._record(i, m, t) for i, m, t in zip(got["ids"], got["metadatas"], docs)]
            self._stored = (np.asarray(got["embeddings"], dtype=np.float32), records)
        stored, records = self._stored
        return exact_top(vectors, stored, records, n, self._space)

    def info(self) -> dict:
        out = super().info()
        out["index"] = "hnsw"
        if self.config.mode == "connect":
            out["metric"] = getattr(self, "_space", None)
        return out

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
        self.client = self.collection = None
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


register(RetrieverKind("chroma", ChromaConfig, lambda cfg, ctx: ChromaRetriever(cfg, ctx),
                       "dense search in Chroma (embedded folder or a server; build or connect; HNSW)"))
