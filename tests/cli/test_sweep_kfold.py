"""select_on.kfold at the command line: bad values are one located line and exit 2, before any run."""

from clihelp import assert_input_error, demo_config, harness


def _problem_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "select_on" in line]


def test_more_folds_than_selection_queries_is_one_located_line(tmp_path):
    config = demo_config(tmp_path, sweep="{retriever.k1: [1, 2]}", select_on="{kfold: 47}")
    proc = harness("validate", config)
    assert_input_error(proc, str(config), "select_on.kfold: 47 folds of 46 selection queries; give at most 46")
    assert len(_problem_lines(proc.stderr)) == 1


def test_fewer_than_two_folds_stops_run_before_retrieval(tmp_path):
    config = demo_config(tmp_path, sweep="{retriever.k1: [1, 2]}", select_on="{kfold: 1}")
    proc = harness("run", config, "--out", tmp_path / "out")
    assert_input_error(proc, str(config), "select_on.kfold: 1 folds; give 2 or more")
    assert len(_problem_lines(proc.stderr)) == 1 and not (tmp_path / "out").exists()
