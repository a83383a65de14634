"""The CLI's contract at its edges: usage errors, output-file options, gate rules, sweep ranking, cache safety.

Every case runs ``harness`` as a user would (a subprocess) and checks the exit code, that there is no traceback,
the located message, and that no pre-existing file was lost."""

from __future__ import annotations

import json
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

import harness
from clihelp import DEMO, ROOT, Case, assert_input_error, assert_no_traceback, demo_config, harness as run_harness, \
    run_case

_RUN: dict[str, Path] = {}  # the demo run every case copies its results.json from (made once per module)


@pytest.fixture(scope="module", autouse=True)
def demo_run(demo_bm25_run):
    """The session's demo BM25 run (conftest); cases copy its results.json (``results_in``) before using it."""
    _RUN["results"] = demo_bm25_run / "results.json"


def results_in(tmp: Path, folder: str = "in") -> Path:
    """A copy of the demo run's results.json in tmp/folder (the folder a case can `keep`)."""
    (tmp / folder).mkdir(exist_ok=True)
    return Path(shutil.copy(_RUN["results"], tmp / folder / "results.json"))


def rules_in(tmp: Path, *rules, folder: str = "in") -> Path:
    (tmp / folder).mkdir(exist_ok=True)
    path = tmp / folder / "rules.yaml"
    path.write_text(yaml.safe_dump({"rules": list(rules)}, sort_keys=False))
    return path


