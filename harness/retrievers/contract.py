"""What a retriever's output must be.

The retriever contract: ``index(chunks)`` once, then ``retrieve(queries, k)`` returns one ``RankedList`` per query
in input order, at most ``k`` hits each, by score descending with ties by chunk id descending (trec_eval's rule;
``ranking.rank_hits`` makes such lists), ranks 1..n, inputs untouched. ``check_output`` enforces it on every batch,
ties aside: a hit's final chunk id is known only once it is placed, so placement puts ties in order (built-in kinds
already are).

The hit contract: every hit names a chunk the run knows: by chunk id, or by doc id + ``[start, end)`` (a span that
is not one of the corpus's chunks becomes a chunk of that span, judged by evidence overlap like any other), or by
text found exactly once in its document. ``HitPlacer`` places hits; one it cannot place is a ``HitProblem`` naming
the query, the value and why, never an invented chunk or a silent zero.

An optional hook, not part of the contract every retriever keeps: ``stage_lists()``, each query's stages of the last
``retrieve`` call (``retrievers.stages``; the composites have it), from which a run says which stage lost evidence.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..core.errors import RetrieverError
from ..hits.table import hits_of
from ..core.types import Chunk, Document, Hit, Query, RankedList
from ..text.normalize import LooseText, find_loose
from .ranking import rank_hits

MAX_SHOWN = 20  # problems listed in one error or warning; the rest are counted


@dataclass(frozen=True)
class IndexedLists:
    """One batch's ranked lists as positions in the chunks the retriever indexed (what ``retrieve_indexed``
    returns, an optional fast path of a retriever that holds its chunks as arrays, ``bm25``): query ``i`` has
    ``lengths[i]`` hits, in rank order, hit ``j`` being ``chunks[chunk[j]]`` with ``scores[j]``. No ``Hit`` is made:
    at 100 hits a query, making, checking and placing them cost several times the search."""

    lengths: np.ndarray  # (Q,) int64
    chunk: np.ndarray  # (n,) int64
    scores: np.ndarray  # (n,) float64

    def is_clean(self, n_queries: int, k: int, id_rank: np.ndarray) -> bool:
        """Whether the lists keep both contracts as they are: one per query, at most ``k`` hits, known chunks, no
        chunk twice in a list, scores numbers, descending, ties by chunk id descending (``id_rank`` is each chunk's
        rank in id order). A batch that is not goes the way of any retriever's lists (``as_lists``), which names
        or repairs what is wrong exactly as it does for them."""
        lengths, chunk, scores = self.lengths, self.chunk, self.scores
        if len(lengths) != n_queries or len(chunk) != len(scores) or int(lengths.sum()) != len(chunk) \
                or (len(lengths) and (lengths.min() < 0 or lengths.max() > k)):
            return False
        if not len(chunk):
            return True
        if chunk.min() < 0 or chunk.max() >= len(id_rank) or not np.isfinite(scores).all():
            return False
        row = np.repeat(np.arange(len(lengths)), lengths)
        same = row[1:] == row[:-1]  # consecutive hits of one query
        ranks = id_rank[chunk]
        in_order = (scores[1:] < scores[:-1]) | ((scores[1:] == scores[:-1]) & (ranks[1:] < ranks[:-1]))
        if not in_order[same].all():
            return False
        keys = row.astype(np.int64) * len(id_rank) + chunk
        return len(np.unique(keys)) == len(keys)

    def as_lists(self, queries: Sequence[Query], chunks: Sequence[Chunk]) -> list[RankedList]:
        """The same lists as ``RankedList`` objects (what ``retrieve`` would have returned)."""
        out, at = [], 0
        for q, n in zip(queries, self.lengths.tolist()):
            out.append(RankedList(q.query_id, tuple(hits_of(chunks, self.chunk[at:at + n], self.scores[at:at + n]))))
            at += n
        return out


def check_output(kind: str, queries: Sequence[Query], lists: Sequence[RankedList], k: int) -> None:
    """Raise ``RetrieverError`` naming ``kind`` unless ``lists`` keep the retriever contract for ``queries``.
    One pass over the hits: cheap next to making them."""
    problems: list[str] = []
    if not isinstance(lists, (list, tuple)) or len(lists) != len(queries):
        n = len(lists) if isinstance(lists, (list, tuple)) else type(lists).__name__
        problems.append(f"returned {n} ranked lists for {len(queries)} queries (one per query, in query order)")
        lists = []
    for q, ranked in zip(queries, lists):
        if len(problems) > MAX_SHOWN:
            break
        if not isinstance(ranked, RankedList) or ranked.query_id != q.query_id:
            got = ranked.query_id if isinstance(ranked, RankedList) else type(ranked).__name__
            problems.append(f"query {q.query_id!r}: got the list of {got!r} in its place (lists come back in "
                            f"query order)")
            continue
        if len(ranked.hits) > k:
            problems.append(f"query {q.query_id!r}: {len(ranked.hits)} hits, asked for at most {k}")
        prev: Hit | None = None
        for i, h in enumerate(ranked.hits, 1):
            why = _hit_violation(h, i, prev)
            if why:
                problems.append(f"query {q.query_id!r}, rank {i}: {why}")
                break
            prev = h
    if problems:
        shown = problems[:MAX_SHOWN] + (["... and more"] if len(problems) > MAX_SHOWN else [])
        raise RetrieverError(f"retriever.kind {kind!r}: its output breaks the retriever contract (one list per "
                             f"query in query order, at most k hits each, by score descending, ranks 1..n; "
                             f"ranking.rank_hits makes such lists)", shown)


def _hit_violation(h: Hit, i: int, prev: Hit | None) -> str | None:
    if not isinstance(h, Hit):
        return f"expected a Hit, got {type(h).__name__}"
    if not isinstance(h.score, numbers.Real) or isinstance(h.score, bool) or math.isnan(h.score):
        return f"score {h.score!r} is not a number"
    if math.isinf(h.score):  # results.json would hold Infinity, which is not JSON
        return f"score {h.score!r} is not a finite number"
    if h.rank != i:
        return f"rank {h.rank!r} where {i} belongs (ranks are 1..n in list order)"
    if not isinstance(h.chunk_id, str) or not isinstance(h.doc_id, str):
        return f"chunk_id and doc_id must be strings, got {h.chunk_id!r} and {h.doc_id!r}"
    if prev is not None and h.score > prev.score:
        return f"score {h.score!r} is higher than rank {i - 1}'s ({prev.score!r}): hits come by score descending"
    return None


# ---- the hit contract ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HitProblem:
    """A hit no chunk of the run can be found for: its query, rank, the offending value and why."""

    query_id: str
    rank: int
    reason: str  # unknown_chunk, unknown_document, bad_span, text_not_found, ambiguous_text, mismatch, unlocated
    message: str  # names the offending value

    def line(self) -> str:
        return f"query {self.query_id!r}, rank {self.rank}: {self.message}"

    def to_dict(self) -> dict:
        return {"query_id": self.query_id, "rank": self.rank, "reason": self.reason, "message": self.message}


class HitPlacer:
    """Places hits on the run's chunks. Spans that are not the chunker's become chunks (``adopted``), so the run
    judges them like any other. Holds no state beyond the chunks it has adopted for this run."""

    def __init__(self, chunks: Sequence[Chunk], documents: Mapping[str, Document], include_title: bool = True):
        self.by_id = {c.chunk_id: c for c in chunks}
        self.documents = documents
        self.include_title = include_title
        self.adopted: dict[str, Chunk] = {}
        self._by_span: dict[tuple[str, int, int], Chunk] | None = None
        self._loose_docs: dict[str, LooseText] = {}
        # Hits whose text was found only after normalising case, whitespace and Unicode forms: (doc, span, text).
        self.loose: list[tuple[str, int, int, str]] = []

    def chunk(self, h: Hit) -> Chunk | tuple[str, str]:
        """The chunk ``h`` names, or ``(reason, message)``."""
        known = self.by_id.get(h.chunk_id) or self.adopted.get(h.chunk_id)
        if known is not None:
            if h.doc_id and h.doc_id != known.doc_id:
                return "mismatch", (f"chunk {h.chunk_id!r} belongs to document {known.doc_id!r}, the hit names "
                                    f"{h.doc_id!r}")
            if (h.start, h.end) not in ((-1, -1), (known.start, known.end)):
                return "mismatch", (f"chunk {h.chunk_id!r} spans {known.start}..{known.end}, the hit says "
                                    f"{h.start}..{h.end}")
            return known
        if not h.doc_id:
            if h.chunk_id:
                return "unknown_chunk", (f"chunk {h.chunk_id!r} is not a chunk of this corpus, and the hit names no "
                                         f"document to place a span or text in")
            return "unlocated", "the hit names no chunk id and no document"
        doc = self.documents.get(h.doc_id)
        if doc is None:
            return "unknown_document", f"document {h.doc_id!r} is not in the corpus"
        if h.text is not None and not isinstance(h.text, str):
            return "unlocated", f"hit text {h.text!r} is not a string"
        if (h.start, h.end) != (-1, -1):
            if not (_offset(h.start) and _offset(h.end) and 0 <= h.start < h.end <= len(doc.text)):
                return "bad_span", (f"span {h.start!r}..{h.end!r} is outside document {h.doc_id!r} "
                                    f"(0..{len(doc.text)}) or empty")
            if h.text is not None and doc.text[h.start:h.end] != h.text:
                return "mismatch", (f"hit text {h.text[:50]!r} is not the text of document {h.doc_id!r} at "
                                    f"{h.start}..{h.end}")
            return self._at(doc, int(h.start), int(h.end))
        if h.text is not None:
            at = doc.text.find(h.text) if h.text else -1
            if at < 0:
                return self._loosely(doc, h.text)
            again = doc.text.find(h.text, at + 1)
            if again >= 0:  # two places: which one the retriever meant is a guess, so it is not made
                return "ambiguous_text", (f"hit text {h.text[:50]!r} occurs more than once in document "
                                          f"{h.doc_id!r} (at {at} and {again}); give start and end")
            return self._at(doc, at, at + len(h.text))
        if h.chunk_id:
            return "unknown_chunk", f"chunk {h.chunk_id!r} is not a chunk of this corpus and has no span or text"
        return "unlocated", f"the hit names document {h.doc_id!r} but no chunk id, span or text in it"

    def _loosely(self, doc: Document, text: str) -> Chunk | tuple[str, str]:
        """A hit text that differs from the document by case, whitespace or Unicode forms only: placed on the
        document's own characters, and recorded."""
        if doc.doc_id not in self._loose_docs:
            self._loose_docs[doc.doc_id] = LooseText.of(doc.text)
        found = find_loose(self._loose_docs[doc.doc_id], text) if text else None
        if found is None:
            return "text_not_found", f"hit text {text[:50]!r} not found in document {doc.doc_id!r}"
        if len(found) == 3:
            return "ambiguous_text", (f"hit text {text[:50]!r} occurs more than once in document {doc.doc_id!r} "
                                      f"once case and whitespace are ignored (at {found[0]} and {found[2]}); give "
                                      f"start and end")
        start, end = found
        self.loose.append((doc.doc_id, start, end, text))
        return self._at(doc, start, end)

    def _at(self, doc: Document, start: int, end: int) -> Chunk:
        if self._by_span is None:
            self._by_span = {(c.doc_id, c.start, c.end): c for c in self.by_id.values()}
        chunk = self._by_span.get((doc.doc_id, start, end))
        if chunk is None:
            chunk = Chunk.of_span(doc, start, end, self.include_title)
            chunk = self.adopted.setdefault(chunk.chunk_id, chunk)
        return chunk

    def place(self, ranked: RankedList) -> tuple[RankedList, list[HitProblem], int]:
        """``ranked`` with every hit on its chunk, the hits that could not be placed (dropped) and how many hits
        named a chunk an earlier hit already named (dropped: a chunk is ranked once, at its best). A list that
        needed nothing comes back as it was; a changed one is re-ranked by the tie rule over the final ids (scores
        are already descending: only ties move)."""
        problems: list[HitProblem] = []
        out: list[Hit] = []
        seen: set[str] = set()
        changed, duplicates = False, 0
        for h in ranked.hits:
            if out and h.score == out[-1].score and (h.chunk_id > out[-1].chunk_id or not h.chunk_id):
                changed = True  # a tie out of the rule's order (or not yet named by its id): re-rank below
            c = self.chunk(h)
            if isinstance(c, tuple):
                problems.append(HitProblem(ranked.query_id, h.rank, *c))
                changed = True
                continue
            if c.chunk_id in seen:
                duplicates += 1
                changed = True
                continue
            seen.add(c.chunk_id)
            if (h.chunk_id, h.doc_id, h.start, h.end, h.text) != (c.chunk_id, c.doc_id, c.start, c.end, None) \
                    or type(h.score) is not float:
                h = Hit(c.chunk_id, c.doc_id, float(h.score), h.rank, c.start, c.end)
                changed = True
            out.append(h)
        return (rank_hits(ranked.query_id, out) if changed else ranked), problems, duplicates


