"""`harness report -o`: the format follows the extension (.html/.htm: the HTML page; .md/.markdown: one run's
Markdown report, the report.md a run writes), and a file a run wrote into its output folder is replaced only by a
report of that same run, never another run's (the folder would mix two runs), nor once the user edited it.

Found by a tester (2026-12): `report runA/results.json -o runB/report.html` replaced runB's report with runA's and
updated runB's marker to accept it; `-o runA/report.md` was refused as "not written by harness" (it was); `-o
one.md` wrote HTML into a .md file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clihelp import assert_input_error, demo_config, harness, snapshot

MARKER = ".harness-output"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of one experiment name (k1 1.2 and 0.5: other config hashes) and a rerun of the first config."""
    tmp = tmp_path_factory.mktemp("runs")
    made = {}
    for name, extra in (("a", {}), ("b", {"retriever": "{kind: bm25, backend: fast, k1: 0.5}"}), ("again", {})):
        cfg = demo_config(tmp, f"{name}.yaml", **extra)
        proc = harness("run", cfg, "--out", tmp / name, "-q", cwd=tmp)
        assert proc.returncode == 0, proc.stderr
        made[name] = tmp / name
    return made


def fresh(runs: dict, tmp: Path, *names: str) -> list[Path]:
    """Copies of run folders (times kept), for tests that write into them."""
    out = []
    for name in names:
        shutil.copytree(runs[name], tmp / name, symlinks=True)
        out.append(tmp / name)
    return out


def kept(folder: Path) -> dict:
    return {k: v for k, v in snapshot(folder).items() if not k.startswith(".harness-lock")}


