"""``harness goldset merge``: a judged sheet (from ``pool``) folded into a golden set. A row with an empty grade is
not judged yet and is skipped. Judgments per (query, document): the highest grade among the document's rows (a
document is as relevant as its best chunk) and every evidence quote (one per line of the ``evidence`` cell).
Conflicts are never resolved by guessing: the same chunk graded twice differently, or a document the golden set
already judges with another grade, is left as it was and reported. The documents the golden set judges and the
sheet grades again are two rounds of judging the same pairs: their agreement (Cohen's kappa, ``agreement.py``) is
reported."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from ..core.errors import InputError
from ..core.ids import grade_problem
from ..io.jsonl import jsonl_rows
from ..io.textfile import read_utf8, require_file
from .agreement import Agreement, cohen_kappa
from .tabular import csv_table, whole_number
from .load import RawQuery
from .sources import judgment_row, query_row, raw_evidence_row

REQUIRED = ("query_id", "doc_id", "grade")


@dataclass
class SheetJudgment:
    where: str
    query_id: str
    doc_id: str
    chunk_id: str
    grade: int
    quotes: list[str] = field(default_factory=list)


@dataclass
class MergeReport:
    added: int = 0  # new (query, document) judgments
    evidence_added: int = 0  # quotes added to judgments that already had the same grade
    new_quotes: int = 0  # the quotes the new judgments came with
    unjudged_rows: int = 0
    conflicts: list[str] = field(default_factory=list)
    # the (query, document) pairs the golden set judged and the sheet graded again: how far the rounds agree
    agreement: Agreement = field(default_factory=lambda: cohen_kappa([], []))


def _rows(path: Path, problems: list[str]) -> Iterator[tuple[str, dict]]:
    """The sheet's rows ``(where, row)`` as they are read; a row that cannot be read is named in ``problems`` when
    it is reached, so the caller's problems with the rows around it come in line order."""
    text = read_utf8(path, InputError)
    if path.suffix.lower() == ".jsonl":
        for lineno, row, bad in jsonl_rows(text):
            if bad or not isinstance(row, dict):
                problems.append(f"{path}:{lineno}: {bad or 'expected one JSON object per line (a judging sheet)'}")
            else:
                yield f"{path}:{lineno}", row
        return
    # The golden-set table reader's: a header naming a column twice, or a row with more or fewer cells than the
    # header (an unquoted comma in a quote), is refused, not cut or padded
    header, rows = csv_table(path, text, error=InputError, problems=problems)
    missing = [c for c in REQUIRED if c not in (header or [])]
    if missing:
        raise InputError(f"{path}:1: the header lacks column(s) {', '.join(missing)} (a sheet written by "
                         f"harness goldset pool has them)")
    yield from rows


_CHUNK_OF = re.compile(r"^(.*)#\d+-\d+$")  # the ids of the chunks harness makes: DOC#START-END


def _quotes(cell: object) -> list[str] | str:
    """A sheet's evidence: quotes one a line (a CSV cell), or a JSON list of them (a JSONL sheet); else why not."""
    if cell is None or cell == "":
        return []
    if isinstance(cell, list) and all(isinstance(q, str) for q in cell):
        return [q.strip() for q in cell if q.strip()]
    if isinstance(cell, str):
        return [q.strip() for q in cell.split("\n") if q.strip()]
    return f"evidence must be text (one quote a line) or a list of quotes, got {str(cell)[:60]!r}"


def read_sheet(path: Path, known: dict[str, RawQuery]) -> tuple[list[SheetJudgment], int]:
    """The judged rows and the number of rows left unjudged; every problem raised together, located."""
    require_file(path, "judging sheet")
    out, problems, unjudged = [], [], 0
    for where, row in _rows(path, problems):
        cell = row.get("grade")
        if cell is None or (isinstance(cell, str) and not cell.strip()):
            unjudged += 1
            continue
        qid, doc = str(row.get("query_id") or "").strip(), str(row.get("doc_id") or "").strip()
        # read as a golden-set table reads a grade: "2" or "2.0" (ASCII digits) is 2; "1_0", "٢" are refused
        grade = whole_number(cell.strip() if isinstance(cell, str) else cell)
        if isinstance(grade, str):
            problems.append(f"{where}: grade {grade!r} is not a whole number")
            continue
        bad = grade_problem(grade)
        if bad or not doc:
            problems.append(f"{where}: {bad or 'empty doc_id'}")
            continue
        if qid not in known:
            problems.append(f"{where}: query {qid!r} is not in the golden set")
            continue
        quotes = _quotes(row.get("evidence"))
        if isinstance(quotes, str):
            problems.append(f"{where}: {quotes}")
            continue
        chunk_id = str(row.get("chunk_id") or "").strip()
        named = _CHUNK_OF.match(chunk_id)
        if named and named[1] != doc:  # a chunk harness made names its document: the row contradicts itself
            problems.append(f"{where}: chunk_id {chunk_id!r} is a chunk of document {named[1]!r}, not of doc_id "
                            f"{doc!r}")
            continue
        out.append(SheetJudgment(where, qid, doc, chunk_id, grade, quotes))
    if problems:
        raise InputError(f"{path}: {len(problems)} problem(s) in the judging sheet", problems[:50])
    return out, unjudged


def merge(raw: Sequence[RawQuery], sheet: list[SheetJudgment], unjudged: int = 0) -> tuple[list[dict], MergeReport]:
    report = MergeReport(unjudged_rows=unjudged)
    by_doc: dict[tuple[str, str], list[SheetJudgment]] = defaultdict(list)
    for s in sheet:
        by_doc[(s.query_id, s.doc_id)].append(s)
    decided: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for key, items in by_doc.items():
        chunk_grades: dict[str, SheetJudgment] = {}
        clash = None
        for s in items:
            first = chunk_grades.setdefault(s.chunk_id, s)
            if first.grade != s.grade:
                clash = f"{s.where}: chunk {s.chunk_id!r} of query {key[0]!r} graded {s.grade} here and {first.grade} " \
                        f"at {first.where}; document {key[1]!r} not merged"
        if clash:
            report.conflicts.append(clash)
            continue
        quotes = list(dict.fromkeys(q for s in items if s.grade > 0 for q in s.quotes))
        decided[key] = (max(s.grade for s in items), quotes)
    rows = []
    before, again = [], []  # the grades of the pairs both rounds judged
    for q in raw:
        relevant = []
        for j in q.relevant:
            row = judgment_row(j.doc_id, j.grade, map(raw_evidence_row, j.evidence), j.group)
            new = decided.pop((q.query_id, j.doc_id), None)
            if new is not None:
                grade, quotes = new
                before.append(j.grade)
                again.append(grade)
                if grade != j.grade:
                    report.conflicts.append(f"query {q.query_id!r}, document {j.doc_id!r}: the sheet grades it {grade}, "
                                            f"the golden set {j.grade}; the golden set's grade kept")
                else:
                    have = {e.get("quote") for e in row.get("evidence", [])}
                    extra = [{"quote": t} for t in quotes if t not in have]
                    if extra:
                        row.setdefault("evidence", []).extend(extra)
                        report.evidence_added += len(extra)
            relevant.append(row)
        for (qid, doc), (grade, quotes) in list(decided.items()):
            if qid == q.query_id:
                relevant.append(judgment_row(doc, grade, [{"quote": t} for t in quotes]))
                report.added += 1
                report.new_quotes += len(quotes)
                del decided[(qid, doc)]
        rows.append(query_row(q, relevant))
    report.agreement = cohen_kappa(before, again)
    return rows, report
