"""Every label of a golden set classified against the current corpus and, given one, against what changed since
(an old corpus, or the per-document fingerprints a run recorded in results.json):

- ``valid``: the evidence is where the label says, and its sentence and the sentences either side did not change;
- ``re_anchorable``: the evidence text moved (in its document or to another one) and was found again, exactly or
  after normalisation; unambiguous when found in exactly one place;
- ``split``: only part of the evidence is found (partly deleted), or its parts are now in different places
  (several documents);
- ``orphaned``: the document or the evidence is gone;
- ``stale``: the evidence is still there but its context changed (its own sentence, or the sentence before or after
  it: ``detail`` says which), or the evidence was edited slightly (a fuzzy match), or the document changed and the
  old text is unknown. Text added or removed further away only moves the evidence (``re_anchorable``): a person
  need not re-judge what only moved.

A label is one evidence item of a judgment, or the judgment itself when it has no evidence."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

from ..core.fingerprint import document_fingerprint
from ..core.types import Document
from ..text.analysis import sentence_spans
from .load import RawEvidence, RawQuery
from .locate import Match, NormCache, find_all as _find_all, locate, normalise

STATUSES = ("valid", "re_anchorable", "split", "orphaned", "stale")


@dataclass
class Label:
    query_id: str
    doc_id: str
    status: str
    old_span: dict | None
    new_span: dict | None
    detail: str
    judgment: int = 0  # index in the query's relevant list
    evidence: int | None = None  # index in the judgment's evidence; None: the judgment itself
    fix: tuple[str, int, int] | None = field(default=None)  # (doc, start, end) when re-anchoring is unambiguous

    def to_dict(self) -> dict:
        return {"query_id": self.query_id, "doc_id": self.doc_id, "status": self.status, "old_span": self.old_span,
                "new_span": self.new_span, "detail": self.detail}


@dataclass(frozen=True)
class Before:
    """What the corpus was: its documents (an old corpus), or only their fingerprints (a run's results.json)."""

    docs: Mapping[str, Document] | None = None
    fingerprints: Mapping[str, str] | None = None

    def changed(self, doc: Document) -> bool | None:
        """Whether ``doc`` differs from before; None when nothing is known about it."""
        if self.docs is not None:
            old = self.docs.get(doc.doc_id)
            return None if old is None else old.text != doc.text
        if self.fingerprints is not None and doc.doc_id in self.fingerprints:
            return self.fingerprints[doc.doc_id] != document_fingerprint(doc.text)
        return None


def check_goldset(raw: Sequence[RawQuery], docs: Mapping[str, Document], before: Before | None = None) -> list[Label]:
    before = before or Before()
    cache = NormCache()
    labels = []
    for q in raw:
        for ji, j in enumerate(q.relevant):
            if not j.evidence:
                labels.append(_doc_label(q.query_id, j.doc_id, ji, docs, before))
            for ei, ev in enumerate(j.evidence):
                label = _evidence_label(q.query_id, j.doc_id, ev, docs, before, cache)
                label.judgment, label.evidence = ji, ei
                labels.append(label)
    return labels


def counts(labels: Sequence[Label]) -> dict[str, int]:
    return {s: sum(lab.status == s for lab in labels) for s in STATUSES}


def _span(doc_id: str, start: int, end: int) -> dict:
    return {"doc_id": doc_id, "start": start, "end": end}


def _doc_label(qid: str, doc_id: str, ji: int, docs: Mapping[str, Document], before: Before) -> Label:
    doc = docs.get(doc_id)
    if doc is None:
        return Label(qid, doc_id, "orphaned", None, None, "the document is not in the corpus", ji)
    if before.changed(doc):
        return Label(qid, doc_id, "stale", None, None, "the document changed (a judgment without evidence: re-judge "
                                                         "it)", ji)
    return Label(qid, doc_id, "valid", None, None, "", ji)


CONTEXT_PARTS = ("the sentence before it", "its own sentence", "the sentence after it")


@lru_cache(maxsize=64)
def _sentences(paragraph: str) -> tuple[list[int], list[tuple[int, int]]]:
    spans = sentence_spans(paragraph)  # a paragraph's sentences found once for all its labels
    return [s for s, _ in spans], spans


def _context(text: str, start: int, end: int) -> tuple[str, str, str]:
    """The evidence's own sentence(s) and one sentence either side within its paragraph (empty at the paragraph's
    edge: a paragraph moved to a document of its own keeps its context), normalised for comparing: a change of
    case, whitespace or Unicode form alone is not a change of content."""
    a, b = text.rfind("\n\n", 0, start), text.find("\n\n", end)
    base = 0 if a < 0 else a + 2
    para = text[base: len(text) if b < 0 else b]
    start, end = start - base, end - base
    starts, spans = _sentences(para)
    if not spans:
        return "", normalise(para[start:end])[0], ""
    first = max(bisect.bisect_right(starts, start) - 1, 0)
    last = max(bisect.bisect_left(starts, end) - 1, first)
    own = para[min(spans[first][0], start):max(spans[last][1], end)]
    before = para[slice(*spans[first - 1])] if first > 0 else ""
    after = para[slice(*spans[last + 1])] if last + 1 < len(spans) else ""
    return normalise(before)[0], normalise(own)[0], normalise(after)[0]


def _context_change(old: tuple[str, str, str] | None, new: tuple[str, str, str]) -> str | None:
    """What changed around the evidence (None: nothing), for ``detail``."""
    if old is None:
        return None
    changed = [name for name, a, b in zip(CONTEXT_PARTS, old, new) if a != b]
    return f"{' and '.join(changed)} changed" if changed else None


def _evidence_label(qid: str, doc_id: str, ev: RawEvidence, docs: Mapping[str, Document], before: Before,
                    cache: NormCache) -> Label:
    doc = docs.get(doc_id)
    old_doc = before.docs.get(doc_id) if before.docs is not None else None
    old_span = None
    if ev.quote is not None:
        needle = ev.quote
        if old_doc is not None and (at := old_doc.text.find(needle)) >= 0:
            old_span = _span(doc_id, at, at + len(needle))
    else:
        assert ev.start is not None and ev.end is not None
        old_span = _span(doc_id, ev.start, ev.end)
        # The span's text as it was: recorded beside it (`goldset build` writes it), else from the old corpus,
        # else from the current document if it did not change.
        if old_doc is not None:
            source = old_doc
        elif doc is not None and not before.changed(doc):
            source = doc
        else:
            source = None
        if ev.text is None and source is not None and ev.end > len(source.text):
            return Label(qid, doc_id, "orphaned", old_span, None,
                         f"the span ends past the document's end ({len(source.text)} chars)")
        needle = ev.text if ev.text is not None else None if source is None else source.text[ev.start:ev.end]
    old_context = _context(old_doc.text, old_span["start"], old_span["end"]) if old_doc and old_span else None
    if needle is None:
        if doc is None:
            return Label(qid, doc_id, "orphaned", old_span, None, "the document is not in the corpus")
        return Label(qid, doc_id, "stale", old_span, None, "the document changed since the run and the span's text "
                     "then is unknown: check with --against OLD_CORPUS to re-anchor it")
    return _place(qid, doc_id, needle, ev, doc, docs, before, old_span, old_context, cache)


def _place(qid, doc_id, needle, ev, doc, docs, before, old_span, old_context, cache: NormCache) -> Label:  # noqa: ANN001
    short = needle if len(needle) <= 50 else needle[:47] + "..."
    if doc is not None:
        found = locate(doc.text, needle, fuzzy=False)
        exact = [m for m in found if m.how == "exact"]
        if ev.quote is not None and len(exact) > 1:  # a run refuses it too (gold.resolve: quote_ambiguous)
            return Label(qid, doc_id, "re_anchorable", old_span, None, f"ambiguous: the quote is found "
                         f"{len(exact)} times in its document ({', '.join(f'{m.start}..{m.end}' for m in exact[:5])}); "
                         f"give start/end for the one meant")
        # Where the label says: an exact quote anywhere (a quote is resolved by search), a span at its offsets
        # (also when only case, whitespace or Unicode form changed there: the same span still reads it).
        here = next((m for m in found if (m.how == "exact" and ev.quote is not None)
                     or (ev.quote is None and (m.start, m.end) == (ev.start, ev.end))), None)
        if here is not None:
            new = _span(doc_id, here.start, here.end)
            change = _context_change(old_context, _context(doc.text, here.start, here.end))
            if change:
                return Label(qid, doc_id, "stale", old_span, new, f"the evidence is in place; {change}")
            if old_context is None and before.changed(doc):
                return Label(qid, doc_id, "stale", old_span, new, "the document changed since the run; the "
                             "evidence is still in it")
            return Label(qid, doc_id, "valid", old_span, new, "")
        if found:
            return _moved(qid, doc_id, old_span, found, doc_id, doc, old_context, "in the same document")
    # Not in its document: anywhere else in the corpus, exactly or normalised.
    # Exact matches anywhere win over normalised ones (as in a single document).
    others = [d for d in docs.values() if d.doc_id != doc_id]
    elsewhere = [(d, Match(s, s + len(needle), "exact")) for d in others for s in _find_all(d.text, needle)]
    if not elsewhere:
        norm_needle = normalise(needle)[0]
        elsewhere = [(d, m) for d in others if norm_needle in cache.of(d.doc_id, d.text)[0]
                     for m in locate(d.text, needle, fuzzy=False, norm=cache.of(d.doc_id, d.text),
                                     norm_needle=norm_needle)]
    if len({d.doc_id for d, _ in elsewhere}) == 1:
        other = elsewhere[0][0]
        return _moved(qid, doc_id, old_span, [m for _, m in elsewhere], other.doc_id, other, old_context,
                      f"moved to document {other.doc_id!r}")
    if elsewhere:
        where = sorted({d.doc_id for d, _ in elsewhere})
        return Label(qid, doc_id, "re_anchorable", old_span, None, f"ambiguous: found in {len(where)} documents "
                     f"({', '.join(where[:5])}); choose one")
    if doc is not None:
        fuzzy = locate(doc.text, needle)
        if len(fuzzy) == 1:
            m = fuzzy[0]
            return Label(qid, doc_id, "stale", old_span, _span(doc_id, m.start, m.end),
                         f"the evidence was edited: a fuzzy match (score {m.score:.2f}) now reads "
                         f"{doc.text[m.start:m.end][:60]!r}")
    parts = _parts(needle)
    placed = [_where(p, docs, cache) for p in parts]
    n_found = sum(bool(p) for p in placed)
    if n_found and n_found < len(parts):
        return Label(qid, doc_id, "split", old_span, None, f"partly deleted: {n_found} of {len(parts)} parts of "
                     f"{short!r} found")
    if n_found:
        holders = sorted({d for p in placed for d in p})
        return Label(qid, doc_id, "split", old_span, None, f"its parts are now apart, in {', '.join(holders[:5])}")
    if doc is None:
        return Label(qid, doc_id, "orphaned", old_span, None, "the document is not in the corpus and the evidence is "
                     "found nowhere")
    return Label(qid, doc_id, "orphaned", old_span, None, f"the evidence {short!r} is no longer in the document")


def _moved(qid, doc_id, old_span, found: list[Match], new_doc: str, doc: Document, old_context, where: str) -> Label:  # noqa: ANN001
    if len(found) > 1:
        return Label(qid, doc_id, "re_anchorable", old_span, None, f"ambiguous: {len(found)} places {where} "
                     f"({', '.join(f'{m.start}..{m.end}' for m in found[:5])}); choose one")
    m = found[0]
    new = _span(new_doc, m.start, m.end)
    change = _context_change(old_context, _context(doc.text, m.start, m.end))
    if change:
        return Label(qid, doc_id, "stale", old_span, new, f"{where}, and {change}")
    return Label(qid, doc_id, "re_anchorable", old_span, new, f"{where} ({m.how} match)",
                 fix=(new_doc, m.start, m.end))


def _parts(text: str) -> list[str]:
    """Sentences when the evidence has several; else its two halves by words (too short to split: itself)."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    if len(sentences) >= 2:
        return sentences
    words = text.split()
    if len(words) < 6:
        return [text]
    half = len(words) // 2
    return [" ".join(words[:half]), " ".join(words[half:])]


def _where(part: str, docs: Mapping[str, Document], cache: NormCache) -> set[str]:
    norm, _ = normalise(part)
    return {d.doc_id for d in docs.values() if norm and norm in cache.of(d.doc_id, d.text)[0]}
