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
from ..result.model import (
    KINDS,
    LEVELS,
    ChunkRecord,
    Counts,
    GoldRecord,
    LevelCounts,
    LevelFlags,
    QueryMetrics,
    QueryResult,
    Result,
    Summary,
    SummaryCounts,
)
from ..hits.table import HitTable
from ..hits.levelgrades import grades_at
from ..hits.positions import Positions
from ..result.querystore import stored
from ..result.selection import Rows, drill_ranks, drill_target, kept
from ..core.fingerprint import document_fingerprint, fingerprint_of_items
from ..core.types import RankedList, RankedRun
from ..diagnostics.verdicts import diagnose, flags_text, summarize_verdicts
from ..hits.parquet import CHUNKS_FILE, HITS_FILE, RunHits
from ..core.errors import GoldSetError
from ..metrics.engine import conventions as metric_conventions
from ..metrics.spec import FAMILIES, parse_metrics
from ..metrics.table import rule_text
from ..retrievers import BuildContext, build_retriever
from ..retrievers.contract import HitReport
from ..executors import execute  # where retrieval runs (the config's executor:)
from ..executors.retrieval import query_coverage
from .window import depth_cut_warning, empty_window_warning, window_size_means, window_sizes
from ..hits.evidence import rule_text as evidence_rule
from ..hits.units import CHUNK_LEVEL_RULE
from ..metrics.calibration import RULE as CALIBRATION_RULE
from .calibrate import calibrate
from .levels import Coverage, Levels, evaluate_levels, evidence_counter, level_qrels, unit_qrels
from ..hits.geometry import evidence_geometry
from ..hits.groups import RULE as GROUPS_RULE
# Loading and checking before retrieval live in prepare.py; these names are re-exported for existing callers.
from .prepare import (Checked, Prepared, check_before_retrieval, check_rules,  # noqa: F401
                      check_runnable, fingerprint, goldset_fingerprint, merge_errors, prepare)


def run_experiment(config: ExperimentConfig, *, progress: bool = True, log=None, warn=None,
                   context: BuildContext | None = None, prepared: Prepared | None = None) -> Result:
    """``prepared`` (corpus, chunks, gold of an identical corpus/chunking/goldset) skips loading again. ``log``
    takes the progress lines, ``warn`` the warnings (default: ``log``): `harness run -q` silences the one only."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    warn = warn or log
    if prepared is None:
        prepared = prepare(config, log=log)
    else:
        prepared = Prepared(config, prepared.docs, prepared.chunks, prepared.gold, prepared.problems)
    check_runnable(prepared)
    documents, unplaceable = {d.doc_id: d for d in prepared.docs}, config.unplaceable()
    context = replace(context or BuildContext(progress=progress), documents=documents, unplaceable=unplaceable)
    retriever = build_retriever(config.retriever, context)
    kind = config.retriever["kind"]
    # A composite's stages are kept for the hits of each query's relevant documents only (diagnostics.stages)
    stage_docs = ({q: frozenset(j.doc_id for j in js if j.relevance >= 1)
                   for q, js in zip(prepared.gold.query_ids(), prepared.gold.judgments_per_query())}
                  if callable(getattr(retriever, "stage_lists", None)) else None)
    try:
        executed = execute(config, retriever, prepared.chunks, prepared.gold.queries, context=context,
                           progress=progress, log=log, stage_docs=stage_docs)
    finally:  # a backend that started a server or holds a client (pgvector's pgserver, qdrant) releases it
        close = getattr(retriever, "close", None)
        if callable(close):
            close()
    retrieved = executed.retrieved
    if progress and retrieved.timings.get("retrieve_s", 0.0) >= 30:  # long work says what comes next (progress.py)
        log(f"scoring, diagnosing and writing the results of {len(prepared.gold.queries):,} queries")
    info = getattr(retriever, "info", None)  # what a backend reports about its search (ANN recall, ...)
    if retrieved.warning(kind):
        warn(retrieved.warning(kind))
    coverage = Coverage(*query_coverage(retriever, prepared.gold.queries))
    report = getattr(retriever, "request_report", None)  # live retrievers: every request, failures listed
    absent, n_queries = len(coverage.absent), len(prepared.gold.queries)
    if absent and (report is None or not callable(report)):  # a live retriever's failures are warned below
        shown = ", ".join(coverage.absent[:10]) + (f" and {absent - 10} more" if absent > 10 else "")
        warn(f"warning: retriever.kind {kind!r}: the run has no query in common with the golden set ({n_queries} "
            f"queries; ids renamed?): every query scores 0" if absent == n_queries else
            f"warning: retriever.kind {kind!r}: {absent} of {n_queries} golden-set queries are absent from the run "
            f"and score 0: {shown}")
    result = build_result(replace(prepared, chunks=retrieved.chunks), retrieved.lists, retrieved.timings, coverage,
                          retrieved.hits, retriever_info=info() if callable(info) else None,
                          latency=retrieved.latency, requests=report() if callable(report) else None,
                          stages=retrieved.stages)
    result = result.model_copy(update={
        "executor": executed.record,
        "timings": result.timings.model_copy(update={"stages": {k: float(v) for k, v in executed.stages.items()}})})
    if result.requests is not None and result.requests.failed:
        warn(f"warning: retriever.kind {kind!r}: the request failed for {result.requests.failed} queries (on_error: "
            f"skip): they are absent from the run, listed in results.json requests.failed_query_ids")
    sizes = result.effective_ks()
    for warning in (empty_window_warning(config.cutoff, retrieved.lists, sizes),
                    depth_cut_warning(config.cutoff, config.depth, retrieved.lists, sizes)):
        if warning:
            warn(warning)
    return result


def _counts(levels: Levels, level: str) -> Counts:
    table = levels.table(level)
    hit_w = table.column("hit@window")
    return Counts(**table.counts, nothing_found_in_window=int(((hit_w == 0) & table.included).sum()))


def _judged_documents(docs, gold) -> dict[str, str]:
    """Each judged document's text fingerprint, so a later ``harness goldset check --against`` knows what changed."""
    judged = {j.doc_id for j in gold.judgments}
    return {d.doc_id: document_fingerprint(d.text) for d in docs if d.doc_id in judged}


