"""``report.html``: one self-contained page (styles, script and SVG plots inline; nothing loaded from a network).

Every value interpolated into the page, text or attribute, whatever its type, goes through ``e`` (attributes are
always quoted); a fragment that is already HTML is named ``*_html``. A test walks this module's f-strings to keep it
so. The script only filters, sorts, shows and hides rows rendered here.

A failing query's row expands into its drill-down (``drilldown``): the evidence, where it ranked, what outranked it.
Charts are ``plots``'; comparison tables are ``compare_view``'s (one renderer for every format)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..diagnostics.kinds import css as verdict_css
from .drilldown import Texts, drilldown, snippet
from .calibration import html_section as calibration_section
from .fmt import at_k_sentence, e, fmt, means_sentence, plural
from .leaderboard_html import section as _leaderboard_section
from .stages import lost_counts_line
from .stages_html import ladder_html
from .svg_html import svgs as _svgs
from . import plots as charts_of  # by another name: plots() here is the page's section
from .plots import curves as _curves  # noqa: F401  (the curves the page plots; tests read them here)

if TYPE_CHECKING:
    from ..result.outcomes import Comparison
    from ..result.model import Result

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #dde}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #dde;border-radius:8px;padding:10px 14px;min-width:110px}
.card b{display:block;font-size:20px}.muted{color:#667}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #e3e6ee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6fa}tr.q{cursor:pointer}tr.q:hover{background:#f8f9fc}tr.detail td{background:#fbfbfd}
mark{background:#fde68a}.plots{display:flex;gap:16px;flex-wrap:wrap}.plots svg{height:auto}
select{margin-right:12px}th{cursor:pointer;user-select:none}th[data-dir=asc]::after{content:" \\25B2"}
th[data-dir=desc]::after{content:" \\25BC"}tr.lost td{background:#fef3f2}tr.window-end td{background:#eef2ff;color:#3538cd;font-size:12px;text-align:center}
tr.gap td{color:#667;text-align:center;font-size:12px}tr.m-evidence td{background:#ecfdf3}tr.m-right_document td{background:#fffaeb}
.headline{margin:4px 0}.sbs{display:flex;gap:12px}.sbs .col{flex:1;min-width:0}
table{display:block;max-width:100%;overflow-x:auto}.plots svg{max-width:100%}td{overflow-wrap:break-word}
table{background:linear-gradient(90deg,#fff 30%,#fff0) 0 0/40px 100% no-repeat local,linear-gradient(270deg,#fff 30%,#fff0) 100% 0/40px 100% no-repeat local,radial-gradient(farthest-side at 0 50%,#0003,#0000) 0 0/12px 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,#0003,#0000) 100% 0/12px 100% no-repeat scroll}
.plot{max-width:100%;overflow-x:auto}
tr.detail>td>*{position:sticky;left:0;max-width:calc(100vw - 48px)}
@media (max-width:600px){body{margin:12px}.sbs{flex-direction:column}}
"""
CSS += verdict_css()  # the verdict kinds' classes, from their one table (diagnostics.kinds)

JS = """
function applyFilters(){
  const sel=[...document.querySelectorAll('select[data-filter]')];
  document.querySelectorAll('tr.q').forEach(function(row){
    const show=sel.every(function(s){return !s.value || row.dataset[s.dataset.filter]===s.value;});
    row.hidden=!show;
    const d=document.getElementById(row.dataset.detail); if(d && !show){d.hidden=true;}
  });
  const n=document.querySelectorAll('tr.q:not([hidden])').length;
  const shown=document.getElementById('shown'); if(shown){shown.textContent=n;}
}
function cellKey(row,i){
  const c=row.cells[i]; if(!c){return '';}
  const v=c.dataset.sort!==undefined?c.dataset.sort:c.textContent.trim();
  // a number only when the whole cell is one ("0.91", "80%"): "1,000 genomes" or "0-dimensional" is text
  return /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)(e[-+]?[0-9]+)?%?$/i.test(v)?parseFloat(v):v.toLowerCase();
}
function sortBy(th){
  const table=th.closest('table'), body=table.tBodies[0], i=th.cellIndex;
  const dir=th.dataset.dir==='asc'?'desc':'asc';
  table.querySelectorAll('th').forEach(function(h){delete h.dataset.dir;});
  th.dataset.dir=dir;
  // a query row keeps its detail row right after it
  const groups=[];
  [...body.rows].forEach(function(r){
    if(r.classList.contains('detail') && groups.length){groups[groups.length-1].push(r);} else {groups.push([r]);}
  });
  groups.sort(function(a,b){
    const x=cellKey(a[0],i), y=cellKey(b[0],i);
    if(x===''||y===''){return (x==='')-(y==='');}  // n/a and empty cells last, whichever way
    const c=(typeof x===typeof y)?(x<y?-1:x>y?1:0):(typeof x==='number'?-1:1);
    return dir==='asc'?c:-c;
  });
  groups.forEach(function(g){g.forEach(function(r){body.appendChild(r);});});
}
document.querySelectorAll('table.sortable > thead th').forEach(function(th){
  th.addEventListener('click',function(){sortBy(th);});
});
document.querySelectorAll('select[data-filter]').forEach(function(s){s.addEventListener('change',applyFilters);});
document.querySelectorAll('tr.q').forEach(function(row){
  row.addEventListener('click',function(){const d=document.getElementById(row.dataset.detail); d.hidden=!d.hidden;});
});
applyFilters();
"""

