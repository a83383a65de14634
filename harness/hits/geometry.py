"""Evidence geometry of a run: where the evidence units lie against the chunks and the windows, counted per query.

Three things a chunker or a window size gets wrong, each counted with the queries named (``docs/groups.md``):
- ``split_evidence``: a relevant evidence unit no single chunk of the corpus holds whole (it crosses a boundary);
- ``thin_first``: the window's first chunk has fewer than ``THIN_WORDS`` words (a heading alone, a page number);
- ``mostly_noise``: the window holds evidence, but less than half of its characters are evidence (hits of one
  document merged where they overlap, so a character is counted once).
Queries whose golden-set entry cannot be checked (``goldset_error``) are left out: their evidence is not known.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Collection, Iterable, Sequence

from ..core.types import Chunk, GoldSet, Hit, Judgment

THIN_WORDS = 5  # fewer words than this: a chunk with almost no content
MOSTLY_NOISE = 0.5  # a window whose evidence share of characters is below this is mostly non-evidence
_WORD = re.compile(r"\w+")


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Half-open spans merged where they overlap or touch, in order."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _overlap(xs: list[tuple[int, int]], ys: list[tuple[int, int]]) -> int:
    """Characters in both of two merged span lists."""
    total, i, j = 0, 0, 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0, hi - lo)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def evidence_share(window: Sequence[Hit], judgments: Sequence[Judgment]) -> float | None:
    """The share of the window's characters that are evidence of relevant judgments (None: the window is empty or
    the query has no evidence span)."""
    evidence: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for j in judgments:
        if j.relevance >= 1:
            evidence[j.doc_id].extend((s.start, s.end) for s in j.evidence)
    if not evidence or not window:
        return None
    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for h in window:
        seen[h.doc_id].append((h.start, h.end))
    size = found = 0
    for doc, spans in seen.items():
        kept = merged(spans)
        size += sum(b - a for a, b in kept)
        if doc in evidence:
            found += _overlap(kept, merged(evidence[doc]))
    return found / size if size else None


def thin(text: str) -> bool:
    return len(_WORD.findall(text)) < THIN_WORDS


@dataclass
class Geometry:
    """The counts, each with its queries in golden-set order."""

    split_units: int = 0  # evidence units no chunk holds whole
    split_queries: list[str] = field(default_factory=list)
    thin_first: list[str] = field(default_factory=list)
    thin_examples: list[str] = field(default_factory=list)  # the thin chunks' texts, as first seen
    mostly_noise: list[str] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)  # the evidence share of every window that holds evidence


def evidence_geometry(gold: GoldSet, chunks: Sequence[Chunk], lists: Sequence, window_k: Sequence[int],
                      chunk_text: dict[str, str], skip: Collection[str] = ()) -> Geometry:
    """``lists``: the ranked lists in golden-set order; ``skip``: query ids left out (golden-set errors)."""
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    if gold.has_evidence:
        for c in chunks:
            by_doc[c.doc_id].append((c.start, c.end))
    out = Geometry()
    lazy = getattr(lists, "lazy", None)
    for i, (qid, judgments, k) in enumerate(zip(gold.query_ids(), gold.judgments_per_query(), window_k)):
        if qid in skip:
            continue
        split = sum(1 for j in judgments if j.relevance >= 1 for s in j.evidence
                    if not any(a <= s.start and s.end <= b for a, b in by_doc.get(j.doc_id, ())))
        if split:
            out.split_units += split
            out.split_queries.append(qid)
        window = (lazy(i) if lazy is not None else lists[i]).hits[:k]
        if window:
            text = chunk_text.get(window[0].chunk_id, "")
            if thin(text):
                out.thin_first.append(qid)
                if len(out.thin_examples) < 3 and text.strip() not in out.thin_examples:
                    out.thin_examples.append(text.strip())
        share = evidence_share(window, judgments)
        if share:  # a window with no evidence at all is a miss (a verdict says which), not noise
            out.shares.append(share)
            if share < MOSTLY_NOISE:
                out.mostly_noise.append(qid)
    return out
