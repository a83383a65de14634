"""Matplotlib charts as inline SVG for the HTML pages: each chart keeps a smallest width and scrolls beyond it."""

from __future__ import annotations

import re

from .fmt import e
from .plots import CHARTS_ENV, charts_off

SMALLEST_SCALE = 0.75
_SVG_WIDTH = re.compile(r'<svg\b[^>]*?\swidth="([0-9.]+)pt"')


def _svg_at_least(svg_html: str) -> str:
    """The chart's SVG (matplotlib's: its texts escaped there) with its smallest width (``SMALLEST_SCALE`` of its
    own), in a box that scrolls beyond it."""
    found = _SVG_WIDTH.match(svg_html)
    if found:
        smallest = str(round(float(found.group(1)) * 4 / 3 * SMALLEST_SCALE))  # pt to CSS px
        svg_html = svg_html.replace("<svg ", f'<svg style="min-width:{e(smallest)}px" ', 1)
    return f'<div class="plot">{svg_html}</div>'


def svgs(charts) -> str:
    """The charts (``render.plots``) in one block, or why there are none (None): turned off, or no matplotlib."""
    if charts is None and charts_off():
        return f'<p class="muted">Charts are off ({e(CHARTS_ENV)}=off).</p>'
    if charts is None:
        return '<p class="muted">Plots need matplotlib: pip install &#x27;rag-harness[report]&#x27;.</p>'
    svgs_html = "".join(_svg_at_least(c.svg()) for c in charts)
    return f'<div class="plots">{svgs_html}</div>'
