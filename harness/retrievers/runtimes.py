"""The encoder backends other than torch: a sentence-transformers model exported once, offline, to ONNX (torch.onnx),
optionally int8-quantised, and run by ONNX Runtime (the graph fused by its transformer optimizer) or OpenVINO (the
plain graph). The export lives in the cache folder under the model's content fingerprint, so a second run (and every
other config naming the same model) reuses it.

Why not sentence-transformers' own ``backend=``: it needs optimum, whose release pulls transformers 4.x (this
project runs transformers 5). The export here is the whole sentence-transformers module chain (transformer,
pooling, normalize, any dense layer), traced once, so the vectors are the torch model's up to float rounding."""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..core.errors import ConfigError, MissingDependencyError

BACKENDS = ("torch", "onnx", "openvino")
QUANTIZE = ("none", "int8")
# A change to how the export is made (opset, graph passes, quantisation settings) must not reuse older exports.
EXPORT_VERSION = "v2"
_NEEDS = {"onnx": (("onnxruntime", "onnx"), "onnx"), "openvino": (("openvino", "onnx"), "openvino")}
# Sentences whose vectors are compared with torch's when a model is exported (the recorded ``min_cosine_to_torch``).
PROBES = ("A randomized trial of vitamin D supplementation in older adults.",
          "How do I rotate the API key?",
          "The mitochondrial membrane potential drops after exposure to the toxin, and ATP synthesis stops.",
          "short", "Zinc finger proteins bind DNA " * 20)


def check_installed(backend: str, quantize: str) -> None:
    """The libraries a backend runs with, or the one-line error naming the extra (what ``validate`` says)."""
    if backend == "torch":
        return
    import importlib.util

    modules, extra = _NEEDS[backend]
    if quantize == "int8" and backend == "openvino":
        modules = modules + ("onnxruntime",)  # the int8 graph is made by ONNX Runtime's quantiser
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(f"retriever.backend {backend}: needs {module}: pip install "
                                         f"'rag-harness[{extra}]' -c constraints.txt")


def export_dir(root: Path, fingerprint: str, quantize: str) -> Path:
    """Where a model's export lives: one folder per model content and quantisation (ONNX Runtime and OpenVINO both
    read the same ONNX file)."""
    return Path(root) / "encoders" / f"{fingerprint}-{quantize}-{EXPORT_VERSION}"


