"""Making ranked lists, with the one tie rule every retriever uses: score descending, then chunk id descending
(trec_eval's order, so a run file written from a list and the list itself rank the same way)."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..core.types import Chunk, Hit, RankedList


def id_order(chunks: Sequence[Chunk]) -> np.ndarray:
    """Each chunk's position in chunk-id order: ``top_k`` compares these integers instead of the id strings."""
    return rank_of([c.chunk_id for c in chunks])


def rank_of(ids: Sequence[str]) -> np.ndarray:
    """Each id's position in sorted order (the ids read once: a sequence may make its items on access)."""
    order = np.empty(len(ids), dtype=np.int64)
    order[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return order


def top_k(scores: np.ndarray, k: int, ids: np.ndarray | None = None) -> np.ndarray:
    """Indices of the k best scores, by score descending, ties by chunk id descending (``ids`` from ``id_order``;
    without it, by position ascending: for callers with no chunk ids, such as benchmarks)."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        # argpartition finds the k-th value in O(n); keep every index tied with it so ties resolve by id.
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    tiebreak = -candidates if ids is None else ids[candidates]
    order = np.lexsort((-tiebreak, -scores[candidates]))
    return candidates[order[:k]]


def ranked_list(query_id: str, chunks: Sequence[Chunk], indices: np.ndarray, scores: np.ndarray) -> RankedList:
    """Hits for ``chunks[indices]``, already in rank order (from ``top_k``)."""
    hits = tuple(
        Hit(chunks[i].chunk_id, chunks[i].doc_id, float(s), rank, chunks[i].start, chunks[i].end)
        for rank, (i, s) in enumerate(zip(indices.tolist(), scores.tolist()), start=1)
    )
    return RankedList(query_id, hits)


def rank_hits(query_id: str, hits: Iterable[Hit], k: int | None = None) -> RankedList:
    """``hits`` in the tie rule's order, cut at ``k``, ranks renumbered 1..n: for retrievers that make hits other
    than by ``top_k`` (fusion, reranking, runs read from elsewhere, third-party kinds)."""
    ordered = sorted(hits, key=lambda h: (h.score, h.chunk_id), reverse=True)[:k]
    return RankedList(query_id, tuple(h if h.rank == r else Hit(h.chunk_id, h.doc_id, h.score, r, h.start, h.end,
                                                                  h.text)
                                      for r, h in enumerate(ordered, 1)))


def distinct_hits(hits: Iterable[Hit]) -> tuple[list[Hit], int]:
    """``hits`` in the tie rule's order with each item once, at its best place, and how many repeats were dropped.
    For retrievers whose hits come from elsewhere (a run file, a service, user code): the repeats must go before
    the list is cut at depth, or a list of depth items with repeats keeps fewer than depth distinct ones (a run
    file with d1 twice then d2 and d4, cut at 3, would lose d4). An item is its chunk id, document, span and text
    as given (a placed hit's are its chunk's)."""
    seen: set = set()
    out: list[Hit] = []
    n = 0
    for h in sorted(hits, key=lambda h: (h.score, h.chunk_id), reverse=True):
        n += 1
        key = (h.chunk_id, h.doc_id, h.start, h.end, h.text)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out, n - len(out)


def rank_distinct(query_id: str, hits: Iterable[Hit], k: int | None = None) -> tuple[RankedList, int]:
    """``rank_hits`` of ``distinct_hits``: repeats dropped first, then the cut at ``k``; and how many were dropped
    (what results.json counts as ``hit_problems.duplicates``)."""
    kept, dropped = distinct_hits(hits)
    return rank_hits(query_id, kept, k), dropped


def merge_shard_lists(lists_per_shard: Sequence[Sequence[RankedList]], depth: int) -> list[RankedList]:
    """One ranked list per query from the lists of several shards (each shard's lists in the same query order):
    every shard's hits together, in the tie rule's order, cut at ``depth``. When each shard returns its own top
    ``depth`` with scores that do not depend on the sharding (BM25 shards score with corpus-wide statistics), this
    is exactly the unsharded ranking."""
    if not lists_per_shard:
        return []
    n = len(lists_per_shard[0])
    if any(len(lists) != n for lists in lists_per_shard):
        raise ValueError(f"merge_shard_lists: shards returned {[len(x) for x in lists_per_shard]} lists; "
                         f"each must return one per query")
    out = []
    for per_query in zip(*lists_per_shard):
        query_id = per_query[0].query_id
        if any(r.query_id != query_id for r in per_query):
            raise ValueError(f"merge_shard_lists: query {query_id!r} is not at the same position in every shard")
        out.append(rank_hits(query_id, (h for r in per_query for h in r.hits), depth))
    return out
