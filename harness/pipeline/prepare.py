"""Before retrieval: config -> corpus, chunks and golden set (``prepare``), and every check ``run`` and
``validate`` make before any work (``check_before_retrieval``)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Callable

import numpy as np

from ..text.chunking import chunk_documents
from ..config.schema import ExperimentConfig
from ..core.fingerprint import fingerprint  # noqa: F401  (re-exported for assemble)
from ..core.fingerprint import fingerprint_of_items
from ..core.errors import ConfigError, GoldSetError, InputError, MissingDependencyError, RunFileError
from ..core.types import Chunk, Document, GoldSet
from .kfold import folds_beyond_counted
from .measurable import nothing_counted
from ..gold.load import iter_goldset, read_goldset
from ..gold.resolve import GoldProblem, resolve_goldset
from ..io.documents import load_corpus
from ..metrics.spec import WINDOW_METRICS, exp_gain_problem, parse_metrics
from ..retrievers import REGISTRY, BuildContext, parse_retriever_config
from ..text.analysis import TokenCounter
from .window import check_token_budget


@dataclass
class Prepared:
    """Everything loaded and checked before retrieval: what ``harness validate`` stops after."""

    config: ExperimentConfig
    docs: list[Document]
    chunks: list[Chunk]
    gold: GoldSet
    problems: list[GoldProblem]


def goldset_fingerprint(gold: GoldSet) -> str:
    return fingerprint_of_items(chain(([q.query_id, q.text] for q in gold.queries),
                                      ([j.query_id, j.doc_id, j.relevance, [[s.start, s.end] for s in j.evidence]]
                                       + ([j.group] if j.group is not None else [])  # ungrouped: as before groups
                                       for j in gold.judgments),
                                      ([["unanswerable", q] for q in sorted(gold.unanswerable)])))


def _attempt(step: Callable, errors: list[InputError]):
    try:
        return step()
    except (InputError, MissingDependencyError) as exc:
        errors.append(exc)
        return None


def merge_errors(errors: list, head: str) -> Exception:
    """One error for many: the only one as it is, else an InputError listing every located line of each."""
    if len(errors) == 1:
        return errors[0]
    lines: list[str] = []
    for exc in errors:
        first = str(exc).split("\n", 1)[0]
        problems = getattr(exc, "problems", None) or []
        if not problems:
            lines.append(first)
        # A line that names no file ("query 'q1': ...") gets its error's head, which does.
        lines += [p if ":" in p.split(" ", 1)[0] else f"{first.rstrip(':')}: {p}" for p in problems]
    return InputError(f"{head}: {len(lines)} problems", lines)


def prepare(config: ExperimentConfig, *, log=None, source: str = "config") -> Prepared:
    """Load the corpus, chunk it and read the golden set against it; the problems of all three are raised
    together. Golden-set problems against the corpus are returned (``problems``): a run flags those queries,
    unless ``diagnostics.on_gold_error: fail``. ``source`` names the config file in messages."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    errors: list = []
    docs = _attempt(lambda: load_corpus(config.corpus), errors)
    chunking = config.chunking
    reads_tokenizer = chunking.tokenizer is not None and "tokenizer" not in chunking.idle_fields()
    tokenizer_ok = not reads_tokenizer or _attempt(
        lambda: TokenCounter(str(chunking.tokenizer), where=f"{source}: chunking.tokenizer"), errors) is not None
    chunks = (_attempt(lambda: chunk_documents(docs, chunking, where=f"{source}: chunking"), errors)
              if docs is not None and tokenizer_ok else None)
    if errors:  # the golden set's own problems are listed with the corpus's
        _attempt(lambda: read_goldset(config.goldset), errors)
        raise merge_errors(errors, source)
    # Each query is resolved as it is read: the loader's objects of one line are let go before the next line's are
    # made, so the golden set is not held twice while loading, nor scattered among the holes they would leave.
    by_id = {d.doc_id: d for d in docs}
    resolved = _attempt(lambda: resolve_goldset(iter_goldset(config.goldset), by_id,
                                                config.goldset.path.stem or config.name), errors)
    if errors:
        raise merge_errors(errors, source)
    gold, problems = resolved
    log(f"corpus: {len(docs)} documents -> {len(chunks)} chunks ({config.chunking.strategy})")
    log(f"golden set: {len(gold.queries)} queries, {len(gold.judgments)} judgments, "
        f"{len(problems)} problem(s) against the corpus")
    if problems and config.diagnostics.on_gold_error == "fail":
        raise GoldSetError(f"{config.goldset.path}: the golden set does not match the corpus "
                           f"(diagnostics.on_gold_error: fail)", [p.message for p in problems])
    return Prepared(config, docs, chunks, gold, problems)


