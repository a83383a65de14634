"""Writing results.json a record at a time: the summary and context, then the chunk texts, then one query record
after another, each serialised by pydantic (Rust) and checked on its own, so no whole-result dict or string is ever
built (a 100k-query run would otherwise hold several copies of a multi-GB document).

The file is the same JSON document a ``json.dumps(result.to_dict(), indent=2)`` would be, laid out the same way
(field order aside: ``chunks`` and ``queries`` come last), and ``io.results.load_result`` reads it back."""

from __future__ import annotations

import json
from typing import Any, TextIO

from pydantic import ValidationError

from ..core.errors import HarnessError
from .check import ConsistencyScan, located, shown

STREAMED = ("chunks", "queries")  # the fields written record by record; everything else is bounded in size


def _nested(text: str, indent: str) -> str:
    # JSON text has no raw newline inside a string, so every newline is a line break of the layout.
    return text.replace("\n", "\n" + indent)


def write_json(result: Any, fh: TextIO) -> None:
    """Write ``result`` (a ``core.result.Result``) to ``fh``. Every problem is collected; a result that does not
    match the schema raises one HarnessError listing them (an internal error: a record built around validation)."""
    problems: list[str] = []
    head = result.model_dump(mode="json", exclude=set(STREAMED))
    try:  # the bounded part, checked as a whole result with no queries
        type(result).model_validate({**head, "queries": []})
    except ValidationError as exc:
        problems += [located(type(result), err) for err in exc.errors()]
    text = json.dumps(head, indent=2, ensure_ascii=False)
    fh.write(text[: text.rindex("}")].rstrip() + ",\n")
    if result.chunks is None:
        fh.write('  "chunks": null,\n')
    else:
        fh.write('  "chunks": {')
        for i, (chunk_id, chunk) in enumerate(result.chunks.items()):
            record = chunk.model_dump_json(indent=2)
            problems += _check(type(chunk), record, f"chunks.{chunk_id}.")
            fh.write(("," if i else "") + "\n    " + json.dumps(chunk_id, ensure_ascii=False) + ": "
                     + _nested(record, "    "))
        fh.write("\n  },\n" if result.chunks else "},\n")
    fh.write('  "queries": [')
    # A small run's records are laid out for reading; a large run's take one line each (a third of the bytes).
    indent = 2 if result.hits_kept == "all" else None
    # The consistency checks read each record as it is written: a large run's records are spooled, and a second
    # pass would decode them all again. The per-query columns it gathers are kept on the result for the reports.
    # A large run keeps columns only of what its own reports read (the rest summed, for the checks): another
    # reader of its columns (compare, gate in the same process) has them read again when it asks.
    # A run in memory names its queries' ids (its hit table's, the golden set's strings): the columns keep those.
    known_ids = getattr(getattr(result.run, "lists", None), "query_ids", None)
    scan = ConsistencyScan(result.summary, slim=result.hits_kept == "selected", known_ids=known_ids)
    for i, q in enumerate(result.queries):
        record = q.model_dump_json(indent=indent, warnings=False)
        problems += _check(type(q), record, f"queries.{i}.")
        scan.add(q)
        fh.write(("," if i else "") + "\n    " + _nested(record, "    "))
    fh.write("\n  ]\n}" if result.queries else "]\n}")
    if not problems:
        problems = scan.problems(result)
        cached = result._columns.columns
        if cached is None or cached.source is not result.queries:  # (a loaded result's whole columns are kept)
            result._columns.columns = scan.columns  # querycolumns.of(result) gives these: from the same records
    if problems:
        raise HarnessError(f"internal error: the result of run {result.name!r} does not match the results.json "
                           "schema (please report this)\n" + "\n".join(shown("results.json", problems)))


def _check(model: Any, record: str, prefix: str) -> list[str]:
    """One record's JSON read back through its model: what the loader will see."""
    try:
        model.model_validate_json(record)
    except ValidationError as exc:
        return [prefix + located(model, err) for err in exc.errors()]
    return []
