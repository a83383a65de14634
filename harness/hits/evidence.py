"""What the model receives: the window's text against the evidence, in characters (or tokens).

For one query and a cutoff (its context window, or the first k hits), the window's text is the union of its hits'
spans, overlapping hits merged (a character two hits share is received once); the evidence is the union of the
query's unit spans (``hits.units``). Then, with |.| the size of a set of characters:

- ``evidence_recall``    = |evidence ∩ window| / |evidence|  (0 when the query has no evidence span)
- ``evidence_precision`` = |evidence ∩ window| / |window|    (0 for an empty window)
- ``evidence_iou``       = |evidence ∩ window| / |evidence ∪ window|

Chroma's chunking evaluation measures the same three over tokens; here they are exact and per query. Characters by
default; with a ``TokenCounter`` they count the tokens of each document (a token is in a set when one of its
characters is), so a team that budgets in tokens reads them in the same unit.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Mapping, Sequence

import numpy as np

from .units import EvidenceUnits

FAMILIES = ("evidence_recall", "evidence_precision", "evidence_iou")

Intervals = dict[str, list[tuple[int, int]]]  # per document, sorted and disjoint [start, end)


def merged(spans: Sequence[tuple[str, int, int]]) -> Intervals:
    """``(doc, start, end)`` spans as each document's sorted, disjoint intervals (overlapping or touching joined)."""
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for doc, start, end in spans:
        if end > start:
            by_doc.setdefault(doc, []).append((start, end))
    out: Intervals = {}
    for doc, parts in by_doc.items():
        parts.sort()
        joined = [parts[0]]
        for s, e in parts[1:]:
            if s <= joined[-1][1]:
                joined[-1] = (joined[-1][0], max(joined[-1][1], e))
            else:
                joined.append((s, e))
        out[doc] = joined
    return out


def _intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


class TokenSizes:
    """The size of a set of characters in tokens: the tokens of its document that have a character in it."""

    def __init__(self, counter, doc_text: Mapping[str, str]):
        self._counter, self._text = counter, doc_text
        self._starts: dict[str, tuple[list[int], list[int]]] = {}

    def _tokens(self, doc: str) -> tuple[list[int], list[int]]:
        if doc not in self._starts:
            spans = self._counter.token_spans(self._text.get(doc, ""))
            self._starts[doc] = ([s for s, _ in spans], [e for _, e in spans])
        return self._starts[doc]

    def __call__(self, doc: str, parts: list[tuple[int, int]]) -> int:
        starts, ends = self._tokens(doc)
        seen: set[int] = set()
        for s, e in parts:
            t = bisect_left(ends, s + 1)  # the first token ending after s
            while t < len(starts) and starts[t] < e:
                seen.add(t)
                t += 1
        return len(seen)


def _chars(doc: str, parts: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in parts)


def sizes(evidence: Intervals, window: Intervals, size=_chars) -> tuple[int, int, int]:
    """(|evidence|, |window|, |evidence ∩ window|) in characters, or in whatever ``size`` counts."""
    e = sum(size(d, p) for d, p in evidence.items())
    w = sum(size(d, p) for d, p in window.items())
    both = sum(size(d, _intersection(p, window[d])) for d, p in evidence.items() if d in window)
    return e, w, both


def values(family: str, e: int, w: int, both: int) -> float:
    """THE formula of each evidence metric from the three sizes."""
    if family == "evidence_recall":
        return both / e if e else 0.0
    if family == "evidence_precision":
        return both / w if w else 0.0
    union = e + w - both
    return both / union if union else 0.0


def evidence_columns(lists, units: EvidenceUnits, window_k: Sequence[int], specs, counter=None,
                     doc_text: Mapping[str, str] | None = None) -> dict:
    """Each evidence spec's value per query of ``units`` (golden-set order), for the ranked lists (or
    ``HitTable``) ``lists`` given in that order. ``counter``: a ``TokenCounter`` to count tokens (needs
    ``doc_text``), else characters."""
    wanted = [s for s in specs if s.family in FAMILIES]
    out = {s: np.zeros(len(units), dtype=np.float64) for s in wanted}
    if not wanted:
        return out
    size = _chars if counter is None else TokenSizes(counter, doc_text or {})
    table = lists if hasattr(lists, "chunks") and hasattr(lists, "offsets") else None
    if table is not None:
        starts = np.fromiter((c.start for c in table.chunks), dtype=np.int64, count=len(table.chunks))
        ends = np.fromiter((c.end for c in table.chunks), dtype=np.int64, count=len(table.chunks))
        docs = [c.doc_id for c in table.chunks]
    for i in range(len(lists)):
        if table is not None:
            qid = str(table.query_ids[i])
            codes = table.chunk[int(table.offsets[i]):int(table.offsets[i + 1])].tolist()
            hits = [(docs[c], int(starts[c]), int(ends[c])) for c in codes]
        else:
            ranked = lists[i]
            qid = ranked.query_id
            hits = [(h.doc_id, h.start, h.end) for h in ranked.hits]
        row = units.at(i, qid)
        found = units.row_of(i, qid)
        if found < 0:
            continue
        evidence = merged([(u.doc_id, s.start, s.end) for u in row.units for s in u.spans])
        cache: dict[int, tuple[int, int, int]] = {}
        for spec in wanted:
            cut = int(window_k[i]) if spec.window else spec.k
            if cut not in cache:
                cache[cut] = sizes(evidence, merged(hits[:cut]), size)
            out[spec][found] = values(spec.family, *cache[cut])
    return out


def rule_text(counter) -> str:
    """The evidence metrics' rule for a result's conventions, in the unit they count."""
    unit = "characters" if counter is None else f"tokens of {counter.spec!r} (cutoff.tokenizer)"
    return (f"evidence_recall/precision/iou count {unit}: the window's text is the union of the first k hits' "
            "spans (@window: the context window), overlapping hits merged; the evidence is the union of the "
            "query's evidence spans; recall = shared / evidence, precision = shared / window, iou = shared / "
            "union; the same value at both levels")
