"""The one renderer of comparison tables (``harness compare`` as table or md, the API's ``to_markdown``, and the
HTML report of several runs), plus the HTML per-query side-by-side view of two or more runs.

Every table shows the delta, the 95% CI beside the corrected p, and a note that the CI is not corrected; the
per-slice deltas follow in every format. Numbers come from the ``Comparison`` (stats/compare), never recomputed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .fmt import e

if TYPE_CHECKING:
    from ..core.outcomes import Comparison, ComparisonRow
    from ..core.result import Result
    from .drilldown import Texts

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
            f"{r.delta:+.4f}" + (" *" if r.significant else ""), f"[{r.ci95[0]:+.4f}, {r.ci95[1]:+.4f}]",
            _f(r.p_corrected), f"{r.wins}/{r.ties}/{r.losses}", _f(r.mde)]


def slice_table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-slice deltas (slice columns "tag=value")."""
    slices = sorted({k for r in c.rows for k in r.slices})
    rows = [[r.run, r.metric] + [f"{r.slices[k]['delta']:+.3f} (n={r.slices[k]['n']})" if k in r.slices else ""
                                 for k in slices] for r in c.rows]
    return ["run", "metric", *slices], rows


def _title(c: Comparison) -> str:
    return f"against {c.baseline} ({c.test} test, {c.correction} correction)"


def _transition_lines(c: Comparison) -> list[tuple[str, str, list[str]]]:
    return [(run, k, ids) for run, trans in c.transitions.items() for k, ids in trans.items()]


def to_markdown(c: Comparison) -> str:
    out = [f"## Comparison against `{c.baseline}` ({c.test} test, {c.correction} correction)", ""]
    out += [f"> warning: {w}" for w in c.warnings]
    out += ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(cells(r)) + " |" for r in c.rows]
    out += ["", NOTE]
    heads, rows = slice_table(c)
    if len(heads) > 2:
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
    table = Table(title=Text(_title(c)))
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
    if len(heads) > 2:
        st = Table(title=Text(SLICE_NOTE))
        for col in heads:
            st.add_column(col)
        for row in rows:
            st.add_row(*[Text(x) for x in row])
        console.print(st)
    console.print(Text(NOTE.replace("`", "")))
    for run, k, ids in _transition_lines(c):
        console.print(Text(f"{run}: {k}: {len(ids)} ({', '.join(ids[:12])})"))


# ---- HTML -------------------------------------------------------------------------------------------------------

def html_tables(c: Comparison) -> str:
    """The comparison and per-slice tables for report.html (sortable: class "sortable")."""
    head_html = "".join(f"<th>{e(h)}</th>" for h in HEADERS)
    rows_html = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in cells(r)) + "</tr>" for r in c.rows)
    warn_html = "".join(f'<p class="muted">warning: {e(w)}</p>' for w in c.warnings)
    out = (f"<h1>Comparison {e(_title(c))}</h1>{warn_html}"
           f'<table class="sortable" id="comparison"><thead><tr>{head_html}</tr></thead><tbody>{rows_html}</tbody>'
           f'</table><p class="muted" id="ci-note">{e(NOTE.replace("`", ""))}</p>')
    heads, rows = slice_table(c)
    if len(heads) > 2:
        shead_html = "".join(f"<th>{e(h)}</th>" for h in heads)
        srows_html = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in row) + "</tr>" for row in rows)
        out += (f"<h2>Per-slice deltas</h2><p class=\"muted\">{e(SLICE_NOTE)}</p><table class=\"sortable\" "
                f"id=\"slices\"><thead><tr>{shead_html}</tr></thead><tbody>{srows_html}</tbody></table>")
    trans_html = "".join(f"<li>{e(run)}: {e(k)}: {e(len(ids))} ({e(', '.join(ids[:15]))})</li>"
                         for run, k, ids in _transition_lines(c))
    if trans_html:
        out += f"<h2>Verdict transitions</h2><ul>{trans_html}</ul>"
    return out


def _window_html(q, texts: Texts | None) -> str:
    from .drilldown import snippet

    rows = []
    for h in q.hits[: max(q.effective_k, 1)]:
        text = texts.chunk(h.chunk_id) if texts else None
        mark = "evidence" if h.relevant else ("right document" if h.doc_relevant else "")
        body_html = e(snippet(text, 160)) if text is not None else '<span class="muted">(text not loaded)</span>'
        rows.append(f'<tr class="m-{e(mark.replace(" ", "_") or "none")}"><td>{e(h.rank)}</td>'
                    f"<td>{e(format(h.score, '.3f'))}</td><td>{e(h.chunk_id)}<br>{e(mark)}</td><td>{body_html}</td></tr>")
    rows_html = "".join(rows)
    return ("<table><thead><tr><th>rank</th><th>score</th><th>chunk</th><th>text</th></tr></thead>"
            f"<tbody>{rows_html}</tbody></table>")


def side_by_side(results: Sequence[Result], texts: Sequence[Texts | None], baseline: str) -> str:
    """Per query: each run's verdict (a change from the baseline marked) and, when the row is clicked, the runs'
    windows next to each other. Rows follow the baseline's golden-set order."""
    base = next(r for r in results if r.name == baseline)
    others = [r for r in results if r is not base]
    runs = [base, *others]
    run_texts = [texts[results.index(r)] if texts else None for r in runs]
    head_html = "".join(f"<th>{e(r.name)}</th>" for r in runs)
    rows = []
    for i, q in enumerate(base.queries):
        mine = [r.query(q.id) for r in runs]
        kinds = [m.verdict.kind if m else "absent" for m in mine]
        changed = any(k != kinds[0] for k in kinds[1:])
        change = " → ".join(kinds) if changed else "same"
        verdicts_html = "".join(f'<td class="k-{e(k)}">{e(k)}</td>' for k in kinds)
        rows.append(f'<tr class="q" data-detail="s{e(i)}" data-changed="{e("yes" if changed else "no")}">'
                    f"<td>{e(q.id)}</td><td>{e(q.text)}</td>{verdicts_html}<td>{e(change)}</td></tr>")
        cols_html = "".join(f'<div class="col"><b>{e(r.name)}</b>: {e(m.verdict.reason if m else "no such query")}'
                            + (_window_html(m, t) if m else "") + "</div>"
                            for r, m, t in zip(runs, mine, run_texts))
        rows.append(f'<tr class="detail" id="s{e(i)}" hidden><td colspan="{e(len(runs) + 3)}">'
                    f'<div class="sbs">{cols_html}</div></td></tr>')
    rows_html = "".join(rows)
    n_changed = sum(1 for row in rows if 'data-changed="yes"' in row)
    return ("<h2>Per query, side by side</h2>"
            f'<p><select data-filter="changed"><option value="">all queries</option><option value="yes">verdict '
            f'changed ({e(n_changed)})</option><option value="no">unchanged</option></select> <span id="shown">'
            "</span> queries shown; click a row for the windows next to each other.</p>"
            f'<table class="sortable" id="side-by-side"><thead><tr><th>id</th><th>query</th>{head_html}'
            f"<th>verdict change</th></tr></thead><tbody>{rows_html}</tbody></table>")
