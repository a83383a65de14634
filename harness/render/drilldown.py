"""One query's drill-down, from its QueryResult and a text lookup: the gold evidence (document, span, text), where
its chunk ranked (or "not retrieved"), the chunks that outranked it with their scores, the window boundary, the
position of buried evidence inside the window, and for a missing document the gold document itself.

Built as plain data here; ``html`` and ``outputs`` (report.md) render it. Nothing is recomputed from metrics: ranks,
relevance and window membership are the hits' own fields (``HitRecord.relevant``, ``in_window``), as the run
judged them. Texts come from a ``Texts`` lookup, so whatever source the caller has (the in-memory run, a reloaded
corpus, texts saved in the result) plugs in the same way.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ..result.selection import SHOWN_ABOVE, drill_ranks, drill_target  # noqa: F401  (SHOWN_ABOVE: its old home was here)

if TYPE_CHECKING:
    from ..result.model import HitRecord, QueryResult

# Chunk ids are "doc#start-end" (core.types.Chunk.of_span) and a chunk's text is its document's text[start:end]:
# a span of a document can be read from the chunks that cover it when the whole document is not at hand.
_CHUNK_ID = re.compile(r"^(?P<doc>.*)#(?P<start>\d+)-(?P<end>\d+)$")


@dataclass(frozen=True)
class Texts:
    """Texts for drill-downs: chunk texts by chunk id, and whole documents by doc id when the caller has them."""

    chunks: Mapping[str, str] = field(default_factory=dict)
    docs: Mapping[str, str] = field(default_factory=dict)
    _index: list = field(default_factory=list, repr=False, compare=False)  # ``_by_doc``'s index, made once

    def chunk(self, chunk_id: str) -> str | None:
        return self.chunks.get(chunk_id)

    def span(self, doc_id: str, start: int, end: int) -> str | None:
        """``doc[start:end]``: from the document, else stitched from the chunks that cover it; None when the
        texts at hand do not cover the whole span (never a guess)."""
        if doc_id in self.docs:
            return self.docs[doc_id][start:end]
        pieces = [(a, b, text) for a, b, text in self._by_doc().get(doc_id, ())
                  if b - a == len(text) and a < end and start < b]
        pos, out = start, []
        for a, b, text in sorted(pieces):
            if a <= pos < b:
                take = min(b, end)
                out.append(text[pos - a:take - a])
                pos = take
        return "".join(out) if pos >= end else None

    def doc_head(self, doc_id: str, width: int = 240) -> str | None:
        """The start of a document (for a gold document that was never retrieved)."""
        text = self.docs.get(doc_id)
        if text is None:
            text = self._first_chunk(doc_id)
        return None if text is None else snippet(text, width)

    def _first_chunk(self, doc_id: str) -> str | None:
        found = self._by_doc().get(doc_id)
        return min((a, text) for a, _, text in found)[1] if found else None

    def _by_doc(self) -> dict[str, list[tuple[int, int, str]]]:
        """doc id -> (start, end, text) of its chunks, made once: a report asks for hundreds of documents."""
        if not self._index:
            index: dict[str, list[tuple[int, int, str]]] = {}
            for chunk_id, text in self.chunks.items():
                m = _CHUNK_ID.match(chunk_id)
                if m:
                    index.setdefault(m["doc"], []).append((int(m["start"]), int(m["end"]), text))
            self._index.append(index)
        return self._index[0]


def snippet(text: str, width: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class EvidenceRow:
    doc_id: str
    start: int | None  # None: the judgment has no evidence span (the whole document is the evidence)
    end: int | None
    text: str | None
    rank: int | None  # the best-ranked chunk overlapping the span (of the document, without a span); None: not retrieved
    chunk_id: str | None
    in_window: bool
    group: str | None = None  # its evidence group (docs/groups.md); None: the unnamed one


@dataclass(frozen=True)
class RankRow:
    rank: int
    score: float
    chunk_id: str
    doc_id: str
    start: int
    end: int
    mark: str  # "evidence" | "right document" | ""
    in_window: bool
    text: str | None


@dataclass(frozen=True)
class GoldDoc:
    doc_id: str
    grade: int
    best_rank: int | None  # None: not in the ranking
    text: str | None  # its best-ranked chunk's text, or the document's start


@dataclass(frozen=True)
class DrillDown:
    query_id: str
    kind: str
    reason: str
    flags: list[str]
    window: int
    depth_retrieved: int
    evidence: list[EvidenceRow]
    gold_docs: list[GoldDoc]
    target_rank: int | None  # the first relevant chunk's rank (evidence), else the first right document's
    rows: list[RankRow]  # ranks 1 .. max(window, target) (capped at SHOWN_ABOVE), the window boundary in_window
    more_above: int  # chunks between the shown rows and the target that are not shown
    position: str | None  # where the evidence sits inside the window (ok, incomplete, buried_evidence)
    unjudged_share: float | None

    @property
    def outranked_by(self) -> list[RankRow]:
        """The chunks ranked above the evidence (or, without one, above the first right document)."""
        if self.target_rank is None:
            return [r for r in self.rows if r.in_window]
        return [r for r in self.rows if r.rank < self.target_rank]

    def headline(self) -> str:
        """One sentence: where the evidence ranked against the window."""
        if self.kind == "goldset_error":
            return "the golden-set entry cannot be checked against the corpus: no evidence to rank"
        if not self.evidence:
            return "no gold evidence for this query"
        parts = []
        for ev in self.evidence:
            what = ev.doc_id if ev.start is None else f"{ev.doc_id} [{ev.start}, {ev.end})"
            if ev.rank is None:
                where = f"not retrieved (not in the top {self.depth_retrieved})"
            elif ev.in_window:
                where = f"ranked {ev.rank}, inside the {self.window}-chunk window"
            else:
                where = f"ranked {ev.rank}, {ev.rank - self.window} past the {self.window}-chunk window"
            parts.append(f"evidence in {what}: {where}")
        return "; ".join(parts)


def _mark(h: HitRecord) -> str:
    return "evidence" if h.relevant else ("right document" if h.doc_relevant else "")


def _overlaps(h: HitRecord, doc_id: str, start: int, end: int) -> bool:
    return h.doc_id == doc_id and h.start < end and start < h.end


def drilldown(q: QueryResult, texts: Texts | None = None, shown: int = SHOWN_ABOVE) -> DrillDown:
    """The drill-down of one query (any kind; the renderers choose which to show)."""
    texts = texts or Texts()
    hits: Sequence[HitRecord] = q.hits
    k = q.effective_k
    # A golden-set error's judgments could not be checked (an unknown document, a quote not in it): its gold is
    # not evidence to rank against, so only the window is shown, with the reason.
    checkable = q.verdict.kind != "goldset_error"
    gold = [g for g in q.gold if g.grade >= 1] if checkable else []
    evidence = []
    for g in gold:
        if g.grade < 1:
            continue
        spans = g.evidence or [None]
        carried = list(getattr(g, "evidence_text", None) or [])  # results carry each span's text (#13)
        for i, sp in enumerate(spans):
            if sp is None:  # the whole document is the evidence: show its best-ranked chunk, else its start
                hit = next((h for h in hits if h.doc_id == g.doc_id), None)
                start = end = None
                text = (texts.chunk(hit.chunk_id) if hit else None) or texts.doc_head(g.doc_id)
            else:
                start, end = sp
                hit = next((h for h in hits if h.relevant and _overlaps(h, g.doc_id, start, end)), None)
                text = carried[i] if i < len(carried) and carried[i] else texts.span(g.doc_id, start, end)
            evidence.append(EvidenceRow(g.doc_id, start, end, text, hit.rank if hit else None,
                                        hit.chunk_id if hit else None, bool(hit and hit.in_window), g.group))
    gold_docs = []
    for g in {g.doc_id: g for g in gold}.values():  # a document with spans in two groups is two judgments
        best = next((h for h in hits if h.doc_id == g.doc_id), None)
        text = texts.chunk(best.chunk_id) if best else None
        gold_docs.append(GoldDoc(g.doc_id, g.grade, best.rank if best else None,
                                 snippet(text) if text is not None else texts.doc_head(g.doc_id)))
    target = drill_target((h.relevant for h in hits), (h.doc_relevant for h in hits), checkable)
    depth = max(k, target or 0)
    top, deeper = drill_ranks(k, target, shown)
    rows = [RankRow(h.rank, h.score, h.chunk_id, h.doc_id, h.start, h.end, _mark(h), h.in_window,
                    texts.chunk(h.chunk_id)) for h in hits[:top]]
    more = max(0, min(depth, len(hits)) - len(rows) - (1 if deeper else 0))
    if deeper:  # the target row itself is always shown, after the gap
        h = hits[deeper - 1]
        rows.append(RankRow(h.rank, h.score, h.chunk_id, h.doc_id, h.start, h.end, _mark(h), h.in_window,
                            texts.chunk(h.chunk_id)))
    position = None
    detail = q.verdict.detail
    if q.verdict.kind in ("ok", "incomplete", "buried_evidence") and isinstance(detail.get("rank"), int):
        position = f"first evidence at rank {detail['rank']} of {k} ({detail.get('position', '')} of the window)"
    share = detail.get("unjudged_share")
    return DrillDown(q.id, q.verdict.kind, q.verdict.reason, list(q.verdict.flags), k, len(hits), evidence, gold_docs,
                     target, rows, more, position, float(share) if isinstance(share, (int, float)) else None)


def _worst_key(kind: str):
    if kind == "missing_document":
        def key(q):
            first = q.verdict.detail.get("first_rank")
            return (first is None, first if isinstance(first, int) else 0, q.id)
        return key
    return lambda q: (q.metrics.chunk.get("rr@window", 0), q.id)


def worst_of(queries: Iterable[QueryResult], kind: str, n: int) -> tuple[int, list[QueryResult]]:
    """(how many queries are of ``kind``, its ``n`` worst): missing documents by their first relevant rank (not
    retrieved and absent last), the others by the window's reciprocal rank, then id. The queries are read once
    as a stream holding at most ``n`` records (a large run's are spooled, ``core.querystore``)."""
    total = 0

    def mine():
        nonlocal total
        for q in queries:
            if q.verdict.kind == kind:
                total += 1
                yield q
    rows = heapq.nsmallest(n, mine(), key=_worst_key(kind))  # = sorted(...)[:n], ties in input order
    return total, rows
