"""``harness compare``, ``harness gate`` and ``harness report``: commands over saved results.json files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from .options import (
    choices,
    format_choices,
    format_option,
    free_outputs,
    metric_option,
    out_option,
    output_problems,
    write_output,
    write_outputs_together,
)
from ..stats.choices import CORRECTIONS, TESTS

CompareFormat = format_choices("CompareFormat", "table", "md", "json")
Test = choices("Test", TESTS)
Correction = choices("Correction", CORRECTIONS)
OnInconclusive = choices("OnInconclusive", ("fail", "pass"))
# stats.compare's default when no -m is given (it lives inside compare_runs, so it is named here for --help).
COMPARE_DEFAULT_METRICS = "ndcg@10, chunk.recall@window"


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _finite(value):
    """JSON has no Infinity or NaN (an MDE over fewer than two queries is infinite): write null instead."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def compare_command(results: List[Path] = typer.Argument(..., metavar="RESULTS", help="two or more results.json files (or the folders runs wrote)"),
                    baseline: Optional[str] = typer.Option(None, "--baseline", help="run name (default: the first)"),
                    metric: List[str] = metric_option(COMPARE_DEFAULT_METRICS),
                    test: Test = typer.Option(Test.randomization, "--test", help="the paired significance test"),
                    correction: Correction = typer.Option(Correction.holm, "--correction",
                                                          help="the multiple-comparison correction of the p values"),
                    fmt: CompareFormat = format_option(CompareFormat.table)) -> None:
    """Paired comparison with CIs, corrected p-values, win/tie/loss and verdict transitions.

    Example: harness compare reports/demo-bm25/results.json reports/demo-hybrid/results.json -m ndcg@10
    """
    from ..api.decisions import compare

    result = compare(results, list(metric) or None, baseline=baseline, test=test.value, correction=correction.value,
                     warn=lambda message: _err(f"warning: {message}"))
    if fmt.value == "json":
        print(json.dumps(_finite(result.to_dict()), indent=2))
    elif fmt.value == "md":
        print(result.to_markdown(), end="")
    else:
        from ..render.compare_view import print_table
        print_table(result)


def gate_command(results: Path = typer.Argument(..., metavar="RESULTS", help="the candidate's results.json (or the folder its run wrote)"),
                 rules: Path = typer.Option(..., "--rules", help="rules YAML (see configs/gates.yaml)"),
                 baseline: Optional[Path] = typer.Option(None, "--baseline", help="results.json (or a run's folder) to check regressions against"),
                 summary: Optional[Path] = typer.Option(None, "--summary", help="write a Markdown summary here (missing "
                                                                                 "folders are created)"),
                 junit: Optional[Path] = typer.Option(None, "--junit", help="write JUnit XML here (one test case per rule)"),
                 on_inconclusive: Optional[OnInconclusive] = typer.Option(
                     None, "--on-inconclusive", help="what an INCONCLUSIVE rule (the golden set too small to decide) "
                                                     "does to the gate, for rules that do not say (default: fail)")) -> None:
    """Pre-release gate: exit 0 when every checked rule holds, 1 when any fails (or is INCONCLUSIVE and not
    accepted), 2 for bad input.

    Regression rules are checked against --baseline (policy non_inferiority unless the rule says significant_drop:
    docs/gates.md); without it they are reported as skipped.

    Example: harness gate reports/demo-bm25/results.json --rules configs/gates.yaml --junit gate.xml
    """
    from ..api.decisions import gate, gate_notes
    from ..core.errors import InputError
    from ..result.read import results_path

    results, baseline = results_path(results), baseline and results_path(baseline)  # a run's folder: its results.json
    inputs = [results, rules] + ([baseline] if baseline else [])
    kinds = {"--summary": "gate-md", "--junit": "junit"}
    problems = output_problems({"--summary": summary, "--junit": junit}, inputs, kinds=kinds)
    if problems:
        raise InputError("cannot write the gate's outputs", problems)
    free = free_outputs({"--summary": summary, "--junit": junit})
    outcome = gate(results, rules, baseline, on_inconclusive=on_inconclusive and on_inconclusive.value,
                   warn=lambda message: None)  # said below, in the CLI's words
    md = outcome.to_markdown()
    print(md, end="")
    for level, message in gate_notes(outcome, baseline="--baseline"):
        _err(f"{level}: {message}")
    texts = {"--summary": (summary, lambda: md), "--junit": (junit, outcome.to_junit)}
    write_outputs_together([(option, path, text(), not free[option], kinds[option])
                            for option, (path, text) in texts.items() if path is not None])
    if not outcome.passed:
        raise typer.Exit(1)


# What `harness report -o` writes, chosen by the output's extension.
REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "report-md", ".markdown": "report-md"}


def report_command(results: List[Path] = typer.Argument(..., metavar="RESULTS", help="one results.json (or the folder its run wrote), "
                                                                  "or several for a comparison"),
                   out: Path = out_option("the report: FILE.html, or FILE.md for one run's Markdown report",
                                          required=True),
                   metric: List[str] = metric_option(f"with several results: {COMPARE_DEFAULT_METRICS}")) -> None:
    """Build the self-contained HTML report for one run or a comparison of several; -o FILE.md writes one run's
    report as Markdown (the report.md a run writes).

    Into a run's output folder it replaces only that run's own report (never another run's, nor one you edited).

    Example: harness report reports/demo-bm25/results.json -o demo.html
    """
    from ..core.errors import InputError
    from ..result.read import results_path
    from ..render.html import render
    from ..render.outputs import load_results

    results = [results_path(p) for p in results]  # a run's folder: its results.json
    if metric and len(results) == 1:  # silently ignored, a typo in it would go unnoticed
        raise InputError("--metric: chooses what a comparison of several results.json files tests; one run's report "
                         "shows every metric the run has (give two or more results.json files, or drop --metric)")
    kind = REPORT_FORMATS.get(out.suffix.lower())
    problems = output_problems({"--out": out}, list(results), kinds={"--out": kind}, reporting=list(results))
    if not problems and kind is None:
        problems = [f"--out {out}: a report is HTML (.html, .htm) or, for one run, Markdown (.md, .markdown), chosen "
                    f"by the extension; give one of them"]
    if not problems and kind == "report-md" and len(results) > 1:
        problems = [f"--out {out}: a comparison's report is HTML (give a .html path); for the comparison as "
                    f"Markdown, harness compare ... --format md"]
    if problems:
        raise InputError("cannot write the report", problems)
    free = free_outputs({"--out": out})["--out"]
    loaded = [load_results(p) for p in results]
    from ..pipeline.explain import saved_texts
    from ..render.drilldown import Texts

    def texts_of(result, where: str) -> Texts:  # the drill-downs' and windows' texts
        chunks, docs = saved_texts(result, where, _err)
        return Texts(dict(result.chunk_text)) if chunks is None else Texts(chunks, docs or {})

    texts = [texts_of(r, str(p)) for r, p in zip(loaded, results)]
    if kind == "report-md":
        from ..render.outputs import markdown
        text = markdown(loaded[0], texts=texts[0])
    elif len(loaded) == 1:
        text = render(loaded, texts)
    else:
        from ..stats.compare import compare_runs
        text = render(loaded, texts, comparison=compare_runs(loaded, list(metric)))
    write_output("--out", out, text, replace=not free, kind=kind)
    print(out)