def _metric_means(levels: Levels, kinds: np.ndarray) -> dict[str, dict[str, float]]:
    """kind -> "level.metric" -> mean over that kind's queries counted at the level: the same mask as the
    summary, restricted to one verdict kind. A level where none of the kind's queries counts has no entry.
    ``kinds``: each query's verdict kind (an object array)."""
    masks = [np.asarray(kinds == kind, dtype=bool) for kind in KINDS]
    per_level = {level: levels.table(level).means(masks) for level in LEVELS}  # each column read once a level
    out: dict[str, dict[str, float]] = {}
    for i, kind in enumerate(KINDS):
        means = {f"{level}.{m}": v for level in LEVELS for m, v in per_level[level][i].items() if v is not None}
        if means:
            out[kind] = means
    return out


class _Rows:
    """One level's ``MetricTable`` read a query at a time: a query's metrics dict is made when its record is (a dict
    per query for the whole run would grow with the query count). Queries are found by position, the ``i``-th of
    the golden set at row ``i`` (the table's order); by id (a dict made once) only when that row is another's."""

    def __init__(self, table):
        self.table, self.names = table, table.names
        self.column = {name: j for j, name in enumerate(self.names)}
        self._positions = Positions(table.query_ids)

    def _row(self, i: int, qid: str) -> int:
        row = self._positions.find(qid, i)
        if row < 0:
            raise KeyError(qid)
        return row

    def metrics(self, i: int, qid: str) -> dict[str, float]:
        return dict(zip(self.names, self.table.values[self._row(i, qid)].tolist()))

    def value(self, i: int, qid: str, name: str) -> float:
        return float(self.table.values[self._row(i, qid), self.column[name]])

    def n_relevant(self, i: int, qid: str) -> int:
        return int(self.table.n_relevant[self._row(i, qid)])

    def counted(self, i: int, qid: str) -> bool:
        return bool(self.table.included[self._row(i, qid)])


def _first_chunks(chunks: Sequence, doc_ids: set[str]) -> list:
    """The first chunk (lowest start) of each of ``doc_ids``, in one pass over the chunks."""
    first: dict[str, object] = {}
    if doc_ids:
        for c in chunks:
            if c.doc_id in doc_ids and (c.doc_id not in first or c.start < first[c.doc_id].start):
                first[c.doc_id] = c
    return list(first.values())


