"""Issue 35: harness eval tells what it did. Files of the wrong kind (a run where the qrels belong, and the
reverse) are one line asking whether the arguments are swapped; eval on the run.trec a run wrote says why its mean
differs from the run's (the run leaves out golden-set errors, which qrels alone cannot know)."""

from __future__ import annotations

import json

import pytest

from clihelp import DEMO, ROOT, assert_input_error, harness

RUN = "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\n"
QRELS = "q1 0 d1 1\nq1 0 d3 0\n"


@pytest.mark.parametrize("qrels, run, fragment", [
    (RUN, QRELS, "QRELS q.txt looks like a TREC run (6 columns: query Q0 document rank score tag) and RUN r.txt like "
                 "TREC qrels (4 columns: query iteration document grade): are the arguments swapped?"),
    (RUN, RUN, "QRELS q.txt looks like a TREC run (6 columns: query Q0 document rank score tag): are the arguments "
               "swapped?"),
    (QRELS, QRELS, "RUN r.txt looks like TREC qrels (4 columns: query iteration document grade): are the arguments "
                   "swapped?"),
    ('{"id": "x", "text": "a document"}\n', RUN, "QRELS q.txt looks like a corpus (JSON lines with text and no "
                                                 "query), not judgments"),
])
def test_files_of_the_wrong_kind_are_one_line(tmp_path, qrels, run, fragment):
    (tmp_path / "q.txt").write_text(qrels)
    (tmp_path / "r.txt").write_text(run)
    proc = harness("eval", "q.txt", "r.txt", cwd=tmp_path)
    assert_input_error(proc, fragment)
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_right_files_are_evaluated_as_before(tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.txt").write_text(RUN)
    proc = harness("eval", "q.txt", "r.txt", "-m", "rr@10", "--format", "tsv", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "rr@10\tall\t1.000000\n"), proc.stderr


def test_eval_on_a_runs_own_files_says_why_the_mean_differs(tmp_path):
    proc = harness("run", ROOT / "configs" / "demo-bm25.yaml", "--out", tmp_path / "r", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    qrels = tmp_path / "qrels.txt"  # the golden set's judgments as TREC qrels: q44's document is not in the corpus
    qrels.write_text("".join(f"{r['id']} 0 {j['doc']} {j.get('grade', 1)}\n"
                             for r in map(json.loads, (DEMO / "goldset.jsonl").read_text().splitlines())
                             for j in r["relevant"]))
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    errors = results["summary"]["counts"]["doc"]["excluded_goldset_error_query_ids"]
    assert errors == ["q44", "q45"]
    proc = harness("eval", qrels, tmp_path / "r" / "run.trec", "-m", "ndcg@10", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    here = json.loads(proc.stdout)["mean"]["ndcg@10"]
    there = results["summary"]["doc"]["ndcg@10"]
    assert here != there
    assert "2 counted here and not there: 2 are golden-set errors in the run (q44, q45)" in proc.stderr
    assert f"ndcg@10 {here:.4f} here, {there:.4f} in the run" in proc.stderr
    moved = tmp_path / "run.trec"  # the same file away from its results.json: no note
    moved.write_bytes((tmp_path / "r" / "run.trec").read_bytes())
    assert "note:" not in harness("eval", qrels, moved, "-m", "ndcg@10").stderr
