"""Every form in which a caller hands over judgments or a run, turned into the engine's ``Qrels`` and
``Run``: the objects themselves, dict-of-dicts (``{qid: {doc: grade}}``, ``{qid: {doc: score}}``, as
pytrec_eval and ranx take them), pandas DataFrames and pyarrow Tables (``metrics.frames``), and paths to TREC /
BEIR / JSONL / native files. Dicts and tables are read in bulk when a bulk check finds them sound, else entry by
entry, naming each problem.

In-memory data gets the files' rules: ids are strings (or integers, read as their decimal text) without whitespace;
a grade is a whole number (``1.0`` is 1, ``1.5`` is an error); a score is a number and not NaN. Every problem is
reported at once, each located (``qrels['q1']['d3']``, ``run.iloc[7].score``, ``run.column('score')[7]``); nothing
is dropped or guessed. pandas is never imported here: a DataFrame can only exist if its caller imported pandas.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..core.dictinput import (MAX_SHOWN, checked_id, grade_value, is_rank,
                              plain, raise_problems, score_value)
from ..core.errors import InputError
from ..core.ids import is_finite_number
from ..core.runtable import Qrels, Run, is_checked, offsets_of
from .frames import bulk_qrels, bulk_run, is_arrow_table

NATIVE_GOLD = (".jsonl", ".yaml", ".yml")
QRELS_FORMS = ("a Qrels, a dict {query_id: {doc_id: grade}}, a pandas DataFrame or pyarrow Table with columns "
               "query_id, doc_id, relevance, or a path to a TREC qrels, BEIR qrels TSV or native golden set file")
RUN_FORMS = ("a Run, a dict {query_id: {doc_id: score}}, a pandas DataFrame or pyarrow Table with columns query_id, "
             "doc_id, score, or a path to a TREC or JSONL run file")


def is_dataframe(value: Any) -> bool:
    pandas = sys.modules.get("pandas")  # not imported by us: if pandas is not loaded, value is no DataFrame
    return pandas is not None and isinstance(value, pandas.DataFrame)


def _kind(value: Any) -> str:
    if isinstance(value, Run):
        return "a Run"
    if isinstance(value, Qrels):
        return "a Qrels"
    return type(value).__name__


# ---- DataFrames and Arrow tables ---------------------------------------------------------------------------------

def _word(frame: Any) -> str:
    return "Arrow table" if is_arrow_table(frame) else "DataFrame"


def _at(frame: Any, name: str, i: int, column: str) -> str:
    """Where a cell is, as the caller would index it."""
    return f"{name}.column({column!r})[{i}]" if is_arrow_table(frame) else f"{name}.iloc[{i}].{column}"


def _names(frame: Any) -> list[str]:
    return [str(c) for c in (frame.column_names if is_arrow_table(frame) else frame.columns)]


def _check_columns(frame: Any, name: str, wanted: tuple[str, ...]) -> None:
    have = _names(frame)
    missing = [c for c in wanted if c not in have]
    if missing:
        raise InputError(f"{name}: the {_word(frame)} has no column {', '.join(repr(c) for c in missing)}; expected "
                         f"columns {', '.join(wanted)}, it has {', '.join(have) or 'none'}")
    dupes = sorted({c for c in have if have.count(c) > 1 and c in wanted})
    if dupes:
        raise InputError(f"{name}: the {_word(frame)} has two columns named {', '.join(map(repr, dupes))}")


def _columns(frame: Any, name: str, wanted: tuple[str, ...]) -> dict[str, list]:
    _check_columns(frame, name, wanted)
    if is_arrow_table(frame):
        return {c: frame.column(c).to_pylist() for c in wanted}
    return {c: frame[c].to_numpy().tolist() for c in wanted}


def _frame_rows(frame: Any, name: str, value_column: str, value: Callable[[Any], Any]):
    cols = _columns(frame, name, ("query_id", "doc_id", value_column))
    problems: list[str] = []
    qids, docs, values = [], [], []
    ids: dict[Any, str | None] = {}  # each distinct id checked once
    for i, (q, d, v) in enumerate(zip(cols["query_id"], cols["doc_id"], cols[value_column])):
        row = []
        for raw, what, col in ((q, "query id", "query_id"), (d, "document id", "doc_id")):
            try:
                key = (type(raw), raw)
                known = ids.get(key)
            except TypeError:  # unhashable (a list in a cell): not an id, whatever it holds
                row.append(checked_id(raw, what, _at(frame, name, i, col), problems))
                continue
            if known is None:  # unseen, or bad (then named on every row that holds it)
                known = ids[key] = checked_id(raw, what, _at(frame, name, i, col), problems)
            row.append(known)
        read = value(v)
        if isinstance(read, str):
            problems.append(f"{_at(frame, name, i, value_column)}: {read}")
        if None in row or isinstance(read, str):
            continue
        qids.append(row[0])
        docs.append(row[1])
        values.append(read)
    texts: dict[str, set] = {}
    for (kind, raw), text in ids.items():
        if text is not None:
            texts.setdefault(text, set()).add(kind.__name__)
    clashes = sorted(t for t, kinds in texts.items() if len(kinds) > 1)
    problems += [f"{name}: id {t!r} is given both as a string and as a number" for t in clashes[:MAX_SHOWN]]
    raise_problems(name, f"cannot read the {_word(frame)}", problems)
    return qids, docs, values


def _grouped(qids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query ids in order of first appearance, row order grouping them, rows per query)."""
    first: dict[str, int] = {}
    for q in qids:
        first.setdefault(q, len(first))
    codes = np.fromiter((first[q] for q in qids), dtype=np.int64, count=len(qids))
    lengths = np.bincount(codes, minlength=len(first))
    return np.array(list(first), dtype=object), np.argsort(codes, kind="stable"), lengths


