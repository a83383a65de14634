"""Decisions over saved results: ``harness.compare`` (paired tests) and ``harness.gate`` (release rules), what
``harness compare`` and ``harness gate`` call."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from dataclasses import dataclass

from ..core.errors import InputError
from ..result import outcomes
from .arguments import _describe, _metric_names

if TYPE_CHECKING:
    from ..result.model import Result


def _as_result(value: Any, name: str) -> "Result":
    """A Result as it is; a results.json path loaded, a parsed results.json validated (every problem located)."""
    from ..result.model import Result
    from ..result.read import load_result

    if isinstance(value, Result):
        return value
    if isinstance(value, (str, os.PathLike)):
        return load_result(Path(value))
    if isinstance(value, Mapping):
        return Result.from_dict(dict(value), name)
    raise InputError(f"{name}: expected a Result (harness.run), a results.json path or its loaded dict; got "
                     f"{type(value).__name__}")


@dataclass(frozen=True)
class Comparison(outcomes.Comparison):
    """The typed Comparison (core/outcomes: ``rows`` of ComparisonRow, ``transitions``, ``to_dict`` = what
    ``harness compare --format json`` prints) with its Markdown. The renderer lives in render/compare_view, which
    core may not import, so the method is added here."""

    def to_markdown(self) -> str:
        from ..render.compare_view import to_markdown

        return to_markdown(self)


def _named(items: Any) -> list[tuple[str | None, Any]]:
    if isinstance(items, Mapping):
        bad = [k for k in items if not isinstance(k, str) or not k]
        if bad:
            raise InputError(f"results: names must be non-empty strings, got {bad[0]!r}")
        return list(items.items())
    if isinstance(items, Sequence) and not isinstance(items, str):
        return [(None, item) for item in items]
    raise InputError(f"results: expected a list (or a dict by name) of two or more results or MetricTables, got "
                     f"{type(items).__name__}")


def _tables_as_results(named: list[tuple[str | None, Any]]) -> list["Result"]:
    """MetricTables of the same queries as in-memory Results holding only what ``compare_runs`` reads: one level
    ('doc'), each query's values and its table's inclusion rule as the ``counted`` flag. Built without validation
    (``model_construct``): they are never written, and the rest of a results.json (corpus, verdicts...) does not
    exist for a table."""
    from ..result.model import (
        CutoffRecord,
        GoldsetRecord,
        LevelFlags,
        QueryMetrics,
        QueryResult,
        Result,
        Summary,
        Verdict,
    )

    base_name, base = named[0]
    base_ids = sorted(base.query_ids)
    base_rel = dict(zip(base.query_ids, base.n_relevant.tolist()))
    base_inc = dict(zip(base.query_ids, base.included.tolist()))
    # Same queries and judgments are checked below, so one constant fingerprint stands for all tables.
    goldset = GoldsetRecord.model_construct(fingerprint="tables", query_ids_fingerprint="tables")
    cutoff, ok = CutoffRecord.model_construct(describe=""), Verdict.model_construct(kind="ok")
    out = []
    for i, (name, table) in enumerate(named):
        where = f"results[{name!r}]" if name else f"results[{i}]"
        if sorted(table.query_ids) != base_ids:
            only = sorted(set(table.query_ids) ^ set(base_ids))
            raise InputError(f"{where}: covers other queries than the first table ({len(only)} differ, e.g. "
                             f"{', '.join(only[:5])}); a paired comparison needs the same queries")
        if (dict(zip(table.query_ids, table.n_relevant.tolist())) != base_rel
                or dict(zip(table.query_ids, table.included.tolist())) != base_inc
                or (table.judgments and base.judgments and table.judgments != base.judgments)):
            raise InputError(f"{where}: was evaluated against other judgments or another query_policy than the "
                             f"first table; a paired comparison needs the same ones")
        per_query = table.per_query()
        queries = [QueryResult.model_construct(id=q, tags={}, verdict=ok,
                                               metrics=QueryMetrics.model_construct(doc=per_query[q], chunk={}),
                                               counted=LevelFlags.model_construct(doc=bool(inc), chunk=False))
                   for q, inc in zip(table.query_ids, table.included.tolist())]
        out.append(Result.model_construct(name=name or f"run{i + 1}", goldset=goldset, cutoff=cutoff,
                                          summary=Summary.model_construct(doc=table.mean(), chunk={}),
                                          queries=queries))
    return out


def _warner(warn: Callable[[str], None] | None) -> Callable[[str], None]:
    """Where a decision's warnings go: ``warn`` when given (the CLI prints them to stderr), else Python's
    ``warnings`` (a notebook shows them)."""
    return warn or (lambda message: warnings.warn(message, stacklevel=3))


def compare(results: Any, metrics: Any = None, *, baseline: str | None = None, test: str = "randomization",
            correction: str = "holm", warn: Callable[[str], None] | None = None) -> Comparison:
    """Paired comparison against a baseline (default: the first), as ``harness compare``: mean deltas, bootstrap
    CIs, p values with a multiple-comparison correction, win/tie/loss, MDE, verdict transitions.

    ``results``: a list (or a dict by name) of Results, results.json paths or loaded dicts, or of MetricTables of
    the same queries (``harness.evaluate``). ``metrics``: names (results: ``chunk.recall@5`` for chunk level;
    default ndcg@10 and chunk.recall@window; tables: default every metric of the first). ``warn``: called with
    each warning instead of ``warnings.warn``."""
    from dataclasses import fields, replace

    from ..metrics.engine import MetricTable
    from ..stats.compare import compare_runs

    named = _named(results)
    if len(named) < 2:
        raise InputError(f"results: compare needs two or more results or MetricTables, got {len(named)}")
    tables = [isinstance(item, MetricTable) for _, item in named]
    names = None if metrics is None else _metric_names(metrics)
    if all(tables):
        if names and any(str(m).startswith(("doc.", "chunk.")) for m in names):
            raise InputError("metrics: a MetricTable has one level; give names without doc. or chunk.")
        runs = _tables_as_results(named)
        names = names or list(named[0][1].names)
        from ..metrics.spec import parse_metric

        for i, (name, table) in enumerate(named):  # in the tables' words: no doc. level shows through
            missing = [m for m in names if parse_metric(str(m)).name not in table.names]
            if missing:
                where = f"results[{name!r}]" if name else f"results[{i}]"
                raise InputError(f"metrics: {', '.join(map(repr, missing))} not in the MetricTable {where} (it has "
                                 f"{', '.join(table.names)})")
    elif any(tables):
        others = [f"results[{name!r}] is {_describe(item)}" if name else f"results[{i}] is {_describe(item)}"
                  for i, ((name, item), table) in enumerate(zip(named, tables)) if not table]
        raise InputError(f"results: give all results or all MetricTables, not a mix ({'; '.join(others[:3])})")
    else:
        runs = []
        for i, (name, item) in enumerate(named):
            result = _as_result(item, f"results[{name!r}]" if name else f"results[{i}]")
            runs.append(result.model_copy(update={"name": name}) if name else result)
    if baseline is not None and not isinstance(baseline, str):
        raise InputError(f"baseline: expected a run name, got {baseline!r}")
    typed = compare_runs(runs, [str(m) for m in names or []], baseline=baseline, test=test, correction=correction)
    if all(tables):  # one level: the 'doc.' of the tables' stand-in Results says nothing
        typed = replace(typed, rows=[replace(row, metric=row.metric.removeprefix("doc.")) for row in typed.rows])
    for message in typed.warnings:
        _warner(warn)(message)
    return Comparison(**{f.name: getattr(typed, f.name) for f in fields(typed)})


@dataclass(frozen=True)
class GateOutcome(outcomes.GateOutcome):
    """The typed GateOutcome (core/outcomes: ``results`` in rule order, ``passed``, ``failed`` and ``skipped``
    counts, ``to_dict``) with the Markdown summary and JUnit XML of ``harness gate --summary/--junit``. The
    renderers live in stats/gates, which core may not import, so the methods are added here."""

    def to_markdown(self) -> str:
        from ..render.gate import summary_markdown

        return summary_markdown(self.name, list(self.results))

    def to_junit(self) -> str:
        from ..render.gate import junit_xml

        return junit_xml(self.name, list(self.results))


def _rules(rules: Any, result: "Result", base: "Result | None") -> list:
    """A rules YAML path is read as ``harness gate --rules`` reads it; a list is parsed with the same per-rule
    parser, and both are checked against the run."""
    from ..stats.gates import check_rules, parse_rule, rule_problems

    if isinstance(rules, (str, os.PathLike)):
        path = Path(rules)
        if not path.is_file() and isinstance(rules, str) and any(op in rules for op in ("<", ">", "regression")):
            raise InputError(f"rules: {rules!r} is not a file; to give one rule, pass a list: [{rules!r}]")
        return check_rules(path, result, base)
    if isinstance(rules, (Mapping, bytes, bytearray)) or not isinstance(rules, Sequence) or not rules:
        raise InputError(f"rules: expected a rules YAML path or a non-empty list of rules (strings like "
                         f"'doc.ndcg@10 >= 0.8' or mappings); got {_describe(rules)}")
    parsed, problems = [], []
    for i, item in enumerate(rules):
        try:
            parsed.append(parse_rule(item, f"rules.{i}"))
        except (InputError, ValueError) as exc:
            problems.append(f"rules.{i}: {exc}")
    problems += rule_problems(parsed, result, base)
    if problems:
        raise InputError("rules: invalid rules", problems)
    return parsed


def gate(result: Any, rules: Any, baseline: Any = None, on_inconclusive: str | None = None, *,
         warn: Callable[[str], None] | None = None) -> GateOutcome:
    """Check release rules against a result, as ``harness gate``: thresholds, verdict shares, and regressions
    against ``baseline`` (without one, regression rules are skipped with a warning). ``rules``: a rules YAML path
    or a list of rules. ``on_inconclusive`` (pass | fail; default fail): what an INCONCLUSIVE does to a rule that
    does not say, as ``--on-inconclusive``. ``outcome.passed`` is what the CLI's exit code says. ``warn``: called
    with each warning (skipped regression rules, INCONCLUSIVE rules) instead of ``warnings.warn``."""
    from ..stats.gates import evaluate_gates

    candidate = _as_result(result, "result")
    base = None if baseline is None else _as_result(baseline, "baseline")
    typed = evaluate_gates(candidate, _rules(rules, candidate, base), base, on_inconclusive=on_inconclusive)
    outcome = GateOutcome(typed.name, list(typed.results))
    for _, message in gate_notes(outcome):
        _warner(warn)(message)
    return outcome


def gate_notes(outcome: outcomes.GateOutcome, baseline: str = "baseline") -> list[tuple[str, str]]:
    """What a gate says beside its table, as (warning | note, text): regression rules skipped for want of a
    ``baseline`` (the CLI names its option), and rules the golden set was too small to decide."""
    from ..render.fmt import plural

    notes = []
    if outcome.skipped:
        notes.append(("warning", f"{plural(outcome.skipped, 'regression rule')} skipped: no {baseline} given"))
    if outcome.inconclusive:
        accepted = sum(r.accepted for r in outcome)
        notes.append(("note", f"{plural(outcome.inconclusive, 'rule')} INCONCLUSIVE (the golden set is too small to "
                              f"decide)" + (f", {accepted} accepted by on_inconclusive: pass" if accepted else "")))
    return notes
