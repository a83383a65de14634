"""``harness goldset check --fix``: a new golden set where only the unambiguous re-anchorable labels changed (to
their new span, in their new document when the evidence moved there); every other label is kept as it was."""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

from ..core.types import Document
from ..gold.load import RawQuery
from .check import Label
from .sources import judgment_row, query_row, raw_evidence_row


def repaired_rows(raw: Sequence[RawQuery], labels: Sequence[Label], docs: Mapping[str, Document]
                  ) -> tuple[list[dict], list[Label]]:
    """The repaired golden set's rows, and the labels fixed."""
    fixes = {(lab.query_id, lab.judgment, lab.evidence): lab for lab in labels if lab.fix is not None}
    rows, fixed = [], []
    for q in raw:
        judged: dict[str, dict] = {}
        moved: dict[str, list[dict]] = defaultdict(list)
        grade_of: dict[str, int] = {}
        for ji, j in enumerate(q.relevant):
            kept = []
            for ei, ev in enumerate(j.evidence):
                lab = fixes.get((q.query_id, ji, ei))
                if lab is None:
                    kept.append(raw_evidence_row(ev))
                    continue
                fixed.append(lab)
                doc, start, end = lab.fix  # type: ignore[misc]
                span = {"start": start, "end": end}
                if ev.text is not None:  # a span that recorded its text keeps recording it, as it reads now
                    span["text"] = docs[doc].text[start:end]
                span.update(ev.found or {})  # and how its text was first found (how, score): moving it keeps that
                if doc == j.doc_id:
                    kept.append(span)
                else:
                    moved[doc].append(span)
                    grade_of.setdefault(doc, j.grade)
            all_moved = j.evidence and not kept and j.doc_id not in docs
            if not all_moved:  # a judgment whose document is gone and whose evidence all moved goes with it
                judged[j.doc_id] = judgment_row(j.doc_id, j.grade, kept)
        for doc, spans in moved.items():
            row = judged.setdefault(doc, judgment_row(doc, grade_of[doc], []))
            row.setdefault("evidence", []).extend(s for s in spans if s not in row.get("evidence", []))
        rows.append(query_row(q, list(judged.values())))
    return rows, fixed
