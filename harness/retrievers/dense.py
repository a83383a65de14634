"""Dense retrieval: a sentence-transformers encoder over chunks and queries (``encoders.Encoder``: loading, cache),
and a faiss index (flat or HNSW). torch, sentence-transformers and faiss are imported only when needed."""

from __future__ import annotations

import copy
from typing import Literal, Sequence

import numpy as np
from pydantic import Field

from ..cache import ArrayCache, cache_key
from ..core.schema import Strict
from ..core.errors import ConfigError, MissingDependencyError
from ..core.types import Chunk, Hit, Query, RankedList
from .base import BuildContext, RetrieverKind, register
from .encoders import (BUNDLED, INSTALL, Encoder, encoder_installed, load_sentence_transformer,  # noqa: F401
                       model_fingerprint, model_folder_problems, model_path)
from .ranking import rank_hits
from .windows import WindowsConfig, window_texts


class HNSWConfig(Strict):
    M: int = Field(32, ge=4)
    """graph neighbours per node"""
    efConstruction: int = Field(200, ge=8)
    """candidate list size while building"""
    efSearch: int = Field(128, ge=8)
    """candidate list size while searching"""


class DenseConfig(Strict):
    kind: Literal["dense"] = "dense"
    model: str = BUNDLED
    """bundled:all-MiniLM-L6-v2, a local sentence-transformers folder, or hub:<name> (needs network)"""
    backend: Literal["torch", "onnx", "openvino"] = "torch"
    """what runs the model: torch, or an ONNX export (made once, offline, into the cache) run by ONNX Runtime or
    OpenVINO"""
    quantize: Literal["none", "int8"] = "none"
    """int8: the matrix multiplications in int8 (weights per output channel, inputs quantised per call;
    vectors differ slightly; on torch, torch's own int8 kernels)"""
    query_prefix: str = ""
    """text put before every query (e.g. 'query: ' for E5 models)"""
    passage_prefix: str = ""
    """text put before every chunk"""
    normalize: bool = True
    """L2-normalise embeddings, so the inner product is the cosine"""
    batch_size: int = Field(64, ge=1)
    """texts per encoding batch"""
    max_length: int | None = Field(None, ge=8)
    """truncate texts to this many model tokens (default: the model's own limit)"""
    windows: WindowsConfig | None = None
    """encode each chunk as overlapping windows of words ({size, overlap}), each behind the chunk's title; a
    chunk scores its best window's similarity (MaxP). Default: one text per chunk, truncated at the model's limit"""
    index: Literal["flat", "hnsw"] = "flat"
    """flat: exact inner-product search; hnsw: approximate (faiss HNSW)"""
    hnsw: HNSWConfig = HNSWConfig()
    """index: hnsw settings"""
    cache: bool = True
    """cache embeddings and HNSW graphs, content-addressed (see --cache-dir)"""

    def preflight(self, where: str) -> list[str]:
        """Problems a run would hit only when loading the model (see ``model_folder_problems``)."""
        return model_folder_problems(self.model, f"{where}.model")

    def check_installed(self) -> None:
        # Not sentence-transformers: a run whose vectors are all cached never loads the model.
        _faiss()

    def check_encoder_installed(self) -> None:
        encoder_installed(self.backend, self.quantize)


def _faiss():
    try:
        import faiss
    except ImportError:
        raise MissingDependencyError(f"dense retrieval needs faiss-cpu: {INSTALL}") from None
    return faiss


