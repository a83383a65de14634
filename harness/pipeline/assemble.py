"""One experiment end to end: config -> corpus & golden set -> index -> run -> metrics -> diagnostics -> Result.

``build_result`` makes the one typed ``Result`` of a run; every output (results.json, reports) is rendered from it.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timezone
from typing import Sequence

import numpy as np

from .. import __version__
from ..config.schema import ExperimentConfig
from ..core.result import (KINDS, LEVELS, Counts, GoldRecord, HitRecord, LevelCounts, LevelFlags, QueryMetrics,
                           QueryResult, Result, Summary, SummaryCounts)
from ..core.types import RankedList, Run
from ..diagnostics import diagnose, flags_text, summarize_verdicts
from ..core.errors import GoldSetError
from ..metrics.engine import conventions as metric_conventions
from ..metrics.spec import parse_metrics
from ..metrics.table import rule_text
from ..retrievers import BuildContext, build_retriever
from ..retrievers.contract import HitReport
from .execute import empty_window_warning, query_coverage, retrieve_all, window_sizes
from .levels import Coverage, Levels, evaluate_levels, level_qrels
# Loading and checking before retrieval live in prepare.py; these names are re-exported for existing callers.
from .prepare import (Checked, Prepared, check_before_retrieval, check_rules,  # noqa: F401
                      check_runnable, fingerprint, goldset_fingerprint, merge_errors, prepare)


def run_experiment(config: ExperimentConfig, *, progress: bool = True, log=None,
                   context: BuildContext | None = None, prepared: Prepared | None = None) -> Result:
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
    coverage = Coverage(*query_coverage(retriever, prepared.gold.queries))
    result = build_result(replace(prepared, chunks=retrieved.chunks), retrieved.lists, retrieved.timings, coverage,
                          retrieved.hits)
    warning = empty_window_warning(config.cutoff, retrieved.lists, [q.effective_k for q in result.queries])
    if warning:
        log(warning)
    return result


def _counts(levels: Levels, level: str) -> Counts:
    table = levels.table(level)
    hit_w = table.column("hit@window")
    return Counts(**table.counts, nothing_found_in_window=int(((hit_w == 0) & table.included).sum()))


def _metric_means(levels: Levels, kinds: Sequence[str]) -> dict[str, dict[str, float]]:
    """kind -> "level.metric" -> mean over that kind's queries counted at the level: the same mask as the
    summary, restricted to one verdict kind. A level where none of the kind's queries counts has no entry."""
    out: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        means: dict[str, float] = {}
        rows = np.array([k == kind for k in kinds], dtype=bool)
        for level in LEVELS:
            means.update((f"{level}.{m}", v) for m, v in levels.table(level).mean(rows).items() if v is not None)
        if means:
            out[kind] = means
    return out


