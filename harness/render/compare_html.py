"""The HTML of a comparison: the comparison and per-slice tables (cells and notes from ``compare_view``, the one
renderer of comparison tables) and the per-query side-by-side view of two or more runs.

Every interpolated value goes through ``e`` (a test walks the f-strings, as for ``html``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..result import querycolumns
from .compare_view import (HEADERS, SLICE_NOTE, cells, decision_lines, followed_lines, headers, note, slice_table, title,
                           transition_lines)
from .fmt import e

if TYPE_CHECKING:
    from ..result.outcomes import Comparison, ComparisonRow
    from ..result.model import Result
    from .drilldown import Texts


def _sort_key(r: ComparisonRow, header: str, shown: str) -> str | None:
    """What a comparison cell sorts by where its text is not one number (the page's script sorts numbers as numbers,
    the rest as text): a significant delta ("+0.0123 *") by the delta, the CI by its lower end, W/T/L by wins minus
    losses (as text "12/80/3" sorted below "3/90/2"); n/a last (an empty key). None: the text itself."""
    if shown == "n/a":
        return ""
    if header == "delta":
        return repr(r.delta)
    if header == "95% CI (uncorrected)":
        return repr(r.ci95[0])
    if header == "W/T/L":
        return str(r.wins - r.losses)
    return None


def _cell(r: ComparisonRow, header: str, shown: str) -> str:
    key = _sort_key(r, header, shown)
    return f"<td>{e(shown)}</td>" if key is None else f'<td data-sort="{e(key)}">{e(shown)}</td>'


def html_tables(c: Comparison) -> str:
    """The comparison and per-slice tables for report.html (sortable: class "sortable")."""
    head_html = "".join(f"<th>{e(h)}</th>" for h in headers(c))
    rows_html = "".join("<tr>" + "".join(_cell(r, h, x) for h, x in zip(HEADERS, cells(r))) + "</tr>"
                        for r in c.rows)
    warn_html = "".join(f'<p class="muted">warning: {e(w)}</p>' for w in c.warnings)
    decided_html = "".join(f"<li>{e(line)}</li>" for line in decision_lines(c))
    out = (f"<h1>Comparison {e(title(c))}</h1><ul id=\"decisions\">{decided_html}</ul>{warn_html}"
           f'<table class="sortable" id="comparison"><thead><tr>{head_html}</tr></thead><tbody>{rows_html}</tbody>'
           f'</table><p class="muted" id="ci-note">{e(note(c).replace("`", ""))}</p>')
    heads, rows = slice_table(c)
    if rows:
        shead_html = "".join(f"<th>{e(h)}</th>" for h in heads)
        srows_html = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in row) + "</tr>" for row in rows)
        out += (f"<h2>Per-slice deltas</h2><p class=\"muted\">{e(SLICE_NOTE)}</p><table class=\"sortable\" "
                f"id=\"slices\"><thead><tr>{shead_html}</tr></thead><tbody>{srows_html}</tbody></table>")
    trans_html = "".join(f"<li>{e(run)}: {e(k)}: {e(len(ids))} ({e(', '.join(ids[:15]))})</li>"
                         for run, k, ids in transition_lines(c))
    if trans_html:
        out += f"<h2>Verdict transitions</h2><ul>{trans_html}</ul>"
    for sentence, labels in followed_lines(c):
        items_html = "".join(f"<li>{e(label)}: {e(len(ids))} ({e(', '.join(ids[:15]))})</li>"
                             for label, ids in labels)
        out += f'<h2>Which child it followed</h2><p class="followed">{e(sentence)}</p><ul>{items_html}</ul>'
    return out


def _window_html(q, texts: Texts | None, hits) -> str:
    from .drilldown import snippet

    rows = []
    for h in hits[: max(q.effective_k, 1)]:
        text = texts.chunk(h.chunk_id) if texts else None
        mark = "evidence" if h.relevant else ("right document" if h.doc_relevant else "")
        body_html = e(snippet(text, 160)) if text is not None else '<span class="muted">(text not loaded)</span>'
        rows.append(f'<tr class="m-{e(mark.replace(" ", "_") or "none")}"><td>{e(h.rank)}</td>'
                    f"<td>{e(format(h.score, '.3f'))}</td><td>{e(h.chunk_id)}<br>{e(mark)}</td><td>{body_html}</td></tr>")
    rows_html = "".join(rows)
    return ("<table><thead><tr><th>rank</th><th>score</th><th>chunk</th><th>text</th></tr></thead>"
            f"<tbody>{rows_html}</tbody></table>")


SIDE_BY_SIDE_ROWS = 500


def _positions(base: Result, run: Result) -> list[int]:
    """For each of ``base``'s queries in order, the position of the query with its id in ``run`` (-1: none)."""
    ids, mine = querycolumns.of(base).ids, querycolumns.of(run).ids
    if ids == mine:
        return list(range(len(ids)))
    first: dict[str, int] = {}
    for j, qid in enumerate(mine):
        first.setdefault(qid, j)
    return [first.get(qid, -1) for qid in ids]


def side_by_side(results: Sequence[Result], texts: Sequence[Texts | None], baseline: str) -> str:
    """Per query: each run's verdict (a change from the baseline marked) and, when the row is clicked, the runs'
    windows next to each other. Rows follow the baseline's golden-set order."""
    base = next(r for r in results if r.name == baseline)
    others = [r for r in results if r is not base]
    runs = [base, *others]
    run_texts = [texts[results.index(r)] if texts else None for r in runs]
    head_html = "".join(f"<th>{e(r.name)}</th>" for r in runs)
    rows = []
    # A bounded page: at most SIDE_BY_SIDE_ROWS queries, those whose verdict changed first. Which changed is read
    # from the runs' columns, and only the listed queries' records are read (a large run's are spooled).
    at = [_positions(base, r) for r in runs]  # per run: its position of each of the baseline's queries, or -1
    run_kinds = [querycolumns.of(r).kind_of() for r in runs]
    base_kinds = run_kinds[0]
    same = [all(p[i] >= 0 and k[p[i]] == base_kinds[i] for p, k in zip(at[1:], run_kinds[1:]))
            for i in range(len(base_kinds))]
    listed = sorted(sorted(range(len(same)), key=lambda i: same[i])[:SIDE_BY_SIDE_ROWS])
    for i, n in enumerate(listed):
        mine = [r.queries[p[n]] if p[n] >= 0 else None for r, p in zip(runs, at)]
        q = mine[0]
        kinds = [m.verdict.kind if m else "absent" for m in mine]
        changed = any(k != kinds[0] for k in kinds[1:])
        change = " → ".join(kinds) if changed else "same"
        verdicts_html = "".join(f'<td class="k-{e(k)}">{e(k)}</td>' for k in kinds)
        rows.append(f'<tr class="q" data-detail="s{e(i)}" data-changed="{e("yes" if changed else "no")}">'
                    f"<td>{e(q.id)}</td><td>{e(q.text)}</td>{verdicts_html}<td>{e(change)}</td></tr>")
        cols_html = "".join(f'<div class="col"><b>{e(r.name)}</b>: {e(m.verdict.reason if m else "no such query")}'
                            + (_window_html(m, t, r.hits_of(m)) if m else "") + "</div>"
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