def _qrels_from_frame(frame: Any, name: str) -> Qrels:
    _check_columns(frame, name, ("query_id", "doc_id", "relevance"))
    bulk = bulk_qrels(frame)  # the usual table in bulk; else row by row, each problem named
    if bulk is not None:
        return bulk
    qids, docs, grades = _frame_rows(frame, name, "relevance", grade_value)
    seen: dict[tuple[str, str], int] = {}
    problems = []
    for i, pair in enumerate(zip(qids, docs)):
        if pair in seen:
            problems.append(f"{name}: query {pair[0]!r}, doc {pair[1]!r} is judged twice (which grade is meant?)")
        seen.setdefault(pair, i)
    raise_problems(name, f"cannot read the {_word(frame)}", problems)
    query_ids, order, lengths = _grouped(qids)
    return Qrels(query_ids, offsets_of(lengths), np.array(docs, dtype=object)[order],
                 np.array(grades, dtype=np.int64)[order])


def _frame_ranks(frame: Any, name: str) -> np.ndarray | None:
    """A run table's ``rank`` column, when it has one (what ``order="rank"`` reads; it was dropped without a
    word): whole numbers, as a run file's ranks are (0-based ranks too), each bad cell named."""
    if "rank" not in _names(frame):
        raise InputError(f"{name}: order='rank' reads the {_word(frame)}'s rank column, and it has none (it has "
                         f"{', '.join(_names(frame))})")
    problems, ranks = [], []
    for i, cell in enumerate(_columns(frame, name, ("rank",))["rank"]):
        value = plain(cell)
        value = int(value) if isinstance(value, float) and value.is_integer() else value  # a column with a NaN
        if not is_rank(value):
            problems.append(f"{_at(frame, name, i, 'rank')}: a rank is a whole number, got {cell!r}")
        else:
            ranks.append(value)
    raise_problems(name, f"cannot read the {_word(frame)}", problems)
    return np.array(ranks, dtype=np.int64)


