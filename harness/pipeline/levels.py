"""Evaluate a pipeline run at document and chunk level: the configured metrics and the ``@window`` metrics in one
table per level, each with the ``counted`` mask of ``metrics.table.included``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np

from ..core.hittable import HitTable
from ..core.runtable import ColumnarRun, Qrels, _offsets
from ..core.types import Chunk, GoldSet, RankedList, best_hits
from ..gold.resolve import GoldProblem, chunk_qrels, doc_qrels
from ..metrics.engine import Window, evaluate
from ..metrics.spec import WINDOW_METRICS, MetricSpec, parse_metrics
from ..metrics.table import MetricTable

__all__ = ["WINDOW_METRICS", "Coverage", "Levels", "doc_lists", "chunk_lists", "level_qrels", "evaluate_levels"]

# A judgment whose evidence was given but could not be placed: it must not make every chunk of its document
# relevant (what a judgment without evidence means).
_BROKEN_EVIDENCE = ("quote_not_found", "span_out_of_range")


def doc_lists(lists: Sequence[RankedList], limits: Sequence[int] | None = None) -> dict[str, list[tuple[str, float]]]:
    """Collapse chunk hits to documents: each document at its best-ranked chunk, with that chunk's score."""
    out: dict[str, list[tuple[str, float]]] = {}
    for i, ranked in enumerate(lists):
        hits = ranked.hits if limits is None else ranked.hits[: limits[i]]
        out[ranked.query_id] = [(h.doc_id, h.score) for h in best_hits(hits)]
    return out


def chunk_lists(lists: Sequence[RankedList], limits: Sequence[int] | None = None) -> dict[str, list[tuple[str, float]]]:
    return {r.query_id: [(h.chunk_id, h.score) for h in (r.hits if limits is None else r.hits[: limits[i]])]
            for i, r in enumerate(lists)}


