import json

import pytest

from harness.config.schema import load_config, parse_config
from harness.core.errors import ConfigError
from harness.pipeline.sweep import expand, run_sweep

from conftest import ROOT


def base(tmp_path, sweep):
    return parse_config({"name": "s", "corpus": {"path": str(ROOT / "goldsets/demo/corpus.jsonl")},
                         "goldset": {"path": str(ROOT / "goldsets/demo/goldset.jsonl")},
                         "chunking": {"strategy": "sentences", "size": 2},
                         "retriever": {"kind": "hybrid", "children": [{"kind": "bm25", "weight": 1.0},
                                                                      {"kind": "bm25", "variant": "plus"}]},
                         "metrics": ["ndcg@10"], "sweep": sweep}, "t", tmp_path)


def test_expand_grid_with_list_index_paths(tmp_path):
    points = expand(base(tmp_path, {"chunking.size": [1, 3], "retriever.children.0.weight": [0.3, 0.7]}))
    assert len(points) == 4
    names = [cfg.name for cfg, _ in points]
    assert names[0] == "s-size_1-weight_0.3" and len(set(names)) == 4
    cfg, params = points[-1]
    assert cfg.chunking.size == 3 and cfg.retriever["children"][0]["weight"] == 0.7 and cfg.sweep is None


def test_bad_sweep_path_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="sweep.retriever.children.5.weight"):
        expand(base(tmp_path, {"retriever.children.5.weight": [1]}))
    with pytest.raises(ConfigError, match="retriever.k1: unknown key"):
        expand(parse_config({"name": "s", "corpus": {"path": "c"}, "goldset": {"path": "g"},
                             "retriever": {"kind": "hybrid", "children": [{"kind": "bm25"}]},
                             "sweep": {"retriever.k1": [1]}}, "t", tmp_path))


@pytest.mark.charts  # the leaderboard's charts
def test_sweep_writes_leaderboard_and_runnable_best_config(tmp_path):
    cfg = base(tmp_path, {"chunking.size": [1, 4]})
    board = run_sweep(cfg, tmp_path / "out", progress=False, log=lambda m: None)
    data = json.loads((tmp_path / "out/leaderboard.json").read_text())
    assert data == board and len(board["runs"]) == 2 and board["runs"][0]["tied_with_best"]
    means = [r["mean"] for r in board["runs"]]
    assert means == sorted(means, reverse=True)
    for r in board["runs"]:
        assert (tmp_path / "out" / r["run"] / "results.json").is_file()
    best = tmp_path / "best.yaml"
    best.write_text((tmp_path / "out/best.yaml").read_text())
    loaded = load_config(best)
    assert loaded.name == board["best"] and loaded.sweep is None
    # the defaults best.yaml spells out that nothing reads are left out: running it warned "has no effect" of
    # chunking.unit and cutoff.tokenizer (a tester); the run it makes is the sweep point's (the same hash)
    assert loaded.unused_settings() == [] and "unit:" not in best.read_text()
    best_run = json.loads((tmp_path / "out" / board["best"] / "results.json").read_text())
    assert load_config(tmp_path / "out/best.yaml").config_hash() == best_run["config_hash"]  # (paths from there)
    assert "| 1 | " + board["best"] in (tmp_path / "out/leaderboard.md").read_text()
    page = (tmp_path / "out/leaderboard.html").read_text()
    assert "leaderboard by doc.ndcg@10" in page and board["best"] in page and "<svg" in page


def test_sweep_chunks_once_per_distinct_chunking(tmp_path, monkeypatch):
    import harness.pipeline.assemble as experiment
    calls = []
    real = experiment.prepare
    monkeypatch.setattr(experiment, "prepare", lambda cfg, log=None: calls.append(cfg.chunking.size) or real(cfg, log=log))
    cfg = base(tmp_path, {"chunking.size": [1, 4], "retriever.children.0.weight": [0.5, 1.0]})
    messages = []
    run_sweep(cfg, tmp_path / "out", progress=False, log=messages.append)
    assert sorted(calls) == [1, 4]  # four runs, two distinct chunkings
    assert sum("(chunks reused)" in m for m in messages) == 2


def test_a_problem_every_sweep_point_has_is_said_once(tmp_path):
    """A typo'd key in the grid was reported once a point (4 times for 2 x 2), each under its point's heading."""
    with pytest.raises(ConfigError) as caught:
        expand(base(tmp_path, {"chunking.size": [1, 3], "retriever.children.0.kk1": [0.9, 1.5]}))
    problems = caught.value.problems
    assert "every one of the 4 grid points is invalid" in str(caught.value)
    assert problems == ["retriever.children.0.kk1: unknown key; did you mean 'k1'?"], problems


def test_explain_of_a_sweep_config_is_refused_not_the_base_explained(tmp_path):
    from clihelp import assert_input_error, harness

    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(f"name: s\ncorpus: {{path: {ROOT / 'goldsets/demo/corpus.jsonl'}}}\n"
                   f"goldset: {{path: {ROOT / 'goldsets/demo/goldset.jsonl'}}}\nretriever: {{kind: bm25}}\n"
                   "sweep: {retriever.k1: [0.9, 1.2]}\n")
    proc = harness("explain", cfg, "--query", "install")
    assert_input_error(proc, f"{cfg}: sweeps 2 configurations and explain takes one")
