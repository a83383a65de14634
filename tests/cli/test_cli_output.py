"""The command line's exact output (sqlite-utils style): fixed tiny inputs written here, numbers worked out by hand
here, and stdout compared character for character. Plus the usage errors of the shared options, and closed pipes.

The qrels and run every eval test reads (trec_eval conventions: relevant = grade >= 1, ties by doc id):

    q1: relevant d1, d2 (grade 1)   run: d1 (rank 1), d4, d2 (rank 3)
    q2: relevant d3 (grade 2)       run: d5, d3 (rank 2)
    q3: only d9, grade 0            run: d9          -> no relevant document: excluded from the means
    q4: not judged                  run: d1          -> ignored, counted as an unjudged run query
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness as harness_pkg
from clihelp import ROOT, Case, assert_no_traceback, harness, run_case

QRELS = "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 2\nq3 0 d9 0\n"
RUN = ("q1 Q0 d1 1 3.0 t\nq1 Q0 d4 2 2.0 t\nq1 Q0 d2 3 1.0 t\n"
       "q2 Q0 d5 1 2.0 t\nq2 Q0 d3 2 1.0 t\n"
       "q3 Q0 d9 1 1.0 t\n"
       "q4 Q0 d1 1 1.0 t\n")
METRICS = ["-m", "P@2", "-m", "rr", "-m", "ap", "-m", "ndcg@3"]

# Per query, by hand. nDCG@3: DCG = sum gain / log2(rank + 1), the ideal from all judged documents.
Q1 = {"precision@2": 1 / 2,                      # d1 of d1, d4
      "rr": 1 / 1,                               # d1 at rank 1
      "ap": (1 / 1 + 2 / 3) / 2,                 # relevant at ranks 1 and 3, R = 2
      "ndcg@3": (1 / math.log2(2) + 1 / math.log2(4)) / (1 / math.log2(2) + 1 / math.log2(3))}
Q2 = {"precision@2": 1 / 2,                      # d3 of d5, d3
      "rr": 1 / 2,
      "ap": (1 / 2) / 1,
      "ndcg@3": (2 / math.log2(3)) / (2 / math.log2(2))}  # grade 2 at rank 2; ideal: grade 2 at rank 1
Q3 = {name: 0.0 for name in Q1}
MEAN = {name: (Q1[name] + Q2[name]) / 2 for name in Q1}  # q3 has no relevant document: excluded
COUNTS = {"judged_queries": 3, "evaluated_queries": 2, "no_relevant_queries": 1, "no_relevant_query_ids": ["q3"],
          "absent_from_run": 0, "absent_from_run_query_ids": [], "unjudged_run_queries": 1, "dropped_duplicates": 0}


def test_the_hand_computed_numbers():
    # The values the literal outputs below print, rounded: a check of the arithmetic above, not of harness.
    assert [round(MEAN[m], 6) for m in MEAN] == [0.5, 0.75, 0.666667, 0.775325]
    assert round(Q1["ndcg@3"], 6) == 0.919721 and round(Q2["ndcg@3"], 6) == 0.63093


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.trec").write_text(RUN)
    return tmp_path


def eval_(tmp, *args):
    proc = harness("eval", "qrels.txt", "run.trec", *METRICS, *args, cwd=tmp)
    assert_no_traceback(proc)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    return proc.stdout


def test_eval_tsv(files):
    assert eval_(files, "--format", "tsv") == (
        "precision@2\tall\t0.500000\n"
        "rr\tall\t0.750000\n"
        "ap\tall\t0.666667\n"
        "ndcg@3\tall\t0.775325\n")


def test_eval_tsv_per_query(files):
    assert eval_(files, "--format", "tsv", "--per-query") == (
        "precision@2\tall\t0.500000\nrr\tall\t0.750000\nap\tall\t0.666667\nndcg@3\tall\t0.775325\n"
        "precision@2\tq1\t0.500000\nrr\tq1\t1.000000\nap\tq1\t0.833333\nndcg@3\tq1\t0.919721\n"
        "precision@2\tq2\t0.500000\nrr\tq2\t0.500000\nap\tq2\t0.500000\nndcg@3\tq2\t0.630930\n"
        "precision@2\tq3\t0.000000\nrr\tq3\t0.000000\nap\tq3\t0.000000\nndcg@3\tq3\t0.000000\n")


def _check_json(stdout: str, keys: list[str]) -> dict:
    data = json.loads(stdout)
    assert list(data) == keys
    # The layout is exactly json.dumps(indent=2) plus a newline; the numbers agree with the hand-worked ones to
    # the last bit or two (the engine sums in its own order).
    assert stdout == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert data["mean"] == pytest.approx(MEAN, abs=1e-15) and list(data["mean"]) == list(MEAN)
    assert data["counts"] == COUNTS
    assert data["conventions"]["no_relevant_queries"] == "excluded from means, listed"
    assert data["conventions"]["order"] == "score descending, ties by doc id descending (trec_eval)"
    return data


def test_eval_json_is_means_counts_and_conventions_only(files):
    """Without --per-query, JSON has no per-query values (a million-query run prints three small objects)."""
    _check_json(eval_(files), ["mean", "conventions", "counts"])
    assert eval_(files, "--format", "json") == eval_(files)  # json is the default


def test_eval_json_per_query(files):
    data = _check_json(eval_(files, "--per-query"), ["mean", "per_query", "conventions", "counts"])
    assert list(data["per_query"]) == ["q1", "q2", "q3"]  # every judged query, the unjudged q4 not
    for qid, expected in (("q1", Q1), ("q2", Q2), ("q3", Q3)):
        assert data["per_query"][qid] == pytest.approx(expected, abs=1e-15), qid


def test_eval_markdown(files):
    assert eval_(files, "--format", "md") == (
        "| metric | mean |\n"
        "|---|---|\n"
        "| precision@2 | 0.5000 |\n"
        "| rr | 0.7500 |\n"
        "| ap | 0.6667 |\n"
        "| ndcg@3 | 0.7753 |\n"
        "\n"
        "Means over 2 of 3 judged queries.\n")


def test_eval_markdown_per_query(files):
    assert eval_(files, "--format", "md", "--per-query").endswith(
        "Means over 2 of 3 judged queries.\n"
        "\n"
        "| query | precision@2 | rr | ap | ndcg@3 | counted |\n"
        "|---|---|---|---|---|---|\n"
        "| q1 | 0.5000 | 1.0000 | 0.8333 | 0.9197 | yes |\n"
        "| q2 | 0.5000 | 0.5000 | 0.5000 | 0.6309 | yes |\n"
        "| q3 | 0.0000 | 0.0000 | 0.0000 | 0.0000 | no |\n")  # q3 has no relevant document: not in the means


def test_eval_table(files):
    assert eval_(files, "--format", "table") == (
        "┏━━━━━━━━━━━━━┳━━━━━━━━┓\n"
        "┃ metric      ┃   mean ┃\n"
        "┡━━━━━━━━━━━━━╇━━━━━━━━┩\n"
        "│ precision@2 │ 0.5000 │\n"
        "│ rr          │ 0.7500 │\n"
        "│ ap          │ 0.6667 │\n"
        "│ ndcg@3      │ 0.7753 │\n"
        "└─────────────┴────────┘\n"
        "Means over 2 of 3 judged queries.\n")


def test_eval_table_per_query(files):
    assert eval_(files, "--format", "table", "--per-query").endswith(
        "Means over 2 of 3 judged queries.\n"
        "┏━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━━┓\n"
        "┃ query ┃ precision@2 ┃     rr ┃     ap ┃ ndcg@3 ┃ counted ┃\n"
        "┡━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━━┩\n"
        "│ q1    │      0.5000 │ 1.0000 │ 0.8333 │ 0.9197 │ yes     │\n"
        "│ q2    │      0.5000 │ 0.5000 │ 0.5000 │ 0.6309 │ yes     │\n"
        "│ q3    │      0.0000 │ 0.0000 │ 0.0000 │ 0.0000 │ no      │\n"
        "└───────┴─────────────┴────────┴────────┴────────┴─────────┘\n")


def test_eval_markdown_and_table_show_ids_as_text(tmp_path):
    """A query id with Markdown or rich markup in it is printed as it is, not interpreted."""
    (tmp_path / "qrels.txt").write_text("[b]x|y 0 d1 1\n")
    (tmp_path / "run.trec").write_text("[b]x|y Q0 d1 1 1.0 t\n")
    md = harness("eval", "qrels.txt", "run.trec", "-m", "rr", "--format", "md", "--per-query", cwd=tmp_path)
    assert md.stdout.endswith("| \\[b\\]x\\|y | 1.0000 | yes |\n"), md.stdout
    table = harness("eval", "qrels.txt", "run.trec", "-m", "rr", "--format", "table", "--per-query", cwd=tmp_path)
    assert "│ [b]x|y │ 1.0000 │ yes     │" in table.stdout, table.stdout
    assert "Means over 1 of 1 judged query." in table.stdout  # one query, not "1 queries"


def test_eval_warning_counts_agree_in_number(files):
    (files / "qrels.txt").write_text(QRELS + "q5 0 d1 1\n")  # q5 is judged, absent from the run
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "rr", "--format", "tsv", cwd=files)
    assert proc.stderr == "warning: 1 of 4 judged queries is absent from the run and scores 0: q5\n"
    (files / "qrels.txt").write_text("x1 0 d1 1\n")
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "rr", "--format", "tsv", cwd=files)
    assert proc.stderr == ("warning: the run and the qrels have no query in common (1 judged query, 4 run queries "
                           "with no judgments): every judged query scores 0\n")


def test_version(tmp_path):
    proc = harness("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"harness {harness_pkg.__version__}\n", "")


def test_validate_the_demo():
    proc = harness("validate", "configs/demo-bm25.yaml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "configs/demo-bm25.yaml: ok (36 documents, 79 chunks, 46 queries, 2 warnings)\n"
    gold = ROOT / "goldsets/demo/goldset.jsonl"
    assert [line for line in proc.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {gold}: query 'q44': relevant document 'api-pagination' is not in the corpus (the query is "
        "flagged goldset_error)",
        f"warning: {gold}: query 'q45': evidence quote 'LAN sync copies files directly between computers on the s...' "
        "not found in document 'sync-bandwidth' (the query is flagged goldset_error)"]


# --- a tiny experiment of our own: an external run over three documents, numbers known by hand ----------------
#     q1 -> d1 at rank 1; q2 -> d2 at rank 2; q3 -> d3 at rank 3. Cutoff k = 1, whole documents as chunks.
#     ndcg@10 = (1 + 1/log2(3) + 1/log2(4)) / 3 = 0.7103; rr@10 = (1 + 1/2 + 1/3) / 3 = 0.6111;
#     verdicts: q1 ok, q2 and q3 missing_document (found past the window): share 2/3 = 0.667.

CORPUS = "".join(json.dumps({"id": f"d{i}", "text": f"Document number {i}."}) + "\n" for i in (1, 2, 3))
GOLD = "".join(json.dumps({"id": f"q{i}", "query": f"number {i}", "relevant": [{"doc": f"d{i}"}]}) + "\n"
               for i in (1, 2, 3))
RUN_A = ("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\n"
         "q2 Q0 d3 1 3.0 a\nq2 Q0 d2 2 2.0 a\n"
         "q3 Q0 d1 1 3.0 a\nq3 Q0 d2 2 2.0 a\nq3 Q0 d3 3 1.0 a\n")
RUN_B = "q1 Q0 d1 1 3.0 b\nq2 Q0 d2 1 3.0 b\nq3 Q0 d3 1 3.0 b\n"


def tiny_run(tmp: Path, name: str, run: str) -> Path:
    (tmp / "corpus.jsonl").write_text(CORPUS)
    (tmp / "gold.jsonl").write_text(GOLD)
    (tmp / f"{name}.trec").write_text(run)
    (tmp / f"{name}.yaml").write_text(
        f"name: {name}\ncorpus: {{path: corpus.jsonl}}\nchunking: {{strategy: none}}\ngoldset: {{path: gold.jsonl}}\n"
        f"retriever: {{kind: external, path: {name}.trec}}\ncutoff: {{k: 1}}\ndepth: 10\nmetrics: [ndcg@10, rr@10]\n")
    proc = harness("run", f"{name}.yaml", "-o", f"out-{name}", "-q", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return tmp / f"out-{name}" / "results.json"


def test_tiny_experiment_numbers(tmp_path):
    summary = json.loads(tiny_run(tmp_path, "a", RUN_A).read_text())["summary"]["doc"]
    assert summary["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3) + 1 / math.log2(4)) / 3, abs=1e-12)
    assert summary["rr@10"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3, abs=1e-12)


def test_gate_summary_markdown(tmp_path):
    results = tiny_run(tmp_path, "a", RUN_A)
    (tmp_path / "rules.yaml").write_text('rules:\n  - "doc.ndcg@10 >= 0.75"\n  - "doc.rr@10 >= 0.6"\n'
                                         '  - "missing_document <= 0.5"\n'
                                         '  - {regression: doc.ndcg@10, budget: 0.02}\n')
    proc = harness("gate", results, "--rules", "rules.yaml", "--summary", "gate.md", cwd=tmp_path)
    expected = (
        "## Retrieval gate for `a`: FAIL (2 of 3 checked rules), 1 rule SKIPPED\n"
        "\n"
        "| | rule | observed |\n"
        "|---|---|---|\n"
        "| ❌ | doc.ndcg@10 >= 0.75 | doc.ndcg@10 is 0.7103 over 3 queries |\n"
        "| ✅ | doc.rr@10 >= 0.6 | doc.rr@10 is 0.6111 over 3 queries |\n"
        "| ❌ | missing_document share <= 0.5 | missing_document share is 0.667 (2 queries) |\n"
        "| ⏭️ SKIPPED | doc.ndcg@10 no worse than the baseline by more than 0.02 | regression rules need --baseline "
        "(a results.json of the main branch) |\n")
    assert (proc.returncode, proc.stdout) == (1, expected), proc.stderr
    assert proc.stderr == "warning: 1 regression rule skipped: no --baseline given\n"
    assert (tmp_path / "gate.md").read_text() == expected


def test_cache_info_on_an_empty_folder(tmp_path):
    (tmp_path / "c").mkdir()
    proc = harness("cache", "info", "--cache-dir", "c", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{tmp_path / 'c'}: empty (from --cache-dir)\n", "")


def test_validate_counts_one_of_each_in_the_singular(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(CORPUS.splitlines()[0] + "\n")
    (tmp_path / "gold.jsonl").write_text(GOLD.splitlines()[0] + "\n")
    (tmp_path / "c.yaml").write_text("name: one\ncorpus: {path: corpus.jsonl}\nchunking: {strategy: none}\n"
                                     "goldset: {path: gold.jsonl}\nretriever: {kind: bm25}\n")
    proc = harness("validate", "c.yaml", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "c.yaml: ok (1 document, 1 chunk, 1 query)\n"), proc.stderr


def test_explain_rich_is_a_deprecated_name_of_table(tmp_path):
    results = tiny_run(tmp_path, "a", RUN_A)
    table = harness("explain", results, "q2", "--format", "table", cwd=tmp_path)
    rich = harness("explain", results, "q2", "--format", "rich", cwd=tmp_path)
    default = harness("explain", results, "q2", cwd=tmp_path)
    assert table.returncode == rich.returncode == default.returncode == 0, table.stderr + rich.stderr
    assert "missing_document" in table.stdout
    assert rich.stdout == table.stdout == default.stdout
    assert (table.stderr, rich.stderr) == ("", "warning: --format rich is deprecated; use --format table\n")


# --- a closed pipe (`harness eval ... | head -1`) ends the command quietly with exit 0 ----------------------------

def closed_pipe(args, cwd) -> subprocess.CompletedProcess:
    """Run harness with stdout a pipe whose reading end is already closed: the first write fails with EPIPE, as
    when `head -1` has exited (a fixed setup: no race with a reader)."""
    read, write = os.pipe()
    os.close(read)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        return subprocess.run([sys.executable, "-m", "harness.cli.main", *map(str, args)], cwd=cwd, stdout=write,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    finally:
        os.close(write)


@pytest.mark.parametrize("fmt", ["tsv", "json", "md", "table"])
def test_eval_into_a_closed_pipe(files, fmt):
    proc = closed_pipe(["eval", "qrels.txt", "run.trec", *METRICS, "--format", fmt, "--per-query"], files)
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize("fmt", ["json", "md", "table"])
def test_compare_into_a_closed_pipe(tmp_path, fmt):
    a, b = tiny_run(tmp_path, "a", RUN_A), tiny_run(tmp_path, "b", RUN_B)
    proc = closed_pipe(["compare", a, b, "-m", "ndcg@10", "--format", fmt], tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_a_closed_pipe_does_not_hide_an_error(files):
    proc = closed_pipe(["eval", "qrels.txt", "missing.trec"], files)
    assert proc.returncode == 2 and "error: " in proc.stderr and "missing.trec" in proc.stderr


# --- usage errors of the shared and changed options: exit 2, one Error line, nothing on stdout -------------------

def one_error_line(tmp: Path, proc) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len([line for line in lines if line.startswith("Error:")]) == 1 and len(lines) <= 6, proc.stderr
    assert proc.stdout == ""


def usage(id, args, *expect):
    return Case(id, lambda tmp: list(args), expect=tuple(expect), check=one_error_line)


USAGE = [
    usage("eval-format-unknown", ["eval", "q", "r", "--format", "xml"],
          "Invalid value for '--format'", "'xml' is not one of 'json', 'tsv', 'md', 'table'"),
    usage("eval-format-rich-is-explain-only", ["eval", "q", "r", "--format", "rich"], "'rich' is not one of"),
    usage("compare-format-tsv", ["compare", "a.json", "b.json", "--format", "tsv"],
          "'tsv' is not one of 'table', 'md', 'json'"),
    usage("explain-format-html", ["explain", "r.json", "q1", "--format", "html"],
          "'html' is not one of 'table', 'json', 'md', 'rich'"),
    usage("eval-order-unknown", ["eval", "q", "r", "--order", "random"], "Invalid value for '--order'",
          "'random' is not one of 'score', 'rank'"),
    usage("eval-query-policy-unknown", ["eval", "q", "r", "--query-policy", "drop"],
          "Invalid value for '--query-policy'", "'drop' is not one of 'exclude', 'zero'"),
    usage("compare-test-unknown", ["compare", "a.json", "b.json", "--test", "z"],
          "'z' is not one of 'randomization', 'ttest', 'bootstrap', 'wilcoxon'"),
    usage("compare-correction-unknown", ["compare", "a.json", "b.json", "--correction", "fdr"],
          "'fdr' is not one of 'holm', 'bonferroni', 'none'"),
    usage("metric-without-value", ["eval", "q", "r", "-m"], "Option '-m' requires an argument"),
    usage("out-without-value", ["report", "r.json", "-o"], "Option '-o' requires an argument"),
    usage("per-query-takes-no-value", ["eval", "q", "r", "--per-query=yes"],
          "Option '--per-query' does not take a value"),
]


@pytest.mark.parametrize("case", USAGE, ids=lambda c: c.id)
def test_usage_errors(case, tmp_path):
    run_case(case, tmp_path)


def test_a_bad_metric_name_is_one_located_line_per_name(files):
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "ndcg@10", "-m", "foo@3", "-m", "P", cwd=files)
    assert_no_traceback(proc)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: invalid metric names:",
        "  - unknown metric 'foo' in 'foo@3'; known metrics: ap, bpref, dcg, evidence_iou, evidence_precision, "
        "evidence_recall, hit, infAP, judged, ndcg, nothing_found, precision, recall, rprec, rr, sufficient",
        "  - metric 'P' needs a cutoff, e.g. precision@10"]