# A chart is shrunk to the page's width down to this share of its own, then scrolls sideways: on a phone, a chart
# of many bars (verdicts by topic) scaled to 390 px had labels too small to read.
def plots(results: list[Result]) -> str:
    """The charts of one run or several (``render.plots``) as inline SVG."""
    charts = charts_of.run_charts(results)
    try:
        return _svgs(charts)
    finally:
        charts_of.close(charts)


def _highlight(text: str, start: int, spans: list[list[int]]) -> str:
    """Escape a chunk's text, marking the parts inside evidence spans (offsets are document offsets)."""
    marks = sorted((max(a - start, 0), min(b - start, len(text))) for a, b in spans if a < start + len(text) and b > start)
    out, pos = [], 0
    for a, b in marks:
        if a < pos:
            a = pos
        if a >= b:
            continue
        out.append(e(text[pos:a]))
        out.append(f"<mark>{e(text[a:b])}</mark>")
        pos = b
    out.append(e(text[pos:]))
    return "".join(out)


def _drill_html(q, texts: Texts) -> str:
    """The detail row's body: the reason, where the evidence ranked, the gold evidence and documents, and the
    ranking down to the evidence with the window's end marked."""
    d = drilldown(q, texts)
    spans: dict[str, list] = {}
    for g in q.gold:  # a document with spans in two evidence groups is two judgments
        spans.setdefault(g.doc_id, []).extend(g.evidence)
    parts = [f'<p class="reason">{e(d.reason)}</p>', f'<p class="headline"><b>{e(d.headline())}</b></p>']
    if d.position:
        parts.append(f'<p class="position">{e(d.position)}</p>')
    if d.unjudged_share is not None:
        parts.append(f'<p class="muted">unjudged share of the window: {e(format(d.unjudged_share, ".0%"))}</p>')
    if d.evidence:
        ev_rows = []
        for ev in d.evidence:
            text_html = _text_html(ev.text)
            if ev.start is None and ev.text is not None:  # a whole-document judgment: say which text is shown
                best = ev.chunk_id is not None and texts.chunk(ev.chunk_id) == ev.text
                what = "its best-ranked chunk, " + ev.chunk_id + ":" if best else "the start of the document:"
                text_html = f'<span class="muted ev-what">{e(what)}</span> {text_html}'
            ev_rows.append(
                f'<tr><td>{e(ev.doc_id)}</td><td>{e("whole document" if ev.start is None else f"[{ev.start}, {ev.end})")}'
                f'{e(f" (group {ev.group})" if ev.group is not None else "")}</td><td class="ev-rank">{e(ev.rank if ev.rank is not None else "not retrieved")}'
                f'{e(" (in the window)" if ev.in_window else "")}</td><td class="ev-text">{text_html}</td></tr>')
        ev_html = "".join(ev_rows)
        whole = all(ev.start is None for ev in d.evidence)
        text_head = "text (the whole document is the evidence)" if whole else "evidence text"
        parts.append('<table class="evidence"><thead><tr><th>gold document</th><th>span</th><th>evidence rank</th>'
                     f"<th>{e(text_head)}</th></tr></thead><tbody>{ev_html}</tbody></table>")
    if d.kind == "missing_document" and d.gold_docs:
        gd_rows = []
        for g in d.gold_docs:
            text_html = _text_html(g.text)
            gd_rows.append(f'<tr><td>{e(g.doc_id)}</td><td>{e(g.grade)}</td>'
                           f'<td>{e(g.best_rank if g.best_rank is not None else "not retrieved")}</td>'
                           f'<td>{text_html}</td></tr>')
        gd_html = "".join(gd_rows)
        parts.append('<table class="gold-docs"><thead><tr><th>gold document</th><th>grade</th><th>best rank</th>'
                     f"<th>text (its best-ranked chunk)</th></tr></thead><tbody>{gd_html}</tbody></table>")
    rows, boundary, prev = [], False, 0
    for r in d.rows:
        if not r.in_window and not boundary:
            boundary = True
            rows.append(f'<tr class="window-end"><td colspan="5">end of the window ({e(d.window)} chunks)</td></tr>')
        if r.rank > prev + 1:  # rows left out between the shown ones and the evidence
            rows.append(f'<tr class="gap"><td colspan="5">… {e(r.rank - prev - 1)} more chunks …</td></tr>')
        prev = r.rank
        if r.text is None:
            body_html = _NO_TEXT
        elif r.in_window or r.mark:
            body_html = _highlight(r.text, r.start, spans.get(r.doc_id, []))
        else:
            body_html = e(snippet(r.text, 160))
        rows.append(f'<tr class="m-{e(r.mark.replace(" ", "_") or "none")}"><td>{e(r.rank)}</td>'
                    f"<td>{e(format(r.score, '.3f'))}</td><td>{e(r.chunk_id)}</td><td>{e(r.mark)}</td>"
                    f"<td>{body_html}</td></tr>")
    if not boundary and d.rows and len(d.rows) >= d.window:
        rows.append(f'<tr class="window-end"><td colspan="5">end of the window ({e(d.window)} chunks)</td></tr>')
    title = ("the window" if d.target_rank is None or d.target_rank <= d.window
             else "the ranking down to the evidence (rank " + str(d.target_rank) + ")")
    rows_html = "".join(rows)
    parts.append(ladder_html(q.verdict.detail))  # a composite retriever's stages, the losing one marked
    parts.append(f'<p>{e(title)}:</p><table class="ranking"><thead><tr><th>rank</th><th>score</th><th>chunk</th>'
                 f"<th>mark</th><th>text (evidence marked)</th></tr></thead><tbody>{rows_html}</tbody></table>")
    return "".join(parts)


