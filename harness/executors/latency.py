"""Latency and throughput of a retriever, per query: p50, p95, max and queries/s, for the result and gates.

A retriever that times each query itself (``query_latencies_ms()``: ``kind: http`` times each request, retries
included) is taken at its word; any other is timed per batch in ``retrieval.retrieve_all`` and each query of a batch
is given the batch's time divided by its size (a batch retriever answers them together: that share is its cost)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.types import Query


def per_query_ms(retriever: object, queries: Sequence[Query], batches: Sequence[tuple[float, int]]) -> tuple[list[float], str]:
    """Each query's latency in ms and how it was measured. ``batches``: (seconds, queries) per retrieve call."""
    own = getattr(retriever, "query_latencies_ms", None)
    if callable(own):
        timed = own()
        if all(q.query_id in timed for q in queries):
            return [float(timed[q.query_id]) for q in queries], "per request"
    return [s * 1000 / n for s, n in batches if n for _ in range(n)], "per batch, divided by its queries"


def latency_summary(ms: Sequence[float], wall_s: float, measured: str) -> dict:
    """p50/p95 by linear interpolation (numpy's default); queries/s over the wall time of all retrieve calls."""
    if not len(ms):
        return {"queries": 0, "p50_ms": 0.0, "p95_ms": 0.0, "max_ms": 0.0, "mean_ms": 0.0,
                "queries_per_s": 0.0, "measured": measured}
    a = np.asarray(ms, dtype=np.float64)
    return {"queries": int(a.size), "p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
            "max_ms": float(a.max()), "mean_ms": float(a.mean()),
            "queries_per_s": float(a.size / wall_s) if wall_s > 0 else 0.0, "measured": measured}
