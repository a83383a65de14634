"""The Python API: thin functions over the library, the names a notebook needs (``harness.run``, ``evaluate``,
``compare``, ``fuse``, ``gate``...). Each takes what a caller has at hand (a path, a loaded object, a dict, a pandas
DataFrame), turns it into the library's types with located errors, and calls the same code as the CLI.

Nothing heavy is imported here at module level: ``import harness`` stays light, and each function imports what it
calls. A wrong argument is a HarnessError naming the argument and what was expected, never an AttributeError or
KeyError from deep inside.

Adapters to today's library (each marked ADAPTER below) keep the public names stable while the typed ``Result``,
``Comparison`` and ``GateOutcome`` and the retriever registry are rebuilt.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from .core.errors import ConfigError, InputError

if TYPE_CHECKING:  # for readers and type checkers only; nothing here is imported at run time
    from .config.schema import ExperimentConfig
    from .core.result import Result
    from .core.runtable import ColumnarRun, Qrels
    from .metrics.engine import MetricTable
    from .stats.gates import GateResult


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


def _result(raw: dict) -> "Result":
    """ADAPTER: the dict ``run_experiment`` builds today, as the typed Result (the results.json schema). When
    pipeline/assemble returns the typed Result itself, this becomes the identity."""
    from .core.result import Result, check_result

    return Result.model_validate_json(check_result(raw))


def run(config: Any, *, out: str | os.PathLike | None = None, force: bool = False, progress: bool = False,
        log: Callable[[str], None] | None = None) -> "Result":
    """Run one experiment: the same checks and code as ``harness run``, returning its Result.

    ``config``: a path, a loaded config or a mapping. ``out``: also write results.json, the run files and the
    reports into that folder (a folder harness owns; ``force`` as ``--force``). Golden-set problems that the run
    flags are Python warnings; ``log`` receives the progress lines the CLI prints on stderr."""
    from .pipeline.assemble import check_before_retrieval, run_experiment

    cfg, source = _as_config(config)
    if cfg.sweep:
        raise ConfigError(f"{source}: sweep: harness.run runs one experiment; run the sweep with "
                          f"`harness run {source}` (it writes the leaderboard)")
    quiet = log or (lambda message: None)
    checked = check_before_retrieval(cfg, source=source, log=quiet)
    for warning in checked.warnings:
        warnings.warn(warning, stacklevel=2)
    if out is None:
        return _result(run_experiment(cfg, progress=progress, log=quiet, prepared=checked.prepared))
    from .core.outdir import open_output
    from .render.outputs import write_outputs

    # Opened before the run, as the CLI does: a folder harness may not write is refused before the work.
    with open_output(Path(out), run=cfg.name, force=force, origin="out=") as folder:
        raw = run_experiment(cfg, progress=progress, log=quiet, prepared=checked.prepared)
        write_outputs(raw, folder)
    return _result(raw)


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
    from .io.inputs import as_qrels, as_run
    from .metrics.engine import evaluate as evaluate_table
    from .metrics.spec import DEFAULT_METRICS

    names = list(DEFAULT_METRICS) if metrics is None else _metric_names(metrics)
    if not isinstance(trec_compat, bool):
        raise InputError(f"trec_compat: expected True or False, got {trec_compat!r}")
    judged, ranked = as_qrels(qrels, "qrels"), as_run(run, "run")
    return evaluate_table(judged, ranked, names, query_policy=query_policy, order=order, trec_compat=trec_compat)


def fuse(runs: Sequence[Any], method: str = "rrf", *, weights: Sequence[float] | None = None,
         k: float | None = None) -> "ColumnarRun":
    """Fuse runs into one: ``rrf`` (sum of ``weight / (k + rank)``, k = 60 unless given), ``minmax`` or ``zscore``
    (sum of ``weight * normalised score`` per query). The same arithmetic as the ``hybrid`` retriever; ranks are
    each run's evaluation order (score descending, ties by doc id descending, a repeated doc at its best rank)."""
    from .core.fusion import METHODS, fuse_runs
    from .io.inputs import as_run, finite_number

    if isinstance(runs, Mapping) or not isinstance(runs, Sequence) or isinstance(runs, str) or len(runs) < 2:
        raise InputError(f"runs: expected a list of two or more runs, got {_describe(runs)}")
    problems = []
    if method not in METHODS:
        problems.append(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    if weights is None:
        weights = [1.0] * len(runs)
    elif isinstance(weights, (str, Mapping)) or not isinstance(weights, Sequence) or len(weights) != len(runs):
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

def _result_dict(value: Any, name: str) -> dict:
    """ADAPTER: stats/compare and stats/gates read results.json dicts today; a Result, a path or a dict becomes
    one (validated). When they take the typed Result, this becomes ``load_result`` for paths only."""
    from .core.result import Result, load_result, schema_problems

    if isinstance(value, Result):
        return value.model_dump(mode="json")
    if isinstance(value, (str, os.PathLike)):
        return load_result(Path(value))
    if isinstance(value, Mapping):
        data = {k: v for k, v in value.items() if not str(k).startswith("_")}
        problems = schema_problems(data)
        if problems:
            shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
            raise InputError(f"{name}: not a valid result ({len(problems)} problem(s))", shown)
        return data
    raise InputError(f"{name}: expected a Result (harness.run), a results.json path or its loaded dict; got "
                     f"{type(value).__name__}")


@dataclass(frozen=True)
class Comparison:
    """ADAPTER for the typed Comparison to come: today's ``compare_runs`` dict (what ``harness compare --format
    json`` prints) as attributes. ``rows``: one dict per (run, metric) against the baseline."""

    baseline: str
    runs: list[str]
    test: str
    correction: str
    permutations: int
    warnings: list[str]
    rows: list[dict]
    transitions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "runs": list(self.runs), "test": self.test, "correction": self.correction,
                "permutations": self.permutations, "warnings": list(self.warnings), "rows": list(self.rows),
                "transitions": dict(self.transitions)}

    def to_markdown(self) -> str:
        from .stats.compare import to_markdown

        return to_markdown(self.to_dict())


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


