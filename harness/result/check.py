"""Checks of a results.json beyond its types (``consistency_problems``), and located messages for one that does
not fit its schema (``harness.result.model``): one line per problem, naming the key path
(``queries.3.hits.0.rank: expected a whole number, got '1'``)."""

from __future__ import annotations

import difflib
import math
import typing
from typing import Annotated, Any, Sequence

import numpy as np
from pydantic import BaseModel

from ..core.fingerprint import fingerprint_of_items
from .querycolumns import QueryColumns, builder_for

# The checks read a ``result.Result`` (which imports this module): typed as ``Any`` here so the two modules import
# one way only.
MAX_SHOWN = 20  # problems listed in one error; the rest are counted


def got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _field_type(annotation: Any, key: Any) -> Any:
    """The type one step of a location down from ``annotation`` (a model field, list item or dict value)."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(key)
        return field.annotation if field else None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and isinstance(key, int):
        return args[0]
    if origin is dict:
        return args[1]
    if args:  # X | None: follow the non-null member
        inner = [a for a in args if a is not type(None)]
        return _field_type(inner[0], key) if len(inner) == 1 else None
    return None


def _unknown_field(root: type[BaseModel], loc: tuple) -> str:
    owner: Any = root
    for key in loc[:-1]:
        owner = _field_type(owner, key)
    while typing.get_origin(owner) is Annotated:
        owner = typing.get_args(owner)[0]
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        fields = list(owner.model_fields)
        near = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.6)
        return "unknown field" + (f"; did you mean {near[0]!r}?" if near else f"; expected {', '.join(fields)}")
    return "unknown field"


_EXPECTED = {"int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
             "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
             "bool_type": "true or false", "dict_type": "an object", "model_type": "an object",
             "model_attributes_type": "an object", "list_type": "a list"}


def _message(root: type[BaseModel], err: dict) -> str:
    kind, value = err["type"], err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(root, tuple(err["loc"]))
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {got(value)}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {got(value)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "?")
        words = {"greater_than_equal": "at least", "greater_than": "more than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        return f"must be {words} {bound}, got {got(value)}"
    if kind in ("too_short", "too_long") and ctx.get("min_length") == 2 == ctx.get("max_length", 2):
        return f"expected a [start, end] pair, got {got(value)}"
    if kind == "string_pattern_mismatch":
        return f"expected a run name (letters, digits, '_', '.', '-'), got {got(value)}"
    return f"{err['msg']}, got {got(value)}"


def located(root: type[BaseModel], err: dict) -> str:
    """One pydantic error of validating ``root`` as ``key.path: message``."""
    loc, key = tuple(err["loc"]), ""
    if len(loc) >= 2 and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
        loc, key = loc[:-2], f"key {loc[-2]!r}: "
    return f"{'.'.join(str(p) for p in loc) or '<root>'}: {key}{_message(root, err)}"


def shown(where: str, problems: list[str]) -> list[str]:
    lines = [f"{where}: {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"... and {len(problems) - MAX_SHOWN} more")
    return lines


def _ids_fingerprint(ids: list[str]) -> str:
    return fingerprint_of_items(sorted(ids))  # what assemble writes as goldset.query_ids_fingerprint


def _duplicate_problems(ids: list[str]) -> list[str]:
    """A line for each query id seen before, naming where it was first. A set of the ids says whether there is
    any (a dict of every id's position is made only then)."""
    if len(set(ids)) == len(ids):
        return []
    first: dict[str, int] = {}
    return [f"queries.{i}.id: duplicate query id {q!r} (first at queries.{first[q]})"
            for i, q in enumerate(ids) if first.setdefault(q, i) != i]


def consistency_problems(result: Any) -> list[str]:
    """What the types cannot say but the readers rely on: unique query ids that match the golden set's count and
    fingerprint (compare pairs queries by id), every query carrying the summary's metrics (gate and compare read
    per-query values by the summary's names), and counts that agree with the ``counted`` flags."""
    scan = ConsistencyScan(result.summary)
    for q in result.queries:
        scan.add(q)
    return scan.problems(result)


class ConsistencyScan:
    """The per-query facts ``consistency_problems`` needs, gathered a record at a time in ONE pass (a large run's
    records are spooled: decoding them once per check would read the whole run seven times), then checked against
    the result's bounded part. The counted flags and values are the run's ``querycolumns``, which ``columns``
    gives after ``problems`` (``io.results_stream`` keeps them on the Result it loads)."""

    def __init__(self, summary: Any, slim: bool = False, known_ids: Sequence[str] | None = None):
        self.names = {level: set(summary.means(level)) for level in ("doc", "chunk")}
        self.builder = builder_for(summary, slim, known_ids)  # slim, known_ids: see querycolumns.ColumnsBuilder
        self.columns: QueryColumns | None = None
        self.count = 0
        self.name_problems: dict[str, list[str]] = {level: [] for level in self.names}
        self.missing_hits: tuple[int, int] = (-1, 0)  # (the first query without hits, how many)
        self.rank_problems: list[str] = []

    def add(self, q: Any) -> None:
        i = self.count
        self.count += 1
        for level, names in self.names.items():
            metrics = getattr(q.metrics, level)
            if metrics.keys() != names:
                have = set(metrics)
                missing, extra = sorted(names - have), sorted(have - names)
                self.name_problems[level].append(
                    f"queries.{i}.metrics.{level}: metric names differ from summary.{level}"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; not in the summary: {', '.join(extra)}" if extra else ""))
        if q.hits is None:
            first, n = self.missing_hits
            self.missing_hits = (i if n == 0 else first, n + 1)
        else:
            bad = next((j for j, hit in enumerate(q.hits) if hit.rank != j + 1), None)
            if bad is not None:  # (explain and the reports show ranks as written)
                self.rank_problems.append(f"queries.{i}.hits.{bad}.rank: says {q.hits[bad].rank}, but it is hit "
                                          f"{bad + 1} of the list (ranks are 1, 2, ... in order)")
        self.builder.add(q)

    def problems(self, result: Any) -> list[str]:
        """The problems of ``result`` (whose records were all added), in the order the checks list them."""
        self.columns = columns = self.builder.build(result.queries)
        problems = _duplicate_problems(columns.ids)
        if result.goldset.queries != self.count:
            problems.append(f"goldset.queries: says {result.goldset.queries} queries, but 'queries' has "
                            f"{self.count}")
        elif not problems and result.goldset.query_ids_fingerprint != _ids_fingerprint(columns.ids):
            problems.append("goldset.query_ids_fingerprint: does not match the ids in 'queries' (edited by hand?)")
        for level in ("doc", "chunk"):
            problems += self.name_problems[level]
            counts = result.summary.level_counts(level)
            counted = columns.counted[level]
            uncounted = {columns.ids[i] for i in np.flatnonzero(~counted).tolist()}
            if self.count - len(uncounted) != counts.evaluated_queries:
                problems.append(f"summary.counts.{level}.evaluated_queries: says {counts.evaluated_queries}, but "
                                f"{self.count - len(uncounted)} queries are counted at {level} level "
                                f"(queries.N.counted.{level})")
            errors, no_rel = set(counts.excluded_goldset_error_query_ids), set(counts.no_relevant_query_ids)
            no_rel |= set(counts.unanswerable_query_ids)
            if not errors <= uncounted or not uncounted <= errors | no_rel:
                problems.append(f"summary.counts.{level}: the excluded query ids do not match the queries not "
                                f"counted at {level} level (queries.N.counted.{level})")
            sums = {name: columns.counted_sum(level, name) for name in self.names[level]}
            problems += _mean_problems(result, level, self.names[level], sums)
        return (problems + _verdict_problems(result, columns) + self.rank_problems
                + _hits_problems(result, self.missing_hits))


def _verdict_problems(result: Any, columns: QueryColumns) -> list[str]:
    """The summary's count of each verdict kind is the number of queries whose verdict is that kind (a verdict
    edited by hand showed one kind in explain and the page's rows, another in the gate and the counts)."""
    verdicts = result.summary.verdicts
    found = dict(zip(columns.kind_names, np.bincount(columns.kinds, minlength=len(columns.kind_names)).tolist()))
    problems = [f"summary.verdicts.counts.{kind}: says {said}, but {found.get(kind, 0)} queries have that verdict "
                f"(queries.N.verdict.kind; edited by hand?)"
                for kind, said in verdicts.counts.model_dump().items() if said != found.get(kind, 0)]
    if verdicts.total != len(columns.kinds):
        problems.append(f"summary.verdicts.total: says {verdicts.total}, but 'queries' has {len(columns.kinds)}")
    marked = found.get("unanswerable", 0)  # the abstention's population is the queries of that verdict
    abstention = result.summary.abstention
    if abstention is not None and abstention.unanswerable_queries != marked:
        problems.append(f"summary.abstention.unanswerable_queries: says {abstention.unanswerable_queries}, but "
                        f"{marked} queries have the verdict unanswerable (edited by hand?)")
    return problems


def _hits_problems(result: Any, missing: tuple[int, int]) -> list[str]:
    """A query without hits must say where they are: ``hits_kept`` "selected" and a ``hits_file``. ``missing``:
    (the first query without hits, how many)."""
    if result.hits_kept == "selected":
        return [] if result.hits_file else ["hits_file: required when hits_kept is 'selected'"]
    first, n = missing
    return [f"queries.{first}.hits: null, but hits_kept is 'all' ({n} such queries)"] if n else []


def _mean_problems(result: Any, level: str, names: set[str], sums: dict[str, tuple[float, int]]) -> list[str]:
    """Every summary mean is the mean of the counted queries' values (``sums``: name -> their exact sum, how many):
    a gate or a compare reading the summary and one reading per-query values must not disagree (a hand-edited
    summary would make them)."""
    problems = []
    for name, mean in result.summary.means(level).items():
        if name not in names:
            continue
        total, n = sums[name]
        expected = total / n if n else None
        if (mean is None) != (expected is None) or (
                mean is not None and not math.isclose(mean, expected, rel_tol=1e-9, abs_tol=1e-12)):
            problems.append(f"summary.{level}.{name}: says {mean!r}, but the mean of the {n} counted "
                            f"queries' values is {expected!r} (edited by hand?)")
    return problems
