"""Turning a score vector over chunks into a ranked list."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.types import Chunk, Hit, RankedList


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, by score descending then chunk position ascending (deterministic ties)."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        # argpartition finds the k-th value in O(n); keep every index tied with it so ties resolve by position.
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order[:k]]


def ranked_list(query_id: str, chunks: Sequence[Chunk], indices: np.ndarray, scores: np.ndarray) -> RankedList:
    hits = tuple(
        Hit(chunks[i].chunk_id, chunks[i].doc_id, float(s), rank, chunks[i].start, chunks[i].end)
        for rank, (i, s) in enumerate(zip(indices.tolist(), scores.tolist()), start=1)
    )
    return RankedList(query_id, hits)
