"""Evidence units: the chunk level's relevant items, whoever cut the text.

Every relevant judgment with evidence spans is one **unit** of its query (its spans, its grade). A hit (a config
chunk, an external span, a service's hit placed by id, span or text) **covers** a unit when it overlaps one of the
unit's spans (``Span.overlaps``: at least one character in common). Walking a ranked list from the top, a hit that
covers units no hit above it covered stands for those units; a hit that covers none is a non-relevant item (its
chunk id). So overlapping chunks of one span count once, at the best rank (one relevant item, as a document is at
the document level), and R at the chunk level is the number of units.

A hit that covers several new units stands for each of them, one item per unit at its place in the list (the higher
grade first, then in document order): recall counts every unit the window holds, whoever merged the text, and the
items below move down. ``@k`` and R-prec count items; precision@window divides by the window's k plus those extra
items (so it stays within 0..1).

A relevant judgment without evidence is a document-level judgment: its unit is the whole document (``doc#unit:doc``),
covered by any hit in it, so it too counts once, whoever cut the document (it has no characters for the evidence
metrics). A judgment whose evidence was given but failed to resolve adds no unit (its document's chunks are judged
not relevant, as ``gold.resolve.chunk_qrels`` does).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from .levelgrades import LevelGrades
from .positions import Positions
from ..core.ids import unit_id
from ..core.types import GoldSet, Span
from ..gold.resolve import BROKEN_EVIDENCE, GoldProblem



@dataclass(frozen=True)
class Unit:
    unit_id: str
    doc_id: str
    spans: tuple[Span, ...]  # () for a judgment without evidence: the whole document
    grade: int

    def covered_by(self, start: int, end: int) -> bool:
        return not self.spans or any(s.overlaps(start, end) for s in self.spans)


@dataclass(frozen=True)
class QueryUnits:
    """One query's units, and the same by document."""

    units: tuple[Unit, ...]
    by_doc: Mapping[str, tuple[Unit, ...]]


EMPTY = QueryUnits((), {})


class EvidenceUnits(Sequence[QueryUnits]):
    """Each query's units, in golden-set order (``query_ids``)."""

    def __init__(self, query_ids: Sequence[str], rows: Sequence[QueryUnits]):
        self.query_ids = list(query_ids)
        self._rows = list(rows)
        self._positions = Positions(self.query_ids)

    def row_of(self, i: int, query_id: str) -> int:
        """``query_id``'s row (``i`` when it is there), -1 for a query the golden set lacks."""
        return self._positions.find(query_id, i)

    def at(self, i: int, query_id: str) -> QueryUnits:
        """``query_id``'s units, found at row ``i`` when it is there; none for a query the golden set lacks."""
        found = self._positions.find(query_id, i)
        return EMPTY if found < 0 else self._rows[found]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i):
        return self._rows[i]

    def unit_ids(self) -> list[str]:
        """Every unit id, each once, in first-appearance order."""
        return list(dict.fromkeys(u.unit_id for row in self._rows for u in row.units))

    def grades(self) -> LevelGrades:
        """The chunk level's judgments: each unit with its grade."""
        return LevelGrades.from_rows(self.query_ids, ({u.unit_id: u.grade for u in row.units} for row in self._rows))


def evidence_units(gold: GoldSet, problems: Sequence[GoldProblem] = ()) -> EvidenceUnits:
    """The units of every query of ``gold``. A document judged twice for a query with the same spans is one unit
    at the higher grade."""
    broken = {(p.query_id, p.doc_id) for p in problems if p.kind in BROKEN_EVIDENCE}
    rows = []
    for query_id, judgments in zip(gold.query_ids(), gold.judgments_per_query()):
        units: dict[str, Unit] = {}
        for j in judgments:
            if j.relevance <= 0 or (not j.evidence and (query_id, j.doc_id) in broken):
                continue
            spans = tuple(sorted(j.evidence, key=lambda s: (s.start, s.end)))
            uid = unit_id(j.doc_id, spans)
            if uid not in units or units[uid].grade < j.relevance:
                units[uid] = Unit(uid, j.doc_id, spans, int(j.relevance))
        if not units:
            rows.append(EMPTY)
            continue
        by_doc: dict[str, list[Unit]] = defaultdict(list)
        for u in units.values():
            by_doc[u.doc_id].append(u)
        rows.append(QueryUnits(tuple(units.values()), {d: tuple(v) for d, v in by_doc.items()}))
    return EvidenceUnits(gold.query_ids(), rows)