def build_result(prepared: Prepared, lists: Sequence[RankedList], timings: dict,
                 coverage: Coverage = Coverage(), hits: HitReport | None = None) -> Result:
    """``lists`` are placed (``execute.retrieve_all``): every hit names one of ``prepared.chunks``."""
    config, gold = prepared.config, prepared.gold
    if not gold.queries:
        raise GoldSetError(f"{config.goldset.path}: the golden set has no queries; nothing to evaluate")
    chunks = prepared.chunks
    chunk_text = {c.chunk_id: c.text for c in chunks}
    window_k = window_sizes(lists, config.cutoff, chunk_text)
    policy = config.evaluation.query_policy

    dq, cq = level_qrels(gold, chunks, prepared.problems)
    gold_errors = {p.query_id for p in prepared.problems}
    levels = evaluate_levels(dq, cq, lists, window_k, parse_metrics(config.metrics), policy, gold_errors, coverage)
    verdicts = diagnose(gold, prepared.problems, config.diagnostics, lists, window_k, dq, cq, coverage.absent)
    per_query = {level: levels.table(level).per_query() for level in LEVELS}
    counted = {level: levels.table(level).counted() for level in LEVELS}
    n_relevant = {level: dict(zip(levels.table(level).query_ids, levels.table(level).n_relevant.tolist()))
                  for level in LEVELS}

    by_query = gold.judgments_by_query()
    queries = []
    for q, ranked, k in zip(gold.queries, lists, window_k):
        qid, grades, doc_grades = q.query_id, cq[q.query_id], dq[q.query_id]
        queries.append(QueryResult(
            id=qid, text=q.text, tags=dict(q.tags),
            metrics=QueryMetrics(doc=per_query["doc"][qid], chunk=per_query["chunk"][qid]),
            n_relevant=LevelCounts(doc=int(n_relevant["doc"][qid]), chunk=int(n_relevant["chunk"][qid])),
            counted=LevelFlags(doc=counted["doc"][qid], chunk=counted["chunk"][qid]),
            effective_k=int(k),
            gold=[GoldRecord(doc_id=j.doc_id, grade=j.relevance, evidence=[[sp.start, sp.end] for sp in j.evidence])
                  for j in by_query.get(qid, [])],
            verdict=verdicts[qid],
            hits=[HitRecord(rank=h.rank, chunk_id=h.chunk_id, doc_id=h.doc_id, start=h.start, end=h.end,
                            score=float(h.score), relevant=grades.get(h.chunk_id, 0) >= 1,
                            doc_relevant=doc_grades.get(h.doc_id, 0) >= 1, grade=doc_grades.get(h.doc_id),
                            in_window=h.rank <= k)
                  for h in ranked.hits],
        ))

    conventions = metric_conventions(order="rank", query_policy=policy, trec_compat=False)
    conventions["order"] = "retriever score descending, ties by chunk id descending; documents at their best chunk"
    conventions["counted_queries"] = rule_text(policy)
    conventions["window_metrics"] = ("@window cuts each query at its context window (effective_k chunks; at doc "
                                     "level the documents of those chunks); precision@window divides by effective_k")
    conventions["chunk_relevance"] = ("a chunk is relevant when it overlaps an evidence span of a relevant document"
                                      if gold.has_evidence else
                                      "no evidence spans in the golden set: every chunk of a relevant document is "
                                      "relevant (wrong_chunk cannot be diagnosed)")
    conventions["judgments"] = "as given by the golden set; unjudged documents count as not relevant"
    conventions["flags"] = flags_text(config.diagnostics)
    kinds = [verdicts[q.query_id].kind for q in gold.queries]
    run = Run(config.name, tuple(lists), config.config_hash(), timings)
    result = Result(
        name=config.name,
        config=config.resolved(),
        config_hash=config.config_hash(),
        harness_version=__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        conventions=conventions,
        cutoff={"k": config.cutoff.k, "token_budget": config.cutoff.token_budget,
                "tokenizer": config.cutoff.tokenizer if config.cutoff.token_budget else None,
                "depth": config.depth, "describe": config.cutoff.describe(),
                "mean_effective_k": sum(window_k) / len(window_k) if window_k else 0.0},
        corpus={"documents": len(prepared.docs), "chunks": len(chunks),
                "chunking": config.chunking.model_dump(mode="json"),
                "fingerprint": fingerprint([[c.chunk_id, len(c.text)] for c in chunks])},
        goldset={"name": gold.name, "queries": len(gold.queries), "judgments": len(gold.judgments),
                 "has_evidence": gold.has_evidence, "fingerprint": goldset_fingerprint(gold),
                 "query_ids_fingerprint": fingerprint(sorted(q.query_id for q in gold.queries)),
                 "problems": [p.__dict__ for p in prepared.problems]},
        hit_problems=(hits or HitReport()).to_dict(config.retriever_hits.unplaceable),
        summary=Summary(
            doc=levels.doc.mean(), chunk=levels.chunk.mean(),
            counts=SummaryCounts(doc=_counts(levels, "doc"), chunk=_counts(levels, "chunk")),
            verdicts=summarize_verdicts(verdicts, gold, _metric_means(levels, kinds)),
        ),
        diagnostics_settings=config.diagnostics.model_dump(mode="json"),
        timings={"index_s": float(timings.get("index_s", 0.0)), "retrieve_s": float(timings.get("retrieve_s", 0.0)),
                 "queries_per_s": float(timings.get("queries_per_s", 0.0))},
        queries=queries,
    )
    return result.with_memory(run, chunk_text)
