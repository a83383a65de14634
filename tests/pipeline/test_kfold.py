"""select_on: {kfold: k}: each fold's point chosen on the other folds' queries, scored on the fold; the optimism gap;
the winner against the runner-up. The fold numbers are recomputed here from each run's results.json."""

import json

import numpy as np
import pytest

from harness.config.schema import parse_config
from harness.core.errors import ConfigError
from harness.pipeline.kfold import assign_folds
from harness.pipeline.sweep import expand, run_sweep

from conftest import ROOT


def config(tmp_path, select_on, sweep=None):
    return parse_config({"name": "kf", "corpus": {"path": str(ROOT / "goldsets/demo/corpus.jsonl")},
                         "goldset": {"path": str(ROOT / "goldsets/demo/goldset.jsonl")},
                         "chunking": {"strategy": "sentences", "size": 2},
                         "retriever": {"kind": "bm25", "k1": 1.2}, "metrics": ["ndcg@10", "rr@10"],
                         "sweep": sweep or {"retriever.k1": [0.1, 0.9, 3.0], "retriever.b": [0.2, 0.9]},
                         "select_on": select_on}, "t", tmp_path)


def test_folds_are_seeded_balanced_and_independent_of_order():
    ids = [f"q{i}" for i in range(23)]
    fold = assign_folds(ids, 5, seed=7)
    assert sorted(np.bincount(fold).tolist()) == [4, 4, 5, 5, 5]
    assert assign_folds(ids, 5, seed=7).tolist() == fold.tolist()
    assert assign_folds(ids, 5, seed=8).tolist() != fold.tolist()
    backwards = assign_folds(ids[::-1], 5, seed=7)
    assert backwards.tolist() == fold[::-1].tolist()  # a query's fold follows its id, not its place


def _by_hand(out, board, k, seed):
    """The k-fold numbers from the runs' results.json, with plain Python arithmetic."""
    per_run = {}
    for row in board["runs"]:
        data = json.loads((out / row["run"] / "results.json").read_text())
        per_run[row["run"]] = {q["id"]: q["metrics"]["doc"]["ndcg@10"] for q in data["queries"] if q["counted"]["doc"]}
    ids = sorted(set.intersection(*(set(v) for v in per_run.values())))
    perm = np.random.default_rng(seed).permutation(len(ids)).tolist()
    fold = {ids[i]: position % k for position, i in enumerate(perm)}
    return per_run, fold


def test_kfold_sweep_reports_each_fold_and_the_optimism_gap(tmp_path):
    cfg = config(tmp_path, {"kfold": 4, "seed": 3})
    board = run_sweep(cfg, tmp_path / "out", progress=False, log=lambda m: None)
    assert json.loads((tmp_path / "out/leaderboard.json").read_text()) == board
    kf = board["kfold"]
    assert (kf["k"], kf["seed"], kf["metric"], kf["final"]) == (4, 3, "doc.ndcg@10", board["best"])
    per_run, fold = _by_hand(tmp_path / "out", board, 4, 3)
    grid = [c.name for c, _ in expand(cfg, on_selection=True)]
    assert kf["queries"] == len(fold) and len(kf["folds"]) == 4
    for f in kf["folds"]:
        held = [q for q in fold if fold[q] == f["fold"] - 1]
        train = [q for q in fold if fold[q] != f["fold"] - 1]
        train_means = {run: sum(per_run[run][q] for q in train) / len(train) for run in grid}
        best = max(train_means.values())
        chosen = next(run for run in grid if train_means[run] == best)  # ties: the first in grid order
        assert f["chosen"] == chosen and (f["train_queries"], f["heldout_queries"]) == (len(train), len(held))
        assert f["train_mean"] == pytest.approx(best, abs=1e-12)
        assert f["heldout_mean"] == pytest.approx(sum(per_run[chosen][q] for q in held) / len(held), abs=1e-12)
    mean_train = sum(f["train_mean"] for f in kf["folds"]) / 4
    mean_held = sum(f["heldout_mean"] for f in kf["folds"]) / 4
    assert kf["optimism_gap"] == pytest.approx(mean_train - mean_held, abs=1e-12)
    # kfold alone selects on goldset itself: nothing is run again to report it
    assert "reported" not in board and not (tmp_path / "out" / f"{board['best']}-reported").exists()
    text = (tmp_path / "out/leaderboard.md").read_text()
    assert "## 4-fold selection (seed 3)" in text and f"optimism gap {kf['optimism_gap']:+.4f}" in text


def test_winner_against_runner_up_is_the_holm_corrected_row(tmp_path):
    board = run_sweep(config(tmp_path, None, {"retriever.k1": [0.1, 0.9, 3.0]}), tmp_path / "out", progress=False,
                      log=lambda m: None)
    second = board["runner_up"]
    row = board["runs"][1]
    assert (second["winner"], second["run"], second["correction"]) == (board["best"], row["run"], "holm")
    assert second["p_corrected"] == row["p_corrected"] and second["delta_vs_winner"] == row["delta_vs_best"]
    assert second["mean"] == pytest.approx(row["mean"], abs=1e-12)
    assert second["winner_mean"] == pytest.approx(board["runs"][0]["mean"], abs=1e-12)
    # Holm over the two comparisons against the best: the smaller p doubled, the larger at least that, each <= 1
    ps = sorted((r["run"], r["p_corrected"]) for r in board["runs"][1:])
    assert all(p is not None and p <= 1 for _, p in ps) and second["p"] <= second["p_corrected"]
    assert "## Winner against runner-up" in (tmp_path / "out/leaderboard.md").read_text()


@pytest.mark.parametrize("select_on, expect", [
    ({"kfold": 1}, "select_on.kfold: 1 folds; give 2 or more"),
    ({"kfold": 0}, "select_on.kfold: 0 folds; give 2 or more"),
    ({"kfold": "five"}, "select_on.kfold: expected a whole number of folds"),
    ({"kfold": True}, "select_on.kfold: expected a whole number of folds"),
    ({"seed": 3}, "select_on.seed: only with select_on.kfold"),
    ({"kfold": 3, "seed": -1}, "select_on.seed: expected a whole number >= 0"),
])
def test_bad_kfold_is_one_located_line(tmp_path, select_on, expect):
    with pytest.raises(ConfigError) as err:
        config(tmp_path, select_on)
    assert [p for p in err.value.problems if p.startswith("select_on")] == [p for p in err.value.problems
                                                                             if expect in p]
