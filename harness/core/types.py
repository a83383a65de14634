"""Plain, frozen data that flows between the pipeline's stages.

Character spans are half-open ``[start, end)`` offsets into a document's ``text``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Literal, Mapping, Sequence


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int

    def overlaps(self, start: int, end: int) -> bool:
        return self.start < end and start < self.end


@dataclass(frozen=True, slots=True)
class Document:
    doc_id: str
    text: str
    title: str = ""
    metadata: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of one document; ``text`` is ``document.text[start:end]``.

    ``index_text`` is what retrievers see (the chunk text, optionally prefixed by the title)."""

    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str
    index_text: str
    # The heading path of the section the chunk was cut from (markdown and html chunking), outermost first.
    headings: tuple[str, ...] = ()

    @property
    def n_chars(self) -> int:
        return self.end - self.start

    @classmethod
    def of_span(cls, doc: Document, start: int, end: int, include_title: bool, headings: tuple[str, ...] = (),
                prepend_headings: bool = False) -> "Chunk":
        """The chunk of ``doc`` at ``[start, end)``; its id is deterministic (doc id + span), so the same span
        made by the chunker or placed from a retriever's hit is the same chunk. Only ``index_text`` (what
        retrievers see) gets the title and heading path: ``text`` stays the document's text at the span."""
        text = doc.text[start:end]
        prefix = [doc.title] if include_title and doc.title else []
        if prepend_headings and headings:
            prefix.append(" > ".join(headings))
        index_text = "\n".join(prefix + [text])
        return cls(f"{doc.doc_id}#{start}-{end}", doc.doc_id, start, end, text, index_text, tuple(headings))


@dataclass(frozen=True, slots=True)
class Query:
    query_id: str
    text: str
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Judgment:
    """Document-level graded relevance, with optional evidence spans inside the document (each an evidence unit).

    ``group``: the evidence group its units belong to (``docs/groups.md``): units of one group are alternatives,
    every group of a query is needed; None is the query's unnamed group. A document whose spans lie in two groups is
    two judgments, one per group."""

    query_id: str
    doc_id: str
    relevance: int
    evidence: tuple[Span, ...] = ()
    group: str | None = None


