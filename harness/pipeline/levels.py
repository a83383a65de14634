"""Evaluate a pipeline run at document and chunk level: the configured metrics and the ``@window`` metrics in one
table per level, each with the ``counted`` mask of ``metrics.table.included``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Collection, Sequence

from ..core.runtable import ColumnarRun, Qrels
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
    doc_window, chunk_window = _window_cuts(lists, window_k)
    tables = [evaluate(Qrels.from_dict(qrels), _ranked_run(ranked, coverage), specs, query_policy=query_policy,
                       order="rank", gold_errors=gold_errors, window=window)
              for qrels, ranked, window in ((dq, doc_lists(lists), doc_window), (cq, chunk_lists(lists), chunk_window))]
    return Levels(*tables)
