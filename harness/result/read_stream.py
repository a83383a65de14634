"""Reading a large results.json a record at a time (the layout ``core.result_json`` writes for a run over
``selection.KEEP_ALL_HITS_UP_TO`` queries): the bounded head (summary, context, chunk texts) parsed and validated
as a whole, then each query line ``{...},`` validated on its own and spooled into a ``QueryStore``, so memory is
bounded by a record, not by the query count (a 100k-query file: 103 MB of text, 1.5 GB as one document).

The same pass feeds the consistency checks (``result_check.ConsistencyScan``) and the per-query columns that
compare, gate and report read (``querycolumns``): each record is decoded once. Any other layout (a small run's
indented records, a hand-edited file) is not this module's: ``read`` returns None and the caller reads the whole
document, which locates every problem. A bad record line here is reported the same way (``queries.3.hits.0.rank:
...``), every one of them, with the head's problems.

The result and record models are passed in by ``io.results``, the one caller."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import querystore
from ..core.errors import InputError
from ..io.jsonl import lone_surrogate_at
from .check import ConsistencyScan, located, shown

QUERIES_LINE = b'  "queries": [\n'
RECORD_INDENT = b"    "
END_LINES = (b"  ]\n", b"  ]\r\n")


class _NotThisLayout(Exception):
    """The file is not laid out as the writer lays out a large run: read as a whole instead."""


def read(path: Path, result_model: Any, query_model: Any) -> Any:
    """The ``result_model`` of the results.json at ``path``, read a record at a time; None when its layout is not
    the writer's one-record-a-line layout. Raises one InputError listing every problem of a file that is."""
    try:
        with open(path, "rb") as fh:
            return _read(fh, str(path), result_model, query_model)
    except _NotThisLayout:
        return None


def _read(fh, where: str, result_model: Any, query_model: Any) -> Any:
    first = fh.readline()
    if first.rstrip(b"\r\n") != b"{":
        raise _NotThisLayout
    head, lineno = [first], 1
    for line in fh:
        lineno += 1
        if line == QUERIES_LINE:
            break
        head.append(line)
    else:
        raise _NotThisLayout
    head_text = b"".join(head)
    surrogate = lone_surrogate_at(head_text)
    head_model, problems = _head(head_text + b'  "queries": []\n}', result_model)
    if surrogate:
        problems.insert(0, f"line {surrogate[0]}: {surrogate[1]}")
    del head, head_text
    scan = ConsistencyScan(head_model.summary) if head_model is not None else None
    kept: list[tuple[bytes, Any]] = []  # the first SPOOL_ABOVE records; a store once there are more
    store = None
    spool_above = querystore.SPOOL_ABOVE  # read now: a test may set it
    index, last = 0, False
    for line in fh:
        lineno += 1
        if not line.startswith(RECORD_INDENT + b"{"):
            if line in END_LINES and last:
                break
            raise _NotThisLayout  # an indented record, or anything else
        if last:  # a record after one without a comma
            raise _NotThisLayout
        data = line[len(RECORD_INDENT):].rstrip(b"\r\n")
        if data.endswith(b"},"):
            data = data[:-1]
        elif data.endswith(b"}"):
            last = True
        else:
            raise _NotThisLayout  # cut short
        surrogate = lone_surrogate_at(data, lineno)
        if surrogate:
            problems.append(f"queries.{index} (line {lineno}): {surrogate[1]}")
            index += 1
            continue
        try:
            q = query_model.model_validate_json(data)
        except ValidationError as exc:
            problems += [_record_problem(query_model, index, lineno, err) for err in exc.errors()]
            index += 1
            continue
        index += 1
        if problems:  # the file will be refused: only look for more problems
            continue
        scan.add(q)
        if store is not None:
            store.append_json(data, q)
        elif len(kept) < spool_above:
            kept.append((data, q))
        else:
            store = querystore.QueryStore(query_model)
            for d, r in kept:
                store.append_json(d, r)
            store.append_json(data, q)
            kept = []
    else:
        raise _NotThisLayout  # no closing bracket: a truncated file
    if fh.read().strip() != b"}":
        raise _NotThisLayout
    if not problems:
        queries = store if store is not None else [q for _, q in kept]
        result = head_model.model_copy(update={"queries": queries})
        problems = scan.problems(result)
    if problems:
        raise InputError(f"{where}: not a valid results.json ({len(problems)} problem(s))", shown(where, problems))
    result._columns.columns = scan.columns  # read in this same pass: compare, gate and report need not decode again
    return result


def _head(text: bytes, result_model: Any) -> tuple[Any, list[str]]:
    """The head as a result with no queries, or None and its located problems."""
    try:
        return result_model.model_validate_json(text), []
    except ValidationError as exc:
        errors = exc.errors()
        if any(err["type"] == "json_invalid" for err in errors):
            raise _NotThisLayout from None  # the whole-document reader says which line
        return None, [located(result_model, err) for err in errors]


def _record_problem(query_model: Any, index: int, lineno: int, err: dict) -> str:
    if err["type"] == "json_invalid":  # the record is one line: name the file's line and the column in it
        msg = re.sub(r"^Invalid JSON: (.*) at line 1 column (\d+)$", r"\1, column \2", err["msg"])
        return f"queries.{index} (line {lineno}): not valid JSON ({msg})"
    return f"queries.{index}." + located(query_model, err)
