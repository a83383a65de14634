"""The one renderer of comparison tables: ``harness compare`` as table or md, the API's ``to_markdown``, and (through
``compare_html``, which uses the cells and notes here) the HTML report of several runs.

Every table shows the delta, the 95% CI beside the corrected p, and a note that the CI is not corrected; the
per-slice deltas follow in every format. Numbers come from the ``Comparison`` (stats/compare), never recomputed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.outcomes import Comparison, ComparisonRow

NOTE = ("`*` significant after correction (p < 0.05). The 95% CI is a bootstrap percentile interval of the mean "
        "difference for that row alone: it is NOT corrected for the multiple comparisons, so it can exclude 0 while "
        "the corrected p is above 0.05. MDE: the smallest true difference this golden set detects with 80% power; a "
        "smaller |delta| that is not significant may be too few queries, not no effect.")
SLICE_NOTE = "Per-slice deltas (no tests; slices are small):"
HEADERS = ("run", "metric", "n", "baseline", "run mean", "delta", "95% CI (uncorrected)", "p (corrected)", "W/T/L",
           "MDE")


def _f(value, spec: str = ".4f") -> str:
    # A mean is None when no query is counted at the metric's level: n/a, never a crash.
    return "n/a" if value is None else format(value, spec)


def cells(r: ComparisonRow) -> list[str]:
    """One comparison row as display strings, in ``HEADERS`` order (every format uses these)."""
    return [r.run, r.metric, str(r.n), _f(r.baseline_mean), _f(r.mean),
            _f(r.delta, "+.4f") + (" *" if r.significant else ""),
            "n/a" if r.ci95 is None else f"[{r.ci95[0]:+.4f}, {r.ci95[1]:+.4f}]",
            _f(r.p_corrected), f"{r.wins}/{r.ties}/{r.losses}", _f(r.mde)]


def slice_table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-slice deltas: one row per slice ("tag=value"), one column per run and metric
    (slices can be many, runs and metrics are few)."""
    slices = sorted({k for r in c.rows for k in r.slices})
    heads = ["slice"] + [f"{r.run} {r.metric}" for r in c.rows]
    rows = [[k] + [f"{r.slices[k]['delta']:+.3f} (n={r.slices[k]['n']})" if k in r.slices else "" for r in c.rows]
            for k in slices]
    return heads, rows


def title(c: Comparison) -> str:
    return f"against {c.baseline} ({c.test} test, {c.correction} correction)"


def transition_lines(c: Comparison) -> list[tuple[str, str, list[str]]]:
    return [(run, k, ids) for run, trans in c.transitions.items() for k, ids in trans.items()]


def to_markdown(c: Comparison) -> str:
    out = [f"## Comparison against `{c.baseline}` ({c.test} test, {c.correction} correction)", ""]
    for w in c.warnings:  # a blank line after each: a table right after a quote is read as part of the quote
        out += [f"> warning: {' '.join(str(w).splitlines())}", ""]
    out += ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(cells(r)) + " |" for r in c.rows]
    out += ["", NOTE]
    heads, rows = slice_table(c)
    if rows:
        out += ["", SLICE_NOTE, "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
    for run, trans in c.transitions.items():
        if trans:
            out += ["", f"Verdict transitions, {c.baseline} -> {run}:"]
            out += [f"- {k}: {len(v)} ({', '.join(v[:12])}{' …' if len(v) > 12 else ''})" for k, v in trans.items()]
    return "\n".join(out) + "\n"


def print_table(c: Comparison) -> None:
    """The default ``harness compare`` output: the comparison, the per-slice deltas, the note, transitions."""
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 160)  # piped output gets 80 columns otherwise
    table = Table(title=Text(title(c)))
    for col in HEADERS:
        table.add_column(col)
    for r in c.rows:
        style = "bold green" if r.significant and r.delta > 0 else ("bold red" if r.significant else "")
        row = [Text(x) for x in cells(r)]  # names are never parsed as rich markup
        if style:
            row[5].stylize(style)
        table.add_row(*row)
    console.print(table)
    heads, rows = slice_table(c)
    if rows:
        st = Table(title=Text(SLICE_NOTE))
        for col in heads:
            st.add_column(col)
        for row in rows:
            st.add_row(*[Text(x) for x in row])
        console.print(st)
    console.print(Text(NOTE.replace("`", "")))
    for run, k, ids in transition_lines(c):
        console.print(Text(f"{run}: {k}: {len(ids)} ({', '.join(ids[:12])})"))