_NO_TEXT = '<span class="muted">(text not loaded)</span>'
# a metric cell of a query not counted at that level (goldset_error, no_gold): no number; sorts after the numbers
_NA = '<td class="muted na" data-sort="" title="not counted at this level">n/a</td>'


def _text_html(text: str | None) -> str:
    return _NO_TEXT if text is None else e(text)


def shown_queries(result: Result) -> list:
    """The queries the per-query table shows: all up to ``SHOWN_QUERIES``, else the worst of each failing verdict
    and a fixed sample (``core.selection``), so the page's size does not grow with the run's."""
    from ..result.selection import select

    # (their hits kept in results.json by the writer; read from hits.parquet for a file edited otherwise)
    return [result.with_hits(result.queries[i]) for i in select(_selection_rows(result))]


def _selection_rows(result: Result):
    """The selection's inputs (``selection.Rows``), read from the run's columns (a large run's records are
    spooled)."""
    import numpy as np

    from ..result import querycolumns
    from ..result.selection import Rows

    columns = querycolumns.of(result)
    rr = (np.where(columns.has("chunk", "rr@window"), columns.value("chunk", "rr@window"), 0.0)
          if "rr@window" in columns.metrics("chunk") else np.zeros(len(columns)))
    return Rows(columns.ids, columns.kind_of(), rr)