@dataclass
class Checked:
    """What ``check_before_retrieval`` found. ``prepared`` is the config's own loaded inputs (for a sweep, the
    first point's); ``warnings`` are what run and validate both print as ``warning: ...``."""

    prepared: Prepared
    points: int
    warnings: list[str]
    sampled: list[Path] = field(default_factory=list)  # external runs a quick check (``sample``) read only in part


def check_before_retrieval(config: ExperimentConfig, *, source: str, rules: Path | None = None,
                           log=None, cache_dir: Path | None = None, sample: bool = False) -> Checked:
    """Everything ``run`` checks before it encodes or indexes, and all that ``validate`` does: sweep points,
    model folders, tokenizers, the retrievers' optional libraries, external run files, gate rules (with ``rules``),
    corpus, chunking and golden set, and the hits of external runs' first lines against the chunks.
    Every problem is raised in one error; golden-set problems that a run flags are warnings. An external run's
    first lines are read (and their hits placed); when they have a problem, every line is, so that the run names
    each bad one, unless ``sample`` (``validate``'s quick check, which says it read only the first lines)."""
    errors: list = []
    configs = [config]
    if config.sweep:
        from ..config.grid import expand

        # Every point as the sweep runs it (on the select_on golden set when there is one), and the golden set the
        # best point is reported on.
        points = _attempt(lambda: [cfg for cfg, _ in expand(config, on_selection=True)]
                          + ([expand(config)[0][0]] if config.selects_elsewhere() else []), errors)
        if errors:  # name the file: a sweep point's own source is its parameters
            first = errors[0]
            errors[0] = ConfigError(f"{source}: {str(first).split(chr(10), 1)[0]}", getattr(first, "problems", []))
        configs = points or [config]
    lines: list[str] = []
    seen: set[str] = set()
    tokenizers: set[str] = set()
    bad_tokenizers: set[str] = set()  # said once, here: the token-budget check below would say it again, unlocated
    bad_runs: set[Path] = set()  # external run files whose lines are wrong: not placed as well (said once)
    for cfg in configs:
        lines += _retriever_problems(cfg.retriever, seen, errors)
        _check_external_lines(cfg, source, sample, errors, bad_runs)
        if cfg.executor.kind == "ray" and cfg.executor.shards > 1:
            lines += _shard_problems(cfg)
        if cfg.cutoff.token_budget is not None and cfg.cutoff.tokenizer not in tokenizers | {"words"}:
            tokenizers.add(cfg.cutoff.tokenizer)
            if _attempt(lambda: TokenCounter(cfg.cutoff.tokenizer, where=f"{source}: cutoff.tokenizer"),
                        errors) is None:
                bad_tokenizers.add(cfg.cutoff.tokenizer)
    if lines:
        errors.insert(0, ConfigError(f"{source}: invalid config", [f"{source}: {p}" for p in lines]))
    if any(cfg.executor.kind == "ray" for cfg in configs):
        from ..executors.ray_session import import_ray  # the optional extra, named before any work rather than after it
        _attempt(import_ray, errors)
    # A --cache-dir given is checked whatever the retriever: a path typed by mistake is said, not ignored.
    if cache_dir is not None or any(_uses_cache(cfg.retriever) for cfg in configs):
        from ..cache import check_cache_folder  # minutes of encoding must not end in an unwritable cache
        _attempt(lambda: check_cache_folder(cache_dir or BuildContext().cache_dir), errors)
    prepared: dict[str, Prepared] = {}
    dropped: list[str] = []  # hits an external run will skip, found in its first lines
    for cfg in configs:
        key = _prepared_key(cfg)
        if key not in prepared:
            done = _attempt(lambda: prepare(cfg, log=log if not prepared else (lambda m: None), source=source), errors)
            if done is None:
                break  # the same files would fail the same way for the other points
            prepared[key] = done
        loaded = prepared[key]
        shards = cfg.executor.shards if cfg.executor.kind == "ray" else 1
        if shards > max(len(loaded.chunks), 1):  # said before Ray starts (seconds), in the words the executor uses
            errors.append(ConfigError(f"{source}: executor.shards: {shards} slices of {len(loaded.chunks)} chunks; "
                                      f"give at most {max(len(loaded.chunks), 1)} (a slice per actor holds part of "
                                      f"the index)"))
        if cfg.cutoff.token_budget is not None and cfg.cutoff.tokenizer in bad_tokenizers:
            continue
        if _attempt(lambda: check_runnable(Prepared(cfg, loaded.docs, loaded.chunks, loaded.gold, loaded.problems)),
                    errors) is None:
            break  # the points after it share its golden set
        _check_external_hits(cfg, loaded, errors, dropped, sample, bad_runs)
    if config.sweep:
        points = configs[:-1] if config.selects_elsewhere() and len(configs) > 1 else configs  # not the reported one
        line = folds_beyond_counted(config, [(_prepared_key(c), prepared.get(_prepared_key(c)),
                                              c.evaluation.query_policy) for c in points])
        if line:
            errors.append(ConfigError(f"{source}: {line}"))
    if rules is not None:  # after loading: slice rules are checked against the golden set's tags
        gold = next(iter(prepared.values())).gold if prepared else None
        _attempt(lambda: check_rules(rules, config, source, gold), errors)
    if errors:
        raise merge_errors(errors, source)
    # (the config as written: a sweep point's settings are all "given", its parameters merged into a dump)
    warnings = [f"{source}: {line}" for line in config.unused_settings()] + dropped
    for p in prepared.values():
        for problem in p.problems:
            line = f"{p.config.goldset.path}: {problem.message} (the query is flagged goldset_error)"
            if line not in warnings:
                warnings.append(line)
    reported_only = 1 if config.sweep and config.selects_elsewhere() and len(configs) > 1 else 0
    sampled = list(dict.fromkeys(ext.path for cfg in configs for _, ext in _external_parts(cfg)
                                 if ext.read_in_part())) if sample else []
    return Checked(next(iter(prepared.values())), len(configs) - reported_only, warnings, sampled)


