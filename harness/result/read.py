"""Reading a results.json back (``load_result``): a large run's layout a record at a time (``results_stream``),
anything else as one document, then the hits not kept in it attached from the Parquet file beside it. Apart from
``core.result`` (the models) so that module does not import its reader: the imports go one way."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.errors import InputError
from ..io.jsonl import loads, lone_surrogate_at
from .model import QueryResult, Result
from .check import consistency_problems
from ..io.textfile import require_file
from .read_stream import read


RESULTS_FILE = "results.json"


def results_path(path: Path) -> Path:
    """Where a run's results are: a run's output folder stands for the results.json in it; any other path is
    itself (``load_result`` says what is wrong with it)."""
    path = Path(path)
    inside = path / RESULTS_FILE
    return inside if path.is_dir() and inside.is_file() else path


def load_result(path: Path) -> Result:
    """Read and validate a results.json, or the one in a run's output folder."""
    path = results_path(path)
    if path.is_dir():
        runs = sorted(p.parent.name for p in path.glob(f"*/{RESULTS_FILE}") if p.is_file())
        hint = (f"; a sweep's folder? give one of its runs, e.g. {path / runs[0]}" if runs else
                "; give a results.json, or the folder a run wrote")
        raise InputError(f"{path}: a folder without a {RESULTS_FILE}{hint}")
    require_file(path, "results file")
    # A large run's layout (one record a line) is read a record at a time, in bounded memory; anything else whole.
    result = read(path, Result, QueryResult)
    if result is None:
        result = _whole(path)
    if result.hits_kept == "selected" and result.hits_file:  # the hits not kept here are read from beside it
        from ..hits.parquet import ParquetHits
        result = result.with_memory(hits=ParquetHits(path.parent / result.hits_file,
                                                     path.parent / result.chunks_file if result.chunks_file else None,
                                                     result.queries,  # their order locates a query's row group
                                                     result.run_id))
    return result


def _whole(path: Path) -> Result:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}): a results.json written by harness run?") from None
    surrogate = lone_surrogate_at(raw)  # JSON readers accept one; the first output of its text would crash
    if surrogate:
        raise InputError(f"{path}:{surrogate[0]}: {surrogate[1]}")
    del raw
    text = text.removeprefix("\ufeff")  # a byte-order mark an editor added on saving, as every text input reads it
    result = _parsed(text)
    if result is None:  # not valid as it is: read again the slow way, which locates every problem
        result = Result.from_dict(_json(text, path), str(path))
    return result


def _parsed(text: str) -> "Result | None":
    """The Result of a valid results.json, parsed and validated in one pass by pydantic's own JSON reader (several
    times faster than ``json.loads`` and validating the objects); None when anything is wrong with it."""
    try:
        model = Result.model_validate_json(text)
    except (ValidationError, ValueError, RecursionError):
        return None
    return None if consistency_problems(model) else model


# A YAML mapping's first key (after comments and blank lines): `name: demo-bm25`, never the start of JSON.
# (each line matches one way only: nested repeats over blank lines backtracked 2^n ways on a non-match)
_YAML_KEY = re.compile(r"(?:[ \t]*(?:#[^\r\n]*)?\r?\n)*[ \t]*[A-Za-z_][\w.-]*:(?:\s|$)")


def _json(text: str, path: Path) -> Any:
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        if path.suffix.lower() in (".yaml", ".yml") or _YAML_KEY.match(text):
            raise InputError(f"{path}: a YAML file (a config?), not a results.json: give the results.json a run "
                             f"wrote (reports/<name>/results.json, or the run's folder)") from None
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}): a truncated or "
                         f"hand-edited results.json?") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply: not a results.json written by harness run") from None
