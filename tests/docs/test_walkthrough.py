"""README's walkthrough shows what actually happens: its BM25 steps, run on examples/handbook/, print what README.md
shows, line for line, and the gate exits as the README says. (The dense and hybrid steps load a model: they are
left to the dense tests.)"""

from __future__ import annotations

import re
import shutil

import pytest

from clihelp import ROOT, harness
from conftest import require_installed

require_installed("selectolax")  # the walkthrough's folder has HTML pages

README = (ROOT / "README.md").read_text(encoding="utf-8")
EXAMPLE = ROOT / "examples" / "handbook"


def shown_commands() -> list[tuple[list[str], list[str]]]:
    """(arguments, the lines shown after it) of every `$ harness ...` in the walkthrough's plain code blocks."""
    shown, inside, fence, current = [], False, None, None
    for line in README.splitlines():
        if fence is None and line.startswith("## "):  # a section head (a '## ' inside a fence is output)
            if inside:
                break
            inside = line == "## Ten minutes with your own corpus"
        elif inside and line.startswith("```"):
            fence, current = (line[3:].strip(), None) if fence is None else (None, None)
        elif inside and fence == "" and line.startswith("$ harness "):
            current = (line[len("$ harness "):].split("#")[0].split(), [])
            shown.append(current)
        elif current is not None:
            current[1].append(line)
    assert inside, "README.md has no walkthrough section"
    return shown


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """The BM25 steps of the walkthrough, run once in a copy of examples/handbook: (folder, [(args, shown, proc)])."""
    folder = tmp_path_factory.mktemp("walk") / "handbook"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("reports", "goldset.jsonl", "gate.md"))
    steps = [(args, lines) for args, lines in shown_commands()
             if not any(name in arg for arg in args for name in ("dense", "hybrid"))]
    return folder, [(args, lines, harness(*args, cwd=folder)) for args, lines in steps]


def test_the_bm25_steps_print_what_the_readme_shows(walked):
    _, steps = walked
    assert [args[:2] for args, _, _ in steps] == [["goldset", "build"], ["run", "bm25.yaml"]]
    for args, lines, proc in steps:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() + proc.stderr.splitlines() == lines, (args, proc.stdout, proc.stderr)


def test_the_gate_fails_bm25_as_the_readme_says(walked):
    folder, _ = walked
    assert "fail three of them and exit 1" in README
    proc = harness("gate", "reports/handbook-bm25", "--rules", "gates.yaml", cwd=folder)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("❌") == 3 and "SKIPPED" in proc.stdout and "--baseline" in proc.stderr