def level_qrels(gold: GoldSet, chunks: Sequence[Chunk], problems: Sequence[GoldProblem]
                ) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Document and chunk judgments. A judgment whose every evidence quote or span failed to resolve keeps its
    document's grade, but its chunks are judged not relevant: without this, a missing quote would make every chunk of
    the document relevant (q45 of the demo)."""
    dq, cq = doc_qrels(gold), chunk_qrels(gold, chunks)
    broken = {(p.query_id, p.doc_id) for p in problems if p.kind in _BROKEN_EVIDENCE}
    if broken:
        resolved = {(j.query_id, j.doc_id) for j in gold.judgments if j.evidence}
        by_doc: dict[str, list[str]] = defaultdict(list)
        for c in chunks:
            by_doc[c.doc_id].append(c.chunk_id)
        for qid, doc in broken - resolved:
            for chunk_id in by_doc.get(doc, []):
                cq[qid][chunk_id] = 0
    return dq, cq


@dataclass(frozen=True)
class Coverage:
    """What the retriever had no answer for: golden-set queries missing from its output (an external run that
    lacks them), and queries it answered that the golden set does not have. A retriever that answers every query,
    possibly with nothing, has an empty coverage."""

    absent: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Levels:
    doc: MetricTable
    chunk: MetricTable

    def table(self, level: str) -> MetricTable:
        return getattr(self, level)


def _window_cuts(lists: Sequence[RankedList], window_k: Sequence[int]) -> tuple[Window, Window]:
    docs, chunks, size = {}, {}, {}
    for ranked, k in zip(lists, window_k):
        size[ranked.query_id] = k
        chunks[ranked.query_id] = min(k, len(ranked.hits))
        docs[ranked.query_id] = len({h.doc_id for h in ranked.hits[:k]})  # doc lists keep first-appearance order
    return Window(docs, size), Window(chunks, size)


def _ranked_run(lists: dict[str, list[tuple[str, float]]], coverage: Coverage) -> ColumnarRun:
    # Lists arrive in the runner's canonical order; give that order as ranks so doc-level collapsing keeps it. The
    # run holds what the retriever answered: not the queries it lacks, plus the ones the golden set lacks.
    absent = set(coverage.absent)
    answered = {q: v for q, v in lists.items() if q not in absent}
    answered.update((q, []) for q in coverage.unknown if q not in answered)
    ranks = {q: list(range(1, len(v) + 1)) for q, v in answered.items()}
    return ColumnarRun.from_lists(answered, ranks=ranks)


def evaluate_levels(dq: dict[str, dict[str, int]], cq: dict[str, dict[str, int]], lists: Sequence[RankedList],
                    window_k: Sequence[int], metrics: Sequence[MetricSpec | str], query_policy: str,
                    gold_errors: Collection[str], coverage: Coverage = Coverage()) -> Levels:
    """One table per level: the configured metrics, then the window metrics not among them."""
    specs = parse_metrics(list(metrics) + list(WINDOW_METRICS))
    if isinstance(lists, HitTable):
        return Levels(*(evaluate(Qrels.from_dict(qrels), run, specs, query_policy=query_policy, order="rank",
                                 gold_errors=gold_errors, window=window)
                        for qrels, (run, window) in ((dq, _columnar_level(lists, window_k, coverage, "doc")),
                                                     (cq, _columnar_level(lists, window_k, coverage, "chunk")))))
    doc_window, chunk_window = _window_cuts(lists, window_k)
    tables = [evaluate(Qrels.from_dict(qrels), _ranked_run(ranked, coverage), specs, query_policy=query_policy,
                       order="rank", gold_errors=gold_errors, window=window)
              for qrels, ranked, window in ((dq, doc_lists(lists), doc_window), (cq, chunk_lists(lists), chunk_window))]
    return Levels(*tables)


def _columnar_level(table: HitTable, window_k: Sequence[int], coverage: Coverage, level: str
                    ) -> tuple[ColumnarRun, Window]:
    """What ``_ranked_run`` and ``_window_cuts`` make from ranked lists, made from a ``HitTable``'s columns without a
    Python object per hit: at doc level each document at its best-ranked chunk (``HitTable.best_per_doc``), ranks
    given in list order; the queries the retriever had no answer for left out, those the golden set lacks added
    with no hits."""
    k = np.asarray(window_k, dtype=np.int64)
    query_ids = [str(q) for q in table.query_ids.tolist()]
    ranks = table.ranks()
    if level == "doc":
        keep = table.best_per_doc()
        vocab, doc_of_chunk = table.doc_index()
        codes = doc_of_chunk[table.chunk[keep]]
        in_window = (ranks[keep] <= np.repeat(k, table.lengths)[keep])
        lengths = np.bincount(table.row_of_hit()[keep], minlength=len(table)).astype(np.int64)
        cut = np.bincount(table.row_of_hit()[keep][in_window], minlength=len(table)).astype(np.int64)
        scores = table.scores[keep]
    else:
        keep = None
        vocab, codes, lengths, scores = table.chunk_ids(), table.chunk, table.lengths, table.scores
        cut = np.minimum(k, lengths)
    size = dict(zip(query_ids, k.tolist()))
    window = Window(dict(zip(query_ids, cut.tolist())), size)
    # The vocabulary is in first-appearance order, not sorted: ``doc_order`` gives each code's sorted position
    # (the engine looks at it only to break score ties, which order="rank" never does).
    order = np.argsort(vocab.astype(str)) if len(vocab) else np.zeros(0, np.int64)
    doc_order = np.empty(len(vocab), dtype=np.int64)
    doc_order[order] = np.arange(len(vocab))
    offsets = _offsets(lengths)
    rank_in_level = np.arange(1, len(codes) + 1, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    absent, answered = set(coverage.absent), set(query_ids)
    rows = np.array([i for i, q in enumerate(query_ids) if q not in absent], dtype=np.int64)
    extra = [q for q in dict.fromkeys(coverage.unknown) if q not in answered]
    if len(rows) < len(query_ids) or extra:
        take = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in rows]) if len(rows) else \
            np.zeros(0, np.int64)
        codes, scores, rank_in_level = codes[take], scores[take], rank_in_level[take]
        lengths = np.concatenate([lengths[rows], np.zeros(len(extra), np.int64)])
        query_ids = [query_ids[i] for i in rows] + extra
        offsets = _offsets(lengths)
    run = ColumnarRun(np.array(query_ids, dtype=object), offsets, vocab, codes,
                      np.ascontiguousarray(scores, dtype=np.float64), rank_in_level, doc_order)
    return run, window
