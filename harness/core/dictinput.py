"""The files' rules for judgments and runs handed over in memory as dict-of-dicts (``{qid: {doc: grade}}``,
``{qid: {doc: score}}``, as pytrec_eval and ranx take them): ids are strings (or integers, read as their decimal
text) without whitespace; a grade is a whole number (``1.0`` is 1, ``1.5`` is an error); a score is a finite number.
Every problem is reported at once, each located (``qrels['q1']['d3']``); nothing is dropped or guessed. Used by
``metrics.inputs`` (``harness.evaluate``'s arguments) and by the public ``Run``/``Qrels`` constructors."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from .errors import InputError
from .ids import GRADE_LIMIT, id_problem, is_finite_number, shown, whole

MAX_SHOWN = 20
RANK_LIMIT = 2**62  # a rank is stored as int64


def raise_problems(name: str, head: str, problems: list[str]) -> None:
    if problems:
        shown = problems[:MAX_SHOWN] + ([f"... and {len(problems) - MAX_SHOWN} more"]
                                        if len(problems) > MAX_SHOWN else [])
        raise InputError(f"{name}: {head} ({len(problems)} problem(s))", shown)


# ---- single values ------------------------------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """numpy scalars as the Python values they hold (np.int64 is not an int, np.str_ is a str already)."""
    return value.item() if isinstance(value, np.generic) else value


def checked_id(value: Any, what: str, where: str, problems: list[str]) -> str | None:
    value = plain(value)
    if value is None or isinstance(value, float) and value != value:  # a DataFrame's empty cell
        problems.append(f"{where}: {what} is missing ({value})")
        return None
    problem = id_problem(value, what)
    if problem:
        problems.append(f"{where}: {problem}")
        return None
    return str(value)


def grade_value(value: Any) -> int | str:
    """The grade ``value`` holds, or why it holds none."""
    value = plain(value)
    grade = whole(value)  # 1.0 is 1, as in a qrels file
    if grade is None:
        return f"expected a whole-number grade, got {shown(value)}"
    if not -GRADE_LIMIT < grade < GRADE_LIMIT:
        return f"grade {shown(grade)} is out of range (|grade| < 2**31)"
    return grade


def score_value(value: Any) -> float | str:
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number as score, got {shown(value)}"
    if value != value:
        return "a NaN score has no place in a ranking"
    if not is_finite_number(value):  # inf, or an int too large for a float
        return f"score {shown(value)} is not a finite number: an infinite score has no place in a ranking"
    return float(value)


def checked_nested(data: Mapping, name: str, inner: str, value: Callable[[Any], Any], fast: Callable[[Any], bool],
                   hint: Callable[[Any], str]) -> dict[str, dict[str, Any]]:
    """``{qid: {doc: value}}`` checked entry by entry; ids made strings, collisions (1 and "1") refused. ``fast``
    says a value is fine as it is (the usual case, checked without a call to ``value``)."""
    problems: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    good_docs: set[str] = set()  # string doc ids already checked: a doc recurs across queries
    for raw_q, docs in data.items():
        where = f"{name}[{shown(raw_q)}]"
        qid = checked_id(raw_q, "query id", where, problems)
        if not isinstance(docs, Mapping):
            problems.append(f"{where}: expected a dict {inner}, got {type(docs).__name__} {shown(docs)}"[:300])
            continue
        if qid is None:
            continue
        if qid in out:
            problems.append(f"{where}: query id {shown(qid)} is given twice (as a string and as a number)")
            continue
        hits: dict[str, Any] = {}
        for raw_d, raw_v in docs.items():
            if type(raw_d) is str and raw_d in good_docs:
                doc: str | None = raw_d
            else:
                doc = checked_id(raw_d, "document id", f"{where}[{shown(raw_d)}]", problems)
                if doc is not None and type(raw_d) is str:
                    good_docs.add(doc)
            v = raw_v if fast(raw_v) else value(raw_v)
            if isinstance(v, str):
                problems.append(f"{where}[{shown(raw_d)}]: {v}{hint(raw_v)}")
            if doc is None or isinstance(v, str):
                continue
            if doc in hits:
                problems.append(f"{where}[{shown(raw_d)}]: document id {shown(doc)} is given twice (as a string and as a number)")
                continue
            hits[doc] = v
        out[qid] = hits
    raise_problems(name, f"cannot read the dict {inner}", problems)
    return out


def is_rank(value: Any) -> bool:
    """A rank as a run file's ranks are: a whole number (0-based too), small enough for int64."""
    return isinstance(value, int) and not isinstance(value, bool) and -RANK_LIMIT < value < RANK_LIMIT


