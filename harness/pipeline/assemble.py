"""One experiment end to end: config -> corpus & golden set -> index -> run -> metrics -> diagnostics -> result.

The result is one JSON-ready dict (``results.json``); every report is rendered from it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from .. import __version__
from ..chunking import chunk_documents
from ..config.schema import ExperimentConfig
from ..io.documents import load_corpus
from ..diagnostics import diagnose, summarize_verdicts
from ..core.errors import ConfigError, GoldSetError, InputError, MissingDependencyError
from .levels import chunk_lists, doc_lists, evaluate_level, window_means, window_per_query
from ..gold.load import GoldProblem, chunk_qrels, doc_qrels, read_goldset, resolve_goldset
from ..metrics.engine import conventions as metric_conventions
from ..metrics.spec import parse_metrics
from ..retrievers import BuildContext, build_retriever
from ..retrievers.contract import HitReport
from .execute import check_token_budget, empty_window_warning, retrieve_all, window_sizes
from ..text import TokenCounter
from ..core.types import Chunk, Document, GoldSet, RankedList, Run


@dataclass
class Prepared:
    """Everything loaded and checked before retrieval: what ``harness validate`` stops after."""

    config: ExperimentConfig
    docs: list[Document]
    chunks: list[Chunk]
    gold: GoldSet
    problems: list[GoldProblem]
    extras: dict = field(default_factory=dict)


def fingerprint(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def goldset_fingerprint(gold: GoldSet) -> str:
    return fingerprint([[q.query_id, q.text] for q in gold.queries] +
                       [[j.query_id, j.doc_id, j.relevance, [[s.start, s.end] for s in j.evidence]]
                        for j in gold.judgments])


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
    tokenizer_ok = chunking.strategy != "tokens" or chunking.unit != "tokenizer" or _attempt(
        lambda: TokenCounter(str(chunking.tokenizer), where=f"{source}: chunking.tokenizer"), errors) is not None
    chunks = _attempt(lambda: chunk_documents(docs, chunking), errors) if docs is not None and tokenizer_ok else None
    raw = _attempt(lambda: read_goldset(config.goldset), errors)
    if errors:
        raise merge_errors(errors, source)
    log(f"corpus: {len(docs)} documents -> {len(chunks)} chunks ({config.chunking.strategy})")
    gold, problems = resolve_goldset(raw, {d.doc_id: d for d in docs}, config.goldset.path.stem or config.name)
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


def check_before_retrieval(config: ExperimentConfig, *, source: str, rules: Path | None = None,
                           log=None) -> Checked:
    """Everything ``run`` checks before it encodes or indexes, and all that ``validate`` does: sweep points,
    model folders, tokenizers, external run files, gate rules (with ``rules``), corpus, chunking and golden set.
    Every problem is raised in one error; golden-set problems that a run flags are warnings."""
    errors: list = []
    configs = [config]
    if config.sweep:
        from .sweep import expand  # only now: it imports the comparison statistics

        points = _attempt(lambda: [cfg for cfg, _ in expand(config)], errors)
        if errors:  # name the file: a sweep point's own source is its parameters
            first = errors[0]
            errors[0] = ConfigError(f"{source}: {str(first).split(chr(10), 1)[0]}", getattr(first, "problems", []))
        configs = points or [config]
    lines: list[str] = []
    seen: set[str] = set()
    tokenizers: set[str] = set()
    for cfg in configs:
        lines += _retriever_problems(cfg.retriever, seen)
        if cfg.cutoff.token_budget is not None and cfg.cutoff.tokenizer not in tokenizers | {"words"}:
            tokenizers.add(cfg.cutoff.tokenizer)
            _attempt(lambda: TokenCounter(cfg.cutoff.tokenizer, where=f"{source}: cutoff.tokenizer"), errors)
    if lines:
        errors.insert(0, ConfigError(f"{source}: invalid config", [f"{source}: {p}" for p in lines]))
    if rules is not None:
        _attempt(lambda: check_rules(rules, config, source), errors)
    if any(_uses_cache(cfg.retriever) for cfg in configs):
        from ..cache import check_cache_folder  # minutes of encoding must not end in an unwritable cache
        _attempt(lambda: check_cache_folder(BuildContext().cache_dir), errors)
    prepared: dict[str, Prepared] = {}
    for cfg in configs:
        key = json.dumps([cfg.corpus.model_dump(mode="json"), cfg.chunking.model_dump(mode="json"),
                          cfg.goldset.model_dump(mode="json"), cfg.diagnostics.on_gold_error], sort_keys=True)
        if key not in prepared:
            done = _attempt(lambda: prepare(cfg, log=log if not prepared else (lambda m: None), source=source), errors)
            if done is None:
                break  # the same files would fail the same way for the other points
            prepared[key] = done
        loaded = prepared[key]
        if _attempt(lambda: check_runnable(Prepared(cfg, loaded.docs, loaded.chunks, loaded.gold, loaded.problems)),
                    errors) is None:
            break  # the points after it share its golden set
    if errors:
        raise merge_errors(errors, source)
    warnings = []
    for p in prepared.values():
        for problem in p.problems:
            line = f"{p.config.goldset.path}: {problem.message} (the query is flagged goldset_error)"
            if line not in warnings:
                warnings.append(line)
    return Checked(next(iter(prepared.values())), len(configs), warnings)


def _retriever_problems(section: dict, seen: set[str]) -> list[str]:
    """Problems only loading would show (model folders, run files), once per distinct retriever section."""
    from ..retrievers import parse_retriever_config

    key = json.dumps(section, sort_keys=True, default=str)
    if key in seen:
        return []
    seen.add(key)
    cfg = parse_retriever_config(section)
    return cfg.preflight("retriever") if hasattr(cfg, "preflight") else []


def check_rules(path: Path, config: ExperimentConfig, source: str) -> None:
    """Gate rules parse, and every metric they name is one this config computes."""
    from .levels import WINDOW_METRICS
    from ..stats.gates import load_rules
    from ..core.safeyaml import load_yaml

    load_yaml(path, InputError)  # alias bombs, duplicate keys: before anything walks the data
    computed = {spec.name for spec in parse_metrics(config.metrics)} | set(WINDOW_METRICS)
    problems = []
    for i, rule in enumerate(load_rules(path)):
        if rule.kind in ("metric", "regression"):
            metric = rule.target.split(".", 1)[1]
            if metric not in computed:
                problems.append(f"{path}: rules.{i}: {rule.target}: {source} does not compute {metric}; add it "
                                f"to metrics: (it has {', '.join(sorted(computed))})")
    if problems:
        raise InputError(f"{path}: rules name metrics the run will not have", problems)


def run_experiment(config: ExperimentConfig, *, progress: bool = True, log=None,
                   context: BuildContext | None = None, prepared: Prepared | None = None) -> dict:
    """``prepared`` (corpus, chunks, gold of an identical corpus/chunking/goldset) skips loading again."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if prepared is None:
        prepared = prepare(config, log=log)
    else:
        prepared = Prepared(config, prepared.docs, prepared.chunks, prepared.gold, prepared.problems)
    check_runnable(prepared)
    documents, unplaceable = {d.doc_id: d for d in prepared.docs}, config.retriever_hits.unplaceable
    context = replace(context or BuildContext(progress=progress), documents=documents, unplaceable=unplaceable)
    retriever = build_retriever(config.retriever, context)
    kind = config.retriever["kind"]
    retrieved = retrieve_all(retriever, prepared.chunks, prepared.gold.queries, config.depth, config.batch_size,
                             progress, kind=kind, documents=context.documents,
                             unplaceable=unplaceable, include_title=config.chunking.include_title)
    if retrieved.warning(kind):
        log(retrieved.warning(kind))
    lists = retrieved.lists
    result = build_result(replace(prepared, chunks=retrieved.chunks), lists, retrieved.timings, retrieved.hits)
    warning = empty_window_warning(config.cutoff, lists, [q["effective_k"] for q in result["queries"]])
    if warning:
        log(warning)
    return result


