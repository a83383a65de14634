"""Can the score tell a miss: ``summary.calibration`` and ``summary.abstention`` as the terminal line, report.md's
section and report.html's section with the top-score distribution of ok, failing and unanswerable queries. Every
number is the summary's (computed once by ``pipeline.calibrate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..diagnostics.kinds import BY_NAME
from .fmt import e, fixed, md, md_table

if TYPE_CHECKING:
    from ..result.model import Summary

GROUPS = (("ok", BY_NAME["ok"].colour), ("failing", BY_NAME["missing_document"].colour),
          ("unanswerable", BY_NAME["unanswerable"].colour))


def _rate(value: float | None, count: int, of: int) -> str:
    return "n/a" if value is None else f"{value:.1%} ({count} of {of})"


def _threshold(s: "Summary") -> str:
    a = s.abstention
    return "n/a" if a.threshold is None else f"{a.threshold:.6g} ({a.threshold_from})"


def text_line(s: "Summary") -> str | None:
    """``harness run``'s line on stderr when the golden set marks queries unanswerable (the question the line
    answers); None otherwise (results.json and the reports always have the numbers)."""
    if s.calibration is None or s.abstention is None or not s.abstention.unanswerable_queries:
        return None
    c, a = s.calibration, s.abstention
    return (f"calibration ({c.level}.{c.metric}): nAUC top score {fixed(c.nauc_top_score, 3)}, margin "
            f"{fixed(c.nauc_margin, 3)}, spread {fixed(c.nauc_spread, 3)}; abstention at {_threshold(s)}: false "
            f"answers {_rate(a.false_answer_rate, a.false_answers, a.unanswerable_queries)}, lost answers "
            f"{_rate(a.lost_answer_rate, a.lost_answers, a.answerable_queries)}")


def _rows(s: "Summary") -> list[list[str]]:
    c, a = s.calibration, s.abstention
    return [["nAUC top score", fixed(c.nauc_top_score, 4)], ["nAUC margin", fixed(c.nauc_margin, 4)],
            ["nAUC spread", fixed(c.nauc_spread, 4)], ["threshold", _threshold(s)],
            ["false answer rate", _rate(a.false_answer_rate, a.false_answers, a.unanswerable_queries)],
            ["lost answer rate", _rate(a.lost_answer_rate, a.lost_answers, a.answerable_queries)]]


def _about(s: "Summary") -> str:
    c, a = s.calibration, s.abstention
    return (f"nAUC: how well each confidence ranks the {c.queries} queries counted in {c.level}.{c.metric} by their "
            f"own value (1: the oracle, 0: no better than abstaining at random). A query is answered when its top "
            f"score is at least the threshold ({a.threshold_from}"
            + ("" if a.threshold_from == "suggested" or a.suggested_threshold is None
               else f"; suggested {a.suggested_threshold:.6g}")
            + f"); {a.unanswerable_queries} quer{'y is' if a.unanswerable_queries == 1 else 'ies are'} marked "
            f"answerable: false.")


def markdown_lines(s: "Summary") -> list[str]:
    if s.calibration is None or s.abstention is None:
        return []
    a = s.abstention
    out = ["", "## Calibration and abstention", ""] + md_table(["measure", "value"], _rows(s))
    out += ["", md(_about(s))]
    if a.false_answer_query_ids:
        out += ["", "Answered though unanswerable: " + md(", ".join(a.false_answer_query_ids[:10]))
                + (f" and {len(a.false_answer_query_ids) - 10} more" if len(a.false_answer_query_ids) > 10 else "")
                + "."]
    return out


def html_section(s: "Summary") -> str:
    if s.calibration is None or s.abstention is None:
        return ""
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in _rows(s))
    return ('<h2 id="calibration">Calibration and abstention</h2><table><thead><tr><th>measure</th><th>value</th>'
            f"</tr></thead><tbody>{rows}</tbody></table><p class=\"muted\">{e(_about(s))}</p>"
            + _histogram_svg(s))


def _histogram_svg(s: "Summary", width: int = 640, height: int = 220) -> str:
    """The top scores' histogram, the three groups side by side in each bin, the threshold as a line."""
    h = s.calibration.top_scores
    if not h.edges:
        return '<p class="muted">no query has a hit: no top score to show</p>'
    bins, pad, base = len(h.edges) - 1, 40, height - 40  # below the axis: its two labels, then the legend
    lo, hi = h.edges[0], h.edges[-1]
    top = max(max(getattr(h, name)) for name, _ in GROUPS) or 1
    step = (width - 2 * pad) / bins
    bar = step / (len(GROUPS) + 1)
    parts = [f'<svg id="top-score-histogram" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" role="img" aria-label="top score of each query: ok, failing, unanswerable">']
    for g, (name, colour) in enumerate(GROUPS):
        for b, n in enumerate(getattr(h, name)):
            if n:
                tall = (base - 10) * n / top
                parts.append(f'<rect x="{pad + b * step + g * bar:.1f}" y="{base - tall:.1f}" width="{bar:.1f}" '
                             f'height="{tall:.1f}" fill="{colour}"><title>{e(name)}: {n} '
                             f'({h.edges[b]:.4g} to {h.edges[b + 1]:.4g})</title></rect>')
        parts.append(f'<rect x="{pad + g * 120}" y="{height - 14}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{pad + g * 120 + 14}" y="{height - 5}" font-size="11">{e(name)} '
                     f'{sum(getattr(h, name))}</text>')
    parts.append(f'<line x1="{pad}" y1="{base}" x2="{width - pad}" y2="{base}" stroke="#667085"/>'
                 f'<text x="{pad}" y="{base + 12}" font-size="10">{lo:.4g}</text>'
                 f'<text x="{width - pad}" y="{base + 12}" font-size="10" text-anchor="end">{hi:.4g}</text>')
    t = s.abstention.threshold
    if t is not None and lo <= t <= hi:
        x = pad + (t - lo) / ((hi - lo) or 1) * (width - 2 * pad)
        parts.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{base}" stroke="#101828" stroke-dasharray="4 3"/>'
                     f'<text x="{x + 3:.1f}" y="12" font-size="10">threshold {t:.4g}</text>')
    parts.append("</svg>")
    note = f"; {h.without_hits} quer{'y' if h.without_hits == 1 else 'ies'} without a hit" if h.without_hits else ""
    return "".join(parts) + f'<p class="muted">top score of each query, by verdict{e(note)}</p>'