def _offset(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class HitReport:
    """The hits a run dropped (``retriever_hits.unplaceable: skip``): counted, with the first ones listed."""

    skipped: int = 0
    queries: int = 0
    by_reason: Mapping[str, int] = field(default_factory=dict)
    duplicates: int = 0
    examples: tuple[HitProblem, ...] = ()
    # Hits placed only after normalising case, whitespace and Unicode forms (HitPlacer.loose), and the first ones.
    loose: int = 0
    loose_examples: tuple[tuple[str, int, int, str], ...] = ()

    @classmethod
    def of(cls, problems: Sequence[HitProblem], duplicates: int,
           loose: Sequence[tuple[str, int, int, str]] = ()) -> "HitReport":
        by_reason: dict[str, int] = {}
        for p in problems:
            by_reason[p.reason] = by_reason.get(p.reason, 0) + 1
        return cls(len(problems), len({p.query_id for p in problems}), by_reason, duplicates,
                   tuple(problems[:MAX_SHOWN]), len(loose), tuple(loose[:MAX_SHOWN]))

    def to_dict(self, policy: str) -> dict:
        return {"unplaceable": policy, "skipped": self.skipped, "queries": self.queries,
                "by_reason": dict(self.by_reason), "duplicates": self.duplicates,
                "examples": [p.to_dict() for p in self.examples],
                "placed_by_normalised_text": self.loose,
                "normalised_examples": [{"doc_id": d, "start": s, "end": e, "hit_text": t[:200]}
                                        for d, s, e, t in self.loose_examples]}


def shown(problems: Sequence[HitProblem]) -> list[str]:
    """At most MAX_SHOWN lines, then how many more."""
    return shown_lines([p.line() for p in problems[:MAX_SHOWN + 1]], len(problems))


def shown_lines(lines: Sequence[str], total: int | None = None) -> list[str]:
    total = len(lines) if total is None else total
    return list(lines[:MAX_SHOWN]) + ([f"... and {total - MAX_SHOWN} more"] if total > MAX_SHOWN else [])
