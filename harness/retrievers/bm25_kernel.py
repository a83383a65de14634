"""The fast BM25 index's top k compiled with numba, the scorer ``BM25Index.top`` uses when numba is installed and
the index holds ``bm25_index.JIT_MIN_CHUNKS`` chunks or more (``bm25_index`` keeps the NumPy path for smaller
indexes, for indexes with negative contributions, for top lists that must reach chunks holding no query term, and
for installs without numba).

Exactness: a chunk's score is always the sum of its contributions in the summation order (``q``: the query's terms,
repeats included, sparse ones first), from 0.0, plus BM25Plus's constant: the floats ``BM25Index.get_scores``
makes. Bounds only decide which chunks are scored, with a relative margin against rounding in their sums. The top k
is kept in a heap under the one tie rule (score descending, then id rank descending); id ranks are distinct, so the
k best are one set whatever order the chunks are met in.

Pruning (MaxScore over blocks of ``BLOCK`` chunks): the distinct terms' bounds (largest contribution times their
repeats); non-essential terms are a set whose bounds sum below the threshold, chosen so the essential ones have the
fewest postings. A block holding no essential posting is skipped; in a block where only sparse terms are essential,
the chunks they touch sum their exact contributions, then the non-essential dense terms' one-byte bounds, then the
non-essential sparse terms are searched while the chunk can still reach the threshold; when a dense term is
essential every chunk of the block is visited anyway, so every term's bound is summed for all of them (dense
columns read one byte a chunk). Only chunks still at or above the threshold are scored exactly. The threshold
starts at the k-th best score of the seed chunks (where the highest-bound terms weigh most, listed at index time)
and rises with the heap's k-th best; the non-essential set grows with it, block by block.

Compiled once per machine (``cache=True``: numba writes the machine code next to this file in ``__pycache__``, or,
when that folder is read-only, in its user-wide cache folder, ``NUMBA_CACHE_DIR`` if set), so only the first run
pays the compile time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bm25_kernel_parts import arrange, better, choose, find, gallop, quantise, sift_down, sift_up

MARGIN = 1e-9  # bm25_index.MARGIN, copied (numba would freeze an imported one into its cache; a test keeps them equal)
SEED_TERMS = 3
BLOCK = 4096  # chunks scored together: the bounds of a block's chunks are summed term after term


@njit(cache=True, nogil=True)
def _seed_threshold(u, ub, q_terms, k, constant, indptr, docs, weights, dense_slot, dense, seed_ptr, seed_docs):
    """The k-th best score (summation order) among the seed chunks of the highest-bound terms; -inf when they
    are fewer than k."""
    m = len(u)
    by_bound = np.argsort(-ub, kind="mergesort")
    total = 0
    for i in range(min(SEED_TERMS, m)):
        t = u[by_bound[i]]
        if seed_ptr[t + 1] > seed_ptr[t]:
            total += seed_ptr[t + 1] - seed_ptr[t]
        elif dense_slot[t] < 0:
            total += indptr[t + 1] - indptr[t]
        else:
            return -np.inf  # a dense term in a tiny index: no seed (any lower bound will do)
    if total < k:
        return -np.inf
    pool = np.empty(total, dtype=np.int64)
    at = 0
    for i in range(min(SEED_TERMS, m)):
        t = u[by_bound[i]]
        if seed_ptr[t + 1] > seed_ptr[t]:
            for p in range(seed_ptr[t], seed_ptr[t + 1]):
                pool[at] = seed_docs[p]
                at += 1
        else:
            for p in range(indptr[t], indptr[t + 1]):
                pool[at] = docs[p]
                at += 1
    pool = np.unique(pool)
    if len(pool) < k:
        return -np.inf
    # Each distinct term's contribution to each pool chunk, the postings walked once (the pool is ascending).
    vals = np.zeros((m, len(pool)))
    for j in range(m):
        t = u[j]
        if dense_slot[t] >= 0:
            row = dense[dense_slot[t]]
            for i in range(len(pool)):
                vals[j, i] = row[pool[i]]
        else:
            p, end = indptr[t], indptr[t + 1]
            for i in range(len(pool)):
                p = gallop(docs, p, end, pool[i])
                if p == end:
                    break
                if docs[p] == pool[i]:
                    vals[j, i] = weights[p]
    slot_of = np.searchsorted(u, q_terms)
    scores = np.empty(len(pool))
    for i in range(len(pool)):
        s = 0.0
        for p in range(len(q_terms)):
            s += vals[slot_of[p], i]
        scores[i] = s + constant
    scores.sort()
    return scores[len(pool) - k] - constant


@njit(cache=True, nogil=True)
def top_k(q, k, constant, id_rank, n, indptr, docs, weights, dense_slot, dense, dq, dscale, bound, seed_ptr,
          seed_docs):
    """(chunks, scores) of the k best in rank order, and whether the k-th best holds a score > 0 (else chunks
    holding no query term, scoring 0, may belong in the top k: the caller takes the NumPy path)."""
    u = np.unique(q)
    m = len(u)
    qslot = np.searchsorted(u, q)
    ub = np.zeros(m)
    mult = np.zeros(m)  # a repeated term counts again
    for p in range(len(q)):
        ub[qslot[p]] += bound[q[p]]
        mult[qslot[p]] += 1.0
    theta = -np.inf
    if m:
        theta = _seed_threshold(u, ub, q, k, constant, indptr, docs, weights, dense_slot, dense, seed_ptr, seed_docs)
    cost = np.empty(m)  # chunks visited when the term is essential
    for j in range(m):
        t = u[j]
        cost[j] = n if dense_slot[t] >= 0 else indptr[t + 1] - indptr[t]
    total = ub.sum()
    thr = theta - MARGIN * (abs(theta) + abs(constant) + total)
    mask = choose(ub, cost, thr, 0)
    chosen_at = thr
    order, ne = arrange(ub, mask)
    # Sparse terms: ``pos`` walks each term's postings block by block; [lo_at, hi_at) are its postings in the block.
    pos = np.empty(m, dtype=np.int64)
    end = np.empty(m, dtype=np.int64)
    lo_at = np.empty(m, dtype=np.int64)
    hi_at = np.empty(m, dtype=np.int64)
    ecur = np.empty(m, dtype=np.int64)
    slots = np.empty(m, dtype=np.int64)
    for j in range(m):
        t = u[j]
        slots[j] = dense_slot[t]
        pos[j], end[j] = (indptr[t], indptr[t + 1]) if slots[j] < 0 else (0, 0)
    c = np.zeros(m)
    acc = np.zeros(BLOCK)  # upper bounds of the block's chunks over the essential terms
    seen = np.zeros(BLOCK, dtype=np.bool_)
    touched = np.empty(BLOCK, dtype=np.int64)
    bounds = np.empty(BLOCK)
    early = np.empty(m, dtype=np.int64)
    late = np.empty(m, dtype=np.int64)
    late_pre = np.zeros(m)
    hs = np.empty(k)
    hr = np.empty(k, dtype=np.int64)
    hd = np.empty(k, dtype=np.int64)
    size = 0
    lo = 0
    while lo < n:
        any_dense = False
        nxt = n  # the first chunk an essential sparse term holds from ``lo`` on
        for i in range(ne, m):
            j = order[i]
            if slots[j] >= 0:
                any_dense = True
            else:
                pos[j] = gallop(docs, pos[j], end[j], lo)
                if pos[j] < end[j]:
                    nxt = min(nxt, docs[pos[j]])
        if not any_dense:
            if nxt >= n:
                break
            lo = nxt
        hi = min(lo + BLOCK, n)
        for j in range(m):
            if slots[j] < 0:
                pos[j] = gallop(docs, pos[j], end[j], lo)
                lo_at[j] = ecur[j] = pos[j]
                hi_at[j] = gallop(docs, pos[j], end[j], hi)
        n_touched = 0
        # A block every chunk of which is scored (an essential dense term): every term's bound is summed, so few
        # chunks pass; else only the essential terms', over the chunks holding one (``touched``).
        first = 0 if any_dense else ne
        for i in range(first, m):
            j = order[i]
            slot = slots[j]
            if slot >= 0:
                qrow = dq[slot]
                step = dscale[slot] * mult[j]
                for d in range(lo, hi):
                    acc[d - lo] += qrow[d] * step
            else:
                w_mult = mult[j]
                for p in range(lo_at[j], hi_at[j]):
                    x = docs[p] - lo
                    acc[x] += weights[p] * w_mult
                    if not any_dense and not seen[x]:
                        seen[x] = True
                        touched[n_touched] = x
                        n_touched += 1
        if any_dense:  # the chunks whose bound reaches the threshold, in order
            count = 0
            for x in range(hi - lo):
                if acc[x] >= thr:
                    touched[count] = x
                    bounds[count] = acc[x]
                    count += 1
            acc[:hi - lo] = 0.0
        else:
            count = n_touched
            for e in range(count):
                x = touched[e]
                bounds[e] = acc[x]
                acc[x] = 0.0
                seen[x] = False
        # Touched chunks only: the non-essential dense terms' bounds are one byte a chunk, added at once; the
        # sparse ones are searched for, highest bound first, while the chunk can still reach the threshold.
        n_early = n_late = 0
        if not any_dense:
            for i in range(ne):
                j = order[i]
                if slots[j] >= 0:
                    early[n_early] = j
                    n_early += 1
                else:
                    late[n_late] = j
                    late_pre[n_late] = ub[j] + (late_pre[n_late - 1] if n_late else 0.0)
                    n_late += 1
        rest = late_pre[n_late - 1] if n_late else 0.0
        for e in range(count):
            partial = bounds[e]
            d = lo + touched[e]
            for i in range(n_early):
                j = early[i]
                partial += dq[slots[j], d] * dscale[slots[j]] * mult[j]
            if partial + rest < thr:
                continue
            ok = True
            for i in range(n_late - 1, -1, -1):
                if partial + late_pre[i] < thr:
                    ok = False
                    break
                j = late[i]
                partial += find(docs, weights, lo_at[j], hi_at[j], d) * mult[j]
            if not ok or partial < thr:
                continue
            for j in range(m):  # the exact contributions, summed in the summation order
                if slots[j] >= 0:
                    c[j] = dense[slots[j], d]
                elif any_dense:  # the chunks come in order: walk on from the last one found
                    p = gallop(docs, ecur[j], hi_at[j], d)
                    ecur[j] = p
                    c[j] = weights[p] if p < hi_at[j] and docs[p] == d else 0.0
                else:
                    c[j] = find(docs, weights, lo_at[j], hi_at[j], d)
            s = 0.0
            for p in range(len(q)):
                s += c[qslot[p]]
            final = s + constant
            r = id_rank[d]
            if size < k:
                hs[size], hr[size], hd[size] = final, r, d
                sift_up(hs, hr, hd, size)
                size += 1
            elif better(final, r, hs[0], hr[0]):
                hs[0], hr[0], hd[0] = final, r, d
                sift_down(hs, hr, hd, size, 0)
            if size == k and hs[0] - constant > theta:
                theta = hs[0] - constant
                thr = theta - MARGIN * (abs(theta) + abs(constant) + total)
        if thr > chosen_at:  # fewer essential terms from the next block on
            chosen_at = thr
            grown = choose(ub, cost, thr, mask)
            if grown != mask:
                mask = grown
                order, ne = arrange(ub, mask)
        lo = hi
    positive = size == k and size > 0 and hs[0] - constant > 0.0
    out_docs = np.empty(size, dtype=np.int64)
    out_scores = np.empty(size)
    for i in range(size - 1, -1, -1):  # pop the worst into the last free place
        out_docs[i], out_scores[i] = hd[0], hs[0]
        last = i
        hs[0], hr[0], hd[0] = hs[last], hr[last], hd[last]
        sift_down(hs, hr, hd, last, 0)
    return out_docs, out_scores, positive