def _prepared_key(cfg: ExperimentConfig) -> str:
    return json.dumps([cfg.corpus.model_dump(mode="json"), cfg.chunking.model_dump(mode="json"),
                       cfg.goldset.model_dump(mode="json"), cfg.diagnostics.on_gold_error], sort_keys=True)


def _shard_problems(config: ExperimentConfig) -> list[str]:
    """``executor.shards`` > 1 on a built-in retriever that cannot be cut into slices (found at run time otherwise,
    after Ray has started and the index is built)."""
    section, shards = config.retriever, config.executor.shards
    kind = section.get("kind")
    registered = REGISTRY.get(kind)
    if registered is None or not registered.builtin:  # a plugin may shard: its own shards(n) says so at run time
        return []
    if kind == "bm25" and section.get("backend", "rank_bm25") != "fast":
        return [f"executor.shards: {shards}, but only bm25 with backend: fast can be sharded (set "
                f"retriever.backend: fast, or shards: 1)"]
    if kind == "dense" and section.get("index", "flat") != "flat":
        return [f"executor.shards: {shards}, but a dense retriever with index: hnsw cannot be sharded (a graph is "
                f"not sliced); use index: flat or shards: 1"]
    if kind not in ("bm25", "dense"):
        return [f"executor.shards: {shards}, but retriever.kind {kind!r} cannot be sharded (only bm25 with "
                f"backend: fast and dense with index: flat can); set shards: 1 to give each worker the whole index"]
    return []