def check_runnable(prepared: Prepared) -> bool:
    """What makes a run meaningless, found before retrieving: no query to evaluate, or a token budget that no chunk
    fits in (an external run may bring its own smaller spans, so it is judged after retrieval instead)."""
    config = prepared.config
    if not prepared.gold.queries:
        where = f" (split {config.goldset.split!r})" if config.goldset.format == "beir" else ""
        raise GoldSetError(f"{config.goldset.path}: the golden set has no queries{where}; nothing to evaluate")
    if not _uses_external(config.retriever):
        check_token_budget(config.cutoff, prepared.chunks)
    return True


def _sections(section: dict) -> list[dict]:
    """A retriever section and all its children's, depth first."""
    children = list(section.get("children") or []) + ([section["child"]] if section.get("child") else [])
    return [section] + [s for c in children if isinstance(c, dict) for s in _sections(c)]


def _uses_external(section: dict) -> bool:
    return any(s.get("kind") == "external" for s in _sections(section))


def _uses_cache(section: dict) -> bool:
    return any(s.get("kind") in ("dense", "reranked") and s.get("cache", True) is not False
               for s in _sections(section))


def build_result(prepared: Prepared, lists: Sequence[RankedList], timings: dict, hits: HitReport | None = None) -> dict:
    """``lists`` are placed (``execute.retrieve_all``): every hit names one of ``prepared.chunks``."""
    config, gold = prepared.config, prepared.gold
    if not gold.queries:
        raise GoldSetError(f"{config.goldset.path}: the golden set has no queries; nothing to evaluate")
    chunks = prepared.chunks
    specs = parse_metrics(config.metrics)
    chunk_text = {c.chunk_id: c.text for c in chunks}
    window_k = window_sizes(lists, config.cutoff, chunk_text)
    policy = config.evaluation.query_policy

    dq, cq = doc_qrels(gold), chunk_qrels(gold, chunks)
    doc_level = evaluate_level(dq, doc_lists(lists), doc_lists(lists, window_k), window_k, specs, policy)
    chunk_level = evaluate_level(cq, chunk_lists(lists), chunk_lists(lists, window_k), window_k, specs, policy)

    verdicts = diagnose(prepared, lists, window_k, dq, cq)
    doc_pq, chunk_pq = doc_level.table.per_query(), chunk_level.table.per_query()
    doc_w, chunk_w = window_per_query(doc_level), window_per_query(chunk_level)
    run = Run(config.name, tuple(lists), config.config_hash(), timings)

    by_query = gold.judgments_by_query()
    queries = []
    for q, ranked, k in zip(gold.queries, lists, window_k):
        grades = cq[q.query_id]
        doc_grades = dq[q.query_id]
        queries.append({
            "id": q.query_id,
            "text": q.text,
            "tags": dict(q.tags),
            "metrics": {"doc": {**doc_pq[q.query_id], **doc_w[q.query_id]},
                        "chunk": {**chunk_pq[q.query_id], **chunk_w[q.query_id]}},
            "n_relevant": {"doc": sum(1 for g in doc_grades.values() if g >= 1),
                           "chunk": sum(1 for g in grades.values() if g >= 1)},
            "effective_k": k,
            "gold": [{"doc_id": j.doc_id, "grade": j.relevance, "evidence": [[sp.start, sp.end] for sp in j.evidence]}
                     for j in by_query.get(q.query_id, [])],
            "verdict": verdicts[q.query_id].to_dict(),
            "hits": [{"rank": h.rank, "chunk_id": h.chunk_id, "doc_id": h.doc_id, "start": h.start, "end": h.end,
                      "score": h.score, "relevant": grades.get(h.chunk_id, 0) >= 1,
                      "doc_relevant": doc_grades.get(h.doc_id, 0) >= 1,
                      "grade": doc_grades.get(h.doc_id), "in_window": h.rank <= k}
                     for h in ranked.hits],
        })

    def counts(level) -> dict:
        c = dict(level.table.counts)
        hit_w = level.window.values[:, 0]
        c["nothing_found_in_window"] = int(((hit_w == 0) & level.window.included).sum())
        return c

    conventions = metric_conventions(order="rank", query_policy=policy, trec_compat=False)
    conventions["order"] = "retriever score descending, ties by chunk id descending; documents at their best chunk"
    conventions["chunk_relevance"] = ("a chunk is relevant when it overlaps an evidence span of a relevant document"
                                      if gold.has_evidence else
                                      "no evidence spans in the golden set: every chunk of a relevant document is "
                                      "relevant (wrong_chunk cannot be diagnosed)")
    conventions["judgments"] = "as given by the golden set; unjudged documents count as not relevant"
    return {
        "name": config.name,
        "config": config.resolved(),
        "config_hash": config.config_hash(),
        "harness_version": __version__,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "conventions": conventions,
        "cutoff": {"k": config.cutoff.k, "token_budget": config.cutoff.token_budget,
                   "tokenizer": config.cutoff.tokenizer if config.cutoff.token_budget else None,
                   "depth": config.depth, "describe": config.cutoff.describe(),
                   "mean_effective_k": sum(window_k) / len(window_k) if window_k else 0.0},
        "corpus": {"documents": len(prepared.docs), "chunks": len(chunks),
                   "chunking": config.chunking.model_dump(mode="json"),
                   "fingerprint": fingerprint([[c.chunk_id, len(c.text)] for c in chunks])},
        "goldset": {"name": gold.name, "queries": len(gold.queries), "judgments": len(gold.judgments),
                    "has_evidence": gold.has_evidence, "fingerprint": goldset_fingerprint(gold),
                    "query_ids_fingerprint": fingerprint(sorted(q.query_id for q in gold.queries)),
                    "problems": [p.__dict__ for p in prepared.problems]},
        "hit_problems": (hits or HitReport()).to_dict(config.retriever_hits.unplaceable),
        "summary": {
            "doc": {**doc_level.table.mean(), **window_means(doc_level)},
            "chunk": {**chunk_level.table.mean(), **window_means(chunk_level)},
            "counts": {"doc": counts(doc_level), "chunk": counts(chunk_level)},
            "verdicts": summarize_verdicts(verdicts, gold, queries),
        },
        "diagnostics_settings": config.diagnostics.model_dump(mode="json"),
        "timings": dict(run.timings),
        "queries": queries,
        "_run": run,  # not serialised: the in-memory run for the TREC writers
        "_chunk_text": chunk_text,  # not serialised: snippets for the HTML report
    }
