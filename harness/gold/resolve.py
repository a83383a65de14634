"""Golden sets against the corpus: quotes resolved to spans, every judgment checked (unknown documents, quotes not
found, spans out of range: problems per query, which a run flags as ``goldset_error``), and the document- and
chunk-level judgments the metrics read."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from .columns import GoldColumnsBuilder
from ..core.errors import GoldSetError
from ..hits.levelgrades import LevelGrades
from ..core.types import Chunk, Document, GoldSet, Judgment, Span
from .load import RawQuery


@dataclass(frozen=True)
class GoldProblem:
    query_id: str
    doc_id: str
    kind: str  # unknown_document | quote_not_found | quote_ambiguous | span_out_of_range | span_text_differs
    message: str


def resolve_goldset(raw: Iterable[RawQuery], docs: Mapping[str, Document], name: str
                    ) -> tuple[GoldSet, list[GoldProblem]]:
    """Turn quotes into spans and check every judgment against the corpus. The golden set is held as columns
    (``core.goldcolumns``). A judgment whose units lie in several evidence groups becomes one judgment per group.
    A named group none of whose units resolves is an error (``GoldSetError``, every such group named by file:line):
    the query could never be complete, and the cause is in the golden set."""
    columns, problems, unplaced, unanswerable = GoldColumnsBuilder(), [], [], set()
    for rq in raw:
        columns.add_query(rq.query_id, rq.text, rq.tags)
        if not rq.answerable:
            unanswerable.add(rq.query_id)
        given: dict[str | None, int] = {}  # group -> units given, and how many were placed
        placed: dict[str | None, int] = {}
        why: dict[str | None, list[str]] = {}  # group -> the problems of its units
        for rj in rq.relevant:
            groups = rj.unit_groups() if rj.evidence else [rj.group]
            for g in groups:
                given[g] = given.get(g, 0) + 1
            before = len(problems)
            spans = _resolved_spans(rq, rj, docs.get(rj.doc_id), problems)
            if spans is None:  # an unknown document: one problem for all its units
                for g in dict.fromkeys(groups):
                    why.setdefault(g, []).append(problems[-1].message)
                columns.add_judgment(rj.doc_id, rj.grade, (), rj.group if not rj.evidence else None)
                continue
            failed = [g for g, sp in zip(groups, spans) if sp is None]  # each failed item made one problem, in order
            for g, problem in zip(failed, problems[before:]):
                why.setdefault(g, []).append(problem.message)
            doc_id = docs[rj.doc_id].doc_id  # the corpus's own id string: 1M queries hold no second copy of each
            if not rj.evidence or not any(sp is not None for sp in spans):
                placed[rj.group] = placed.get(rj.group, 0) + (not rj.evidence)
                columns.add_judgment(doc_id, rj.grade, (), groups[0] if len(set(groups)) == 1 else None)
                continue
            by_group: dict[str | None, list[Span]] = {}
            for g, sp in zip(groups, spans):
                if sp is not None:
                    by_group.setdefault(g, []).append(sp)
            for g, kept in by_group.items():
                placed[g] = placed.get(g, 0) + len(kept)
                columns.add_judgment(doc_id, rj.grade, kept, g)
        for g, n in given.items():
            if g is not None and not placed.get(g):
                shown = "; ".join(why.get(g, [])[:2]) + (" ..." if len(why.get(g, [])) > 2 else "")
                unplaced.append(f"{rq.where}: query {rq.query_id!r}: group {g!r}: none of its {n} evidence "
                                f"unit{'' if n == 1 else 's'} resolves against the corpus ({shown})")
    if unplaced:
        shown = unplaced[:50] + ([f"... and {len(unplaced) - 50} more"] if len(unplaced) > 50 else [])
        raise GoldSetError(f"{len(unplaced)} evidence group(s) with no unit in the corpus", shown)
    return GoldSet(name, *columns.build(), unanswerable=frozenset(unanswerable)), problems


def _resolved_spans(rq: RawQuery, rj, doc: Document | None, problems: list[GoldProblem]
                    ) -> list[Span | None] | None:
    """Each evidence item of ``rj`` as its span in ``doc`` (None where it cannot be placed, its problem appended),
    or None when the document is not in the corpus."""
    if doc is None:
        problems.append(GoldProblem(rq.query_id, rj.doc_id, "unknown_document",
                                    f"query {rq.query_id!r}: relevant document {rj.doc_id!r} is not in the corpus"))
        return None
    spans: list[Span | None] = []
    for ev in rj.evidence:
        spans.append(None)
        if ev.quote is not None:
            at = doc.text.find(ev.quote)
            if at < 0:
                problems.append(GoldProblem(rq.query_id, rj.doc_id, "quote_not_found",
                                            f"query {rq.query_id!r}: evidence quote {_short(ev.quote)} not "
                                            f"found in document {rj.doc_id!r}"))
                continue
            again = doc.text.find(ev.quote, at + 1)
            if again >= 0:  # which of the places is the evidence is not guessed (goldset build agrees)
                problems.append(GoldProblem(rq.query_id, rj.doc_id, "quote_ambiguous",
                                            f"query {rq.query_id!r}: evidence quote {_short(ev.quote)} is "
                                            f"found more than once in document {rj.doc_id!r} (at {at} and "
                                            f"{again}); "
                                            f"give start/end, or a longer quote"))
                continue
            spans[-1] = Span(at, at + len(ev.quote))
        else:
            assert ev.start is not None and ev.end is not None
            if ev.end > len(doc.text):
                problems.append(GoldProblem(rq.query_id, rj.doc_id, "span_out_of_range",
                                            f"query {rq.query_id!r}: evidence span {ev.start}..{ev.end} is "
                                            f"outside document {rj.doc_id!r} ({len(doc.text)} chars)"))
                continue
            if ev.text is not None and doc.text[ev.start:ev.end] != ev.text:
                problems.append(GoldProblem(rq.query_id, rj.doc_id, "span_text_differs",
                                            f"query {rq.query_id!r}: evidence span {ev.start}..{ev.end} of "
                                            f"document {rj.doc_id!r} reads "
                                            f"{_short(doc.text[ev.start:ev.end])}, not its recorded text "
                                            f"{_short(ev.text)} (the document changed? `harness goldset "
                                            f"check --fix` re-anchors it)"))
                continue
            spans[-1] = Span(ev.start, ev.end)
    return spans


# A judgment whose evidence was given but could not be placed: it must not make every chunk of its document
# relevant (what a judgment without evidence means).
BROKEN_EVIDENCE = ("quote_not_found", "quote_ambiguous", "span_out_of_range", "span_text_differs")


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def chunk_qrels(gold: GoldSet, chunks: Sequence[Chunk], problems: Sequence[GoldProblem] = ()) -> LevelGrades:
    """Chunk-level gold: a chunk is relevant when it overlaps an evidence span of a relevant document (the
    document's grade); a judged document with no spans makes all its chunks carry its grade. A judgment whose
    every evidence quote or span failed to resolve (``problems``) keeps its document's grade, but its chunks are
    judged not relevant: without this, a missing quote would make every chunk of the document relevant (q45 of
    the demo). Made a query at a time (``LevelGrades``)."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    broken = {(p.query_id, p.doc_id) for p in problems if p.kind in BROKEN_EVIDENCE}
    if broken:  # (a pass over every judgment only when some evidence failed)
        broken -= {(j.query_id, j.doc_id) for j in gold.judgments if j.evidence and (j.query_id, j.doc_id) in broken}
    broken_docs: dict[str, list[str]] = defaultdict(list)
    for qid, doc in sorted(broken):
        broken_docs[qid].append(doc)

    def row(query_id: str, judgments: Sequence[Judgment]) -> dict[str, int]:
        out: dict[str, int] = {}
        for j in judgments:
            for c in by_doc.get(j.doc_id, []):
                if j.relevance > 0 and j.evidence:
                    # Chunks of a relevant document that miss every span are judged, and not relevant.
                    hit = any(s.overlaps(c.start, c.end) for s in j.evidence)
                    out[c.chunk_id] = max(out.get(c.chunk_id, 0), j.relevance if hit else 0)
                else:
                    out[c.chunk_id] = j.relevance
        for doc in broken_docs.get(query_id, ()):
            out.update((c.chunk_id, 0) for c in by_doc.get(doc, []))
        return out

    return LevelGrades.from_rows(gold.query_ids(), _by_query(gold, row))


def doc_qrels(gold: GoldSet) -> LevelGrades:
    """Document-level gold: each judged document's grade (the last judgment of a document, if given twice)."""
    return LevelGrades.from_rows(gold.query_ids(),
                                 _by_query(gold, lambda _, judgments: {j.doc_id: j.relevance for j in judgments}))


def _by_query(gold: GoldSet, row) -> Iterator[dict[str, int]]:
    """``row(query id, its judgments)`` for each query in golden-set order."""
    for query_id, judgments in zip(gold.query_ids(), gold.judgments_per_query()):
        yield row(query_id, judgments)