@dataclass(frozen=True, slots=True)
class GoldSet:
    """``queries`` and ``judgments``: tuples of objects, or (a loaded golden set) ``core.goldcolumns`` columns that
    read as the same sequences; the methods below take a column's short cut when there is one."""

    name: str
    queries: Sequence[Query]
    judgments: Sequence[Judgment]
    # the ids of the queries marked ``answerable: false`` (their answer is not in the corpus): judged for abstention,
    # never ranked (``metrics.table.included``)
    unanswerable: frozenset[str] = frozenset()

    def query_ids(self) -> Sequence[str]:
        ids = getattr(self.queries, "ids", None)  # a QueryColumn's own, without making its Query objects
        return ids if ids is not None else [q.query_id for q in self.queries]

    def tags_by_query(self) -> dict[str, Mapping[str, str]]:
        """The tags of each query that has some, in golden-set order."""
        tagged = getattr(self.queries, "tagged", None)  # a QueryColumn keeps tags for these queries only
        return dict(tagged()) if tagged is not None else {q.query_id: q.tags for q in self.queries if q.tags}

    def judgments_by_query(self) -> dict[str, list[Judgment]]:
        grouped: dict[str, list[Judgment]] = {q: [] for q in self.query_ids()}
        for j in self.judgments:
            grouped.setdefault(j.query_id, []).append(j)
        return grouped

    def judgments_per_query(self) -> Iterator[Sequence[Judgment]]:
        """Each query's judgments, in golden-set order. When the judgments come grouped in that order (a loaded
        golden set's are) they are sliced off as the queries pass: no list per query is held for the whole set."""
        of_query = getattr(self.judgments, "of_query", None)  # a JudgmentColumn knows each query's rows
        if of_query is not None:
            yield from map(of_query, range(len(self.queries)))
            return
        if max((stop for _, stop in self._spans_in_order()), default=0) != len(self.judgments):
            grouped = self.judgments_by_query()
            yield from (grouped[q] for q in self.query_ids())
            return
        yield from (self.judgments[start:stop] for start, stop in self._spans_in_order())

    def _spans_in_order(self) -> Iterator[tuple[int, int]]:
        """Each query's run ``[start, stop)`` of the judgments, taken in order as far as they follow the queries."""
        at, judgments = 0, self.judgments
        for q in self.query_ids():
            start = at
            while at < len(judgments) and judgments[at].query_id == q:
                at += 1
            yield start, at

    @property
    def has_evidence(self) -> bool:
        known = getattr(self.judgments, "has_evidence", None)
        return known if known is not None else any(j.evidence for j in self.judgments)

    @property
    def has_groups(self) -> bool:
        """Whether any judgment names an evidence group (without, a query's evidence is one group)."""
        known = getattr(self.judgments, "has_groups", None)
        return known if known is not None else any(j.group is not None for j in self.judgments)


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved item. A retriever names its chunk by ``chunk_id``, or by ``doc_id`` + ``[start, end)``, or
    by ``text`` found in document ``doc_id`` (-1 / None: not given); the run places it on a chunk it knows
    (``harness.retrievers.contract``), after which every field but ``text`` is filled in."""

    chunk_id: str
    doc_id: str
    score: float
    rank: int
    start: int = -1
    end: int = -1
    text: str | None = None


@dataclass(frozen=True, slots=True)
class RankedList:
    query_id: str
    hits: tuple[Hit, ...]


def best_hits(hits: Iterable[Hit], level: Literal["doc", "chunk"] = "doc") -> list[Hit]:
    """Each document's (or chunk's) first hit in rank order, i.e. its best one: how chunk rankings become document
    rankings (trec_eval rejects duplicate documents in a ranking)."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        item = hit.doc_id if level == "doc" else hit.chunk_id
        if item not in seen:
            seen.add(item)
            out.append(hit)
    return out


@dataclass(frozen=True)
class RankedRun:
    """The output of one retriever over a golden set: one ranked list per query, in query order."""

    name: str
    lists: tuple[RankedList, ...]
    config_hash: str = ""
    timings: Mapping[str, float] = field(default_factory=dict)

    def to_trec(self, level: str = "doc", tag: str | None = None) -> str:
        """TREC run format (``qid Q0 docno rank score tag``), readable by trec_eval and ranx.

        ``level="doc"`` keeps each document's best-ranked chunk only (trec_eval rejects duplicates)."""
        return "".join(self.trec_lines(level, tag))

    def trec_lines(self, level: str = "doc", tag: str | None = None) -> Iterator[str]:
        """``to_trec`` a line at a time (each ending in a newline; a ``HitTable`` run gives a batch of lines at
        a time), for writing a large run as a stream."""
        tag = tag or self.name or "harness"
        if hasattr(self.lists, "trec_blocks"):  # a core.hittable.HitTable: from its columns, many lines at a time
            yield from self.lists.trec_blocks(level, tag)
            return
        for ranked in self.lists:
            for rank, hit in enumerate(best_hits(ranked.hits, level), 1):
                item = hit.doc_id if level == "doc" else hit.chunk_id
                yield f"{ranked.query_id} Q0 {item} {rank} {hit.score:.10g} {tag}\n"

    def to_dict(self, level: str = "doc") -> dict[str, dict[str, float]]:
        """The dict-of-dicts form pytrec_eval, ranx and ir_measures read (best chunk per doc)."""
        out: dict[str, dict[str, float]] = {}
        for ranked in self.lists:
            out[ranked.query_id] = {(h.doc_id if level == "doc" else h.chunk_id): float(h.score)
                                    for h in best_hits(ranked.hits, level)}
        return out