def new_units(row: QueryUnits, doc_id: str, start: int, end: int, covered: set[str]) -> list[Unit]:
    """THE cover rule: the units of ``row`` that the hit ``doc_id[start:end]`` covers and no hit above it covered
    (``covered``, updated), the higher grade first, then in document order."""
    found = [u for u in row.by_doc.get(doc_id, ()) if u.unit_id not in covered and u.covered_by(start, end)]
    if len(found) > 1:
        found.sort(key=lambda u: (-u.grade, u.spans[0].start if u.spans else -1, u.spans[0].end if u.spans else -1))
    covered.update(u.unit_id for u in found)
    return found


def unit_items(row: QueryUnits, hits: Iterable[tuple[str, str, int, int]]) -> Iterator[tuple[int, str, bool]]:
    """(hit index, item id, whether the item is a unit) of a ranked list's hits ``(chunk id, doc id, start, end)``
    at the chunk level: each hit once as its chunk id, or once per unit it newly covers."""
    covered: set[str] = set()
    for i, (chunk_id, doc_id, start, end) in enumerate(hits):
        units = new_units(row, doc_id, start, end, covered) if doc_id in row.by_doc else ()
        if units:
            for u in units:
                yield i, u.unit_id, True
        else:
            yield i, chunk_id, False


@dataclass(frozen=True)
class ItemBatch:
    """Queries ``start:stop`` of a ``HitTable`` at the chunk level: each item's code (a chunk index, or
    ``n_chunks`` + a unit's index), score and query (batch row), the items per query, and each window's items
    (``cut``) and precision denominator (``size``: its k plus the extra items of hits that stand for several
    units)."""

    codes: np.ndarray
    scores: np.ndarray
    local: np.ndarray
    lengths: np.ndarray
    cut: np.ndarray
    size: np.ndarray
    new: np.ndarray  # (hits,) int64: the units each hit newly covers (0: a non-relevant item)


def table_items(table, units: EvidenceUnits, start: int, stop: int, window_k: np.ndarray,
                unit_code: Mapping[str, int], codes: bool = True) -> ItemBatch:
    """``unit_items`` over a ``HitTable``'s columns: only the hits in a document that has units for their query go
    through the cover rule one by one (a few per query); every other hit is its chunk, as an array. ``codes=False``:
    only each hit's count of new units is wanted (``new``), not the units' codes."""
    lo, hi, lengths = table.span(start, stop)
    n = stop - start
    local = np.repeat(np.arange(n, dtype=np.int64), lengths)
    chunk = np.asarray(table.chunk[lo:hi], dtype=np.int64)
    scores = np.asarray(table.scores[lo:hi], dtype=np.float64)
    rank = table.ranks(start, stop)
    k = np.asarray(window_k[start:stop], dtype=np.int64)
    counts = np.ones(len(chunk), dtype=np.int64)
    expanded: dict[int, list[int]] = {}
    n_chunks = len(table.chunks)
    chunks = table.chunks
    docs, doc_of_chunk = table.doc_index()
    doc_code = table._derived("doc_code", lambda: {d: i for i, d in enumerate(docs.tolist())})
    rows = [units.at(start + r, str(table.query_ids[start + r])) for r in range(n)]
    n_docs = max(len(docs), 1)
    keys = [r * n_docs + doc_code[d] for r, row in enumerate(rows) for d in row.by_doc if d in doc_code]
    flagged = np.flatnonzero(np.isin(local * n_docs + doc_of_chunk[chunk], np.array(keys, dtype=np.int64))) \
        if keys else np.zeros(0, dtype=np.int64)
    covered: dict[int, set[str]] = {}
    for j in flagged.tolist():  # in rank order within each query: the cover rule's order
        r = int(local[j])
        c = chunks[int(chunk[j])]
        found = new_units(rows[r], c.doc_id, c.start, c.end, covered.setdefault(r, set()))
        if found:
            expanded[j] = [n_chunks + unit_code[u.unit_id] for u in found] if codes else []
            counts[j] = len(found)
    item_codes = np.repeat(chunk, counts)
    first = np.cumsum(counts) - counts
    for j, extra in expanded.items():
        item_codes[first[j]:first[j] + len(extra)] = extra
    in_window = rank <= np.repeat(k, lengths)
    cut = np.bincount(local[in_window], weights=counts[in_window], minlength=n).astype(np.int64)
    hits_in = np.bincount(local[in_window], minlength=n).astype(np.int64)
    item_lengths = np.bincount(local, weights=counts, minlength=n).astype(np.int64)
    new = np.zeros(len(counts), dtype=np.int64)
    if expanded:
        where = np.fromiter(expanded, dtype=np.int64, count=len(expanded))
        new[where] = counts[where]
    return ItemBatch(item_codes, np.repeat(scores, counts), np.repeat(local, counts), item_lengths, cut,
                     k + cut - hits_in, new)


