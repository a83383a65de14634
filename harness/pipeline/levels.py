"""Evaluate a pipeline run at document and chunk level, at fixed cutoffs and at each query's context window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..metrics.engine import MetricTable, evaluate
from ..metrics.spec import MetricSpec, parse_metric
from ..core.runtable import ColumnarRun, Qrels
from ..core.types import RankedList, best_hits

WINDOW_METRICS = ("hit@window", "recall@window", "precision@window", "rr@window")


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


def _ranked_run(lists: dict[str, list[tuple[str, float]]]) -> ColumnarRun:
    # Lists arrive in the runner's canonical order; give that order as ranks so doc-level collapsing keeps it.
    ranks = {q: list(range(1, len(v) + 1)) for q, v in lists.items()}
    return ColumnarRun.from_lists(lists, ranks=ranks)


@dataclass(frozen=True)
class LevelResult:
    table: MetricTable  # the configured metrics
    window: MetricTable  # WINDOW_METRICS


def evaluate_level(qrels: dict[str, dict[str, int]], full: dict[str, list[tuple[str, float]]],
                   windowed: dict[str, list[tuple[str, float]]], window_k: Sequence[int],
                   metrics: Sequence[MetricSpec | str], query_policy: str) -> LevelResult:
    q = Qrels.from_dict(qrels)
    table = evaluate(q, _ranked_run(full), metrics, query_policy=query_policy, order="rank")
    depth = max([len(v) for v in windowed.values()] + [1])
    w = evaluate(q, _ranked_run(windowed), [f"hit@{depth}", f"recall@{depth}", f"rr@{depth}"],
                 query_policy=query_policy, order="rank")
    k_by_query = dict(zip(windowed.keys(), window_k))
    ks = np.array([k_by_query.get(qid, 0) for qid in w.query_ids], dtype=np.float64)
    relevant_in_window = w.column(f"recall@{depth}") * w.n_relevant
    precision = np.divide(relevant_in_window, ks, out=np.zeros_like(ks), where=ks > 0)
    values = np.column_stack([w.values[:, 0], w.values[:, 1], precision, w.values[:, 2]])
    specs = tuple(parse_metric(f"{n.split('@')[0]}@{depth}") for n in WINDOW_METRICS)
    window = MetricTable(w.query_ids, specs, values, w.n_relevant, w.in_run, w.included, w.conventions, w.counts)
    return LevelResult(table, window)


def window_means(level: LevelResult) -> dict[str, float | None]:
    return dict(zip(WINDOW_METRICS, level.window.mean().values()))


def window_per_query(level: LevelResult) -> dict[str, dict[str, float]]:
    return {q: dict(zip(WINDOW_METRICS, (float(v) for v in row)))
            for q, row in zip(level.window.query_ids, level.window.values)}
