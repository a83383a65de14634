"""Habits of a good command line (#17): --set, run --format json, init, --cache-dir / HARNESS_CACHE_DIR, progress
lines, sweeps ranked by sweep_metric and chosen on select_on, best.yaml that runs where it is copied, flags in help."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from clihelp import ROOT, Case, assert_input_error, assert_no_traceback, demo_config, harness, run_case, snapshot

DEMO = ROOT / "goldsets" / "demo"


# ---- --set -----------------------------------------------------------------------------------------------------

def test_set_changes_the_run_as_the_file_would(tmp_path):
    by_set = harness("run", "configs/demo-bm25.yaml", "--out", tmp_path / "a", "-q", "--format", "json",
                     "--set", "retriever.k1=0.9", "--set", "cutoff.k=3")
    assert by_set.returncode == 0, by_set.stderr
    data = yaml.safe_load((ROOT / "configs" / "demo-bm25.yaml").read_text())
    data["retriever"]["k1"], data["cutoff"]["k"] = 0.9, 3
    for key in ("corpus", "goldset"):
        data[key]["path"] = str((ROOT / "configs" / data[key]["path"]).resolve())
    (tmp_path / "edited.yaml").write_text(yaml.safe_dump(data))
    by_file = harness("run", tmp_path / "edited.yaml", "--out", tmp_path / "b", "-q", "--format", "json")
    assert by_file.returncode == 0, by_file.stderr
    a, b = json.loads(by_set.stdout), json.loads(by_file.stdout)
    assert a["summary"] == b["summary"]
    saved = json.loads((tmp_path / "a" / "results.json").read_text())
    assert saved["config"]["retriever"]["k1"] == 0.9 and saved["cutoff"]["k"] == 3


SET_ERRORS = [
    Case("set-without-equals", lambda tmp: ["validate", ROOT / "configs/demo-bm25.yaml", "--set", "cutoff.k"],
         expect=("--set cutoff.k: expected KEY.PATH=VALUE",)),
    Case("set-unknown-key", lambda tmp: ["validate", ROOT / "configs/demo-bm25.yaml", "--set", "cutoff.kk=3"],
         expect=("(with --set cutoff.kk=3)", "cutoff.kk: unknown key; did you mean 'k'?")),
    Case("set-bad-type", lambda tmp: ["run", ROOT / "configs/demo-bm25.yaml", "--out", tmp / "o", "--set", "retriever.k1=abc"],
         expect=("retriever.k1", "'abc'"), check=lambda tmp, p: not (tmp / "o").exists()),
    Case("set-through-a-number", lambda tmp: ["validate", ROOT / "configs/demo-bm25.yaml", "--set", "cutoff.k.x=1"],
         expect=("--set cutoff.k.x=1: cutoff.k.x: cutoff.k is a number (5), not a mapping",)),
    Case("set-bad-yaml", lambda tmp: ["validate", ROOT / "configs/demo-bm25.yaml", "--set", "metrics=[ndcg@10"],
         expect=("--set metrics=[ndcg@10", "not valid YAML")),
    Case("set-empty-key-part", lambda tmp: ["validate", ROOT / "configs/demo-bm25.yaml", "--set", "a..b=1"],
         expect=("--set a..b=1: 'a..b' has an empty key between dots",)),
    Case("set-two-problems-reported-together", lambda tmp: ["validate", ROOT / "configs/demo-bm25.yaml", "--set", "x",
                                                            "--set", "y"],
         expect=("--set x: expected", "--set y: expected")),
]


@pytest.mark.parametrize("case", SET_ERRORS, ids=lambda c: c.id)
def test_set_errors_are_located(case, tmp_path):
    run_case(case, tmp_path)


# ---- run --format json -----------------------------------------------------------------------------------------

def test_run_format_json_prints_the_saved_summary(tmp_path):
    proc = harness("run", "configs/demo-bm25.yaml", "--out", tmp_path / "o", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)  # stdout is the JSON alone: progress and warnings are on stderr
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert printed["summary"] == saved["summary"]
    assert printed["results"] == str(tmp_path / "o" / "results.json")
    assert round(printed["summary"]["doc"]["ndcg@10"], 4) == 0.8767  # the demo number docs/python-api.md states


def test_run_format_typo_is_a_usage_error(tmp_path):
    proc = harness("run", "configs/demo-bm25.yaml", "--out", tmp_path / "o", "--format", "jsn")
    assert_no_traceback(proc)
    assert proc.returncode == 2 and "jsn" in proc.stderr and not (tmp_path / "o").exists()


# ---- init ------------------------------------------------------------------------------------------------------

def test_init_writes_a_project_that_runs_and_passes_its_gate(tmp_path):
    proc = harness("init", "proj", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = ["harness.yaml", "corpus.jsonl", "goldset.jsonl", "gates.yaml"]
    assert proc.stdout.splitlines() == [f"proj/{n}" for n in names]
    assert proc.stderr == "next: harness run proj/harness.yaml\n"
    run = harness("run", "proj/harness.yaml", "-q", cwd=tmp_path)
    # (issue 35: outputs go where harness runs, as --out and output: do, not beside the config)
    assert (run.returncode, run.stdout) == (0, "reports/starter/report.html\n"), run.stderr
    gate = harness("gate", "reports/starter/results.json", "--rules", "proj/gates.yaml", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "PASS" in gate.stdout


def test_init_never_replaces_a_file(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "harness.yaml").write_text("my config\n")
    before = snapshot(tmp_path)
    proc = harness("init", "proj", cwd=tmp_path)
    assert_input_error(proc, "proj: already has harness.yaml; harness init never replaces a file")
    assert snapshot(tmp_path) == before


def test_init_on_a_file_is_an_error(tmp_path):
    (tmp_path / "f").write_text("x\n")
    assert_input_error(harness("init", "f", cwd=tmp_path), "f: is a file, not a folder")


# ---- the cache folder ------------------------------------------------------------------------------------------

def test_default_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    from harness.cache import default_cache_dir
    from harness.retrievers import BuildContext

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "env-cache"))
    assert default_cache_dir() == tmp_path / "env-cache" == BuildContext().cache_dir
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert BuildContext().cache_dir == tmp_path / "xdg" / "harness"


def test_cache_info_reads_harness_cache_dir(tmp_path):
    (tmp_path / "env-cache").mkdir()
    proc = harness("cache", "info", cwd=tmp_path, env={"HARNESS_CACHE_DIR": str(tmp_path / "env-cache")})
    assert (proc.returncode, proc.stdout) == (0, f"{tmp_path / 'env-cache'}: empty (from HARNESS_CACHE_DIR)\n"), \
        proc.stderr


def test_one_model_folder_under_two_names_shares_its_cache(monkeypatch, tmp_path):
    from harness.cache import ArrayCache
    from harness.retrievers import encoders

    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text('{"model_type": "bert"}')
    monkeypatch.chdir(tmp_path)
    calls = []

    def fake_encode(self, texts, prefix, normalize, progress):
        calls.append(self.name)
        return np.ones((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(encoders.Encoder, "_encode", fake_encode)
    cache = ArrayCache(tmp_path / "cache")
    keys = [encoders.Encoder(name, cache, batch_size=8).vectors("chunks", ["a", "b"])[1]
            for name in ("my-model", "./my-model", str(tmp_path / "my-model"))]
    assert len(set(keys)) == 1
    assert calls == ["my-model"]  # the two other names found the first one's entry


def test_a_run_writes_its_embeddings_under_cache_dir(tmp_path):
    proc = harness("run", demo_config(tmp_path, retriever="{kind: dense}"), "--out", tmp_path / "o", "-q",
                   "--cache-dir", tmp_path / "c", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = harness("cache", "info", "--cache-dir", tmp_path / "c")
    assert info.stdout.startswith(f"{tmp_path / 'c'} (from --cache-dir)\nembeddings\t1 entry"), info.stdout


# ---- progress --------------------------------------------------------------------------------------------------

class _Log(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_progress_in_a_log_says_rate_and_time_left():
    from harness.core.progress import progress, status_line

    assert status_line("encoding chunks", 1024, 5183, 40.0) == \
        "encoding chunks: 1,024/5,183 (19%), 25.6/s, about 2m42s left"
    log = _Log()
    with progress(10, "retrieving", True, stream=log, min_interval=0.0) as advance:
        for done in range(1, 11):
            advance(done)
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("retrieving: 1/10 (10%)") and lines[-1].startswith("retrieving: 10/10 (100%)")
    quiet = _Log()
    with progress(10, "retrieving", True, stream=quiet) as advance:  # short work: nothing in the log
        advance(10)
    with progress(10, "retrieving", False, stream=quiet) as advance:
        advance(5)
    assert quiet.getvalue() == ""


# ---- sweeps ----------------------------------------------------------------------------------------------------

def _split_sweep(tmp: Path) -> Path:
    lines = (DEMO / "goldset.jsonl").read_text().splitlines(keepends=True)
    (tmp / "data").mkdir()
    (tmp / "data" / "dev.jsonl").write_text("".join(lines[:23]))
    (tmp / "data" / "test.jsonl").write_text("".join(lines[23:]))
    shutil.copy(DEMO / "corpus.jsonl", tmp / "data" / "corpus.jsonl")
    (tmp / "sweep.yaml").write_text(
        "name: sel\ncorpus: {path: data/corpus.jsonl}\nchunking: {strategy: sentences, size: 2}\n"
        "goldset: {path: data/test.jsonl}\nselect_on: {path: data/dev.jsonl}\n"
        "retriever: {kind: bm25, k1: 1.2}\nmetrics: [ndcg@10, rr@10]\nsweep_metric: rr@10\n"
        "sweep: {retriever.k1: [0.3, 1.5]}\n")
    return tmp / "sweep.yaml"


def test_sweep_selects_on_one_split_and_reports_on_another(tmp_path):
    proc = harness("run", _split_sweep(tmp_path), "--out", tmp_path / "out", "-q", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert board["metric"] == "doc.rr@10" and json.loads(proc.stdout)["best"] == board["best"]
    assert (board["selected_on"], board["reported_on"]) == ("dev.jsonl", "test.jsonl")
    dev_best = json.loads((tmp_path / "out" / board["best"] / "results.json").read_text())
    assert {q["id"] for q in dev_best["queries"]} == {f"q{i:02d}" for i in range(1, 24)}
    reported = json.loads((tmp_path / "out" / f"{board['best']}-reported" / "results.json").read_text())
    assert {q["id"] for q in reported["queries"]} == {f"q{i:02d}" for i in range(24, 47)}
    assert board["reported"]["mean"] == pytest.approx(reported["summary"]["doc"]["rr@10"], abs=1e-12)
    assert "Report that number" in (tmp_path / "out" / "leaderboard.md").read_text()
    page = (tmp_path / "out" / "leaderboard.html").read_text()  # the same sentence and number on the page
    assert "Report that number" in page and f"<strong>{board['reported']['mean']:.4f}</strong>" in page
    # best.yaml: the chosen point, on the reported golden set, with paths relative to itself
    best = yaml.safe_load((tmp_path / "out" / "best.yaml").read_text())
    assert best["goldset"]["path"] == "../data/test.jsonl" and best["corpus"]["path"] == "../data/corpus.jsonl"
    assert not {"sweep", "sweep_metric", "select_on"} & set(best)
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "data", moved / "data")
    shutil.copytree(tmp_path / "out", moved / "out")
    shutil.rmtree(tmp_path / "data")
    again = harness("run", moved / "out" / "best.yaml", "--out", moved / "again", "-q")
    assert again.returncode == 0, again.stderr
    assert json.loads((moved / "again" / "results.json").read_text())["summary"] == reported["summary"]


SWEEP_ERRORS = [
    Case("sweep-metric-not-configured", lambda tmp: ["validate", demo_config(tmp, sweep="{retriever.k1: [1, 2]}",
                                                                             sweep_metric="recall@7")],
         expect=("sweep_metric: 'recall@7' is not among metrics:",)),
    Case("sweep-metric-without-sweep", lambda tmp: ["validate", demo_config(tmp, sweep_metric="ndcg@10")],
         expect=("sweep_metric: only with sweep:",)),
    Case("select-on-unknown-key", lambda tmp: ["validate", demo_config(tmp, sweep="{retriever.k1: [1, 2]}",
                                                                       select_on="{splt: train}")],
         expect=("select_on.splt: unknown key",)),
]


@pytest.mark.parametrize("case", SWEEP_ERRORS, ids=lambda c: c.id)
def test_sweep_key_errors(case, tmp_path):
    run_case(case, tmp_path)


def test_sweep_metric_may_be_a_window_metric(tmp_path):
    """A run's summary always has the window metrics (the docs' example is chunk.recall@window), so a sweep can
    rank by one without listing it under metrics:."""
    result = harness("validate", demo_config(tmp_path, sweep="{retriever.k1: [1, 2]}",
                                             sweep_metric="chunk.recall@window"))
    assert result.returncode == 0, result.stderr


# ---- help ------------------------------------------------------------------------------------------------------

def test_flags_read_as_flags_and_every_command_has_an_example():
    import typer.main

    from harness.cli.main import app

    root = typer.main.get_command(app)
    for name in [None, *root.commands]:
        proc = harness(*([name] if name else []), "--help")
        assert proc.returncode == 0, proc.stderr
        assert "<bool>" not in proc.stdout, name
        if name:
            assert "Example: harness " in proc.stdout, name


def test_explain_with_a_config_is_quiet_with_q(tmp_path):
    """A dense config's model prints its own loading bar on stderr; ``explain -q`` silences it, as ``run -q`` does.
    (Another query each time: a cached query would load no model. Fresh processes: the libraries read the settings
    as they start.)"""
    def ask(query, *flags):
        return harness("explain", "configs/demo-dense.yaml", "--query", query, "--format", "json", "--cache-dir",
                       tmp_path, *flags, fresh=True)

    loud, quiet = ask("how do I rotate the API key?"), ask("how do I rotate the API key now?", "-q")
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    assert "Loading weights" in loud.stderr and quiet.stderr == ""
    assert json.loads(quiet.stdout)["query"] == "how do I rotate the API key now?"
