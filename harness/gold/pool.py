"""``harness goldset pool``: the unjudged hits in the top ``depth`` of one or more runs (TREC-style pooling), one row
per (query, chunk) with the query and chunk text, as a sheet a person fills in (``grade``, and ``evidence``: quotes,
one per line). ``merge`` (in merge.py) folds the filled sheet back into the golden set.

Two orders of the sheet (``POOL_ORDERS``): ``rank``, by query then best rank; ``rbp``, what to judge first: the
rows by priority, highest first across every query. A grade is a document's (``merge`` gives a document the best
grade of its rows), so the priority is its document's: the weight RBP gives the document's rank in each run's
document list, summed over the runs, sum of (1 - p) p^(rank - 1) (trectools' ``make_pool`` strategy ``rbp`` with
``rbp_strategy="sum"``, which pools documents; Moffat & Zobel 2008). Ranked by chunks, two runs that cut the text
differently would share no chunk and never add up. A judgment of a document high in two runs moves both runs'
scores the most; one deep in one run barely moves anything, so a judging budget spent from the top goes
furthest."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..core.errors import InputError
from ..result.model import Result
from ..core.types import Document

COLUMNS = ("query_id", "query", "doc_id", "chunk_id", "start", "end", "best_rank", "runs", "text", "grade",
           "evidence")
SHEET_SUFFIXES = (".csv", ".jsonl")
POOL_ORDERS = ("rank", "rbp")
RBP_P = 0.8  # trectools' default persistence: a reader goes on to the next rank 4 times in 5


@dataclass
class PoolRow:
    query_id: str
    query: str
    doc_id: str
    chunk_id: str
    start: int
    end: int
    best_rank: int
    runs: list[str]
    text: str
    priority: float | None = None  # the RBP weight summed over the runs (order ``rbp`` only)

    def to_dict(self) -> dict:
        row = {"query_id": self.query_id, "query": self.query, "doc_id": self.doc_id, "chunk_id": self.chunk_id,
               "start": self.start, "end": self.end, "best_rank": self.best_rank, "runs": ";".join(self.runs)}
        if self.priority is not None:
            row["priority"] = float(f"{self.priority:.6g}")  # a sheet for people: 6 digits order it well enough
        return row | {"text": self.text, "grade": "", "evidence": ""}


@dataclass(frozen=True)
class WindowGap:
    """How much of one run's context windows is unjudged: hits in the window whose document has no judgment."""

    run: str
    window_hits: int
    unjudged: int
    queries_with_unjudged: int


def rbp_weight(rank: int, p: float) -> float:
    """The weight rank-biased precision gives a hit at ``rank`` (1-based): (1 - p) p^(rank - 1)."""
    return (1.0 - p) * p ** (rank - 1)


def rbp_problem(p: float) -> str | None:
    if not 0.0 < p < 1.0:  # p = 1 weighs every rank alike (and 1 - p = 0), p = 0 only rank 1
        return f"RBP's p is a persistence strictly between 0 and 1 (trectools' default {RBP_P}), got {p}"
    return None


def pool(results: Sequence[Result], docs: dict[str, Document], depth: int, order: str = "rank",
         rbp_p: float = RBP_P) -> list[PoolRow]:
    """Every (query, chunk) in the top ``depth`` of any run whose document is unjudged for that query; ordered by
    query (golden-set order of the first run), then best rank; or (``order="rbp"``) by priority, highest first:
    the priority of a document (a judgment grades documents), the RBP weight of its rank in each run's document
    list (each document at its best chunk, as the doc level ranks it) summed over the runs, on each of its rows."""
    if order not in POOL_ORDERS:
        raise InputError(f"unknown pool order {order!r}; choose from {', '.join(POOL_ORDERS)}")
    if order == "rbp" and (bad := rbp_problem(rbp_p)):
        raise InputError(bad)
    rows: dict[tuple[str, str], PoolRow] = {}
    weight: dict[tuple[str, str], float] = {}
    for result in results:
        for q, hits in result.each_with_hits(depth):  # from hits.parquet for those results.json keeps none of
            doc_rank: dict[str, int] = {}  # the run's document list: each document at its best chunk
            for hit in sorted(hits, key=lambda h: h.rank):
                first = hit.doc_id not in doc_rank
                rank = doc_rank.setdefault(hit.doc_id, len(doc_rank) + 1)
                if hit.grade is not None:
                    continue
                if first:
                    weight[(q.id, hit.doc_id)] = weight.get((q.id, hit.doc_id), 0.0) + rbp_weight(rank, rbp_p)
                key = (q.id, hit.chunk_id)
                row = rows.get(key)
                if row is None:
                    doc = docs.get(hit.doc_id)
                    text = doc.text[hit.start:hit.end] if doc is not None else ""
                    rows[key] = PoolRow(q.id, q.text, hit.doc_id, hit.chunk_id, hit.start, hit.end, hit.rank,
                                        [result.name], text)
                else:
                    row.best_rank = min(row.best_rank, hit.rank)
                    if result.name not in row.runs:
                        row.runs.append(result.name)
    position = {}
    for result in results:
        for q in result.queries:
            position.setdefault(q.id, len(position))
    if order == "rbp":
        for row in rows.values():
            row.priority = weight[(row.query_id, row.doc_id)]
        # a document's rows stay together (same priority, query, document), its best-ranked chunk first
        return sorted(rows.values(), key=lambda r: (-r.priority, position[r.query_id], r.doc_id, r.best_rank,
                                                    r.chunk_id))
    return sorted(rows.values(), key=lambda r: (position[r.query_id], r.best_rank, r.chunk_id))


def window_gaps(results: Sequence[Result]) -> list[WindowGap]:
    out = []
    for result in results:
        hits = [(q.id, h) for q, mine in result.each_with_hits() for h in mine if h.in_window]
        unjudged = [(qid, h) for qid, h in hits if h.grade is None]
        out.append(WindowGap(result.name, len(hits), len(unjudged), len({qid for qid, _ in unjudged})))
    return out


def missing_documents(results: Sequence[Result], docs: dict[str, Document], depth: int) -> list[str]:
    """Pooled documents the corpus lacks: their text cannot be shown, so the corpus given is the wrong one."""
    return sorted({h.doc_id for r in results for _, hits in r.each_with_hits(depth) for h in hits
                   if h.grade is None and h.doc_id not in docs})


def sheet_text(path: Path, rows: Sequence[PoolRow]) -> str:
    if path.suffix.lower() == ".jsonl":
        return "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rows)
    buf = io.StringIO()
    columns = list(rows[0].to_dict()) if rows else COLUMNS
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(r.to_dict())
    return buf.getvalue()


def check_sheet_path(path: Path, option: str) -> None:
    if path.suffix.lower() not in SHEET_SUFFIXES:
        raise InputError(f"{option} {path}: a judging sheet is .csv or .jsonl (chosen by the extension)")