def _tables_as_results(named: list[tuple[str | None, Any]]) -> list[dict]:
    """ADAPTER: MetricTables of the same queries in the shape compare_runs reads (one level, 'doc'; a query enters
    the pairs when its table's inclusion rule counted it). When stats/compare takes MetricTables, drop this."""
    import hashlib
    import json

    base_name, base = named[0]
    base_ids = sorted(base.query_ids)
    fingerprint = hashlib.sha256(json.dumps(base_ids).encode()).hexdigest()[:16]
    base_rel = dict(zip(base.query_ids, base.n_relevant.tolist()))
    base_inc = dict(zip(base.query_ids, base.included.tolist()))
    out = []
    for i, (name, table) in enumerate(named):
        where = f"results[{name!r}]" if name else f"results[{i}]"
        if sorted(table.query_ids) != base_ids:
            only = sorted(set(table.query_ids) ^ set(base_ids))
            raise InputError(f"{where}: covers other queries than the first table ({len(only)} differ, e.g. "
                             f"{', '.join(only[:5])}); a paired comparison needs the same queries")
        if (dict(zip(table.query_ids, table.n_relevant.tolist())) != base_rel
                or dict(zip(table.query_ids, table.included.tolist())) != base_inc):
            raise InputError(f"{where}: was evaluated against other judgments or another query_policy than the "
                             f"first table; a paired comparison needs the same ones")
        per_query = table.per_query()
        out.append({"name": name or f"run{i + 1}",
                    "goldset": {"fingerprint": fingerprint, "query_ids_fingerprint": fingerprint},
                    "cutoff": {"describe": ""},
                    "queries": [{"id": q, "tags": {}, "verdict": {"kind": "ok"},
                                 "n_relevant": {"doc": int(inc)}, "metrics": {"doc": per_query[q]}}
                                for q, inc in zip(table.query_ids, table.included.tolist())]})
    return out