class DenseRetriever:
    def __init__(self, config: DenseConfig, context: BuildContext):
        self.config = config
        self.cache = ArrayCache(context.cache_dir) if config.cache else None
        self.encoder = Encoder(config.model, self.cache, batch_size=config.batch_size, max_length=config.max_length,
                               progress=context.progress, backend=config.backend, quantize=config.quantize,
                               export_root=context.cache_dir)
        self._chunks: Sequence[Chunk] = ()
        self._vectors: np.ndarray | None = None  # a flat index's rows, kept for ``shards``
        self._owner: np.ndarray | None = None  # with windows: each indexed row's chunk position (else row = chunk)

    def info(self) -> dict:
        """What results.json records (``retriever_info``): the encoder's backend and rate (``Encoder.info``)."""
        return {"encoder": self.encoder.info()}

    def __getstate__(self) -> dict:
        # Shipped to another process (an executor's worker) as the faiss index (faiss pickles it) and the chunks,
        # never a loaded model: a worker loads its own on a query-embedding cache miss.
        state = dict(self.__dict__)
        state["encoder"] = copy.copy(self.encoder)
        state["encoder"].model = None
        state["encoder"]._runner = None  # an ONNX Runtime session or OpenVINO model does not pickle
        return state

    @property
    def _model(self):
        """The loaded model, or None before the first cache miss (settable: a caller may hand one in)."""
        return self.encoder.model

    @_model.setter
    def _model(self, model) -> None:
        self.encoder.model = model

    def _cached_encode(self, kind: str, texts: list[str], prefix: str) -> tuple[np.ndarray, str]:
        return self.encoder.vectors(kind, texts, prefix, self.config.normalize)

    def index(self, chunks: Sequence[Chunk]) -> None:
        faiss = _faiss()
        self._chunks = chunks
        if self.config.windows is None:
            texts, self._owner = [c.index_text for c in chunks], None
        else:
            texts, self._owner = window_texts(chunks, self.config.windows)
        vectors, key = self._cached_encode("embeddings", texts, self.config.passage_prefix)
        if self.config.index == "hnsw":
            self._index = self._hnsw(faiss, vectors, key)
        else:
            # A flat index is the vectors themselves: nothing to build beyond the cached embeddings.
            self._index = faiss.IndexFlatIP(vectors.shape[1])
            self._index.add(vectors)
            self._vectors = vectors

    def shards(self, n: int) -> list["DenseRetriever"]:
        """``n`` retrievers over contiguous slices of the indexed chunks (flat index slices), for an executor that
        spreads the corpus over workers: each returns its slice's top k by the same scores and tie rule, so merging
        the slices' lists by the tie rule gives this retriever's ranking. An HNSW graph cannot be sliced."""
        import faiss

        if self._vectors is None:
            raise ConfigError("executor.shards: a dense retriever with index: hnsw cannot be sharded (a graph is "
                              "not sliced); use index: flat or shards: 1")
        bounds = np.linspace(0, len(self._chunks), n + 1).astype(np.int64)
        # With windows a shard holds its chunks' rows: a chunk's windows are consecutive, never split.
        rows = bounds if self._owner is None else np.searchsorted(self._owner, bounds)
        out = []
        for lo, hi, row_lo, row_hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), rows[:-1].tolist(),
                                          rows[1:].tolist()):
            shard = copy.copy(self)
            shard._chunks, shard._vectors = tuple(self._chunks[lo:hi]), self._vectors[row_lo:row_hi]
            shard._owner = None if self._owner is None else self._owner[row_lo:row_hi] - lo
            shard._index = faiss.IndexFlatIP(self._vectors.shape[1])
            shard._index.add(shard._vectors)
            out.append(shard)
        return out

    def _hnsw(self, faiss, vectors: np.ndarray, embeddings_key: str):
        h = self.config.hnsw

        def build():
            index = faiss.IndexHNSWFlat(vectors.shape[1], h.M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = h.efConstruction
            index.add(vectors)
            return index

        if self.cache is None:
            index = build()
        else:
            # faiss's own binary format, not pickle; the cache checksums it like any other array.
            key = cache_key("hnsw", embeddings_key, h.M, h.efConstruction)
            stored = self.cache.get_or_build("indexes", key, lambda: {"index": faiss.serialize_index(build())})
            index = faiss.deserialize_index(stored["index"])
        index.hnsw.efSearch = h.efSearch  # a search-time setting: not part of the cached index's key
        return index

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        vecs, _ = self._cached_encode("query_embeddings", [q.text for q in queries], self.config.query_prefix)
        k = min(k, len(self._chunks))  # asked for more than there are: every chunk, never a k-wide allocation
        if k <= 0:
            return [RankedList(q.query_id, ()) for q in queries]
        if self._owner is not None:
            return self._retrieve_windows(queries, vecs, k)
        # faiss orders equal scores by position, so the tie rule (chunk id descending) is applied here; a tie across
        # the k-th place would be cut by position, so the search widens until the k-th score is not tied past it.
        n, wide = len(self._chunks), k
        while True:
            scores, idx = self._index.search(vecs, min(wide + 1, n))
            if scores.shape[1] <= k or wide + 1 >= n or not (scores[:, k - 1] == scores[:, -1]).any():
                break
            wide *= 2
        out = []
        for q, s, i in zip(queries, scores, idx):
            hits = (Hit(self._chunks[j].chunk_id, self._chunks[j].doc_id, score, 0, self._chunks[j].start,
                        self._chunks[j].end) for j, score in zip(i.tolist(), s.astype(np.float64).tolist()) if j >= 0)
            out.append(rank_hits(q.query_id, hits, k))
        return out

    def _retrieve_windows(self, queries: Sequence[Query], vecs: np.ndarray, k: int) -> list[RankedList]:
        """Each chunk scored by its best window. Windows come best first, so a chunk's first window found is its
        best; the search widens until every query has k chunks whose scores are above the last window searched
        (no window not searched can then reach the top k, nor tie the k-th), or every window was searched."""
        n, wide = len(self._owner), k
        while True:
            scores, idx = self._index.search(vecs, min(wide + 1, n))
            best = [self._best_per_chunk(s, i) for s, i in zip(scores, idx)]
            if scores.shape[1] >= n or all(len(b) >= k and b[k - 1][1] > s[-1] for b, s in zip(best, scores)):
                break
            wide *= 2
        out = []
        for q, pairs in zip(queries, best):
            hits = (Hit(self._chunks[j].chunk_id, self._chunks[j].doc_id, score, 0, self._chunks[j].start,
                        self._chunks[j].end) for j, score in pairs)
            out.append(rank_hits(q.query_id, hits, k))
        return out

    def _best_per_chunk(self, scores: np.ndarray, rows: np.ndarray) -> list[tuple[int, float]]:
        """(chunk position, its best window's score) in the order of the windows (best first)."""
        found = rows >= 0
        chunks = self._owner[rows[found]]
        _, first = np.unique(chunks, return_index=True)
        first.sort()
        return list(zip(chunks[first].tolist(), scores[found][first].astype(np.float64).tolist()))


register(RetrieverKind("dense", DenseConfig, lambda cfg, ctx: DenseRetriever(cfg, ctx),
                       "sentence-transformers encoder + faiss (flat or hnsw)"))
