"""report.html's ladder of a composite retriever's stages in a query's drill-down (``render.stages``); every
interpolation goes through ``e`` (a test reads this module's f-strings)."""

from __future__ import annotations

from typing import Mapping

from .fmt import e
from .stages import lost_text, rows


def ladder_html(detail: Mapping) -> str:
    """The stage table of one query's drill-down ("" when its retriever recorded no stages)."""
    ladder = rows(detail)
    if not ladder:
        return ""
    lost = detail.get("lost_at")
    body_html = "".join(f'<tr class="{e("lost" if here else "")}"><td>{e(path)}</td><td>{e(role)}</td>'
                        f"<td>{e(depth)}</td><td>{e(docs)}</td><td>{e(units)}</td></tr>"
                        for path, role, depth, docs, units, here in ladder)
    head_html = f'<p class="lost-at"><b>{e(lost_text(lost))}</b></p>' if lost else ""
    return (f'{head_html}<table class="stages"><thead><tr><th>stage</th><th>role</th><th>depth</th>'
            f"<th>relevant documents: rank</th><th>evidence units: rank</th></tr></thead><tbody>{body_html}</tbody>"
            "</table>")