def one_error_line(tmp: Path, proc) -> None:
    """click's usage message: the Usage line and a hint (when click knows the command), then exactly one `Error:`
    line (click lists an argument's choices under it); nothing on stdout."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("Error:")]
    assert len(errors) == 1 and len(lines) <= 6, proc.stderr
    assert errors[0] == 0 or (lines[0].startswith("Usage: harness") and errors[0] == 2), proc.stderr
    assert proc.stdout == ""


def usage(id, args, *expect, code=2):
    return Case(id, lambda tmp: list(args), expect=tuple(expect), code=code, check=one_error_line)


USAGE_ERRORS = [
    # unknown option
    usage("unknown-option-run", ["run", "--bogus", "x.yaml"], "Usage: harness run", "Error: No such option: --bogus"),
    usage("unknown-option-gate", ["gate", "r.json", "--rules", "g.yaml", "--sumary", "x"],
          "Usage: harness gate", "Error: No such option: --sumary", "--summary"),
    usage("unknown-option-compare", ["compare", "a.json", "b.json", "--metrik", "x"], "No such option: --metrik"),
    usage("unknown-option-top", ["--verbose"], "Usage: harness [OPTIONS] COMMAND", "No such option: --verbose"),
    # missing argument / option
    # (arguments named as the docs name them: CONFIG, RESULTS; typer wrote {config}, {results})
    usage("missing-argument-run", ["run"], "Usage: harness run [OPTIONS] {{CONFIG}}", "Error: Missing argument 'CONFIG'"),
    usage("missing-argument-gate", ["gate"], "Usage: harness gate [OPTIONS] {{RESULTS}}",
          "Error: Missing argument 'RESULTS'"),
    usage("missing-argument-eval", ["eval", "qrels.txt"], "Usage: harness eval", "Error: Missing argument 'RUN'"),
    usage("missing-argument-cache", ["cache"], "Usage: harness cache", "Error: Missing argument"),
    usage("missing-option-gate-rules", ["gate", "r.json"], "Error: Missing option '--rules'"),
    usage("missing-option-report-out", ["report", "r.json"], "Error: Missing option '--out'"),
    usage("option-without-value", ["gate", "r.json", "--rules"], "Error: Option '--rules' requires an argument"),
    # bad choice
    usage("bad-choice-eval-format", ["eval", "q", "r", "--format", "xml"], "Invalid value for '--format'",
          "'xml' is not one of 'json', 'tsv', 'md', 'table'"),
    usage("bad-choice-explain-format", ["explain", "r.json", "q1", "--format", "html"],
          "Invalid value for '--format'", "'table', 'json', 'md', 'rich'"),
    usage("bad-choice-compare-test", ["compare", "a.json", "b.json", "--test", "z-test"],
          "Invalid value for '--test'", "'randomization'"),
    usage("bad-choice-compare-correction", ["compare", "a.json", "b.json", "--correction", "fdr"],
          "Invalid value for '--correction'", "'holm'"),
    usage("bad-choice-compare-format", ["compare", "a.json", "b.json", "--format", "csv"], "'table', 'md', 'json'"),
    usage("bad-choice-cache-action", ["cache", "purge"], "Usage: harness cache", "'purge' is not one of 'info', 'clear'"),
    # unknown command
    usage("unknown-command", ["evaluate", "q", "r"], "Usage: harness [OPTIONS] COMMAND", "No such command 'evaluate'"),
    # extra argument
    usage("extra-argument-validate", ["validate", "a.yaml", "b.yaml"], "Got unexpected extra argument(s) (b.yaml)"),
    usage("extra-argument-gate", ["gate", "r.json", "extra", "--rules", "g.yaml"],
          "Got unexpected extra argument(s) (extra)"),
    usage("extra-argument-cache", ["cache", "info", "now"], "Got unexpected extra argument(s) (now)"),
    usage("extra-argument-run", ["run", "a.yaml", "b.yaml"], "Got unexpected extra argument(s) (b.yaml)"),
]


@pytest.mark.parametrize("case", USAGE_ERRORS, ids=lambda c: c.id)
def test_usage_errors_exit_2_with_one_line(case, tmp_path):
    run_case(case, tmp_path)


def test_no_command_prints_help_and_exits_2(tmp_path):
    # click's convention (8.2+) for a group run without a command: the help, exit 2 (it is a usage error).
    proc = run_harness(cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 2
    assert "Usage: harness [OPTIONS] COMMAND" in proc.stdout
    for command in ("run", "validate", "eval", "explain", "compare", "gate", "report", "cache"):
        assert f"│ {command} " in proc.stdout, command


@pytest.mark.parametrize("command", ["", "run", "validate", "eval", "explain", "compare", "gate", "report", "cache"])
def test_help_of_every_command_exits_0(command, tmp_path):
    proc = run_harness(*([command] if command else []), "--help", cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert f"Usage: harness {command}".rstrip() in proc.stdout and proc.stderr == ""


def test_version(tmp_path):
    proc = run_harness("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "harness 0.1.0\n", "")
    assert harness.__version__ == "0.1.0"


# --- output-file options: checked before any work, one located line each ---------------------------------------

def gate_args(tmp, *extra, rules=("doc.ndcg@10 >= 0.5",)):
    return ["gate", results_in(tmp), "--rules", rules_in(tmp, *rules), *extra]


def nothing_written(*names):
    def check(tmp, proc):
        for name in names:
            assert not (tmp / name).exists(), f"{name} was written although the command refused"
        assert proc.stdout == ""
    return check


def with_folder(tmp, name="out"):
    (tmp / name).mkdir()
    (tmp / name / "mine.txt").write_text("user data\n")
    return tmp / name


OUTPUT_ERRORS = [
    Case("gate-summary-is-a-folder", lambda tmp: gate_args(tmp, "--summary", with_folder(tmp)),
         expect=("error: cannot write the gate's outputs", "--summary {tmp}/out: is a folder"), keep=("out", "in")),
    Case("gate-junit-is-a-folder", lambda tmp: gate_args(tmp, "--junit", with_folder(tmp)),
         expect=("--junit {tmp}/out: is a folder",), keep=("out",)),
    Case("gate-junit-under-a-file", lambda tmp: gate_args(tmp, "--junit", tmp / "in/results.json/gate.xml"),
         expect=("--junit {tmp}/in/results.json/gate.xml: {tmp}/in/results.json is a file, not a folder",),
         keep=("in",)),
    Case("gate-summary-is-the-results-input", lambda tmp: gate_args(tmp, "--summary", tmp / "in/results.json"),
         expect=("--summary {tmp}/in/results.json: is the input", "refusing to overwrite it"), keep=("in",)),
    Case("gate-junit-is-the-rules-input", lambda tmp: gate_args(tmp, "--junit", tmp / "in/rules.yaml"),
         expect=("--junit {tmp}/in/rules.yaml: is the input",), keep=("in",)),
    Case("gate-summary-and-junit-same-file", lambda tmp: gate_args(tmp, "--summary", "g.out", "--junit", "./g.out"),
         expect=("--junit g.out: the same file as --summary",), check=nothing_written("g.out")),
    # checked before the work: the good output is not written when the other one is bad; both problems listed
    Case("gate-one-good-one-bad-output", lambda tmp: gate_args(tmp, "--summary", "gate.md", "--junit", with_folder(tmp)),
         expect=("--junit {tmp}/out: is a folder",), keep=("out",), check=nothing_written("gate.md")),
    Case("gate-output-checked-before-inputs", lambda tmp: ["gate", "missing.json", "--rules", "missing.yaml",
                                                           "--summary", with_folder(tmp)],
         expect=("--summary {tmp}/out: is a folder",), keep=("out",)),
    Case("report-out-is-a-folder", lambda tmp: ["report", results_in(tmp), "-o", with_folder(tmp)],
         expect=("error: cannot write the report", "--out {tmp}/out: is a folder"), keep=("out", "in")),
    Case("report-out-under-a-file", lambda tmp: ["report", results_in(tmp), "-o", tmp / "in/results.json/r.html"],
         expect=("--out {tmp}/in/results.json/r.html: {tmp}/in/results.json is a file, not a folder",), keep=("in",)),
    Case("report-out-is-the-input", lambda tmp: ["report", results_in(tmp), "-o", tmp / "in/results.json"],
         expect=("--out {tmp}/in/results.json: is the input", "refusing to overwrite it"), keep=("in",)),
]


@pytest.mark.parametrize("case", OUTPUT_ERRORS, ids=lambda c: c.id)
def test_output_option_problems(case, tmp_path):
    proc = run_case(case, tmp_path)
    assert len([line for line in proc.stderr.splitlines() if line.startswith("  - ")]) == 1, proc.stderr


def test_missing_parent_folders_are_created(tmp_path):
    """Decision (docs/ci.md): a missing parent folder of --summary, --junit or report -o is created."""
    gate = run_harness(*gate_args(tmp_path, "--summary", "ci/out/gate.md", "--junit", "ci/xml/gate.xml"), cwd=tmp_path)
    assert gate.returncode == 0, gate.stderr
    assert (tmp_path / "ci/out/gate.md").read_text() == gate.stdout
    ET.parse(tmp_path / "ci/xml/gate.xml")
    report = run_harness("report", tmp_path / "in/results.json", "-o", "site/new/r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert report.stdout.strip() == "site/new/r.html"
    assert (tmp_path / "site/new/r.html").read_text().lstrip().lower().startswith("<!doctype html")


# --- gate rules --------------------------------------------------------------------------------------------------

TOPICS = ("account, admin, api, billing, install, integrations, mobile, security, sharing, sync, troubleshooting, "
          "versions")


def gate_rules(*rules, baseline=False, outputs=True):
    def setup(tmp):
        args = ["gate", results_in(tmp), "--rules", rules_in(tmp, *rules)]
        if baseline:
            args += ["--baseline", tmp / "in/results.json"]
        return args + (["--summary", "gate.md", "--junit", "gate.xml"] if outputs else [])
    return setup


RULE_ERRORS = [
    Case("slice-value-missing", gate_rules({"check": "chunk.recall@window >= 0.75", "slice": {"topic": "bilingg"}}),
         expect=("{tmp}/in/rules.yaml: invalid rules",
                 f"rules.0: slice topic=bilingg matches no query; topic values in this run are {TOPICS}"),
         keep=("in",), check=nothing_written("gate.md", "gate.xml")),
    Case("slice-tag-missing", gate_rules("ok >= 0.1", {"check": "ndcg@10 >= 0.5", "slice": {"topc": "billing"}}),
         expect=("rules.1: slice tag 'topc' is not in this run; its tags are difficulty, topic",)),
    Case("slice-combination-matches-nothing",
         gate_rules({"check": "ndcg@10 >= 0.5", "slice": {"topic": "install", "difficulty": "hard"}}),
         expect=("rules.0: slice difficulty=hard, topic=install matches no query",)),
    Case("slice-not-a-mapping", gate_rules({"check": "ndcg@10 >= 0.5", "slice": [1, 2]}),
         expect=("rules.0: slice: expected a mapping of tag to value, e.g. {{topic: billing}}, got [1, 2]",)),
    Case("plain-rule-metric-missing", gate_rules("doc.ndcg@7 >= 0.5"),
         expect=("rules.0: metric doc.ndcg@7 is not in this run; it has precision@5, recall@5",)),
    Case("slice-rule-metric-missing", gate_rules({"check": "chunk.ap@3 >= 0.5", "slice": {"topic": "billing"}}),
         expect=("rules.0: metric chunk.ap@3 is not in this run",)),
    Case("regression-metric-missing-with-baseline", gate_rules({"regression": "ndcg@3"}, baseline=True),
         expect=("rules.0: metric doc.ndcg@3 is not in this run", "rules.0: metric doc.ndcg@3 is not in the baseline")),
    Case("regression-metric-missing-without-baseline", gate_rules({"regression": "ndcg@3"}),
         expect=("rules.0: metric doc.ndcg@3 is not in this run",)),
    Case("budget-on-a-check", gate_rules({"check": "ndcg@10 >= 0.5", "budget": 0.1}),
         expect=("rules.0: budget applies to regression rules only",)),
    Case("slice-on-a-regression", gate_rules({"regression": "ndcg@10", "slice": {"topic": "billing"}}),
         expect=("rules.0: regression rules take no slice",)),
    Case("check-and-regression", gate_rules({"check": "ndcg@10 >= 0.5", "regression": "ndcg@10"}),
         expect=("rules.0: a rule has either 'check' or 'regression', not both",)),
    Case("budget-not-a-number", gate_rules({"regression": "ndcg@10", "budget": "2%"}),
         expect=("rules.0: budget: expected a number, got '2%'",)),
    Case("check-not-a-string", gate_rules({"check": 5}), expect=("rules.0: check: expected a string",)),
    Case("rule-not-a-string-or-mapping", gate_rules(["ndcg@10 >= 0.5"]),
         expect=("rules.0: expected a string like 'chunk.recall@5 >= 0.8' or a mapping",)),
    Case("rules-file-missing", lambda tmp: ["gate", results_in(tmp), "--rules", "nope.yaml"],
         expect=("nope.yaml: rules file not found",)),
    # load-time and against-this-run problems, reported together, in file order
    Case("all-rule-problems-together",
         gate_rules({"check": "ndcg@10 >= 0.5", "slice": {"topic": "bilingg"}}, "ndcg@10 >= 1.2.3", "ok >= 0.5",
                    "doc.ndcg@7 >= 0.5", {"check": "ndcg@10 >= 0.5", "slice": "billing"}),
         expect=("rules.0: slice topic=bilingg matches no query", "rules.1: cannot read check 'ndcg@10 >= 1.2.3'",
                 "rules.3: metric doc.ndcg@7 is not in this run", "rules.4: slice: expected a mapping"),
         check=lambda tmp, proc: (nothing_written("gate.md", "gate.xml")(tmp, proc),
                                  _in_order(proc.stderr, "rules.0:", "rules.1:", "rules.3:", "rules.4:"))),
]


def _in_order(text, *fragments):
    positions = [text.index(f) for f in fragments]
    assert positions == sorted(positions), text
    assert "rules.2" not in text


@pytest.mark.parametrize("case", RULE_ERRORS, ids=lambda c: c.id)
def test_gate_rule_problems_are_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_ci_recipe_runs_as_written(tmp_path):
    """docs/ci.md's workflow, its harness commands run exactly as written (in a copy of the project's configs and
    demo data): the gate passes with the regression rule skipped, and writes both files."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    shutil.copytree(DEMO, tmp_path / "goldsets/demo")
    doc = (ROOT / "docs/ci.md").read_text()
    workflow = yaml.safe_load(doc.split("```yaml", 1)[1].split("```", 1)[0])
    commands = [shlex.split(step["run"]) for step in workflow["jobs"]["gate"]["steps"]
                if ".venv/bin/harness" in step.get("run", "")]
    assert [c[:2] for c in commands] == [[".venv/bin/harness", "run"], [".venv/bin/harness", "gate"]]
    for command in commands:
        proc = run_harness(*command[1:], cwd=tmp_path)
        assert_no_traceback(proc)
        assert proc.returncode == 0, f"{command}: {proc.stderr}"
    assert "warning: 1 regression rule skipped: no --baseline given" in proc.stderr
    md = (tmp_path / "gate.md").read_text()
    assert md == proc.stdout
    assert md.startswith("## Retrieval gate for `demo-bm25`: PASS, 1 rule SKIPPED\n")
    assert "| ⏭️ SKIPPED | doc.ndcg@10 no worse than the baseline by more than 0.02 | regression rules need --baseline" in md
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert (suite.tag, suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("testsuite", "7", "0", "1")
    cases = suite.findall("testcase")
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["doc.ndcg@10 no worse than the baseline by more than 0.02"]
    assert "--baseline" in skipped[0].find("skipped").get("message")
    assert all(c.find("failure") is None and c.find("system-out") is not None for c in cases if c not in skipped)
    assert (tmp_path / "reports/candidate/report.md").is_file()  # the recipe uploads it


def test_gate_fails_checked_rule_while_regression_skipped(tmp_path):
    args = gate_rules("doc.ndcg@10 >= 0.95", "ok >= 0.5", {"regression": "ndcg@10", "budget": 0.02})(tmp_path)
    proc = run_harness(*args, cwd=tmp_path)
    assert_input_error(proc, "warning: 1 regression rule skipped", code=1)
    assert proc.stdout.startswith("## Retrieval gate for `demo-bm25`: FAIL (1 of 2 checked rules), 1 rule SKIPPED")
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    kinds = [[child.tag for child in case] for case in suite.findall("testcase")]
    assert kinds == [["failure"], ["system-out"], ["skipped"]]


def test_gate_with_baseline_checks_regression_rule(tmp_path):
    args = gate_rules({"regression": "ndcg@10", "budget": 0.02}, baseline=True)(tmp_path)
    proc = run_harness(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "SKIPPED" not in proc.stdout and "delta +0.0000" in proc.stdout and "skipped" not in proc.stderr
    assert ET.parse(tmp_path / "gate.xml").getroot().get("skipped") == "0"


def test_slice_with_numeric_tag_value_matches(tmp_path):
    """YAML reads `slice: {level: 2}` as a number; tags in results.json are text: they compare as text."""
    data = json.loads(_RUN["results"].read_text())
    for i, q in enumerate(data["queries"]):
        q["tags"]["level"] = str(i % 3)
    (tmp_path / "results.json").write_text(json.dumps(data))
    rules = rules_in(tmp_path, {"check": "ndcg@10 >= 0.0", "slice": {"level": 2}})
    proc = run_harness("gate", tmp_path / "results.json", "--rules", rules, cwd=tmp_path)
    n = sum(1 for i, q in enumerate(data["queries"]) if i % 3 == 2 and q["counted"]["doc"])
    assert proc.returncode == 0, proc.stderr
    assert "on level=2 | doc.ndcg@10 is " in proc.stdout and f"over {n} queries" in proc.stdout


# --- sweep ranking -----------------------------------------------------------------------------------------------

def test_sweep_with_no_value_for_the_ranking_metric_is_a_clear_error(tmp_path):
    gold = tmp_path / "nogold.jsonl"
    rows = [json.loads(line) for line in (DEMO / "goldset.jsonl").read_text().splitlines()[:3]]
    gold.write_text("".join(json.dumps(dict(r, relevant=[])) + "\n" for r in rows))
    cfg = demo_config(tmp_path, metrics="[ndcg@10]", sweep="{chunking.size: [1, 2]}")
    cfg.write_text(cfg.read_text().replace(str(DEMO / "goldset.jsonl"), str(gold)))
    proc = run_harness("run", cfg, "--out", tmp_path / "out", "-q", cwd=tmp_path)
    # (since issue 35 said before any point runs: no query of the golden set can be counted)
    assert_input_error(proc, "no query can be counted: none of the 3 checkable queries has a relevant document")
    assert not (tmp_path / "out").exists()


def test_sweep_ranks_by_a_metric_spelled_the_trec_eval_way(tmp_path):
    cfg = demo_config(tmp_path, metrics="[NDCG_cut_10, P_5]", sweep="{chunking.size: [1, 2]}")
    proc = run_harness("run", cfg, "--out", tmp_path / "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    board = json.loads((tmp_path / "out/leaderboard.json").read_text())
    assert board["metric"] == "doc.ndcg@10"
    means = {r["run"]: r["mean"] for r in board["runs"]}
    for run, mean in means.items():
        assert mean == json.loads((tmp_path / "out" / run / "results.json").read_text())["summary"]["doc"]["ndcg@10"]
    assert list(means.values()) == sorted(means.values(), reverse=True) and board["best"] == board["runs"][0]["run"]


def test_rank_runs_puts_runs_without_a_value_last_with_a_warning():
    from harness.core.errors import ConfigError
    from harness.pipeline.sweep import rank_runs
    from resultfactory import fake_result

    def run(name, value):  # a run whose only query is not counted has no mean
        return name, {}, fake_result(name, [value or 0.0], ["ok"], counted=[value is not None])

    logged = []
    ranked = rank_runs([run("a", None), run("b", 0.4), run("c", 0.7), run("d", 0.4)], "doc", "ndcg@10", "s",
                       logged.append)
    assert [r[0] for r in ranked] == ["c", "b", "d", "a"]  # ties keep grid order
    assert logged == ["warning: 1 run(s) have no doc.ndcg@10 (no query with relevant gold); ranked last: a"]
    with pytest.raises(ConfigError, match="cannot rank the runs by doc.ndcg@10"):
        rank_runs([run("a", None)], "doc", "ndcg@10", "s", logged.append)


# --- cache and explain -------------------------------------------------------------------------------------------

def cache_like(tmp, extra=None):
    kind = tmp / "c" / "embeddings"
    kind.mkdir(parents=True)
    (kind / ("0123456789abcdef" * 2 + ".npz")).write_bytes(b"x")
    (kind / ("0123456789abcdef" * 2 + ".sha256")).write_text("y")
    if extra:
        (tmp / "c" / extra).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "c" / extra).write_text("user data\n")
    return tmp / "c"


def a_file(tmp):
    (tmp / "c").write_text("not a folder\n")
    return tmp / "c"


OTHER_ERRORS = [
    Case("cache-clear-refuses-a-foreign-folder", lambda tmp: ["cache", "clear", "--cache-dir", cache_like(tmp, "notes.txt")],
         expect=("--cache-dir {tmp}/c: not a harness cache (it holds notes.txt); nothing was deleted",), keep=("c",)),
    Case("cache-clear-refuses-foreign-file-in-kind", lambda tmp: ["cache", "clear", "--cache-dir",
                                                                  cache_like(tmp, "embeddings/model.bin")],
         expect=("not a harness cache (it holds embeddings/model.bin)",), keep=("c",)),
    Case("cache-info-refuses-a-foreign-folder", lambda tmp: ["cache", "info", "--cache-dir", cache_like(tmp, "src/x.py")],
         expect=("--cache-dir {tmp}/c: not a harness cache (it holds src/x.py)",), keep=("c",)),
    Case("cache-dir-is-a-file", lambda tmp: ["cache", "clear", "--cache-dir", a_file(tmp)],
         expect=("--cache-dir {tmp}/c: is a file, not a cache folder",), check=lambda tmp, p: (tmp / "c").is_file()),
    Case("cache-info-dir-is-a-file", lambda tmp: ["cache", "info", "--cache-dir", a_file(tmp)],
         expect=("--cache-dir {tmp}/c: is a file",)),
    Case("explain-results-with-query", lambda tmp: ["explain", results_in(tmp), "q16", "--query", "x"],
         expect=("--query: only with an experiment YAML",)),
    Case("explain-config-with-query-id", lambda tmp: ["explain", ROOT / "configs/demo-bm25.yaml", "q16"],
         expect=("query id 'q16': only with a results.json",)),
]


@pytest.mark.parametrize("case", OTHER_ERRORS, ids=lambda c: c.id)
def test_other_command_problems(case, tmp_path):
    run_case(case, tmp_path)


def test_cache_clear_of_a_big_foreign_folder_stops_at_the_first_files(tmp_path, monkeypatch):
    """`cache clear --cache-dir /` walked the whole disk (486k files, 11 s) before refusing: now the first six."""
    import harness.cli.cache as cli_cache

    root = tmp_path / "project"
    for i in range(40):
        (root / f"d{i:02}").mkdir(parents=True)
        (root / f"d{i:02}" / "notes.txt").write_text("mine")
    seen = []
    walk = Path.rglob
    monkeypatch.setattr(Path, "rglob", lambda self, pattern: (seen.append(p) or p for p in walk(self, pattern)))
    assert len(cli_cache._not_cache_files(root)) == 6 and len(seen) < 80  # of 40 folders and 40 files
    proc = run_harness("cache", "clear", "--cache-dir", root, cwd=tmp_path)
    assert_input_error(proc, f"--cache-dir {root}: not a harness cache (it holds d", " and more); nothing was deleted")
    assert sum(1 for _ in root.rglob("notes.txt")) == 40


def test_cache_clear_removes_a_real_cache(tmp_path):
    root = cache_like(tmp_path)
    proc = run_harness("cache", "info", "--cache-dir", root, cwd=tmp_path)
    assert proc.stdout == f"{root.absolute()} (from --cache-dir)\nembeddings\t1 entry\t0.0 MB\n"
    proc = run_harness("cache", "clear", "--cache-dir", root, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"{root}: cleared 2 files\n")
    assert root.is_dir() and not list(root.iterdir())  # its entries and their kind's folder; the folder stays
    (root / "mine").mkdir()  # an empty folder of the user's is no cache folder: never removed (it was, by rmtree)
    proc = run_harness("cache", "clear", "--cache-dir", root, cwd=tmp_path)
    assert (proc.returncode, (root / "mine").is_dir()) == (0, True)
    assert run_harness("cache", "info", "--cache-dir", root, cwd=tmp_path).stdout == \
        f"{root.absolute()}: empty (from --cache-dir)\n"
    (tmp_path / "f.txt").write_text("mine")
    assert_input_error(run_harness("cache", "info", "--cache-dir", tmp_path / "f.txt" / "sub", cwd=tmp_path),
                       "is a file")


def test_compare_runs_without_relevant_gold_prints_n_a(tmp_path):
    """A valid results.json whose golden set has no relevant gold: means are None and the MDE infinite; every
    format prints them (n/a in tables, null in JSON, which has no Infinity) instead of crashing."""
    from resultfactory import fake_result  # (harness run refuses such a golden set since issue 35)

    runs = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in runs:
        path.write_text(json.dumps(fake_result("t", [0.0] * 3, ["ok"] * 3, counted=[False] * 3).to_dict()))
    md = run_harness("compare", *runs, "-m", "ndcg@10", "--format", "md", cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    assert "| t#2 | doc.ndcg@10 | 0 | n/a | n/a | n/a | n/a | n/a |" in md.stdout  # nothing compared: no delta
    table = run_harness("compare", *runs, "-m", "ndcg@10", cwd=tmp_path)
    assert table.returncode == 0 and "n/a" in table.stdout, table.stderr
    data = json.loads(run_harness("compare", *runs, "-m", "ndcg@10", "--format", "json", cwd=tmp_path).stdout)
    row = data["rows"][0]
    assert (row["n"], row["baseline_mean"], row["mean"], row["mde"]) == (0, None, None, None)
    assert (row["delta"], row["ci95"], row["p"], row["p_corrected"], row["significant"]) == (None, None, None, None,
                                                                                            False)


# --- output files that already exist: harness replaces only what it wrote ----------------------------------------

@pytest.mark.parametrize("option,name", [("--summary", "notes.md"), ("--junit", "ci.xml")])
def test_gate_never_overwrites_a_file_it_did_not_write(tmp_path, option, name):
    """The walk found --summary pointed at the golden set replacing it with Markdown (exit 0)."""
    user = tmp_path / name
    user.write_text("the user's own file\n")
    args = ["gate", results_in(tmp_path), "--rules", rules_in(tmp_path, "ndcg@10 >= 0.1"), option, user]
    proc = run_harness(*args, cwd=tmp_path)
    assert_input_error(proc, f"{option} {user}: exists and was not written by harness")
    assert user.read_text() == "the user's own file\n"
    user.unlink()
    assert run_harness(*args, cwd=tmp_path).returncode == 0
    assert run_harness(*args, cwd=tmp_path).returncode == 0, "harness's own file is replaced on a rerun"


def test_report_never_overwrites_a_file_it_did_not_write(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html>the user's page</html>\n")
    args = ["report", results_in(tmp_path), "-o", page]
    assert_input_error(run_harness(*args, cwd=tmp_path), f"--out {page}: exists and was not written by harness")
    assert page.read_text() == "<html>the user's page</html>\n"
    page.unlink()
    assert run_harness(*args, cwd=tmp_path).returncode == 0
    assert run_harness(*args, cwd=tmp_path).returncode == 0, "harness's own report is replaced on a rerun"


@pytest.mark.parametrize("args,expect", [
    (["--doc", "api-kyes"], "--doc 'api-kyes': not a document of the corpus"),
    (["--doc", "api-keys", "--quote", "not in the text"], "--quote: not found in document 'api-keys'"),
    (["--quote", "rotate"], "--quote: give the document it is in with --doc"),
], ids=["doc-typo", "quote-not-found", "quote-without-doc"])
def test_explain_live_checks_what_the_user_typed(args, expect):
    """A typo in --doc used to read as a golden-set error with exit 0 (the walk)."""
    proc = run_harness("explain", "configs/demo-bm25.yaml", "--query", "rotate key", *args)
    assert_input_error(proc, expect)


def test_cache_clear_of_a_missing_folder_says_so(tmp_path):
    proc = run_harness("cache", "clear", "--cache-dir", tmp_path / "nope", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"{tmp_path / 'nope'}: no cache entries there; nothing to clear\n")


def test_a_wrong_choice_is_said_in_plain_words():
    """typer's choice check spoke through pydantic's "Value error, " prefix (`--executor dask`)."""
    proc = run_harness("run", ROOT / "configs/demo-bm25.yaml", "--executor", "dask")
    assert proc.returncode == 2 and "'dask' is not one of 'local', 'ray'" in proc.stderr, proc.stderr
    assert "Value error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_runs_terminal_summary_shows_both_levels(tmp_path):
    """A bare `ndcg@10` is doc level in compare and gate: the run's stderr summary said only the chunk level's."""
    proc = run_harness("run", ROOT / "configs/demo-bm25.yaml", "--out", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "o/results.json").read_text())["summary"]
    for level in ("doc", "chunk"):
        metric, value = next(iter(summary[level].items()))
        assert f"{level} level: {metric} {value:.4f}" in proc.stderr, proc.stderr