def plain_grade(value: Any) -> bool:
    return type(value) is int and -GRADE_LIMIT < value < GRADE_LIMIT


def plain_score(value: Any) -> bool:
    return type(value) is float and math.isfinite(value)


def looks_like_scores(value: Any) -> str:
    value = plain(value)
    if isinstance(value, float) and not isinstance(value, bool):
        return " (a score? the judgments come first: evaluate(qrels, run, metrics))"
    return ""


def checked_grades(data: Any, name: str) -> dict[str, dict[str, int]]:
    """``{qid: {doc: grade}}`` checked (see the module), or an InputError naming ``name``."""
    if not isinstance(data, Mapping):
        raise InputError(f"{name}: expected a dict {{query_id: {{doc_id: grade}}}}, got {type(data).__name__}")
    hint = looks_like_scores if name == "qrels" else (lambda v: "")  # evaluate's first argument: swapped?
    return checked_nested(data, name, "{doc_id: grade}", grade_value, plain_grade, hint)


def checked_scores(data: Any, name: str) -> dict[str, dict[str, float]]:
    """``{qid: {doc: score}}`` checked (see the module), or an InputError naming ``name``."""
    if not isinstance(data, Mapping):
        raise InputError(f"{name}: expected a dict {{query_id: {{doc_id: score}}}}, got {type(data).__name__}")
    return checked_nested(data, name, "{doc_id: score}", score_value, plain_score, lambda v: "")


def checked_lists(data: Any, name: str) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(doc, score), ...]}`` checked (see the module; a doc may repeat in a list, as in a run file), or
    an InputError naming ``name`` and each bad entry."""
    if not isinstance(data, Mapping):
        raise InputError(f"{name}: expected a dict {{query_id: [(doc_id, score), ...]}}, got {type(data).__name__}")
    problems: list[str] = []
    out: dict[str, list[tuple[str, float]]] = {}
    for raw_q, hits in data.items():
        where = f"{name}[{shown(raw_q)}]"
        qid = checked_id(raw_q, "query id", where, problems)
        if isinstance(hits, (str, bytes, Mapping)) or not isinstance(hits, (list, tuple)):
            problems.append(f"{where}: expected a list of (doc_id, score) pairs, got {type(hits).__name__} "
                            f"{shown(hits)}"[:300])
            continue
        if qid is not None and qid in out:
            problems.append(f"{where}: query id {shown(qid)} is given twice (as a string and as a number)")
            continue
        pairs: list[tuple[str, float]] = []
        for i, pair in enumerate(hits):
            at = f"{where}[{i}]"
            if isinstance(pair, (str, bytes)) or not isinstance(pair, (list, tuple)) or len(pair) != 2:
                problems.append(f"{at}: expected a (doc_id, score) pair, got {shown(pair)}"[:300])
                continue
            doc = checked_id(pair[0], "document id", at, problems)
            score = score_value(pair[1])
            if isinstance(score, str):
                problems.append(f"{at}: {score}")
            elif doc is not None:
                pairs.append((doc, score))
        if qid is not None:
            out[qid] = pairs
    raise_problems(name, "cannot read the ranked lists", problems)
    return out


def checked_ranks(ranks: Any, lists: Mapping, name: str) -> dict[str, list[int]]:
    """Each query's given ranks, one whole number per hit of ``lists`` (as a run file's ranks are), or an
    InputError naming ``name`` and each bad entry."""
    if not isinstance(ranks, Mapping):
        raise InputError(f"{name}: expected a dict {{query_id: [rank, ...]}}, got {type(ranks).__name__}")
    problems: list[str] = []
    out: dict[str, list[int]] = {}
    by_id = {str(plain(key)): value for key, value in ranks.items()}  # keyed as the lists' ids are read: 1 is "1"
    for raw_q, hits in lists.items():
        given = by_id.get(str(plain(raw_q)))
        where = f"{name}[{shown(raw_q)}]"
        listed = isinstance(given, (list, tuple, np.ndarray))
        if not listed or isinstance(hits, (str, bytes, Mapping)) or len(given) != len(hits):
            problems.append(f"{where}: expected {len(hits)} rank(s), one per hit, got {shown(given)}"[:300])
            continue
        values = [plain(r) for r in given]
        bad = [r for r in values if not is_rank(r)]
        if bad:
            problems.append(f"{where}: a rank is a whole number, got {shown(bad[0])}")
            continue
        out[str(plain(raw_q))] = values
    raise_problems(name, "cannot read the ranks", problems)
    return out