def _query_rows(result: Result, texts: Texts) -> str:
    from ..result import querycolumns

    columns = querycolumns.of(result)
    tags = sorted(columns.tags)
    rows = []
    shown = shown_queries(result)
    for i, q in enumerate(shown):
        v = q.verdict
        data_html = f' data-verdict="{e(v.kind)}"' + "".join(f' data-tag{e(j)}="{e(q.tags.get(t, ""))}"'
                                                             for j, t in enumerate(tags))
        m = q.metrics
        counted = "/".join(level for level in ("doc", "chunk") if q.is_counted(level)) or "no"
        first = next((h.rank for h in q.hits if h.relevant), None)
        share = v.detail.get("unjudged_share")
        share_s = format(share, ".0%") if isinstance(share, (int, float)) else ""
        rows.append(f'<tr class="q" data-detail="d{e(i)}"{data_html}><td>{e(q.id)}</td><td>{e(q.text)}</td>'
                    f'<td class="k-{e(v.kind)}">{e(v.kind)}</td><td>{e(" ".join(v.flags))}</td>'
                    f'<td data-sort="{e(share if isinstance(share, (int, float)) else -1)}">{e(share_s)}</td>'
                    + (f'<td data-sort="{e(first if first is not None else 1e9)}">'
                       f'{e(first if first is not None else "not retrieved")}</td>'
                       f'<td>{e(fmt(m.chunk.get("recall@window"), 2))}</td>' if q.is_counted("chunk") else _NA * 2)
                    + (f'<td>{e(fmt(m.doc.get("ndcg@10"), 3))}</td>' if q.is_counted("doc") else _NA) +
                    f'<td>{e(counted)}</td></tr>')
        detail_html = _drill_html(q, texts)
        rows.append(f'<tr class="detail" id="d{e(i)}" hidden><td colspan="9">{detail_html}</td></tr>')
    selects = ['<select data-filter="verdict"><option value="">all verdicts</option>' + "".join(
        f'<option value="{e(k)}">{e(k)}</option>' for k in result.summary.verdicts.counts.model_dump()) + "</select>"]
    for j, t in enumerate(tags):
        values = sorted(set(columns.tag_values[t]) | ({""} if (columns.tags[t] < 0).any() else set()))
        selects.append(f'<select data-filter="tag{e(j)}"><option value="">all {e(t)}</option>' +
                       "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values) + "</select>")
    selects_html, rows_html = "".join(selects), "".join(rows)
    note_html = "" if len(shown) == len(result.queries) else (
        f'<p class="muted" id="shown-note">Showing {e(len(shown))} of {e(len(result.queries))} queries: the worst of '
        f'each failing verdict and a fixed sample; all are in per_query.csv and {e(result.hits_file or "hits.parquet")}'
        f' (harness explain results.json QUERY_ID shows any of them).</p>')
    return (f'{note_html}<p>{selects_html} <span id="shown"></span> queries shown; click a row for where its evidence ranked, '
            'a column head to sort.</p>'
            '<table id="queries" class="sortable"><thead><tr><th>id</th><th>query</th><th>verdict</th><th>flags</th>'
            "<th>unjudged in window</th><th>first relevant chunk rank</th><th>chunk recall@window</th>"
            f"<th>doc nDCG@10</th><th>counted</th></tr></thead><tbody>{rows_html}</tbody></table>")


def _run_section(result: Result, texts: Texts, charts=None) -> str:
    s, v = result.summary, result.summary.verdicts
    counts, shares = v.counts.model_dump(), v.shares.model_dump()
    nothing = {level: plural(getattr(s.counts, level).nothing_found_in_window, "query", "queries")
               for level in ("doc", "chunk")}
    # each level's "nothing relevant in the window" count beside that level's numbers
    cards = [("queries", result.goldset.queries), ("doc nDCG@10", fmt(s.doc.get("ndcg@10"), 3)),
             ("doc MRR@10", fmt(s.doc.get("rr@10"), 3)),
             ("nothing in window (doc level)", nothing["doc"]),
             ("chunk recall@window", fmt(s.chunk.get("recall@window"), 3)),
             ("nothing in window (chunk level)", nothing["chunk"]),
             ("ok", format(shares["ok"], ".0%"))]
    kinds = list(counts)
    flags = v.flags.model_dump()
    parts = [f"<h1>Retrieval report: {e(result.name)}</h1>",
             f'<p class="muted">retriever {e(result.config.retriever.kind)}, window '
             f"{e(result.cutoff.describe)}, depth {e(result.cutoff.depth)}, {e(result.corpus.documents)} "
             f"documents in {e(result.corpus.chunks)} chunks; created {e(result.created_at)}</p>",
             '<div class="cards">' + "".join(f'<div class="card"><b>{e(val)}</b>{e(k)}</div>' for k, val in cards)
             + "</div>",
             '<h2>Metrics</h2><table id="metrics" class="sortable"><thead><tr><th>metric</th><th>doc level</th>'
             "<th>chunk level</th></tr></thead><tbody>" +
             "".join(f"<tr><td>{e(n)}</td><td>{e(fmt(s.doc[n]))}</td><td>{e(fmt(s.chunk.get(n)))}</td></tr>"
                     for n in s.doc) +
             "</tbody></table>" + (f'<p class="muted" id="at-k">{e(at_k_sentence(result))}</p>'
                                   if at_k_sentence(result) else "") +
             "".join(f'<p class="muted" id="means-{e(level)}">{e(means_sentence(result, level))}</p>'
                     for level in ("doc", "chunk")),
             '<h2>Verdicts</h2><table class="sortable"><thead><tr><th>verdict</th><th>queries</th><th>share</th></tr>'
             "</thead><tbody>" +
             "".join(f'<tr><td class="k-{e(k)}">{e(k)}</td><td>{e(n)}</td><td>{e(format(shares[k], ".0%"))}</td></tr>'
                     for k, n in counts.items()) + "</tbody></table>",
             '<p class="muted" id="flags">flags: ' + e(", ".join(f"{f} {n}" for f, n in flags.items())) + "; "
             + e(result.conventions.get("flags", "")) + "</p>"]
    for tag, values in v.by_slice.items():
        rows = {val: c.model_dump() for val, c in values.items()}
        parts.append(f'<h3>By {e(tag)}</h3><table class="sortable"><thead><tr><th>{e(tag)}</th>' +
                     "".join(f"<th>{e(k)}</th>" for k in kinds) + "</tr></thead><tbody>" +
                     "".join(f"<tr><td>{e(val)}</td>" + "".join(f"<td>{e(c[k])}</td>" for k in kinds) + "</tr>"
                             for val, c in sorted(rows.items())) + "</tbody></table>")
    if lost_counts_line(v.lost_at):
        parts.append(f"<p class=\"lost-counts\">{e(lost_counts_line(v.lost_at))}</p>")
    if v.advice:
        parts.append("<h2>Advice</h2><ul>" + "".join(f"<li>{e(a)}</li>" for a in v.advice) + "</ul>")
    parts.append(calibration_section(s))
    parts.append("<h2>Plots</h2>" + (_svgs(charts) if charts is not False else plots([result])))
    parts.append("<h2>Queries</h2>" + _query_rows(result, texts))
    parts.append("<h2>Conventions</h2><ul>" + "".join(f"<li><b>{e(k)}</b>: {e(val)}</li>"
                                                     for k, val in result.conventions.items()) + "</ul>")
    return "".join(parts)


def _comparison_section(comparison: Comparison, results: list[Result], texts: list[Texts]) -> str:
    from ..result.outcomes import distinct_names
    from .compare_html import html_tables, side_by_side

    results = distinct_names(results)  # the names the comparison gave them
    tables_html = html_tables(comparison)
    sbs_html = side_by_side(results, texts, comparison.baseline)
    return tables_html + "<h2>Plots</h2>" + plots(results) + sbs_html


def _texts(value) -> Texts:
    return value if isinstance(value, Texts) else Texts(value or {})


def render(results: list[Result | dict], chunk_texts: list[dict[str, str] | Texts] | None = None,
           comparison: Comparison | None = None, leaderboard: dict | None = None, charts=False) -> str:
    """The page for one run, or a comparison of several (with ``comparison``), optionally topped by a sweep's
    leaderboard. A plain dict is validated into a Result first. ``chunk_texts``: per result, chunk texts by id or
    a ``drilldown.Texts``. ``charts``: the run's charts already made (``plots.run_charts``), to share them with
    the PNG files; False makes them here."""
    from ..result.model import as_result

    results = [as_result(r) for r in results]
    texts = [_texts(t) for t in (chunk_texts or [None] * len(results))]
    body_html = (_comparison_section(comparison, results, texts) if comparison
                 else _run_section(results[0], texts[0], charts))
    if leaderboard:
        body_html = _leaderboard_section(leaderboard) + body_html
    title = comparison.baseline + " comparison" if comparison else results[0].name
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="harness"><title>{e(title)}</title>'
            f"<style>{CSS}</style></head><body>{body_html}<script>{JS}</script></body></html>")