def _retriever_problems(section: dict, seen: set[str], errors: list) -> list[str]:
    """Problems only loading would show (model folders, run files), once per distinct retriever section; a missing
    optional library is added to ``errors`` (see ``_check_installed``)."""
    key = json.dumps(section, sort_keys=True, default=str)
    if key in seen:
        return []
    seen.add(key)
    _check_installed(section, errors)
    cfg = parse_retriever_config(section)
    return cfg.preflight("retriever") if hasattr(cfg, "preflight") else []


def _check_installed(section: dict, errors: list) -> None:
    """The optional libraries (qdrant-client, lancedb, tantivy, faiss...) that building this retriever and its
    children imports, imported by each kind's ``check_installed`` through the function its build calls: a missing
    extra is the run's own one line (``pip install 'rag-harness[...]'``), said before any work."""
    said = {str(exc) for exc in errors}
    for cfg in _section_configs(section):
        # check_encoder_installed: the encoder backend's library (onnxruntime, openvino) of a kind that encodes.
        for check in (getattr(cfg, "check_installed", None), getattr(cfg, "check_encoder_installed", None)):
            if check is None:
                continue
            try:
                check()
            except MissingDependencyError as exc:
                if str(exc) not in said:  # two children of one kind miss one library
                    said.add(str(exc))
                    errors.append(exc)


def check_rules(path: Path, config: ExperimentConfig, source: str, gold: GoldSet | None = None) -> None:
    """What ``gate`` will check of a rules file, before the run: every rule parses, names a metric this config
    computes, and (given the golden set) a slice tag and value some query has. All problems in one error."""
    from ..stats.gates import read_rules

    rules, problems = read_rules(path)
    computed = {spec.name for spec in parse_metrics(config.metrics)} | set(WINDOW_METRICS)
    tags: dict[str, set[str]] = {}
    for query_tags in (gold.tags_by_query().values() if gold else ()):
        for key, value in query_tags.items():
            tags.setdefault(key, set()).add(str(value))
    for rule in rules:
        where = rule.where or repr(rule.name)
        if rule.kind in ("metric", "regression"):
            metric = rule.target.split(".", 1)[1]
            if metric not in computed:
                problems.append(f"{where}: {rule.target}: {source} does not compute {metric}; add it "
                                f"to metrics: (it has {', '.join(sorted(computed))})")
        for key, value in (rule.slice if gold else ()):
            if key not in tags:
                problems.append(f"{where}: slice tag {key!r} is not in the golden set; its tags are "
                                f"{', '.join(sorted(tags)) or 'none'}")
            elif value not in tags[key]:
                problems.append(f"{where}: slice {key}={value} matches no query; {key} values in the golden set are "
                                f"{', '.join(sorted(tags[key]))}")
    if problems:
        order = lambda p: int(m[1]) if (m := re.match(r"rules\.(\d+):", p)) else -1  # noqa: E731  file order
        raise InputError(f"{path}: invalid rules", [f"{path}: {p}" for p in sorted(problems, key=order)])


def check_runnable(prepared: Prepared) -> bool:
    """What makes a run meaningless, found before retrieving: no query to evaluate, or a token budget that no chunk
    fits in (an external run may bring its own smaller spans, so it is judged after retrieval instead)."""
    config = prepared.config
    if not prepared.gold.queries:
        where = f" (split {config.goldset.split!r})" if config.goldset.format == "beir" else ""
        raise GoldSetError(f"{config.goldset.path}: the golden set has no queries{where}; nothing to evaluate")
    specs = parse_metrics(config.metrics)
    exp = any(spec.gain == "exp" for spec in specs)  # (a pass over every judgment only when it matters)
    top = _highest_grade(prepared.gold.judgments) if exp else None
    problem = None if top is None else exp_gain_problem(specs, top.relevance)
    if problem:
        raise GoldSetError(f"{config.goldset.path}: query {top.query_id!r}, document {top.doc_id!r}: {problem}")
    nothing = nothing_counted(prepared.gold, prepared.problems, config.evaluation.query_policy)
    if nothing:
        raise GoldSetError(f"{config.goldset.path}: {nothing}")
    if not _uses_external(config.retriever):
        check_token_budget(config.cutoff, prepared.chunks)
    return True


