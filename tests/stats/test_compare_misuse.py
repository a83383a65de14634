"""What a second newcomer's session found (a helper walking compare, gate, report, eval and the Python API as a
careless user, 2026-12-04): each case printed a traceback, destroyed a file, or gave a number that means something
else than it says. Each runs the command as a user does and checks the exit code, the located message, and that
the user's files are as they were."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from clihelp import DEMO, ROOT, assert_input_error, demo_config, harness


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two demo runs (BM25 with k1 1.2 and 0.5) and a third under query_policy zero."""
    tmp = tmp_path_factory.mktemp("runs")
    out = {}
    for name, extra in (("a", {}), ("b", {"retriever": "{kind: bm25, backend: fast, k1: 0.5}"}),
                        ("zero", {"evaluation": "{query_policy: zero}"})):
        cfg = demo_config(tmp, f"{name}.yaml", **extra)
        proc = harness("run", cfg, "--out", tmp / name, "-q", cwd=tmp)
        assert proc.returncode == 0, proc.stderr
        out[name] = tmp / name / "results.json"
    return out


# ---- outputs that are not regular files ---------------------------------------------------------------------------

def test_report_and_gate_refuse_to_replace_a_pipe(runs, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert_input_error(harness("report", runs["a"], "-o", fifo), "is not a regular file")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: ['doc.ndcg@10 >= 0.1']\n")
    assert_input_error(harness("gate", runs["a"], "--rules", rules, "--summary", fifo), "--summary", "regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe it was


def test_a_link_at_an_output_path_is_refused_and_kept(runs, tmp_path):
    report = tmp_path / "report.html"
    assert harness("report", runs["a"], "-o", report).returncode == 0
    link = tmp_path / "link.html"
    link.symlink_to(report)  # even a link to a file harness wrote: replacing it would lose the link
    assert_input_error(harness("report", runs["a"], "-o", link), "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(report)


def test_goldset_force_does_not_replace_a_pipe(tmp_path):
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("query_id,doc_id,grade\nq01,install-desktop,1\n")
    proc = harness("goldset", "merge", DEMO / "goldset.jsonl", sheet, "-o", fifo, "--force")
    assert_input_error(proc, "-o", "regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_atomic_open_is_the_last_line_of_defence(tmp_path):
    """Whatever a writer checked before: the atomic write itself never renames over a link or a pipe."""
    from harness.core.errors import InputError
    from harness.io.files import write_text

    fifo, target, link = tmp_path / "p", tmp_path / "t", tmp_path / "l"
    os.mkfifo(fifo)
    target.write_text("mine")
    link.symlink_to(target)
    for path in (fifo, link):
        with pytest.raises(InputError):
            write_text(path, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink() and target.read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp file left either
    write_text(tmp_path / "new.txt", "ok")  # a plain path is written as before
    assert (tmp_path / "new.txt").read_text() == "ok"


def test_bad_input_exits_2_when_stderr_is_closed(runs, tmp_path):
    """`harness gate ... 2>&1 >/dev/null | head -1`: the reader of stderr is gone when the error is printed. Exit 1
    would read as "a rule failed"."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main", "eval", str(tmp_path / "missing.qrels"),
                                 str(runs["a"])], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        proc.stderr.close()  # before the interpreter has even imported harness
        assert proc.wait(timeout=120) == 2


# ---- compare and gate ---------------------------------------------------------------------------------------------

def _compare_json(*args):
    proc = harness("compare", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_metric_named_twice_is_one_row_and_one_test(runs):
    once = _compare_json(runs["a"], runs["b"], "-m", "chunk.recall@window", "-m", "ndcg@10")
    many = _compare_json(runs["a"], runs["b"], "-m", "chunk.recall@window", "-m", "ndcg@10", "-m", "doc.nDCG@10",
                         "-m", "chunk.recall@window")
    assert [r["metric"] for r in many["rows"]] == ["chunk.recall@window", "doc.ndcg@10"]
    assert [r["p_corrected"] for r in many["rows"]] == [r["p_corrected"] for r in once["rows"]]


def test_runs_under_different_query_policies_are_not_paired(runs):
    assert_input_error(harness("compare", runs["zero"], runs["a"]), "query_policy")


def test_runs_that_tag_queries_differently_say_so(runs, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text((DEMO / "goldset.jsonl").read_text().replace('"topic": "install"', '"topic": "setup"'))
    cfg = demo_config(tmp_path, "retag.yaml")
    cfg.write_text(cfg.read_text().replace(str(DEMO / "goldset.jsonl"), str(gold)))
    assert harness("run", cfg, "--out", tmp_path / "retag", "-q").returncode == 0
    proc = harness("compare", runs["a"], tmp_path / "retag" / "results.json", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    assert "tag " in proc.stdout and "queries differently" in proc.stdout and "q01" in proc.stdout


def test_only_colliding_names_change_and_the_baseline_is_found(runs):
    data = _compare_json(runs["a"], runs["a"], runs["b"], "--baseline", "t+k1=0.5", "-m", "ndcg@10")
    # a and b are both named "t" by demo_config: b is told apart by the setting that differs (issue 35), the same
    # a given twice only by its place
    assert (data["runs"], data["baseline"]) == (["t#1", "t#2", "t+k1=0.5"], "t+k1=0.5")
    from harness.result.outcomes import distinct_names

    class R:
        def __init__(self, name):
            self.name = name

        def model_copy(self, update):
            return R(update["name"])

    assert [r.name for r in distinct_names([R("x"), R("y"), R("x"), R("x#3")])] == ["x#1", "y", "x#3'", "x#3"]


def test_nothing_counted_in_both_runs_is_not_a_passing_regression(tmp_path):
    """(Since issue 35 such a golden set cannot be run: harness run exits 2 before retrieving. A results.json that
    counts no query, written otherwise, still fails the gate.)"""
    from resultfactory import fake_result

    results = []
    for name in ("a", "b"):
        run = fake_result(name, [0.5, 0.4, 0.3], ["ok"] * 3, counted=[False] * 3)
        results.append(tmp_path / f"{name}.json")
        results[-1].write_text(json.dumps(run.to_dict()))
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: [{regression: doc.ndcg@10, budget: 0.01}]\n")
    proc = harness("gate", results[1], "--rules", rules, "--baseline", results[0])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cannot be checked" in proc.stdout


@pytest.mark.parametrize("rule, fragment", [
    ("missing_document <= 5", "for 5%, write 0.05"),
    ("doc.ndcg@10 >= 80", "for 80%, write 0.8"),
    ("chunk.recall@window >= -0.1", "between 0 and 1"),
])
def test_thresholds_outside_0_1_on_bounded_numbers_are_refused(runs, tmp_path, rule, fragment):
    rules = tmp_path / "rules.yaml"
    rules.write_text(f"rules: ['{rule}']\n")
    assert_input_error(harness("gate", runs["a"], "--rules", rules), "rules.0", fragment)


@pytest.mark.parametrize("budget, fragment", [(2, "for 2%, write 0.02"), (1, "for 1%, write 0.01"),
                                              (250, "could never fail")])
def test_a_regression_budget_of_1_or_more_is_refused_as_a_likely_percentage(runs, tmp_path, budget, fragment):
    """A drop of a metric in 0..1 is at most 1: `budget: 2` (meant as 2%) made a rule that could never fail."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(f"rules:\n  - 'doc.ndcg@10 >= 0.1'\n  - {{regression: doc.ndcg@10, budget: {budget}}}\n")
    proc = harness("gate", runs["a"], "--rules", rules, "--baseline", runs["b"])
    assert_input_error(proc, "rules.1: budget: doc.ndcg@10 lies between 0 and 1", fragment)
    rules.write_text("rules: [{regression: doc.ndcg@10, budget: 0.02}]\n")
    assert harness("gate", runs["a"], "--rules", rules, "--baseline", runs["a"]).returncode == 0


def test_dcg_is_not_bounded_and_rule_names_are_unique(runs, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("metrics_free: 1\n")
    rules.write_text("rules: ['doc.ndcg@10 >= 0.1']\n")
    assert harness("gate", runs["a"], "--rules", rules).returncode == 0
    rules.write_text("rules: [{check: 'doc.ndcg@10 >= 0.1', name: same}, {check: 'doc.rr@10 >= 0.1', name: same}]\n")
    assert_input_error(harness("gate", runs["a"], "--rules", rules), "rules.1", "named 'same' like rules.0")


def test_a_runs_folder_stands_for_its_results_json(runs, tmp_path):
    """`compare runA runB` said "results file not found": a folder a run wrote is read as its results.json, in
    compare, gate (and --baseline), explain, report and goldset pool; a folder without one says so."""
    a, b = runs["a"].parent, runs["b"].parent
    by_file = harness("compare", runs["a"], runs["b"], "--format", "json")
    by_folder = harness("compare", a, b, "--format", "json")
    assert by_folder.returncode == 0, by_folder.stderr
    assert json.loads(by_folder.stdout) == json.loads(by_file.stdout)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: ['doc.ndcg@10 >= 0.1', {regression: doc.ndcg@10, budget: 0.5}]\n")
    gate = harness("gate", a, "--rules", rules, "--baseline", b)
    assert gate.returncode == 0 and "SKIPPED" not in gate.stdout, gate.stdout + gate.stderr
    assert gate.stdout == harness("gate", runs["a"], "--rules", rules, "--baseline", runs["b"]).stdout
    explained = harness("explain", a, "q01", "--format", "json")
    assert explained.returncode == 0 and json.loads(explained.stdout)["query_id"] == "q01", explained.stderr
    page = tmp_path / "page.html"
    assert harness("report", a, "-o", page).returncode == 0 and page.is_file()
    sheet = tmp_path / "sheet.csv"
    assert harness("goldset", "pool", a, "-o", sheet).returncode == 0 and sheet.is_file()
    # the folder is the input: its results.json is not an output path
    assert_input_error(harness("gate", a, "--rules", rules, "--summary", runs["a"]), f"--summary {runs['a']}: is the input")
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (["compare", a, empty], ["gate", empty, "--rules", rules], ["explain", empty, "q01"],
                 ["report", empty, "-o", tmp_path / "x.html"]):
        assert_input_error(harness(*args), f"{empty}: a folder without a results.json; give a results.json, or the "
                                           f"folder a run wrote")
    assert not (tmp_path / "x.html").exists()
    sweep = tmp_path / "sweep"
    (sweep / "size-2").mkdir(parents=True)
    (sweep / "size-2" / "results.json").write_bytes(runs["a"].read_bytes())
    assert_input_error(harness("compare", a, sweep), f"{sweep}: a folder without a results.json; a sweep's folder? "
                                                     f"give one of its runs, e.g. {sweep / 'size-2'}")


def test_report_of_one_run_refuses_a_metric_it_would_ignore(runs, tmp_path):
    assert_input_error(harness("report", runs["a"], "-m", "zzz@3", "-o", tmp_path / "x.html"), "--metric")
    assert not (tmp_path / "x.html").exists()


# ---- eval and JSONL runs ------------------------------------------------------------------------------------------

def _qrels(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 6 2\n1 0 7 0\n")
    return qrels


@pytest.mark.parametrize("hits, fragment", [
    ('[{"doc_id": "6", "score": "2"}]', "score '2' is not a number"),
    ('[{"doc_id": "6", "score": 1e400}]', "not a finite number"),
    ('[{"doc_id": "7", "score": 1, "rank": 2}, {"doc_id": "6", "score": 2, "rank": 1}]', "says rank 2"),
])
def test_a_jsonl_run_with_a_string_score_or_a_disagreeing_rank_is_refused(tmp_path, hits, fragment):
    run = tmp_path / "run.jsonl"
    run.write_text(f'{{"query_id": "1", "hits": {hits}}}\n')
    assert_input_error(harness("eval", _qrels(tmp_path), run, "-m", "rr", "--order", "rank"), "run.jsonl:1",
                       fragment)


def test_ranks_that_agree_with_the_order_are_read(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "1", "doc_id": "7", "score": 1, "rank": 1}\n'
                   '{"query_id": "1", "doc_id": "6", "score": 2, "rank": 2}\n')
    proc = harness("eval", _qrels(tmp_path), run, "-m", "rr", "--order", "rank", "--format", "tsv")
    assert (proc.returncode, proc.stdout) == (0, "rr\tall\t0.500000\n"), proc.stderr


def test_trec_compat_and_query_policy_exclude_contradict(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 6 1 2.0 t\n")
    assert_input_error(harness("eval", _qrels(tmp_path), run, "--trec-compat", "--query-policy", "exclude"),
                       "--trec-compat", "--query-policy exclude")
    assert harness("eval", _qrels(tmp_path), run, "--trec-compat", "--query-policy", "zero").returncode == 0


# ---- the Python API -----------------------------------------------------------------------------------------------

def test_api_compare_refuses_tables_of_other_judgments():
    import harness as api
    from harness.core.errors import InputError

    run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 2.0, "d4": 1.0}}
    a = api.evaluate({"q1": {"d1": 1}, "q2": {"d3": 1}}, run, ["ndcg@10"])
    same = api.evaluate({"q2": {"d3": 1}, "q1": {"d1": 1}}, run, ["ndcg@10"])  # other order, same judgments
    assert api.compare({"A": a, "B": same}).rows[0].delta == 0.0
    for other in ({"q1": {"d2": 1}, "q2": {"d4": 1}}, {"q1": {"d1": 2}, "q2": {"d3": 1}}):
        with pytest.raises(InputError, match="other judgments"):
            api.compare({"A": a, "B": api.evaluate(other, run, ["ndcg@10"])})
    with pytest.raises(InputError, match="no judgments"):
        api.evaluate({}, run, ["ndcg@10"])


def test_api_levels_metrics_and_flags_are_checked(runs):
    import harness as api
    from harness.core.errors import InputError
    from harness.result.read import load_result

    result = load_result(runs["a"])
    assert len(result.counted("doc")) == result.summary.counts.doc.evaluated_queries
    for bad in ("docs", "DOC", "copy", "__class__"):
        with pytest.raises(InputError, match="expected 'doc' or 'chunk'"):
            result.counted(bad)
    with pytest.raises(InputError, match="not in query"):
        result.queries[0].value("doc", "nDCG@10")
    table = api.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, ["ndcg@10"])
    assert table.column("nDCG@10").tolist() == table.column("ndcg@10").tolist() == [1.0]
    with pytest.raises(InputError, match="boolean mask"):
        table.mean("ndcg@10")
    with pytest.raises(InputError, match="not in this table"):
        table.column("ap")
    for kwargs, fragment in (({"force": "no"}, "force"), ({"progress": "yes"}, "progress"), ({"out": 5}, "out")):
        with pytest.raises(InputError) as caught:
            api.run(DEMO.parent.parent / "configs" / "demo-bm25.yaml", **kwargs)
        assert fragment in "\n".join([str(caught.value), *caught.value.problems])
