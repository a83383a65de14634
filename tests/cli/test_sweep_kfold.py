"""select_on.kfold at the command line: bad values are one located line and exit 2, before any run. The upper
bound is the number of selection queries the folds deal: those counted at the ranking metric's level (the demo's 46
queries hold 2 golden-set errors and 1 with nothing relevant: 43 are counted at document level)."""

import pytest

from clihelp import assert_input_error, demo_config, harness


def _problem_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "select_on" in line]


def test_more_folds_than_selection_queries_is_one_located_line(tmp_path):
    config = demo_config(tmp_path, sweep="{retriever.k1: [1, 2]}", select_on="{kfold: 47}")
    proc = harness("validate", config)
    assert_input_error(proc, f"{config}: select_on.kfold: 47 folds of 43 selection queries counted at doc level; "
                             f"give at most 43")
    assert len(_problem_lines(proc.stderr)) == 1


@pytest.mark.parametrize("k", [44, 46])
def test_more_folds_than_counted_queries_stops_run_before_retrieval(tmp_path, k):
    """44 to 46 folds passed validate (the golden set has 46 queries) and failed after every grid point ran, in a
    line that did not name the config."""
    config = demo_config(tmp_path, sweep="{retriever.k1: [1, 2]}", select_on=f"{{kfold: {k}}}")
    for command in ("validate", "run"):
        proc = harness(command, config, *(["--out", tmp_path / "out"] if command == "run" else []))
        assert_input_error(proc, f"{config}: select_on.kfold: {k} folds of 43 selection queries counted at doc "
                                 f"level; give at most 43")
        assert len(_problem_lines(proc.stderr)) == 1 and not (tmp_path / "out").exists()


def test_the_bound_is_counted_at_the_ranking_metrics_level(tmp_path):
    config = demo_config(tmp_path, sweep="{chunking.size: [1, 3]}", select_on="{kfold: 44}",
                         metrics="[ndcg@10, recall@10]", sweep_metric="chunk.recall@10")
    proc = harness("validate", config)
    assert_input_error(proc, f"{config}: select_on.kfold: 44 folds of 43 selection queries counted at chunk level")
    assert len(_problem_lines(proc.stderr)) == 1


@pytest.mark.parametrize("k, says", [(1, "select_on.kfold: 1 folds; give 2 or more"),
                                     (2.5, "select_on.kfold: expected a whole number of folds (2 or more), got 2.5")])
def test_fewer_than_two_folds_stops_run_before_retrieval(tmp_path, k, says):
    config = demo_config(tmp_path, sweep="{retriever.k1: [1, 2]}", select_on=f"{{kfold: {k}}}")
    proc = harness("run", config, "--out", tmp_path / "out")
    assert_input_error(proc, str(config), says)
    assert len(_problem_lines(proc.stderr)) == 1 and not (tmp_path / "out").exists()
