"""Issue 35: a run that measures nothing is not a pass. A golden set in which no query can be counted (every query
a golden-set error, or nothing relevant) makes validate and run exit 2 naming why, before any retrieval."""

from __future__ import annotations

import json

import pytest

from clihelp import DEMO, assert_input_error, demo_config, harness


def _config(tmp_path, rows):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = demo_config(tmp_path)
    cfg.write_text(cfg.read_text().replace(str(DEMO / "goldset.jsonl"), str(gold)))
    return cfg


MISSING = {"id": "q1", "query": "where is it", "relevant": [{"doc": "no-such-doc", "grade": 1}]}
UNJUDGED = {"id": "q2", "query": "how to install", "relevant": [{"doc": "install-desktop", "grade": 0}]}


@pytest.mark.parametrize("rows, fragment", [
    ([MISSING], "every query (1) is a golden-set error"),
    ([UNJUDGED], "none of the 1 checkable queries has a relevant document"),
    ([MISSING, UNJUDGED], "none of the 1 checkable queries has a relevant document"),
])
def test_validate_and_run_exit_2_when_no_query_can_be_counted(tmp_path, rows, fragment):
    cfg = _config(tmp_path, rows)
    assert_input_error(harness("validate", cfg, cwd=tmp_path), "no query can be counted", fragment)
    assert_input_error(harness("run", cfg, "-q", cwd=tmp_path), "no query can be counted", fragment)
    assert not (tmp_path / "reports").exists()  # nothing written


def test_one_countable_query_is_enough_and_query_policy_zero_counts_unjudged(tmp_path):
    good = json.loads((DEMO / "goldset.jsonl").read_text().splitlines()[0])
    assert harness("validate", _config(tmp_path, [MISSING, good]), cwd=tmp_path).returncode == 0
    cfg = _config(tmp_path, [UNJUDGED])
    cfg.write_text(cfg.read_text() + "evaluation: {query_policy: zero}\n")
    assert harness("validate", cfg, cwd=tmp_path).returncode == 0