def compare(results: Any, metrics: Any = None, *, baseline: str | None = None, test: str = "randomization",
            correction: str = "holm") -> Comparison:
    """Paired comparison against a baseline (default: the first), as ``harness compare``: mean deltas, bootstrap
    CIs, p values with a multiple-comparison correction, win/tie/loss, MDE, verdict transitions.

    ``results``: a list (or a dict by name) of Results, results.json paths or loaded dicts, or of MetricTables of
    the same queries (``harness.evaluate``). ``metrics``: names (results: ``chunk.recall@5`` for chunk level;
    default ndcg@10 and chunk.recall@window; tables: default every metric of the first)."""
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
    elif any(tables):
        raise InputError("results: give all results or all MetricTables, not a mix")
    else:
        runs = []
        for i, (name, item) in enumerate(named):
            data = _result_dict(item, f"results[{name!r}]" if name else f"results[{i}]")
            runs.append(dict(data, name=name) if name else data)
    if baseline is not None and not isinstance(baseline, str):
        raise InputError(f"baseline: expected a run name, got {baseline!r}")
    raw = compare_runs(runs, [str(m) for m in names or []], baseline=baseline, test=test, correction=correction)
    if all(tables):
        for row in raw["rows"]:  # one level: the adapter's 'doc.' says nothing
            row["metric"] = row["metric"].removeprefix("doc.")
    for message in raw["warnings"]:
        warnings.warn(message, stacklevel=2)
    return Comparison(**raw)


@dataclass(frozen=True)
class GateOutcome:
    """ADAPTER for the typed GateOutcome to come: every rule's result (stats.gates.GateResult), in rule order."""

    name: str
    results: tuple["GateResult", ...]

    @property
    def passed(self) -> bool:
        """True when no checked rule failed (skipped regression rules do not fail), as ``harness gate`` exits 0."""
        return not any(r.failed for r in self.results)

    @property
    def failed(self) -> list["GateResult"]:
        return [r for r in self.results if r.failed]

    @property
    def skipped(self) -> list["GateResult"]:
        return [r for r in self.results if r.skipped]

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed,
                "rules": [{"rule": r.rule.name, "kind": r.rule.kind, "passed": r.passed, "skipped": r.skipped,
                           "observed": r.observed, "message": r.message} for r in self.results]}

    def to_markdown(self) -> str:
        from .stats.gates import summary_markdown

        return summary_markdown(self.name, list(self.results))

    def to_junit(self) -> str:
        from .stats.gates import junit_xml

        return junit_xml(self.name, list(self.results))


def _rules(rules: Any, result: dict, base: dict | None) -> list:
    """ADAPTER: stats/gates reads rules from a file; a list is parsed with the same per-rule parser."""
    from .stats.gates import _parse_rule, check_rules, rule_problems

    if isinstance(rules, (str, os.PathLike)):
        path = Path(rules)
        if not path.is_file() and isinstance(rules, str) and any(op in rules for op in ("<", ">", "regression")):
            raise InputError(f"rules: {rules!r} is not a file; to give one rule, pass a list: [{rules!r}]")
        return check_rules(path, result, base)
    if isinstance(rules, Mapping) or not isinstance(rules, Sequence) or not rules:
        raise InputError(f"rules: expected a rules YAML path or a non-empty list of rules (strings like "
                         f"'doc.ndcg@10 >= 0.8' or mappings); got {_describe(rules)}")
    parsed, problems = [], []
    for i, item in enumerate(rules):
        try:
            parsed.append(_parse_rule(item, f"rules.{i}"))
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

    candidate = _result_dict(result, "result")
    base = None if baseline is None else _result_dict(baseline, "baseline")
    outcome = GateOutcome(candidate["name"], tuple(evaluate_gates(candidate, _rules(rules, candidate, base), base)))
    if outcome.skipped:
        warnings.warn(f"{len(outcome.skipped)} regression rule(s) skipped: no baseline given", stacklevel=2)
    return outcome


# ---- third-party retrievers --------------------------------------------------------------------------------------
