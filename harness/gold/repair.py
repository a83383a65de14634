"""``harness goldset check --fix``: a new golden set where only the unambiguous re-anchorable labels changed (to
their new span, in their new document when the evidence moved there); every other label is kept as it was.

A fix never changes a grade or loses a judgment: evidence that moved to a document the query already judges with
another grade (or that moves there from judgments of different grades) stays where it was, and is reported as a
conflict, as ``goldset merge`` does for a document judged with another grade."""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

from ..core.types import Document
from .load import RawQuery
from .check import Label
from .sources import judgment_row, query_row, raw_evidence_row


def _conflicts(q: RawQuery, fixes: dict[tuple[str, int, int | None], Label]) -> dict[tuple[int, int], str]:
    """The fixes of query ``q`` that would move evidence into a judgment of another grade: (judgment, evidence) ->
    why it is left unfixed."""
    grade_of = {j.doc_id: j.grade for j in q.relevant}
    incoming: dict[str, set[int]] = defaultdict(set)  # a document not judged yet: the grades moving into it
    moves = []
    for ji, j in enumerate(q.relevant):
        for ei in range(len(j.evidence)):
            lab = fixes.get((q.query_id, ji, ei))
            if lab is None or lab.fix[0] == j.doc_id:  # type: ignore[index]
                continue
            moves.append((ji, ei, j, lab.fix[0]))  # type: ignore[index]
            if lab.fix[0] not in grade_of:  # type: ignore[index]
                incoming[lab.fix[0]].add(j.grade)  # type: ignore[index]
    out = {}
    for ji, ei, j, doc in moves:
        if doc in grade_of and grade_of[doc] != j.grade:
            out[(ji, ei)] = (f"query {q.query_id!r}, document {j.doc_id!r} (grade {j.grade}): its evidence moved to "
                             f"document {doc!r}, which the query judges grade {grade_of[doc]}; not re-anchored "
                             f"(re-judge it)")
        elif doc not in grade_of and len(incoming[doc]) > 1:
            out[(ji, ei)] = (f"query {q.query_id!r}, document {j.doc_id!r} (grade {j.grade}): its evidence moved to "
                             f"document {doc!r}, as did evidence of grade(s) "
                             f"{', '.join(map(str, sorted(incoming[doc] - {j.grade})))}; not re-anchored "
                             f"(re-judge it)")
    return out


def repaired_rows(raw: Sequence[RawQuery], labels: Sequence[Label], docs: Mapping[str, Document]
                  ) -> tuple[list[dict], list[Label], list[str]]:
    """The repaired golden set's rows, the labels fixed, and the conflicts (fixes left undone, why)."""
    fixes = {(lab.query_id, lab.judgment, lab.evidence): lab for lab in labels if lab.fix is not None}
    rows, fixed, conflicts = [], [], []
    for q in raw:
        clash = _conflicts(q, fixes)
        conflicts.extend(clash.values())
        judged: dict[str, dict] = {}
        moved: dict[str, list[dict]] = defaultdict(list)
        grade_of: dict[str, int] = {}
        for ji, j in enumerate(q.relevant):
            kept = []
            for ei, ev in enumerate(j.evidence):
                lab = fixes.get((q.query_id, ji, ei))
                if lab is None or (ji, ei) in clash:
                    kept.append(raw_evidence_row(ev))
                    continue
                fixed.append(lab)
                doc, start, end = lab.fix  # type: ignore[misc]
                span = {"start": start, "end": end}
                if ev.text is not None:  # a span that recorded its text keeps recording it, as it reads now
                    span["text"] = docs[doc].text[start:end]
                span.update(ev.found or {})  # and how its text was first found (how, score): moving it keeps that
                if ev.group is not None:
                    span["group"] = ev.group
                if doc == j.doc_id:
                    kept.append(span)
                else:
                    if j.group is not None and ev.group is None:  # its judgment's group goes with it
                        span["group"] = j.group
                    moved[doc].append(span)
                    grade_of.setdefault(doc, j.grade)
            all_moved = j.evidence and not kept and j.doc_id not in docs
            if not all_moved:  # a judgment whose document is gone and whose evidence all moved goes with it
                judged[j.doc_id] = judgment_row(j.doc_id, j.grade, kept, j.group)
        for doc, spans in moved.items():
            row = judged.setdefault(doc, judgment_row(doc, grade_of[doc], []))
            assert row["grade"] == grade_of[doc], (q.query_id, doc)  # _conflicts left any other grade unfixed
            row.setdefault("evidence", []).extend(s for s in spans if s not in row.get("evidence", []))
        rows.append(query_row(q, list(judged.values())))
    return rows, fixed, conflicts
