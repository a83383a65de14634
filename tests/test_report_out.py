"""`harness report -o`: the format follows the extension (.html/.htm: the HTML page; .md/.markdown: one run's
Markdown report, the report.md a run writes); a file harness wrote as something else is refused for that reason.

Found by a tester (2026-12): `-o one.md` wrote HTML into a .md file; `-o runA/report.md` was refused as "not written
by harness" (it was)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clihelp import assert_input_error, demo_config, harness


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