def exported(model_name: str, load: Callable, fingerprint: str, root: Path, quantize: str) -> Path:
    """The export folder of ``model_name``, made now from ``load()`` (the sentence-transformers model) if it is not
    there yet: torch is imported only then. Written into a temporary sibling and renamed into place, so an
    interrupted export is never read as a finished one."""
    target = export_dir(root, fingerprint, quantize)
    if (target / "export.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _export(model_name, load, tmp, quantize)
        try:
            tmp.rename(target)
        except OSError:  # another process finished the same export first: its copy is as good
            if not (target / "export.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _export(model_name: str, load: Callable, folder: Path, quantize: str) -> None:
    import torch

    started = time.perf_counter()
    model = load().eval()
    folder.mkdir(parents=True)
    model.tokenizer.save_pretrained(str(folder / "tokenizer"))
    first = model[0]
    auto = getattr(first, "auto_model", None)
    try:  # eager attention traces as the MatMul / Softmax pattern ONNX Runtime's optimizer fuses (SDPA's does not)
        auto.set_attn_implementation("eager")
    except Exception:  # no such model or setting: the trace as it runs, unfused
        pass
    sample = getattr(model, "preprocess", model.tokenize)(list(PROBES[:2]))  # (renamed in sentence-transformers 6)
    inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Whole(torch.nn.Module):  # the module chain as a function of plain tensors (what an exporter traces)
        def __init__(self, chain):
            super().__init__()
            self.chain = chain

        def forward(self, *tensors):
            return self.chain(dict(zip(inputs, tensors)))["sentence_embedding"]

    axes = {name: {0: "batch", 1: "tokens"} for name in inputs} | {"embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer's notes on Python branches it fixes (pooling's mask check, the attention mask's padding): true
        # for every batch shape, and not the user's concern.
        warnings.simplefilter("ignore")
        # The TorchScript exporter: it needs no onnxscript, and traces the module chain as sentence-transformers
        # runs it.
        torch.onnx.export(Whole(model), tuple(sample[n] for n in inputs), str(folder / "fp32.onnx"),
                          input_names=inputs, output_names=["embedding"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
        reference = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True)
    config = getattr(auto, "config", None)
    fused = _fused(folder / "fp32.onnx", folder / "fp32.ort.onnx", getattr(config, "num_attention_heads", 0),
                   getattr(config, "hidden_size", 0))
    name, ort_name = "fp32.onnx", "fp32.ort.onnx" if fused else None
    if quantize == "int8":
        _int8(folder / "fp32.onnx", folder / "int8.onnx", ["MatMul"])
        if fused:
            _int8(folder / "fp32.ort.onnx", folder / "int8.ort.onnx", ["MatMul", "Attention"])
            (folder / "fp32.ort.onnx").unlink()
            ort_name = "int8.ort.onnx"
        (folder / "fp32.onnx").unlink()
        name = "int8.onnx"
    meta = {"model": model_name, "file": name, "inputs": inputs, "quantize": quantize,
            "max_seq_length": int(model.max_seq_length), "do_lower_case": bool(getattr(first, "do_lower_case", False)),
            "dim": int(reference.shape[1]), "export_seconds": round(time.perf_counter() - started, 1)}
    # How far each graph's vectors are from torch's, on fixed probe sentences (computed by ONNX Runtime; OpenVINO
    # reads the plain graph).
    meta["min_cosine_to_torch"] = _probe_cosine(folder, meta, reference)
    if ort_name:
        cosine = _probe_cosine(folder, dict(meta, ort_file=ort_name), reference)
        # The fused graph only when it is as close to torch as the plain one (a fusion that matched a pattern it
        # should not have would show here).
        if cosine >= meta["min_cosine_to_torch"] - 0.005:
            meta["ort_file"], meta["ort_min_cosine_to_torch"] = ort_name, cosine
        else:
            (folder / ort_name).unlink()
    (folder / "export.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")


def _probe_cosine(folder: Path, meta: dict, reference: np.ndarray) -> float:
    return min_cosine(OnnxRunner(folder, "onnx", meta).encode(list(PROBES), batch_size=len(PROBES)), reference)


def min_cosine(vecs: np.ndarray, reference: np.ndarray) -> float:
    """The smallest cosine between ``vecs`` and the unit ``reference`` vectors, row by row (``min_cosine_to_torch``,
    recorded to 6 decimals)."""
    return round(float(np.min(np.sum(_unit(vecs) * reference, axis=1))), 6)


def _fused(source: Path, target: Path, heads: int, hidden: int) -> bool:
    """ONNX Runtime's transformer optimizer on the plain graph, for ``backend: onnx``: each attention block, the
    embeddings' sum and LayerNorm, each residual add with its LayerNorm, each bias with its GELU becomes one fused
    operator (the same arithmetic in fewer passes over memory). False when it cannot (another architecture, a
    pattern it does not know): ONNX Runtime then runs the plain graph."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimize_model(str(source), model_type="bert", num_heads=int(heads or 0),
                           hidden_size=int(hidden or 0)).save_model_to_file(str(target))
        return True
    except Exception:
        target.unlink(missing_ok=True)
        return False


def _int8(source: Path, target: Path, ops: list[str]) -> None:
    """Dynamic int8 of the products' weights only (``ops``: MatMul, and the fused graph's Attention, whose Q, K and
    V products become one), per output channel, activations quantised per batch at run time; LayerNorm, softmax,
    GELU and the embeddings stay fp32, where int8 costs accuracy and saves nothing."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), op_types_to_quantize=ops, per_channel=True,
                     weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "MatMulConstBOnly": True})


def _unit(vecs: np.ndarray) -> np.ndarray:
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


class OnnxRunner:
    """An exported model run by ONNX Runtime (``onnx``: the fused graph when the export made one) or OpenVINO
    (``openvino``: the plain graph) on 2 threads, texts tokenized as sentence-transformers does (stripped,
    lower-cased when the model says so, truncated to max_seq_length)."""

    def __init__(self, folder: Path, backend: str, meta: dict | None = None, max_length: int | None = None):
        from transformers import AutoTokenizer

        self.folder, self.backend = Path(folder), backend
        self.meta = meta or json.loads((self.folder / "export.json").read_text(encoding="utf-8"))
        self.max_length = max_length or self.meta["max_seq_length"]
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder / "tokenizer"))
        threads = os.cpu_count() or 1  # as torch: one thread per core
        fused = backend == "onnx" and bool(self.meta.get("ort_file"))
        path = str(self.folder / self.meta["ort_file" if fused else "file"])
        self.min_cosine_to_torch = self.meta.get("ort_min_cosine_to_torch" if fused else "min_cosine_to_torch")
        if backend == "openvino":
            import openvino as ov

            core = ov.Core()
            self._run = _ov_runner(core.compile_model(core.read_model(path), "CPU", {
                "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}))
        else:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            self._run = lambda feed: session.run(None, feed)[0]

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Embeddings of ``texts`` in their order, ``batch_size`` at a time, each batch padded to its longest text
        (the caller orders texts by length, as for torch, so all backends make the same batches)."""
        prepared = [t.strip() for t in texts]
        if self.meta["do_lower_case"]:
            prepared = [t.lower() for t in prepared]
        out = [np.zeros((0, self.meta["dim"]), np.float32)]
        for first in range(0, len(prepared), batch_size):
            enc = self.tokenizer(prepared[first:first + batch_size], padding=True, truncation="longest_first",
                                 max_length=self.max_length, return_tensors="np")
            out.append(np.asarray(self._run({n: enc[n].astype(np.int64) for n in self.meta["inputs"]}), np.float32))
        return np.concatenate(out)


def _ov_runner(compiled):
    request = compiled.create_infer_request()
    return lambda feed: request.infer(feed)[0].copy()


def runner(model_name: str, load: Callable, fingerprint: str, root: Path, backend: str, quantize: str,
           max_length: int | None) -> OnnxRunner:
    """``model_name``'s export (made from ``load()`` if missing) ready to encode on ``backend``."""
    check_installed(backend, quantize)
    try:
        return OnnxRunner(exported(model_name, load, fingerprint, root, quantize), backend, max_length=max_length)
    except (MissingDependencyError, ConfigError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ConfigError(f"retriever.backend: {backend}: {model_name!r} cannot be exported or loaded "
                          f"({type(exc).__name__}: {first})") from None