# ---- the format follows the extension -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["one.md", "one.MARKDOWN"])
def test_a_md_path_gets_the_runs_markdown_report(runs, tmp_path, name):
    out = tmp_path / "site" / name
    proc = harness("report", runs["a"] / "results.json", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == (runs["a"] / "report.md").read_text()  # the report.md the run wrote
    assert harness("report", runs["a"], "-o", out).returncode == 0  # its own Markdown report: replaced


@pytest.mark.parametrize("name", ["one.html", "one.htm"])
def test_an_html_path_gets_the_page(runs, tmp_path, name):
    out = tmp_path / name
    assert harness("report", runs["a"] / "results.json", "-o", out).returncode == 0
    assert out.read_text().startswith("<!doctype html>")


@pytest.mark.parametrize("name", ["one.txt", "one", "one.pdf", "one.json"])
def test_an_extension_report_does_not_write_is_refused(runs, tmp_path, name):
    out = tmp_path / name
    assert_input_error(harness("report", runs["a"] / "results.json", "-o", out),
                       f"--out {out}: a report is HTML (.html, .htm) or, for one run, Markdown (.md, .markdown), "
                       f"chosen by the extension")
    assert not out.exists()


def test_a_comparison_is_html_only(runs, tmp_path):
    out = tmp_path / "cmp.md"
    assert_input_error(harness("report", runs["a"], runs["b"], "-o", out),
                       f"--out {out}: a comparison's report is HTML", "harness compare ... --format md")
    assert not out.exists()


def test_a_file_harness_wrote_as_something_else_is_refused_for_that_reason(runs, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: ['doc.ndcg@10 >= 0.1']\n")
    summary = tmp_path / "gate.md"
    assert harness("gate", runs["a"], "--rules", rules, "--summary", summary).returncode == 0
    before = summary.read_text()
    assert_input_error(harness("report", runs["a"], "-o", summary),
                       f"--out {summary}: is a gate summary (gate --summary) harness wrote, not this kind of output")
    assert summary.read_text() == before
    mine = tmp_path / "notes.md"
    mine.write_text("# my notes\n")
    assert_input_error(harness("report", runs["a"], "-o", mine), f"--out {mine}: exists and was not written by harness")


# ---- a run's output folder ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["report.html", "report.md"])
@pytest.mark.parametrize("other", ["b", "again"])  # another config; the same config run again (another run)
def test_another_runs_report_in_a_runs_folder_is_refused(runs, tmp_path, name, other):
    (folder,) = fresh(runs, tmp_path, "a")
    marker = json.loads((folder / MARKER).read_text())
    before = kept(folder)
    proc = harness("report", runs[other] / "results.json", "-o", folder / name)
    assert_input_error(proc, f"--out {folder / name}: {folder} holds the outputs of run 't' (written "
                             f"{marker['written_at']}), and {name} is that run's; {runs[other] / 'results.json'} is "
                             f"not its results.json: write this report elsewhere")
    assert kept(folder) == before


def test_a_comparison_into_a_runs_report_is_refused(runs, tmp_path):
    (folder,) = fresh(runs, tmp_path, "a")
    before = kept(folder)
    assert_input_error(harness("report", folder, runs["b"], "-o", folder / "report.html"),
                       "and report.html is that run's; this report compares several runs")
    assert kept(folder) == before


def test_the_runs_own_report_is_rewritten_and_the_next_run_accepts_it(runs, tmp_path):
    (folder,) = fresh(runs, tmp_path, "a")
    copy = tmp_path / "elsewhere.json"
    shutil.copy(folder / "results.json", copy)  # the same run's results, the same bytes, at another path
    for source, name in ((folder, "report.html"), (folder / "results.json", "report.md"), (copy, "report.html")):
        proc = harness("report", source, "-o", folder / name)
        assert proc.returncode == 0, proc.stderr
    rerun = harness("run", runs["a"].parent / "a.yaml", "--out", folder, "-q")
    assert rerun.returncode == 0, rerun.stderr  # the marker follows the rewrites: not taken for the user's edits


def test_a_report_the_user_edited_is_not_replaced(runs, tmp_path):
    (folder,) = fresh(runs, tmp_path, "a")
    with open(folder / "report.md", "a") as fh:
        fh.write("my notes\n")
    before = kept(folder)
    assert_input_error(harness("report", folder, "-o", folder / "report.md"),
                       f"--out {folder / 'report.md'}: report.md of run 't' (written ",
                       "was changed since harness wrote it; not replaced (move it away to keep it")
    assert kept(folder) == before


def test_other_outputs_of_a_run_are_never_written_over(runs, tmp_path):
    (folder,) = fresh(runs, tmp_path, "a")
    before = kept(folder)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: ['doc.ndcg@10 >= 0.1']\n")
    assert_input_error(harness("gate", runs["b"], "--rules", rules, "--summary", folder / "report.md"),
                       f"--summary {folder / 'report.md'}: is report.md, an output of run 't' (written ",
                       f"listed in {folder / MARKER}; refusing to overwrite it")
    assert_input_error(harness("report", runs["b"], "-o", folder / "per_query.csv"),
                       f"--out {folder / 'per_query.csv'}: is per_query.csv, an output of run 't'")
    (folder / "report.html").unlink()  # gone, but still the run's name: another run's report is not put there
    before = kept(folder)
    assert_input_error(harness("report", runs["b"], "-o", folder / "report.html"), "is not its results.json")
    assert kept(folder) == before
    assert harness("report", folder, "-o", folder / "report.html").returncode == 0  # its own: put back


def test_a_sweeps_run_folders_are_told_apart(tmp_path):
    cfg = demo_config(tmp_path, metrics="[ndcg@10]", sweep="{chunking.size: [1, 2]}")
    assert harness("run", cfg, "--out", tmp_path / "s", "-q").returncode == 0
    first, second = sorted(p.parent for p in (tmp_path / "s").glob("*/results.json"))
    before = kept(tmp_path / "s")
    assert_input_error(harness("report", first, "-o", second / "report.html"),
                       f"{tmp_path / 's'} holds the outputs of run 't'", f"and {second.name}/report.html is that run's")
    assert kept(tmp_path / "s") == before
    assert harness("report", second, "-o", second / "report.html").returncode == 0
    again = harness("run", cfg, "--out", tmp_path / "s", "-q")
    assert again.returncode == 0, again.stderr  # the sweep's marker follows its run's rewritten report