def build_result(prepared: Prepared, lists: Sequence[RankedList], timings: dict,
                 coverage: Coverage = Coverage(), hits: HitReport | None = None,
                 retriever_info: dict | None = None, *, latency: dict | None = None,
                 requests: dict | None = None, stages=None) -> Result:
    """``lists`` are placed (``executors.retrieval.retrieve_all``): every hit names one of ``prepared.chunks``.
    ``stages``: a composite retriever's stage records per query (``Retrieved.stages``)."""
    config, gold = prepared.config, prepared.gold
    if not gold.queries:
        raise GoldSetError(f"{config.goldset.path}: the golden set has no queries; nothing to evaluate")
    chunks = prepared.chunks
    chunk_text = {c.chunk_id: c.text for c in chunks}
    window_k = window_sizes(lists, config.cutoff, chunk_text)
    window_chars, window_tokens = window_size_means(lists, window_k, config.cutoff, chunk_text)
    policy = config.evaluation.query_policy

    dq, cq = level_qrels(gold, chunks, prepared.problems)
    gold_errors = {p.query_id for p in prepared.problems}
    units, uq = unit_qrels(gold, chunks, prepared.problems)
    counter, doc_text = evidence_counter(config), None
    if counter is not None:
        doc_text = {d.doc_id: d.text for d in prepared.docs}
    levels = evaluate_levels(dq, uq, lists, window_k, parse_metrics(config.metrics), policy, gold_errors, coverage,
                             units=units, counter=counter, doc_text=doc_text, gold=gold, chunk_grades=cq)
    chunk_map = {c.chunk_id: c for c in chunks}
    verdicts = diagnose(gold, prepared.problems, config.diagnostics, lists, window_k, dq, cq, coverage.absent,
                        stages=stages, units=units, chunks=chunk_map)
    per_query = {level: _Rows(levels.table(level)) for level in LEVELS}

    # Hits are kept for every query of a small run, else for the queries the reports show (core.selection); all
    # of them go to hits.parquet from ``store``.
    store = RunHits(lists, cq, dq, window_k, chunk_map, units, stages)
    # golden-set order (diagnose's), read once; an object array (8 bytes a query) compares to a kind at once
    kinds = np.fromiter((v.kind for v in verdicts.values()), dtype=object, count=len(verdicts))
    query_ids = gold.query_ids()
    chunk_rows = per_query["chunk"]
    keep = kept(Rows(query_ids, kinds, np.fromiter((chunk_rows.value(i, qid, "rr@window")
                                                    for i, qid in enumerate(query_ids)), float, len(query_ids))))
    keep_set = set(range(len(gold.queries)) if keep is None else keep)
    doc_text = {d.doc_id: d.text for d in prepared.docs}

    def records():  # one at a time: a large run spools each as it is made (core.querystore)
        doc, chunk = per_query["doc"], per_query["chunk"]
        for i, (q, judgments, k) in enumerate(zip(gold.queries, gold.judgments_per_query(), window_k)):
            qid = q.query_id
            yield QueryResult(
                id=qid, text=q.text, tags=dict(q.tags),
                metrics=QueryMetrics(doc=doc.metrics(i, qid), chunk=chunk.metrics(i, qid)),
                n_relevant=LevelCounts(doc=doc.n_relevant(i, qid), chunk=chunk.n_relevant(i, qid)),
                counted=LevelFlags(doc=doc.counted(i, qid), chunk=chunk.counted(i, qid)),
                effective_k=int(k),
                gold=[GoldRecord(doc_id=j.doc_id, grade=j.relevance,
                                 evidence=[[sp.start, sp.end] for sp in j.evidence],
                                 evidence_text=[doc_text.get(j.doc_id, "")[sp.start:sp.end] for sp in j.evidence],
                                 group=j.group)
                      for j in judgments],
                verdict=verdicts[qid],
                hits=store.records(i) if i in keep_set else None,
            )

    queries = stored(QueryResult, records(), len(gold.queries))
    # The texts explain and the drill-downs show without the corpus (chunks.parquet has every hit's): each kept
    # query's window and the rows its drill-down shows below it (core.selection.drill_ranks: what outranked the
    # evidence, and the evidence), its relevant documents' best chunks and the first chunk of those never retrieved.
    window_chunks, unretrieved = {}, set()
    for i in sorted(keep_set):
        hits_i = lists[i].hits
        # (the kind from ``kinds``, not ``verdicts[id]``: the kept queries are read out of order, which would make a
        # spooled mapping index every query id, ~50 bytes a query)
        relevant = grades_at(cq, i, query_ids[i])
        gold_docs = {d for d, grade in grades_at(dq, i, query_ids[i]).items() if grade >= 1}
        target = drill_target((relevant.get(h.chunk_id, 0) >= 1 for h in hits_i),
                              (h.doc_id in gold_docs for h in hits_i),
                              checkable=kinds[i] != "goldset_error")
        top, deeper = drill_ranks(window_k[i], target)
        window_chunks.update((h.chunk_id, store.chunks[h.chunk_id]) for h in hits_i[:max(window_k[i], 1, top)])
        if deeper:
            window_chunks.setdefault(hits_i[deeper - 1].chunk_id, store.chunks[hits_i[deeper - 1].chunk_id])
        # and each relevant document's best-ranked chunk, wherever it ranked (a drill-down shows where it went)
        for h in hits_i:
            if h.doc_id in gold_docs:
                gold_docs.discard(h.doc_id)
                window_chunks.setdefault(h.chunk_id, store.chunks[h.chunk_id])
        unretrieved.update(gold_docs)
    # and the first chunk of each relevant document never retrieved (a drill-down shows the document's start)
    window_chunks.update((c.chunk_id, c) for c in _first_chunks(chunks, unretrieved) if c.chunk_id not in window_chunks)

    calibration, abstention = calibrate(config, gold, lists, levels.doc, kinds)
    conventions = metric_conventions(order="rank", query_policy=policy, trec_compat=False)
    conventions["order"] = "retriever score descending, ties by chunk id descending; documents at their best chunk"
    conventions["counted_queries"] = rule_text(policy)
    conventions["window_metrics"] = ("@window cuts each query at its context window (effective_k chunks; at doc "
                                     "level the documents of those chunks); precision@window divides by effective_k")
    conventions["chunk_relevance"] = (CHUNK_LEVEL_RULE if gold.has_evidence else
                                      "no evidence spans in the golden set: every chunk of a relevant document is "
                                      "relevant (wrong_chunk cannot be diagnosed)")
    if any(FAMILIES[s.family].evidence for s in parse_metrics(config.metrics)):
        conventions["evidence_metrics"] = evidence_rule(counter)
    conventions["judgments"] = "as given by the golden set; unjudged documents count as not relevant"
    conventions["evidence_groups"] = GROUPS_RULE
    conventions["flags"] = flags_text(config.diagnostics)
    conventions["calibration"] = CALIBRATION_RULE
    # A HitTable stays columns (a tuple of it would make every query's RankedList at once).
    run = RankedRun(config.name, lists if isinstance(lists, HitTable) else tuple(lists), config.config_hash(), timings)
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
                "mean_effective_k": sum(window_k) / len(window_k) if window_k else 0.0,
                "mean_window_chars": window_chars, "mean_window_tokens": window_tokens},
        corpus={"documents": len(prepared.docs), "chunks": len(chunks),
                "chunking": config.chunking.model_dump(mode="json"),
                "fingerprint": fingerprint_of_items([c.chunk_id, len(c.text)] for c in chunks)},
        goldset={"name": gold.name, "queries": len(gold.queries), "judgments": len(gold.judgments),
                 "has_evidence": gold.has_evidence, "fingerprint": goldset_fingerprint(gold),
                 "query_ids_fingerprint": fingerprint_of_items(sorted(query_ids)),
                 "problems": [p.__dict__ for p in prepared.problems],
                 "judged_documents": _judged_documents(prepared.docs, gold)},
        hit_problems=(hits or HitReport()).to_dict(config.unplaceable()),
        summary=Summary(
            doc=levels.doc.mean(), chunk=levels.chunk.mean(),
            counts=SummaryCounts(doc=_counts(levels, "doc"), chunk=_counts(levels, "chunk")),
            verdicts=summarize_verdicts(verdicts, gold, _metric_means(levels, kinds),
                                        evidence_geometry(gold, chunks, lists, window_k, chunk_text, gold_errors)),
            calibration=calibration, abstention=abstention,
        ),
        diagnostics_settings=config.diagnostics.model_dump(mode="json"),
        timings={"index_s": float(timings.get("index_s", 0.0)), "retrieve_s": float(timings.get("retrieve_s", 0.0)),
                 "queries_per_s": float(timings.get("queries_per_s", 0.0))},
        queries=queries,
        hits_kept="all" if keep is None else "selected", hits_file=HITS_FILE,
        chunks={cid: ChunkRecord(doc_id=c.doc_id, start=c.start, end=c.end, text=c.text)
                for cid, c in window_chunks.items()},
        chunks_file=None if keep is None else CHUNKS_FILE,
        retriever_info=retriever_info,
        latency=latency,
        requests=requests,
    )
    return result.with_memory(run, chunk_text, hits=store, units=(units, uq))
