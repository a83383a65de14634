"""Small, valid ``Result`` objects with dictated per-query values, for tests of compare and gate arithmetic."""

from __future__ import annotations

import hashlib
import json

from harness.result.model import KINDS, Result


def _fingerprint(ids: list[str]) -> str:
    return hashlib.sha256(json.dumps(sorted(ids), sort_keys=True).encode()).hexdigest()[:16]


def fake_result(name: str, values: list[float], kinds: list[str], tags: list[dict] | None = None, *,
                gold: str = "g1", describe: str = "k=5", counted: list[bool] | None = None,
                metric: str = "ndcg@10") -> Result:
    """A result of ``len(values)`` queries q0, q1, ... whose ``metric`` is ``values[i]`` at both levels, with the
    given verdict kinds, tags and counted flags (all counted unless told); the summary is the mean over the counted."""
    n = len(values)
    tags = tags or [{"topic": "a" if i % 2 else "b"} for i in range(n)]
    counted = counted or [True] * n
    ids = [f"q{i}" for i in range(n)]
    kept = [v for v, c in zip(values, counted) if c]
    mean = sum(kept) / len(kept) if kept else None
    level_counts = {"judged_queries": n, "evaluated_queries": len(kept),
                    "no_relevant_queries": n - len(kept), "no_relevant_query_ids": [q for q, c in zip(ids, counted) if not c],
                    "excluded_goldset_error": 0, "excluded_goldset_error_query_ids": [],
                    "absent_from_run": 0, "absent_from_run_query_ids": [], "unjudged_run_queries": 0,
                    "dropped_duplicates": 0, "nothing_found_in_window": 0}
    kind_counts = {k: sum(1 for x in kinds if x == k) for k in KINDS}
    data = {
        "name": name, "config": {"name": name, "retriever": {"kind": "bm25"}}, "config_hash": "h",
        "harness_version": "0", "created_at": "now", "conventions": {},
        "cutoff": {"k": 5, "token_budget": None, "tokenizer": None, "depth": 10, "describe": describe,
                   "mean_effective_k": 5.0},
        "corpus": {"documents": 1, "chunks": 1, "chunking": {}, "fingerprint": "c"},
        "goldset": {"name": "g", "queries": n, "judgments": n, "has_evidence": False, "fingerprint": gold,
                    "query_ids_fingerprint": _fingerprint(ids), "problems": []},
        "summary": {"doc": {metric: mean}, "chunk": {metric: mean},
                    "counts": {"doc": level_counts, "chunk": level_counts},
                    "verdicts": {"total": n, "counts": kind_counts, "shares": {k: c / n for k, c in kind_counts.items()},
                                 "flags": {"partial": 0, "noisy_context": 0, "unjudged_in_window": 0},
                                 "by_slice": {}, "by_where": {"beyond_cutoff": 0, "not_retrieved": 0, "near_cutoff": 0,
                                                              "absent_from_run": 0},
                                 "metric_means": {}, "wrong_chunk_possible": False, "advice": []}},
        "diagnostics_settings": {}, "timings": {"index_s": 0.0, "retrieve_s": 0.0, "queries_per_s": 0.0},
        "queries": [{"id": q, "text": q, "tags": t, "metrics": {"doc": {metric: v}, "chunk": {metric: v}},
                     "n_relevant": {"doc": int(c), "chunk": int(c)}, "counted": {"doc": c, "chunk": c},
                     "effective_k": 5, "gold": [], "hits": [],
                     "verdict": {"kind": k, "reason": "", "detail": {}, "flags": []}}
                    for q, v, k, t, c in zip(ids, values, kinds, tags, counted)],
    }
    return Result.from_dict(data, f"fake {name}")