def hit_flags(row: QueryUnits, hits) -> list[bool]:
    """Each hit of a ranked list: whether it covers a unit no hit above it covered (its chunk-level relevance)."""
    flags = [False] * len(hits)
    for j, _, unit in unit_items(row, ((h.chunk_id, h.doc_id, h.start, h.end) for h in hits)):
        flags[j] = flags[j] or unit
    return flags


CHUNK_LEVEL_RULE = (
    "the chunk level's relevant items are evidence units: each relevant judgment with evidence spans is one unit "
    "(its spans, its grade), R is the number of units; a hit covers the units it overlaps (a character in common); "
    "a hit is relevant when it covers a unit no hit ranked above it covered, so overlapping chunks of one span count "
    "once, at the best rank; a hit that covers several new units stands for each of them, one item per unit at its "
    "place (the higher grade first, then in document order), so @k and R-prec count items and precision@window "
    "divides by effective_k plus those extra items; a relevant judgment without a span makes every chunk of its "
    "document a relevant item, as before")


def unit_run_lines(lists, units: EvidenceUnits, tag: str, batch: int = 1_000) -> Iterator[str]:
    """run.chunks.trec: each query's chunk-level items in rank order (a unit's id where a hit covers a new unit,
    else the hit's chunk id), a batch of queries of lines at a time. The score column is the items' count down to 1
    so that trec_eval, which sorts by score (ties by docno), reads the ranking as it was: a retriever's tied scores
    would be reordered (the hits' own scores are in run.trec and hits.parquet)."""
    if hasattr(lists, "chunks") and hasattr(lists, "offsets"):
        ids = lists.chunk_ids()
        vocab = np.concatenate([ids, np.array(units.unit_ids() or [""], dtype=object)])
        unit_code = {u: i for i, u in enumerate(units.unit_ids())}
        window = np.zeros(len(lists), dtype=np.int64)
        for start in range(0, len(lists), batch):
            stop = min(start + batch, len(lists))
            items = table_items(lists, units, start, stop, window, unit_code)
            lines = []
            for r, (lo, hi) in enumerate(zip(np.cumsum(items.lengths) - items.lengths, np.cumsum(items.lengths))):
                qid = str(lists.query_ids[start + r])
                n = int(hi - lo)
                lines.extend(f"{qid} Q0 {item} {rank} {n - rank + 1} {tag}\n"
                             for rank, item in enumerate(vocab[items.codes[lo:hi]].tolist(), 1))
            yield "".join(lines)
        return
    for i, ranked in enumerate(lists):
        row = units.at(i, ranked.query_id)
        items = [item for _, item, _ in unit_items(row, ((h.chunk_id, h.doc_id, h.start, h.end)
                                                           for h in ranked.hits))]
        yield "".join(f"{ranked.query_id} Q0 {item} {rank} {len(items) - rank + 1} {tag}\n"
                      for rank, item in enumerate(items, 1))


def unit_qrels_lines(grades: LevelGrades) -> Iterator[str]:
    """qrels.chunks.trec: the chunk level's judgments (``EvidenceUnits.grades``), ``qid 0 item grade``."""
    for i, qid in enumerate(grades.qrels.query_ids.tolist()):
        row = grades.row(i)
        if row:
            yield "".join(f"{qid} 0 {item} {grade}\n" for item, grade in row.items())