def _run_from_frame(frame: Any, name: str, read_ranks: bool = False) -> Run:
    _check_columns(frame, name, ("query_id", "doc_id", "score"))
    bulk = bulk_run(frame, read_ranks) if not read_ranks or "rank" in _names(frame) else None
    if bulk is not None:
        return bulk
    qids, docs, scores = _frame_rows(frame, name, "score", score_value)
    ranks = _frame_ranks(frame, name) if read_ranks else None
    query_ids, order, lengths = _grouped(qids)
    vocab, codes = np.unique(np.array(docs, dtype=object), return_inverse=True) if docs else (
        np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64))
    return Run(query_ids, offsets_of(lengths), vocab.astype(object), codes.astype(np.int64)[order],
                       np.array(scores, dtype=np.float64)[order], None if ranks is None else ranks[order])


# ---- paths --------------------------------------------------------------------------------------------------------

def read_qrels(path: Path) -> Qrels:
    """TREC qrels, BEIR qrels TSV, or a native golden set (its judgments), as ``harness eval`` reads them."""
    from ..io.textfile import base_suffix
    from ..gold.load import native_queries, read_qrels_file
    from ..io import fast_trec

    if base_suffix(path) in NATIVE_GOLD:
        raw = native_queries(path)
        return Qrels.from_checked_dict({q.query_id: {j.doc_id: j.grade for j in q.relevant} for q in raw})
    if path.is_file():
        fast = fast_trec.read_qrels(path)
        if fast is not None:
            return fast
    return Qrels.from_checked_dict(read_qrels_file(path))


def _path(value: Any) -> Path | None:
    return Path(value) if isinstance(value, (str, os.PathLike)) else None


# ---- the two entry points -----------------------------------------------------------------------------------------

def as_qrels(value: Any, name: str = "qrels") -> Qrels:
    """``value`` as judgments, or an InputError naming ``name`` and the forms accepted."""
    if isinstance(value, Qrels):
        return _sound(value, name)
    if isinstance(value, Mapping):
        return Qrels.read_dict(value, name)
    if is_dataframe(value) or is_arrow_table(value):
        return _qrels_from_frame(value, name)
    path = _path(value)
    if path is not None:
        return read_qrels(path)
    hint = " (the judgments come first: evaluate(qrels, run, metrics))" if isinstance(value, Run) else ""
    raise InputError(f"{name}: expected {QRELS_FORMS}; got {_kind(value)}{hint}")


def as_run(value: Any, name: str = "run", ranks: bool = False) -> Run:
    """``value`` as a columnar run, or an InputError naming ``name`` and the forms accepted. ``ranks``: a
    DataFrame's ``rank`` column is read (``order="rank"``); otherwise it is left alone, as any other column."""
    if isinstance(value, Run):
        return _sound(value, name)
    if isinstance(value, Mapping):
        return Run.read_dict(value, name)
    if is_dataframe(value) or is_arrow_table(value):
        return _run_from_frame(value, name, ranks)
    path = _path(value)
    if path is not None:
        from ..io.runfiles import read_run

        return read_run(path)
    hint = " (the run comes second: evaluate(qrels, run, metrics))" if isinstance(value, Qrels) else ""
    raise InputError(f"{name}: expected {RUN_FORMS}; got {_kind(value)}{hint}")


def _sound(columns, name: str):
    """A Qrels or Run given as it is: built by hand from arrays, it is checked as a reader's would be sound (one the
    library built was checked as it was read)."""
    if is_checked(columns):
        return columns
    problems = columns.problems(name)
    if problems:
        raise InputError(f"{name}: a {type(columns).__name__} whose arrays do not fit together", problems[:MAX_SHOWN])
    return columns


def finite_number(value: Any) -> bool:
    """``core.ids.is_finite_number`` of a value or a NumPy scalar."""
    return is_finite_number(plain(value))
