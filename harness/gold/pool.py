"""``harness goldset pool``: the unjudged hits in the top ``depth`` of one or more runs (TREC-style pooling), one row
per (query, chunk) with the query and chunk text, as a sheet a person fills in (``grade``, and ``evidence``: quotes,
one per line). ``merge`` (in merge.py) folds the filled sheet back into the golden set."""

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

    def to_dict(self) -> dict:
        return {"query_id": self.query_id, "query": self.query, "doc_id": self.doc_id, "chunk_id": self.chunk_id,
                "start": self.start, "end": self.end, "best_rank": self.best_rank, "runs": ";".join(self.runs),
                "text": self.text, "grade": "", "evidence": ""}


@dataclass(frozen=True)
class WindowGap:
    """How much of one run's context windows is unjudged: hits in the window whose document has no judgment."""

    run: str
    window_hits: int
    unjudged: int
    queries_with_unjudged: int


def pool(results: Sequence[Result], docs: dict[str, Document], depth: int) -> list[PoolRow]:
    """Every (query, chunk) in the top ``depth`` of any run whose document is unjudged for that query; ordered by
    query (golden-set order of the first run), then best rank."""
    rows: dict[tuple[str, str], PoolRow] = {}
    for result in results:
        for q, hits in result.each_with_hits(depth):  # from hits.parquet for those results.json keeps none of
            for hit in hits:
                if hit.grade is not None:
                    continue
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
    order = {}
    for result in results:
        for q in result.queries:
            order.setdefault(q.id, len(order))
    return sorted(rows.values(), key=lambda r: (order[r.query_id], r.best_rank, r.chunk_id))


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
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(r.to_dict())
    return buf.getvalue()


def check_sheet_path(path: Path, option: str) -> None:
    if path.suffix.lower() not in SHEET_SUFFIXES:
        raise InputError(f"{option} {path}: a judging sheet is .csv or .jsonl (chosen by the extension)")
