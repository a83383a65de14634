"""Cohen's kappa of two judging rounds (harness.gold.agreement), by hand, against sklearn, and as
``harness goldset merge`` reports it for the documents a sheet grades again."""

from __future__ import annotations

import numpy as np
import pytest

from clihelp import DEMO, harness
from harness.gold.agreement import agreement_line, cohen_kappa


def test_worked_example():
    first, second = [2, 1, 0, 0, 1], [2, 0, 0, 1, 1]
    a = cohen_kappa(first, second)
    # agree on pairs 1, 3, 5: p_o = 3/5. Round one: grade 2 once, 1 twice, 0 twice; round two the same counts:
    # p_e = (1*1 + 2*2 + 2*2) / 25 = 9/25. kappa = (3/5 - 9/25) / (1 - 9/25) = (15 - 9) / (25 - 9) = 6/16.
    assert (a.pairs, a.agreed, a.grades) == (5, 3, (0, 1, 2))
    assert a.kappa == 0.375


def test_perfect_chance_and_undefined():
    assert cohen_kappa([0, 1, 2], [0, 1, 2]).kappa == 1.0
    # every disagreement, and each round uses both grades equally: p_o = 0, p_e = 1/2, kappa = -1
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]).kappa == -1.0
    same = cohen_kappa([1, 1, 1], [1, 1, 1])  # p_e = 1: agreement cannot be told from chance
    assert same.kappa is None and same.agreed == 3
    assert "undefined (every pair has grade 1 in both rounds)" in agreement_line(same)
    assert cohen_kappa([], []).kappa is None


def test_equals_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(2, 60))
        first = rng.integers(-1, 4, n).tolist()
        second = [g if rng.random() < 0.6 else int(rng.integers(-1, 4)) for g in first]
        ours = cohen_kappa(first, second).kappa
        if ours is None:
            continue
        assert ours == pytest.approx(metrics.cohen_kappa_score(first, second), abs=1e-12)


def test_merge_reports_the_overlap_and_kappa(tmp_path):
    sheet = tmp_path / "again.csv"
    # q01, q03, q08/trouble-login: the golden set's grade again; q08/account-password: 1, the golden set says 2
    # (a conflict, so exit 1); q09/new-doc: a new judgment, not in both rounds.
    sheet.write_text("query_id,doc_id,grade\nq01,install-desktop,2\nq03,install-linux,2\nq08,trouble-login,1\n"
                     "q08,account-password,1\nq09,new-doc,1\n")
    proc = harness("goldset", "merge", DEMO / "goldset.jsonl", sheet, "-o", tmp_path / "g2.jsonl")
    assert proc.returncode == 1, proc.stderr
    # golden set [2, 2, 1, 2], sheet [2, 2, 1, 1]: p_o = 3/4; p_e = (3*2 + 1*2) / 16; kappa = (12 - 8) / (16 - 8)
    assert ("4 (query, document) pair(s) graded in both rounds (the golden set and the sheet): 3 agree (75.0%); "
            "Cohen's kappa 0.500 (grades 1, 2 as categories)") in proc.stderr
    assert "1 judgment(s) added" in proc.stderr


def test_merge_without_overlap_says_nothing_of_kappa(tmp_path):
    sheet = tmp_path / "new.csv"
    sheet.write_text("query_id,doc_id,grade\nq09,new-doc,1\n")
    proc = harness("goldset", "merge", DEMO / "goldset.jsonl", sheet, "-o", tmp_path / "g2.jsonl")
    assert proc.returncode == 0 and "kappa" not in proc.stderr, proc.stderr
