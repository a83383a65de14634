"""What the vector-database kinds (``qdrant``, ``pgvector``, ``lancedb``, ``chroma``, ``milvus``) share: the config fields they have in
common, the field mapping of connect mode, and ``VectorStoreRetriever``, which does everything but talk to the
database: encoding (the ``dense`` encoder and embedding cache, so a backend reuses the vectors ``dense`` made),
the build/connect decision, widening a search whose k-th score is tied past the cut, records to hits, and the
recall@10 of an approximate index against exact search.

A backend subclass implements ``_open`` (connect), ``_build`` (create and fill the collection), ``_search``
(top-n records per query vector, exact or through the index) and ``close``. Clients are imported lazily there."""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Literal, Sequence

import numpy as np
from pydantic import Field, model_validator

from ..cache import ArrayCache, cache_key
from ..core.errors import HarnessError, MissingDependencyError, RetrieverError
from ..core.schema import Strict
from ..core.types import Chunk, Hit, Query, RankedList
from .base import BuildContext
from .encoders import BUNDLED, Encoder, encoder_installed, model_folder_problems
from .ranking import rank_hits

RECALL_AT = 10
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The marker a built collection/table carries: an existing one with the same marker is reused (same vectors, same
# settings), one with another harness marker is rebuilt, and one without is the user's and never touched.
MARKER_PREFIX = "harness:"


class FieldMap(Strict):
    """Which record fields name the chunk (connect mode): chunk_id, or doc_id + start + end, or doc_id + text."""

    chunk_id: str | None = None
    """the record field holding the chunk id"""
    doc_id: str | None = None
    """the record field holding the document id"""
    start: str | None = None
    """the record field holding the span start"""
    end: str | None = None
    """the record field holding the span end"""
    text: str | None = None
    """the record field holding the text, located in its document"""

    @model_validator(mode="after")
    def _enough(self):
        if (self.start is None) != (self.end is None):
            raise ValueError("give both start and end (a span), or neither")
        if self.chunk_id is None and not (self.doc_id and (self.start or self.text)):
            raise ValueError("map records to chunks by chunk_id, or doc_id + start + end, or doc_id + text")
        return self

    def names(self) -> list[str]:
        return [v for v in (self.chunk_id, self.doc_id, self.start, self.end, self.text) if v]


class VectorStoreConfig(Strict):
    """The fields every vector-database kind has; the encoder fields are ``dense``'s."""

    mode: Literal["build", "connect"] = "build"
    """build: harness creates and fills the collection or table; connect: search an existing one, read-only"""
    model: str = BUNDLED
    """the encoder: bundled:all-MiniLM-L6-v2, a local folder, or hub:<name>; in connect mode, the model the
    collection was filled with"""
    backend: Literal["torch", "onnx", "openvino"] = "torch"
    """what runs the encoder: torch, or an ONNX export (made once, offline, into the cache) run by ONNX Runtime or
    OpenVINO"""
    quantize: Literal["none", "int8"] = "none"
    """int8: the matrix multiplications in int8 (weights per output channel, inputs quantised per call;
    vectors differ slightly; on torch, torch's own int8 kernels)"""
    query_prefix: str = ""
    """text put before every query"""
    passage_prefix: str = ""
    """text put before every chunk"""
    normalize: bool = True
    """L2-normalise embeddings"""
    batch_size: int = Field(64, ge=1)
    """texts per encoding batch"""
    max_length: int | None = Field(None, ge=8)
    """truncate texts to this many model tokens (default: the model's own limit)"""
    cache: bool = True
    """cache embeddings, shared with dense"""
    # dot = dense's inner product (the same ranking as `dense`); cosine divides by the norms.
    metric: Literal["dot", "cosine"] = "dot"
    """dot: the inner product (dense's ranking); cosine: divided by the norms"""
    fields: FieldMap | None = None
    """connect mode: which record fields name the chunk (chunk_id, or doc_id + start + end, or doc_id + text)"""

    @model_validator(mode="after")
    def _mode_fields(self):
        if self.mode == "connect" and self.fields is None:
            raise ValueError("mode: connect needs fields: (chunk_id: <field>, or doc_id + start + end, or "
                             "doc_id + text) to map records to chunks")
        if self.mode == "build" and self.fields is not None:
            raise ValueError("fields: is for mode: connect; build mode writes its own fields")
        return self

    def check_encoder_installed(self) -> None:
        if getattr(self, "search", "vector") != "fulltext":  # lexical search encodes nothing
            encoder_installed(self.backend, self.quantize)

    def preflight(self, where: str) -> list[str]:
        return model_folder_problems(self.model, f"{where}.model")


def store_folder_problem(path: str | None, where: str, what: str, made_by_it: Callable[[Path], bool]) -> str | None:
    """Why ``path:`` must not be handed to a backend that creates or takes over its folder (pgserver's initdb even
    changes its owner): an existing file, or a folder of other files (``made_by_it`` says whether a non-empty
    folder is the backend's own, from an earlier run). None: a new path, an empty folder, or the backend's own."""
    if path is None or path == ":memory:":
        return None
    folder = Path(path)
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{where}.path: {path} is a file, not a {what}; give a new folder (or one it made before)"
    if any(folder.iterdir()) and not made_by_it(folder):
        return (f"{where}.path: {path} holds other files and is not a {what}; give a new or empty folder (or one "
                f"it made before): harness does not hand a folder of yours to it")
    return None


def identifier_problem(name: str | None, what: str) -> str | None:
    if name is not None and not IDENTIFIER.match(name):
        return f"{what} {name!r} must be a plain SQL/column name (letters, digits, '_')"
    return None


def need(module: str, extra: str):
    """Import a backend's client, or a one-line error naming the extra to install (``check_installed`` calls it
    too, so ``validate`` says it before any work, in the words ``run`` would)."""
    import importlib
    import warnings

    try:
        with warnings.catch_warnings():  # pgserver's platformdirs warns on import when XDG_RUNTIME_DIR is unset
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(f"retriever.kind {extra}: needs {module}: pip install "
                                     f"'rag-harness[{extra}]'") from None


class VectorStoreRetriever:
    kind = "vector"

    def __init__(self, config: VectorStoreConfig, context: BuildContext):
        self.config = config
        self.context = context
        self.cache = ArrayCache(context.cache_dir) if config.cache else None
        self.encoder = Encoder(config.model, self.cache, batch_size=config.batch_size, max_length=config.max_length,
                               progress=context.progress, backend=config.backend, quantize=config.quantize,
                               export_root=context.cache_dir)
        self._chunks: tuple[Chunk, ...] = ()
        self._recall: list[float] = []
        self._reused = False
        self._dims: int | None = None  # connect mode: the collection's vector size, when the backend tells

    # ---- what a backend implements ----

    @property
    def exact(self) -> bool:
        return getattr(self.config, "index", "flat") == "flat"

    def settings(self) -> tuple:
        """What, beyond the vectors, determines a built index (part of its marker)."""
        return ()

    def _open(self) -> None:
        raise NotImplementedError

    def _build(self, vectors: np.ndarray, chunks: Sequence[Chunk], marker: str) -> None:
        raise NotImplementedError

    def _search(self, vectors: np.ndarray, n: int, exact: bool) -> list[list[tuple[float, object]]]:
        """Per query vector, up to ``n`` (score, record) by score descending: a record is a chunk's position in
        build mode, a dict of the mapped fields in connect mode. Higher score = more similar."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the client (and stop a server the retriever started)."""

    def backend_errors(self) -> tuple[type[BaseException], ...]:
        """What the backend's client raises when the database refuses (no server there, a store locked by another
        process, a column of the wrong type): reported as one line naming the retriever, not a traceback."""
        return ()

    def where(self) -> str:
        return str(getattr(self.config, "url", None) or getattr(self.config, "path", None) or "a temporary store")

    @contextmanager
    def _refusals(self, step: str) -> Iterator[None]:
        try:
            yield
        except HarnessError:  # already one line (a missing client's extra, a located problem)
            raise
        except Exception as exc:
            if not isinstance(exc, self.backend_errors()):
                raise
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise RetrieverError(f"retriever.kind {self.kind} ({self.where()}): {step} failed: "
                                 f"{type(exc).__name__}: {first}") from None

    # ---- the retriever protocol ----

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = tuple(chunks)
        with self._refusals("connecting" if self.config.mode == "connect" else "building the index"):
            if self.config.mode == "connect":
                self._open()
                return
            vectors, key = self.encoder.vectors("embeddings", [c.index_text for c in self._chunks],
                                                self.config.passage_prefix, self.config.normalize)
            marker = MARKER_PREFIX + cache_key(self.kind, key, self.config.metric, self.settings())[:32]
            self._build(vectors, self._chunks, marker)

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        with self._refusals("searching"):
            return self._retrieve(queries, k)

    def _retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        if k <= 0 or not queries:
            return [RankedList(q.query_id, ()) for q in queries]
        vecs, _ = self.encoder.vectors("query_embeddings", [q.text for q in queries], self.config.query_prefix,
                                       self.config.normalize)
        if self._dims is not None and vecs.shape[1] != self._dims:
            raise RetrieverError(f"retriever.model: {self.config.model!r} makes {vecs.shape[1]}-dimensional vectors; "
                                 f"the {self.kind} collection holds {self._dims}-dimensional ones (connect mode "
                                 f"needs the model the collection was filled with)")
        rows = self._widened(vecs, k)
        if not self.exact:
            self._measure_recall(vecs, rows)
        return [rank_hits(q.query_id, (self._hit(score, rec) for score, rec in row), k)
                for q, row in zip(queries, rows)]

    def _widened(self, vecs: np.ndarray, k: int) -> list[list[tuple[float, object]]]:
        # A database orders equal scores its own way, so a tie across the k-th place would be cut arbitrarily: the
        # search widens until no query's k-th score is tied with the last one returned (as `dense` does).
        limit = len(self._chunks) if self.config.mode == "build" else None
        n = k + 1 if limit is None else min(k + 1, limit)
        while True:
            rows = self._search(vecs, n, self.exact)
            tied = any(len(r) > k and len(r) == n and r[k - 1][0] == r[-1][0] for r in rows)
            if not tied or (limit is not None and n >= limit) or n >= 64 * (k + 1):
                return rows
            n = 2 * n if limit is None else min(2 * n, limit)

    def _measure_recall(self, vecs: np.ndarray, rows: list[list[tuple[float, object]]]) -> None:
        exact = self._search(vecs, RECALL_AT, True)
        for approx, truth in zip(rows, exact):
            want = {_record_key(rec) for _, rec in truth}
            if want:
                got = {_record_key(rec) for _, rec in approx[:RECALL_AT]}
                self._recall.append(len(want & got) / len(want))

    def _hit(self, score: float, record: object) -> Hit:
        if isinstance(record, (int, np.integer)):
            c = self._chunks[int(record)]
            return Hit(c.chunk_id, c.doc_id, float(score), 0, c.start, c.end)
        f = self.config.fields
        rec: dict = record  # type: ignore[assignment]
        # A field the record lacks stays empty: the hit contract reports the hit (unplaceable), never guesses.
        start, end = (_int(rec.get(f.start)), _int(rec.get(f.end))) if f.start else (-1, -1)
        text = rec.get(f.text) if f.text else None
        return Hit(_str(rec.get(f.chunk_id)) if f.chunk_id else "", _str(rec.get(f.doc_id)) if f.doc_id else "",
                   float(score), 0, start, end, text)

    def info(self) -> dict:
        """What results.json records about the backend (``retriever_info``)."""
        out: dict = {"backend": self.kind, "mode": self.config.mode,
                     "index": getattr(self.config, "index", "flat"), "metric": self.config.metric}
        if getattr(self.config, "search", "vector") == "fulltext":  # lexical: no vector index, no vector metric
            out.update(search="fulltext", index="full-text (BM25)", metric=None)
        else:
            out["encoder"] = self.encoder.info()
        if self.config.mode == "build":
            out["reused_existing_index"] = self._reused
        if not self.exact:
            out[f"ann_recall_at_{RECALL_AT}"] = float(np.mean(self._recall)) if self._recall else None
            out["ann_recall_queries"] = len(self._recall)
        return out

    def mapped(self, record: dict) -> dict:
        """A connect-mode record reduced to the mapped fields."""
        return {name: record.get(name) for name in self.config.fields.names()}


def exact_top(queries: np.ndarray, stored: np.ndarray, records: Sequence[object], n: int,
              space: str) -> list[list[tuple[float, object]]]:
    """Exact search over vectors read back from a store that has no exact mode (Chroma's HNSW; Milvus connect
    mode): per query, up to ``n`` (score, record) by score descending, in the store's space ("ip", "cosine" or
    "l2", whose score is the negated squared distance)."""
    q = np.asarray(queries, dtype=np.float32)
    v = np.asarray(stored, dtype=np.float32)
    if space == "cosine":
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    scores = q @ v.T
    if space == "l2":
        scores = 2 * scores - (q * q).sum(1)[:, None] - (v * v).sum(1)[None, :]
    n = min(n, len(records))
    out = []
    for row in scores:
        top = np.argsort(-row, kind="stable")[:n]
        out.append([(float(row[i]), records[i]) for i in top])
    return out


def _record_key(record: object) -> object:
    return int(record) if isinstance(record, (int, np.integer)) else tuple(sorted((k, str(v))
                                                                                  for k, v in record.items()))


def _str(value: object) -> str:
    return "" if value is None else str(value)


def _int(value: object) -> int:
    # Hits carry offsets as ints; anything else is passed as -2 so placement reports a bad span, not a whole doc.
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return -2


def marker_problem(kind: str, what: str, name: str, marker: str | None) -> RetrieverError:
    return RetrieverError(f"retriever.kind {kind}: {what} {name!r} exists and was not built by harness (marker "
                       f"{marker!r}); build mode never changes it: use mode: connect, or another name")
