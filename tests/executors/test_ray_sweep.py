"""A sweep on Ray starts one Ray for all its points (not one each) and shuts it down after; its leaderboard is the
local sweep's. In its own module: the executor tests keep a Ray running for their whole module, and this test needs
to see the sweep start it."""

from __future__ import annotations

import json

from conftest import ROOT, require_installed
from harness.config.schema import parse_config
from harness.pipeline.sweep import run_sweep

require_installed("ray")  # imported by the test: `import ray` alone is ~1 s of every collection


def _config(tmp_path, executor):
    return parse_config({"name": "s", "corpus": {"path": str(ROOT / "goldsets/demo/corpus.jsonl")},
                         "goldset": {"path": str(ROOT / "goldsets/demo/goldset.jsonl")},
                         "chunking": {"strategy": "sentences", "size": 2},
                         "retriever": {"kind": "bm25", "backend": "fast"}, "metrics": ["ndcg@10", "ap"],
                         "executor": executor, "sweep": {"retriever.k1": [0.9, 1.5]}}, "t", tmp_path)


def test_sweep_starts_ray_once_and_matches_the_local_sweep(tmp_path, monkeypatch):
    import ray

    assert not ray.is_initialized()
    inits = []
    real_init = ray.init

    def counting_init(*args, **kwargs):
        inits.append(kwargs.get("address"))
        return real_init(*args, **{**kwargs, "num_cpus": 2})

    monkeypatch.setattr(ray, "init", counting_init)
    remote = run_sweep(_config(tmp_path, {"kind": "ray", "num_workers": 1}), tmp_path / "ray", progress=False,
                       log=lambda m: None)
    assert len(inits) == 1  # two points, one Ray
    assert not ray.is_initialized()  # and it was stopped after the sweep
    local = run_sweep(_config(tmp_path, {"kind": "local"}), tmp_path / "local", progress=False, log=lambda m: None)
    assert [(r["run"], r["mean"]) for r in remote["runs"]] == [(r["run"], r["mean"]) for r in local["runs"]]
    for r in remote["runs"]:
        record = json.loads((tmp_path / "ray" / r["run"] / "results.json").read_text())["executor"]
        assert record["kind"] == "ray"
