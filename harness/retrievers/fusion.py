"""Rank fusion arithmetic, one copy: the hybrid retriever fuses its children's ranked lists with it, and
``harness.fuse`` fuses whole columnar runs with it.

A list's contribution to a hit's fused score is ``weight / (k + rank)`` (reciprocal rank fusion, Cormack et al.
2009) or ``weight * normalised score`` (min-max to [0, 1], or z-score), and a hit's fused score is the sum over the
lists that hold it, added in list order. Fused hits are ordered by fused score descending, ties by id descending
(trec_eval's tie rule), ranks 1..n.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.runtable import Run, offsets_of, encode, sorted_vocab

METHODS = ("rrf", "minmax", "zscore")
HUGE = 1e100  # above it a list's spread or variance may overflow a float


def normalise(scores: np.ndarray, how: str) -> np.ndarray:
    """Min-max to [0, 1] or z-score; a list whose scores are all equal maps to 1 (minmax) or 0 (zscore)."""
    if len(scores) == 0:
        return scores
    peak = float(np.abs(scores).max())
    if HUGE < peak < np.inf:
        # Scores near the float limit overflow in hi - lo or in the variance (1e308 and -1e308 fused to NaN, or to
        # z-scores of 0): both normalisations are free of scale, so such a list is scaled down first. Others are
        # left as they are, to the last bit; the scale is a power of two, so scaling rounds nothing.
        scores = scores * 2.0 ** -int(np.frexp(peak)[1])
    return _normalised(scores, how)


def _normalised(scores: np.ndarray, how: str) -> np.ndarray:
    if how == "minmax":
        lo, hi = scores.min(), scores.max()
        return np.ones_like(scores) if hi == lo else (scores - lo) / (hi - lo)
    std = scores.std()
    return np.zeros_like(scores) if std == 0 else (scores - scores.mean()) / std


def contributions(ranks: np.ndarray, scores: np.ndarray, how: str, rrf_k: float, weight: float = 1.0) -> np.ndarray:
    """One ranked list's share of the fused score of each of its hits (``ranks`` 1..n, ``scores`` in list order)."""
    if how == "rrf":
        return weight / (rrf_k + np.asarray(ranks, dtype=np.float64))
    return weight * normalise(np.asarray(scores, dtype=np.float64), how)


def _doc_positions(run: Run) -> np.ndarray:
    """Each row's doc id as its position in sorted order (the codes themselves when the vocabulary is sorted)."""
    return run.doc_codes if run.doc_order is None else run.doc_order[run.doc_codes]


def ranked_rows(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(rows, ranks): the run's rows in evaluation order (per query: score descending, ties by doc id descending,
    a doc repeated in one list kept at its best rank only, as the metric engine counts it) and each kept row's rank."""
    query_of_row = np.repeat(np.arange(run.n_queries), run.lengths)
    positions, scores = _doc_positions(run).astype(np.int64), run.scores
    same_query = query_of_row[1:] == query_of_row[:-1]
    in_order = ((scores[:-1] > scores[1:]) | ((scores[:-1] == scores[1:]) & (positions[:-1] > positions[1:]))
                | ~same_query).all()
    # A run from a file or a retriever is in this order already: only an unordered one pays for the sort.
    order = np.arange(len(scores)) if in_order else np.lexsort((-positions, -scores, query_of_row))
    q, d = query_of_row[order], run.doc_codes[order]
    # Sorted by query, then best first: the first occurrence of each (query, doc) pair is the one that counts.
    _, first_index = np.unique(q.astype(np.int64) * max(len(run.doc_vocab), 1) + d, return_index=True)
    keep = np.zeros(len(order), dtype=bool)
    keep[first_index] = True
    kept, q_kept = order[keep], q[keep]
    starts = np.searchsorted(q_kept, q_kept)  # q_kept is sorted: each row's offset within its query
    return kept, np.arange(len(kept)) - starts + 1


def fuse_runs(runs: Sequence[Run], weights: Sequence[float], how: str, rrf_k: float) -> Run:
    """Fuse whole runs: queries in order of first appearance across the runs, every hit of every run, scored with
    ``contributions`` per query and list; hits ordered by fused score descending, ties by doc id descending."""
    query_ids: dict[str, int] = {}
    for run in runs:
        for q in run.query_ids.tolist():
            query_ids.setdefault(str(q), len(query_ids))
    vocab = sorted_vocab(d for run in runs for d in run.doc_vocab.tolist())
    keys, values = [], []
    for run, weight in zip(runs, weights):
        rows, ranks = ranked_rows(run)
        query_of_row = np.repeat(np.arange(run.n_queries), run.lengths)[rows]
        if how == "rrf":
            share = contributions(ranks, run.scores[rows], how, rrf_k, weight)
        else:  # normalised per query: one list per query
            share = np.empty(len(rows), dtype=np.float64)
            bounds = np.searchsorted(query_of_row, np.arange(run.n_queries + 1))
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                share[lo:hi] = contributions(ranks[lo:hi], run.scores[rows[lo:hi]], how, rrf_k, weight)
        to_query = np.array([query_ids[str(q)] for q in run.query_ids.tolist()], dtype=np.int64)
        to_doc = encode(vocab, run.doc_vocab.tolist())
        keys.append(to_query[query_of_row] * max(len(vocab), 1) + to_doc[run.doc_codes[rows]])
        values.append(share)
    all_keys = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    unique, inverse = np.unique(all_keys, return_inverse=True)
    # bincount adds each key's shares in array order (run by run), from 0.0: the order the hybrid retriever adds.
    fused = np.bincount(inverse, weights=np.concatenate(values) if values else None, minlength=len(unique))
    width = max(len(vocab), 1)
    # unique is sorted by (query, doc): reversed, by query and doc descending, which a stable sort on (query,
    # fused score descending) keeps for ties; two sort keys instead of three.
    unique, fused = unique[::-1], fused[::-1]
    q_codes, d_codes = unique // width, unique % width
    order = np.lexsort((-fused, q_codes))
    q_codes, d_codes, fused = q_codes[order], d_codes[order], fused[order]
    lengths = np.bincount(q_codes, minlength=len(query_ids)).astype(np.int64)
    offsets = offsets_of(lengths)
    ranks = np.arange(len(q_codes)) - offsets[q_codes] + 1
    return Run(np.array(list(query_ids), dtype=object), offsets, vocab, d_codes.astype(np.int64),
                       fused.astype(np.float64), ranks.astype(np.int64))
