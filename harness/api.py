"""The Python API: thin functions over the library, the names a notebook needs (``harness.run``, ``evaluate``,
``compare``, ``fuse``, ``gate``...). Each takes what a caller has at hand (a path, a loaded object, a dict, a pandas
DataFrame), turns it into the library's types with located errors, and calls the same code as the CLI.

Nothing heavy is imported here at module level: ``import harness`` stays light, and each function imports what it
calls. A wrong argument is a HarnessError naming the argument and what was expected, never an AttributeError or
KeyError from deep inside.

``run`` returns the typed ``Result`` (result/model), ``compare`` the typed ``Comparison`` and ``gate`` the typed
``GateOutcome`` (core/outcomes), each with its Markdown (and JUnit) rendering as methods for notebooks.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from .result import outcomes
from .core.errors import ConfigError, InputError

if TYPE_CHECKING:  # for readers and type checkers only; nothing here is imported at run time
    from .config.schema import ExperimentConfig
    from .result.model import Result
    from .core.runtable import Run, Qrels
    from .metrics.engine import MetricTable


# ---- configs and runs --------------------------------------------------------------------------------------------

def load_config(path: str | os.PathLike) -> "ExperimentConfig":
    """Read and validate an experiment YAML (paths in it are relative to the file); every problem in one error."""
    from .config.schema import load_config as load

    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"load_config: expected the path of an experiment YAML, got {type(path).__name__}")
    return load(Path(path))


def _as_config(config: Any) -> tuple["ExperimentConfig", str]:
    from .config.schema import ExperimentConfig, parse_config

    if isinstance(config, ExperimentConfig):
        return config, config.name
    if isinstance(config, (str, os.PathLike)):
        return load_config(config), str(config)
    if isinstance(config, Mapping):  # paths in it are relative to the working folder
        return parse_config(dict(config), "config"), "config"
    raise ConfigError(f"config: expected the path of an experiment YAML, a loaded config (harness.load_config) or "
                      f"a mapping of its keys; got {type(config).__name__}")


def run(config: Any, *, out: str | os.PathLike | None = None, force: bool = False, progress: bool = False,
        log: Callable[[str], None] | None = None) -> "Result":
    """Run one experiment: the same checks and code as ``harness run``, returning its Result.

    ``config``: a path, a loaded config or a mapping. ``out``: also write results.json, the run files and the
    reports into that folder (a folder harness owns; ``force`` as ``--force``). Golden-set problems that the run
    flags are Python warnings; ``log`` receives the progress lines the CLI prints on stderr."""
    from .pipeline.assemble import check_before_retrieval, run_experiment

    problems = [f"{name}: expected True or False, got {value!r}"[:300]
                for name, value in (("force", force), ("progress", progress)) if not isinstance(value, bool)]
    if out is not None and not isinstance(out, (str, os.PathLike)) or isinstance(out, str) and not out.strip():
        problems.append(f"out: expected a folder path (str or Path), got {out!r}"[:300])
    if log is not None and not callable(log):
        problems.append(f"log: expected a function taking one line of text, got {_describe(log)}")
    if problems:
        raise InputError("run: invalid arguments", problems)
    cfg, source = _as_config(config)
    if cfg.sweep:
        raise ConfigError(f"{source}: sweep: harness.run runs one experiment; run the sweep with "
                          f"`harness run {source}` (it writes the leaderboard)")
    quiet = log or (lambda message: None)

    def warn(message: str) -> None:  # a run's warnings (skipped hits, failed requests...) as Python warnings
        warnings.warn(message.removeprefix("warning: "), stacklevel=3)

    checked = check_before_retrieval(cfg, source=source, log=quiet)
    for warning in checked.warnings:
        warnings.warn(warning, stacklevel=2)
    if out is None:
        return run_experiment(cfg, progress=progress, log=quiet, warn=warn, prepared=checked.prepared)
    from .io.outdir import open_output
    from .render.outputs import write_outputs

    # Opened before the run, as the CLI does: a folder harness may not write is refused before the work.
    with open_output(Path(out), run=cfg.name, force=force, origin="out=") as folder:
        result = run_experiment(cfg, progress=progress, log=quiet, warn=warn, prepared=checked.prepared)
        write_outputs(result, folder)
    return result


# ---- metrics -----------------------------------------------------------------------------------------------------

def _metric_names(metrics: Any, name: str = "metrics") -> list:
    from .metrics.spec import MetricSpec

    if isinstance(metrics, (str, MetricSpec)):
        return [metrics]  # one name, not its characters
    if isinstance(metrics, Iterable) and not isinstance(metrics, Mapping):
        names = list(metrics)
        bad = [m for m in names if not isinstance(m, (str, MetricSpec))]
        if not bad and names:
            return names
        if bad:
            raise InputError(f"{name}: expected metric names like 'ndcg@10', got {bad[0]!r}")
    raise InputError(f"{name}: expected a metric name like 'ndcg@10' or a non-empty list of them, "
                     f"got {metrics!r}"[:300])


def evaluate(qrels: Any, run: Any, metrics: Any = None, *, query_policy: str = "exclude",
             trec_compat: bool = False, order: str = "score") -> "MetricTable":
    """Evaluate a run against judgments, as ``harness eval`` does (trec_eval's conventions).

    ``qrels``: a Qrels, ``{qid: {doc: grade}}``, a DataFrame (query_id, doc_id, relevance) or a qrels path.
    ``run``: a Run, ``{qid: {doc: score}}``, a DataFrame (query_id, doc_id, score) or a TREC/JSONL run path.
    ``metrics``: names such as ``"ndcg@10"`` or ``["P@5", "map"]`` (default: the CLI's default set).
    ``query_policy="zero"`` counts queries without relevant documents as 0; ``trec_compat`` reproduces
    ``trec_eval -c`` (float32 score ties, every judged query in the means); ``order="rank"`` trusts given ranks."""
    from dataclasses import replace

    from .metrics.inputs import as_qrels, as_run
    from .metrics.engine import evaluate as evaluate_table
    from .metrics.spec import DEFAULT_METRICS
    from .render.evaluation import coverage_warnings

    names = list(DEFAULT_METRICS) if metrics is None else _metric_names(metrics)
    if not isinstance(trec_compat, bool):
        raise InputError(f"trec_compat: expected True or False, got {trec_compat!r}")
    judged, ranked = as_qrels(qrels, "qrels"), as_run(run, "run", ranks=order == "rank")
    if judged.n_queries == 0:  # as `harness eval`: every mean would be None, and a broken input would pass
        raise InputError("qrels: no judgments; nothing to evaluate against")
    table = evaluate_table(judged, ranked, names, query_policy=query_policy, order=order, trec_compat=trec_compat)
    for message in coverage_warnings(table.counts):  # as `harness eval` says them: renamed ids score 0 quietly
        warnings.warn(message, stacklevel=2)
    return replace(table, judgments=_judgments_fingerprint(judged))


def _judgments_fingerprint(qrels: "Qrels") -> str:
    """The judgments as a set of (query, document, grade), whatever order they were given in."""
    import numpy as np

    from .core.fingerprint import fingerprint_of_judgments

    return fingerprint_of_judgments(np.repeat(qrels.query_ids, np.diff(qrels.offsets)), qrels.doc_ids, qrels.grades)


def fuse(runs: Sequence[Any], method: str = "rrf", *, weights: Sequence[float] | None = None,
         k: float | None = None) -> "Run":
    """Fuse runs into one: ``rrf`` (sum of ``weight / (k + rank)``, k = 60 unless given), ``minmax`` or ``zscore``
    (sum of ``weight * normalised score`` per query). The same arithmetic as the ``hybrid`` retriever; ranks are
    each run's evaluation order (score descending, ties by doc id descending, a repeated doc at its best rank)."""
    from .retrievers.fusion import METHODS, fuse_runs
    from .metrics.inputs import as_run, finite_number

    if isinstance(runs, Mapping) or not isinstance(runs, Sequence) or isinstance(runs, str) or len(runs) < 2:
        raise InputError(f"runs: expected a list of two or more runs, got {_describe(runs)}")
    problems = []
    if method not in METHODS:
        problems.append(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    if weights is None:
        weights = [1.0] * len(runs)
    elif getattr(weights, "ndim", None) == 1:  # a NumPy array (or a pandas Series) of weights: its numbers
        weights = list(weights.tolist())
    if isinstance(weights, (str, Mapping)) or not isinstance(weights, Sequence) or len(weights) != len(runs):
        problems.append(f"weights: expected one number per run ({len(runs)}), got {weights!r}"[:300])
    else:
        problems += [f"weights[{i}]: expected a number >= 0, got {w!r}" for i, w in enumerate(weights)
                     if not finite_number(w) or w < 0]
    if k is not None and method != "rrf":
        problems.append(f"k: only rrf takes k (the {method} fusion has none)")
    elif k is not None and (not finite_number(k) or k <= 0):
        problems.append(f"k: expected a number > 0, got {k!r}")
    if problems:
        raise InputError("fuse: invalid arguments", problems)
    columnar = [as_run(r, f"runs[{i}]") for i, r in enumerate(runs)]
    return fuse_runs(columnar, [float(w) for w in weights], method, 60.0 if k is None else float(k))


def _describe(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


# ---- saved results: compare and gate -----------------------------------------------------------------------------

def _as_result(value: Any, name: str) -> "Result":
    """A Result as it is; a results.json path loaded, a parsed results.json validated (every problem located)."""
    from .result.model import Result
    from .result.read import load_result

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
        from .render.compare_view import to_markdown

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
    from .result.model import (
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


def compare(results: Any, metrics: Any = None, *, baseline: str | None = None, test: str = "randomization",
            correction: str = "holm") -> Comparison:
    """Paired comparison against a baseline (default: the first), as ``harness compare``: mean deltas, bootstrap
    CIs, p values with a multiple-comparison correction, win/tie/loss, MDE, verdict transitions.

    ``results``: a list (or a dict by name) of Results, results.json paths or loaded dicts, or of MetricTables of
    the same queries (``harness.evaluate``). ``metrics``: names (results: ``chunk.recall@5`` for chunk level;
    default ndcg@10 and chunk.recall@window; tables: default every metric of the first)."""
    from dataclasses import fields, replace

    from .metrics.engine import MetricTable
    from .stats.compare import compare_runs

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
        from .metrics.spec import parse_metric

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
        warnings.warn(message, stacklevel=2)
    return Comparison(**{f.name: getattr(typed, f.name) for f in fields(typed)})


@dataclass(frozen=True)
class GateOutcome(outcomes.GateOutcome):
    """The typed GateOutcome (core/outcomes: ``results`` in rule order, ``passed``, ``failed`` and ``skipped``
    counts, ``to_dict``) with the Markdown summary and JUnit XML of ``harness gate --summary/--junit``. The
    renderers live in stats/gates, which core may not import, so the methods are added here."""

    def to_markdown(self) -> str:
        from .render.gate import summary_markdown

        return summary_markdown(self.name, list(self.results))

    def to_junit(self) -> str:
        from .render.gate import junit_xml

        return junit_xml(self.name, list(self.results))


def _rules(rules: Any, result: "Result", base: "Result | None") -> list:
    """A rules YAML path is read as ``harness gate --rules`` reads it; a list is parsed with the same per-rule
    parser, and both are checked against the run."""
    from .stats.gates import check_rules, parse_rule, rule_problems

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


def gate(result: Any, rules: Any, baseline: Any = None) -> GateOutcome:
    """Check release rules against a result, as ``harness gate``: thresholds, verdict shares, and regressions
    against ``baseline`` (without one, regression rules are skipped with a warning). ``rules``: a rules YAML path
    or a list of rules. ``outcome.passed`` is what the CLI's exit code says."""
    from .stats.gates import evaluate_gates

    candidate = _as_result(result, "result")
    base = None if baseline is None else _as_result(baseline, "baseline")
    typed = evaluate_gates(candidate, _rules(rules, candidate, base), base)
    outcome = GateOutcome(typed.name, list(typed.results))
    if outcome.skipped:
        warnings.warn(f"{outcome.skipped} regression rule(s) skipped: no baseline given", stacklevel=2)
    return outcome


# ---- third-party retrievers --------------------------------------------------------------------------------------
