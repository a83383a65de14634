"""``report.html``: one self-contained page (styles, script and SVG plots inline; nothing loaded from a network).

Every value interpolated into the page, text or attribute, whatever its type, goes through ``e`` (attributes are
always quoted); a fragment that is already HTML is named ``*_html``. A test walks this module's f-strings to keep it
so. The script only shows and hides rows rendered here."""

from __future__ import annotations

import html
import io
from typing import TYPE_CHECKING

from .fmt import fmt, means_sentence, plural

if TYPE_CHECKING:
    from ..core.outcomes import Comparison
    from ..core.result import Result

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #dde}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #dde;border-radius:8px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:20px}.muted{color:#667}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #e3e6ee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6fa}tr.q{cursor:pointer}tr.q:hover{background:#f8f9fc}tr.detail td{background:#fbfbfd}
.k-ok{color:#17803d}.k-missing_document,.k-goldset_error{color:#b42318}.k-wrong_chunk{color:#b54708}.k-buried_evidence{color:#6941c6}
mark{background:#fde68a}.plots{display:flex;gap:16px;flex-wrap:wrap}.plots svg{max-width:380px;height:auto}
select{margin-right:12px}
"""

JS = """
function applyFilters(){
  const sel=[...document.querySelectorAll('select[data-filter]')];
  document.querySelectorAll('tr.q').forEach(function(row){
    const show=sel.every(function(s){return !s.value || row.dataset[s.dataset.filter]===s.value;});
    row.hidden=!show;
    const d=document.getElementById(row.dataset.detail); if(d && !show){d.hidden=true;}
  });
  const n=document.querySelectorAll('tr.q:not([hidden])').length;
  document.getElementById('shown').textContent=n;
}
document.querySelectorAll('select[data-filter]').forEach(function(s){s.addEventListener('change',applyFilters);});
document.querySelectorAll('tr.q').forEach(function(row){
  row.addEventListener('click',function(){const d=document.getElementById(row.dataset.detail); d.hidden=!d.hidden;});
});
applyFilters();
"""

def e(value) -> str:
    """The one escaping helper: any value as HTML text, safe inside a quoted attribute too."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _curves(result: Result):
    """Mean recall@k and precision@k for k = 1..depth (chunk level), and first-relevant ranks, over the queries
    counted at chunk level (the summary's queries)."""
    # Every query's relevance flags: from the result, or hits.parquet when it keeps a bounded set of hits.
    counted = {q.id: None for q in result.counted("chunk")}
    flags = {qid: rel for qid, rel in result.relevance() if qid in counted}
    # As deep as the hits go (not the configured depth, which may be 10^8): past them the curves carry nothing.
    depth = min(result.cutoff.depth, max([len(f) for f in flags.values()] + [1]))
    recall, precision, firsts, n = [0.0] * depth, [0.0] * depth, [], 0
    for q in result.counted("chunk"):
        n += 1
        found, first = 0, None
        n_rel = q.n_relevant.chunk
        rel = flags.get(q.id, ())
        for i in range(depth):
            if i < len(rel) and rel[i]:
                found += 1
                first = first or i + 1
            recall[i] += found / n_rel if n_rel else 0.0  # query_policy zero: a query with nothing relevant is 0
            precision[i] += found / (i + 1)
        firsts.append(first)
    if n:
        recall = [r / n for r in recall]
        precision = [p / n for p in precision]
    return recall, precision, firsts


def _label(name: str) -> str:
    """A run name as a matplotlib label: '$' would start mathtext (a parse error on odd input), a leading '_'
    hides the entry. matplotlib escapes the text itself when it writes the SVG."""
    return name.replace("$", r"\$").lstrip("_") or "run"


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def plots(results: list[Result]) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return '<p class="muted">Plots need matplotlib: pip install &#x27;rag-harness[report]&#x27;.</p>'
    plt.rcParams["svg.fonttype"] = "none"
    curves = [_curves(r) for r in results]  # one pass per run serves all three plots
    out = []
    for title, index in (("recall@k (chunk level)", 0), ("precision@k (chunk level)", 1)):
        fig, ax = plt.subplots(figsize=(4.4, 3))
        for r, curve in zip(results, curves):
            ys = curve[index]
            ax.plot(range(1, len(ys) + 1), ys, label=_label(r.name))
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        out.append(_svg(fig))
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(4.4, 3))
    for r, curve in zip(results, curves):
        firsts = curve[2]
        depth = r.cutoff.depth
        ranks = [f if f is not None else depth + 1 for f in firsts]
        bins = sorted({b for b in (1, 2, 3, 4, 5, 6, 11, 21, 51) if b <= depth} | {depth + 1, depth + 2})
        ax.hist(ranks, bins=bins, alpha=0.6, label=_label(r.name))
    ax.set_xscale("log")
    ax.set_title("first relevant chunk rank (right bin: not found)")
    ax.legend(fontsize=8)
    out.append(_svg(fig))
    plt.close(fig)
    return '<div class="plots">' + "".join(out) + "</div>"


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


def shown_queries(result: Result) -> list:
    """The queries the per-query table shows: all up to ``SHOWN_QUERIES``, else the worst of each failing verdict
    and a fixed sample (``core.selection``), so the page's size does not grow with the run's."""
    from ..core.selection import rows_of, select

    return [result.queries[i] for i in select(rows_of(result.queries))]


def _query_rows(result: Result, chunk_text: dict[str, str]) -> str:
    tags = sorted({t for q in result.queries for t in q.tags})
    rows = []
    shown = shown_queries(result)
    for i, q in enumerate(shown):
        v = q.verdict
        data_html = f' data-verdict="{e(v.kind)}"' + "".join(f' data-tag{e(j)}="{e(q.tags.get(t, ""))}"'
                                                             for j, t in enumerate(tags))
        m = q.metrics
        counted = "/".join(level for level in ("doc", "chunk") if q.is_counted(level)) or "no"
        rows.append(f'<tr class="q" data-detail="d{e(i)}"{data_html}><td>{e(q.id)}</td><td>{e(q.text)}</td>'
                    f'<td class="k-{e(v.kind)}">{e(v.kind)}</td><td>{e(" ".join(v.flags))}</td>'
                    f'<td>{e(fmt(m.chunk.get("recall@window"), 2))}</td><td>{e(fmt(m.doc.get("ndcg@10"), 3))}</td>'
                    f'<td>{e(counted)}</td></tr>')
        spans = {g.doc_id: g.evidence for g in q.gold}
        hits = []
        for h in q.hits[: max(q.effective_k, 1)]:
            text = chunk_text.get(h.chunk_id, "")
            body_html = (_highlight(text, h.start, spans.get(h.doc_id, [])) if text
                         else '<span class="muted">(text not loaded)</span>')
            mark = "evidence" if h.relevant else ("right document" if h.doc_relevant else "")
            hits.append(f"<tr><td>{e(h.rank)}</td><td>{e(format(h.score, '.3f'))}</td><td>{e(h.chunk_id)}</td>"
                        f"<td>{e(mark)}</td><td>{body_html}</td></tr>")
        hits_html = "".join(hits)
        rows.append(f'<tr class="detail" id="d{e(i)}" hidden><td colspan="7"><p>{e(v.reason)}</p><table><tr><th>rank</th>'
                    f'<th>score</th><th>chunk</th><th></th><th>text (evidence marked)</th></tr>{hits_html}</table></td></tr>')
    selects = ['<select data-filter="verdict"><option value="">all verdicts</option>' + "".join(
        f'<option value="{e(k)}">{e(k)}</option>' for k in result.summary.verdicts.counts.model_dump()) + "</select>"]
    for j, t in enumerate(tags):
        values = sorted({q.tags.get(t, "") for q in result.queries})
        selects.append(f'<select data-filter="tag{e(j)}"><option value="">all {e(t)}</option>' +
                       "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values) + "</select>")
    selects_html, rows_html = "".join(selects), "".join(rows)
    note_html = "" if len(shown) == len(result.queries) else (
        f'<p class="muted" id="shown-note">Showing {e(len(shown))} of {e(len(result.queries))} queries: the worst of '
        f'each failing verdict and a fixed sample; all are in per_query.csv and {e(result.hits_file or "hits.parquet")}'
        f' (harness explain results.json QUERY_ID shows any of them).</p>')
    return (f'{note_html}<p>{selects_html} <span id="shown"></span> queries shown; click a row for its window.</p>'
            '<table id="queries"><tr><th>id</th><th>query</th><th>verdict</th><th>flags</th><th>chunk recall@window</th>'
            f"<th>doc nDCG@10</th><th>counted</th></tr>{rows_html}</table>")


def _run_section(result: Result, chunk_text: dict[str, str]) -> str:
    s, v = result.summary, result.summary.verdicts
    cd = s.counts.doc
    counts, shares = v.counts.model_dump(), v.shares.model_dump()
    cards = [("queries", result.goldset.queries), ("doc nDCG@10", fmt(s.doc.get("ndcg@10"), 3)),
             ("chunk recall@window", fmt(s.chunk.get("recall@window"), 3)),
             ("doc MRR@10", fmt(s.doc.get("rr@10"), 3)),
             ("nothing in window", plural(cd.nothing_found_in_window, "query", "queries")),
             ("ok", format(shares["ok"], ".0%"))]
    kinds = list(counts)
    parts = [f"<h1>Retrieval report: {e(result.name)}</h1>",
             f'<p class="muted">retriever {e(result.config.retriever.kind)}, window '
             f"{e(result.cutoff.describe)}, depth {e(result.cutoff.depth)}, {e(result.corpus.documents)} "
             f"documents in {e(result.corpus.chunks)} chunks; created {e(result.created_at)}</p>",
             '<div class="cards">' + "".join(f'<div class="card"><b>{e(val)}</b>{e(k)}</div>' for k, val in cards)
             + "</div>",
             '<h2>Metrics</h2><table id="metrics"><tr><th>metric</th><th>doc level</th><th>chunk level</th></tr>' +
             "".join(f"<tr><td>{e(n)}</td><td>{e(fmt(s.doc[n]))}</td><td>{e(fmt(s.chunk.get(n)))}</td></tr>"
                     for n in s.doc) +
             "</table>" + "".join(f'<p class="muted" id="means-{e(level)}">{e(means_sentence(result, level))}</p>'
                                  for level in ("doc", "chunk")),
             "<h2>Verdicts</h2><table><tr><th>verdict</th><th>queries</th><th>share</th></tr>" +
             "".join(f'<tr><td class="k-{e(k)}">{e(k)}</td><td>{e(n)}</td><td>{e(format(shares[k], ".0%"))}</td></tr>'
                     for k, n in counts.items()) + "</table>"]
    for tag, values in v.by_slice.items():
        rows = {val: c.model_dump() for val, c in values.items()}
        parts.append(f"<h3>By {e(tag)}</h3><table><tr><th>{e(tag)}</th>" + "".join(f"<th>{e(k)}</th>" for k in kinds) +
                     "</tr>" + "".join(f"<tr><td>{e(val)}</td>" + "".join(f"<td>{e(c[k])}</td>" for k in kinds) + "</tr>"
                                       for val, c in sorted(rows.items())) + "</table>")
    if v.advice:
        parts.append("<h2>Advice</h2><ul>" + "".join(f"<li>{e(a)}</li>" for a in v.advice) + "</ul>")
    parts.append("<h2>Curves</h2>" + plots([result]))
    parts.append("<h2>Queries</h2>" + _query_rows(result, chunk_text))
    parts.append("<h2>Conventions</h2><ul>" + "".join(f"<li><b>{e(k)}</b>: {e(val)}</li>"
                                                     for k, val in result.conventions.items()) + "</ul>")
    return "".join(parts)


def _p(value) -> str:
    return "" if value is None else format(value, ".4f")


def _comparison_section(comparison: Comparison, results: list[Result]) -> str:
    rows_html = "".join(
        f"<tr><td>{e(r.run)}</td><td>{e(r.metric)}</td><td>{e(r.n)}</td><td>{e(fmt(r.baseline_mean))}</td>"
        f"<td>{e(fmt(r.mean))}</td><td>{e(format(r.delta, '+.4f'))}{e(' *' if r.significant else '')}</td>"
        f"<td>[{e(format(r.ci95[0], '+.4f'))}, {e(format(r.ci95[1], '+.4f'))}]</td><td>{e(_p(r.p_corrected))}</td>"
        f"<td>{e(r.wins)}/{e(r.ties)}/{e(r.losses)}</td><td>{e(format(r.mde, '.4f'))}</td></tr>"
        for r in comparison.rows)
    trans_html = "".join(f"<li>{e(run)}: {e(k)}: {e(len(ids))} ({e(', '.join(ids[:15]))})</li>"
                         for run, t in comparison.transitions.items() for k, ids in t.items())
    return (f"<h1>Comparison against {e(comparison.baseline)}</h1><p class=\"muted\">{e(comparison.test)} test, "
            f"{e(comparison.correction)} correction; * significant after correction</p>"
            "<table><tr><th>run</th><th>metric</th><th>n</th><th>baseline</th><th>run</th><th>delta</th><th>95% CI</th>"
            f"<th>p corrected</th><th>W/T/L</th><th>MDE</th></tr>{rows_html}</table>"
            + (f"<h2>Verdict transitions</h2><ul>{trans_html}</ul>" if trans_html else "") + "<h2>Curves</h2>"
            + plots(results))


def _leaderboard_section(board: dict) -> str:
    rows_html = "".join(
        f"<tr><td>{e(i)}</td><td>{e(r['run'])}</td><td>{e(', '.join(f'{k}={v}' for k, v in r['params'].items()))}</td>"
        f"<td>{e(format(r['mean'], '.4f'))}</td><td>{e(r.get('queries', ''))}</td>"
        f"<td>{e(format(r['delta_vs_best'], '+.4f'))}</td>"
        f"<td>{e(_p(r['p_corrected']))}</td>"
        f"<td>{e('yes' if r['tied_with_best'] else 'no')}</td></tr>" for i, r in enumerate(board["runs"], 1))
    return (f"<h1>Sweep {e(board['name'])}: leaderboard by {e(board['metric'])}</h1><p class=\"muted\">tied = not "
            f"significantly different from the best ({e(board['test'])} test, {e(board['correction'])} correction)</p>"
            "<table><tr><th>rank</th><th>run</th><th>params</th><th>mean</th><th>queries</th><th>delta vs best</th>"
            f"<th>p corrected</th><th>tied with best</th></tr>{rows_html}</table>")


def render(results: list[Result | dict], chunk_texts: list[dict[str, str]] | None = None,
           comparison: Comparison | None = None, leaderboard: dict | None = None) -> str:
    """The page for one run, or a comparison of several (with ``comparison``), optionally topped by a sweep's
    leaderboard. A plain dict is validated into a Result first."""
    from ..core.result import as_result

    results = [as_result(r) for r in results]
    chunk_texts = chunk_texts or [{} for _ in results]
    body_html = _comparison_section(comparison, results) if comparison else _run_section(results[0], chunk_texts[0])
    if leaderboard:
        body_html = _leaderboard_section(leaderboard) + body_html
    title = comparison.baseline + " comparison" if comparison else results[0].name
    script_html = "" if comparison else JS
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="generator" content="harness"><title>{e(title)}</title>'
            f"<style>{CSS}</style></head><body>{body_html}<script>{script_html}</script></body></html>")
