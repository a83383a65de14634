"""JSONL runs: the one reader behind ``harness eval RUN.jsonl`` and ``retriever: {kind: external}``.

Two forms, one per file:
- grouped, a query per line: ``{"query_id": "q1", "hits": [{"doc_id": "d3", "score": 12.5}, ...]}``; a query may
  appear on one line only;
- flat, a hit per line: ``{"query_id": "q1", "doc_id": "d3", "score": 12.5}``; a query's hits are its lines, in
  file order.
A hit names its chunk by ``chunk_id``, or by ``doc_id`` with ``start``/``end`` (a span) or ``text`` (found in the
document), and has a ``score``. A file that mixes the forms is an error naming the first line of the other form:
which one was meant would be a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import RunFileError
from ..core.ids import is_finite_number
from .jsonl import one_document, parse_line
from .textfile import require_file, utf8_lines

HIT_FIELDS = ("doc_id", "chunk_id", "start", "end", "text", "score")
GROUPED_SHAPE = "{'query_id': ..., 'hits': [{'doc_id' or 'chunk_id': ..., 'score': number}, ...]}"
FLAT_SHAPE = "{'query_id': ..., 'doc_id' or 'chunk_id': ..., 'score': number}"


@dataclass(frozen=True)
class JsonlHit:
    doc_id: str | None
    chunk_id: str | None
    start: object  # as given: placement reports a span that is not two offsets
    end: object
    text: object
    score: float
    where: str  # "path:line", for messages


def _hit(row: dict, where: str, need_doc: bool) -> JsonlHit:
    if not isinstance(row, dict):
        raise ValueError(f"a hit must be an object, got {type(row).__name__}")
    if "score" not in row:
        raise KeyError("score")
    score = row["score"]
    # A number, as docs/formats.md and the API's readers say: a string ("1e400", "high") is not read as one
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise TypeError(f"score {score!r} is not a number"[:200])
    if not is_finite_number(score):  # NaN, 1e400 (read as infinity), or an integer too large for a float
        raise ValueError(f"score {str(score)[:40]} is not a finite number, which has no place in a ranking")
    score = float(score)
    doc_id, chunk_id = row.get("doc_id"), row.get("chunk_id")
    if doc_id is None and (need_doc or chunk_id is None):
        raise KeyError("doc_id" if need_doc else "doc_id' or 'chunk_id")
    return JsonlHit(None if doc_id is None else str(doc_id), None if chunk_id in (None, "") else str(chunk_id),
                    row.get("start"), row.get("end"), row.get("text"), score, where)


def _check_ranks(rows: list, first: int) -> None:
    """A hit may say its ``rank``; it must then be its place in its query's list (file order, from 1). Ranks that
    say otherwise could mean "sort by me" or be stale: harness ranks by score, or by file order with --order rank,
    and does not guess which the file meant."""
    for position, row in enumerate(rows, first):
        if "rank" not in row:
            continue
        rank = row["rank"]
        if isinstance(rank, bool) or not isinstance(rank, int) or rank != position:
            raise ValueError(f"hit {position} of its query says rank {rank!r}; a rank must be the hit's place in "
                             f"the query's list (file order, from 1): list the hits in rank order, or drop 'rank'")


def read_jsonl_hits(path: Path, *, need_doc: bool = False, what: str = "run",
                    limit: int | None = None) -> dict[str, list[JsonlHit]]:
    """Query id -> its hits in file order. ``need_doc``: every hit must name its document (``harness eval``
    judges documents). Every problem is reported in one RunFileError, each with its line. ``limit``: read only the
    first that many lines (a check of the file's form before a run that reads it all)."""
    require_file(path, f"{what} file", RunFileError)
    runs: dict[str, list[JsonlHit]] = {}
    grouped_line: dict[str, int] = {}
    form: tuple[str, int] | None = None  # ("grouped" | "flat", first line of that form)
    problems: list[str] = []
    for lineno, line in utf8_lines(path, RunFileError):  # a block at a time: a check of the first lines reads those
        if limit is not None and lineno > limit:
            break
        row, bad = parse_line(line)
        where = f"{path}:{lineno}"
        if bad:
            problems.append(f"{where}: {bad}")
            continue
        if not isinstance(row, dict):
            problems.append(f"{where}: expected a JSON object, {GROUPED_SHAPE} or {FLAT_SHAPE}")
            continue
        this = "grouped" if "hits" in row else "flat"
        if form is None:
            form = (this, lineno)
        elif form[0] != this:
            problems.append(f"{where}: a {this} line (one {'query with its hits' if this == 'grouped' else 'hit'}) "
                            f"in a file of {form[0]} lines (line {form[1]} is one); use one form per file")
            continue
        shape = GROUPED_SHAPE if this == "grouped" else FLAT_SHAPE
        try:
            if "query_id" not in row:
                raise KeyError("query_id")
            qid = str(row["query_id"])
            if this == "grouped":
                if not isinstance(row["hits"], list):
                    raise TypeError(f"'hits' must be a list, got {type(row['hits']).__name__}")
                hits = [_hit(h, where, need_doc) for h in row["hits"]]
                _check_ranks(row["hits"], 1)
            else:
                hits = [_hit(row, where, need_doc)]
                _check_ranks([row], len(runs.get(qid, ())) + 1)
        except (KeyError, TypeError, ValueError) as exc:
            detail = f"missing '{exc.args[0]}'" if isinstance(exc, KeyError) else str(exc)
            problems.append(f"{where}: expected {shape} ({detail})")
            continue
        if this == "grouped":
            if qid in grouped_line:
                problems.append(f"{where}: query {qid!r} appears twice (first on line {grouped_line[qid]})")
                continue
            grouped_line[qid] = lineno
        runs.setdefault(qid, []).extend(hits)
    if problems and (whole := one_document(path)):
        raise RunFileError(f"{path}: {whole}")
    if problems:
        raise RunFileError(f"{path}: {len(problems)} problem(s) in the {what}", problems[:50] + (
            [f"... and {len(problems) - 50} more"] if len(problems) > 50 else []))
    return runs