def _highest_grade(judgments):
    """The judgment of the highest grade (None when there is none): from the grades column of a loaded golden set
    (a pass over its judgments as objects took 4 s at 1M queries), else over the objects."""
    grades = getattr(judgments, "grades", None)
    if grades is not None:
        return judgments.item(int(np.argmax(grades))) if len(grades) else None
    return max(judgments, key=lambda j: j.relevance, default=None)


def _external_parts(config: ExperimentConfig) -> list[tuple[str, object]]:
    """(key path, parsed config) of each external retriever in the config: the retriever or a child of it."""
    from ..retrievers.external import ExternalConfig

    return [(where, cfg) for where, cfg in _section_configs(config.retriever, with_keys=True)
            if isinstance(cfg, ExternalConfig)]


def _check_external_lines(config: ExperimentConfig, source: str, sample: bool, errors: list,
                          bad_runs: set[Path]) -> None:
    """Each external run file's lines read as the run reads them (``ExternalConfig.check_lines``), once per file
    however many points or children name it: a bad one is one error, headed by the config key that names the
    file, listing each bad line once."""
    for where, cfg in _external_parts(config):
        if not cfg.path.is_file() or cfg.path in bad_runs:  # not found: the config's own error (preflight)
            continue
        try:
            cfg.check_lines(sample)
        except RunFileError as exc:
            bad_runs.add(cfg.path)
            errors.append(RunFileError(f"{source}: {where}.path: {str(exc).split(chr(10), 1)[0]}", exc.problems))


def _check_external_hits(config: ExperimentConfig, loaded: Prepared, errors: list, warnings: list[str],
                         sample: bool = False, bad_runs: set[Path] = frozenset()) -> None:
    """The hits of each external run's first lines placed on this config's chunks as the run places them: those
    that cannot be placed are the run's own error, found before any work (of every line, unless ``sample``), or
    with ``unplaceable: skip`` a warning counting what it will drop. A file whose lines are wrong was said."""
    parts = [cfg for _, cfg in _external_parts(config) if cfg.path.is_file() and cfg.path not in bad_runs]
    if not parts:
        return
    documents = {d.doc_id: d for d in loaded.docs}
    said = {str(exc) for exc in errors}
    for cfg in parts:
        try:
            dropped = cfg.check_placement(loaded.chunks, documents, config.unplaceable(), sample)
            if dropped and dropped not in warnings:
                warnings.append(dropped)
        except InputError as exc:
            if str(exc) not in said:
                said.add(str(exc))
                errors.append(exc)


def _keyed_sections(section: dict, where: str = "retriever") -> list[tuple[str, dict]]:
    """(key path, section) of a retriever section and all its children's, depth first."""
    children = [(f"{where}.children.{i}", c) for i, c in enumerate(section.get("children") or [])]
    if section.get("child"):
        children.append((f"{where}.child", section["child"]))
    return [(where, section)] + [pair for key, c in children if isinstance(c, dict) for pair in _keyed_sections(c, key)]


def _sections(section: dict) -> list[dict]:
    """A retriever section and all its children's, depth first."""
    return [part for _, part in _keyed_sections(section)]


def _section_configs(section: dict, with_keys: bool = False) -> list:
    """The parsed config of a retriever section and of each of its children, depth first (with ``with_keys``, each
    with its key path, as (where, config))."""
    from ..retrievers.compose import split_child

    parsed = [(where, parse_retriever_config(part if part is section else split_child(part)[0]))  # weight aside
              for where, part in _keyed_sections(section)]
    return parsed if with_keys else [cfg for _, cfg in parsed]


def _uses_external(section: dict) -> bool:
    return any(s.get("kind") == "external" for s in _sections(section))


def _uses_cache(section: dict) -> bool:
    return any(s.get("kind") in ("dense", "reranked") and s.get("cache", True) is not False
               for s in _sections(section))
