"""The compiled BM25 scorer's small parts (``bm25_kernel`` is the scorer): the dense columns' one-byte bounds,
searching postings, the top-k heap under the tie rule, and choosing the non-essential terms.

numba's cache (``cache=True``) checks the file of the function it compiled, not the files of the functions that
one calls: an edit here alone needs ``bm25_kernel``'s cached code cleared (its ``__pycache__/*.nbi``, ``*.nbc``)
during development; an install or upgrade writes both files."""

from __future__ import annotations

import numpy as np
from numba import njit

MAX_TERMS = 62  # distinct terms a bit mask holds; a longer query is scored without pruning
EXHAUSTIVE = 10  # choose() tries every set of non-essential terms up to this many distinct terms


@njit(cache=True, nogil=True)
def quantise(dense):
    """Each dense column as bytes and a scale: ``q * scale >= contribution`` for every chunk (an upper bound read
    with one byte a chunk, for pruning), 0 exactly where the contribution is 0."""
    n_dense, n = dense.shape
    dq = np.zeros((n_dense, n), dtype=np.uint8)
    scale = np.zeros(n_dense)
    for slot in range(n_dense):
        row = dense[slot]
        top = 0.0
        for d in range(n):
            top = max(top, row[d])
        if top <= 0.0:
            continue
        step = top / 254.0
        scale[slot] = step
        out = dq[slot]
        for d in range(n):
            w = row[d]
            if w > 0.0:
                v = min(int(np.ceil(w / step)), 255)
                while v < 255 and v * step < w:
                    v += 1
                out[d] = v
    return dq, scale


@njit(cache=True, nogil=True)
def gallop(docs, pos, end, d):
    """The first position in ``docs[pos:end]`` (ascending) holding a chunk >= d, or ``end``."""
    if pos >= end or docs[pos] >= d:
        return pos
    step = 1
    lo = pos
    while lo + step < end and docs[lo + step] < d:
        lo += step
        step *= 2
    hi = min(lo + step, end)  # docs[lo] < d, and docs[hi] >= d or hi == end
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if docs[mid] < d:
            lo = mid
        else:
            hi = mid
    return hi


@njit(cache=True, nogil=True)
def find(docs, weights, lo, hi, d):
    """The weight of chunk ``d`` in ``docs[lo:hi]`` (ascending), 0.0 when absent."""
    end = hi
    while hi - lo > 8:  # the first position holding a chunk >= d is in [lo, hi]
        mid = (lo + hi) >> 1
        if docs[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    for p in range(lo, min(hi + 1, end)):
        if docs[p] >= d:
            return weights[p] if docs[p] == d else 0.0
    return 0.0


@njit(cache=True, nogil=True)
def better(s1, r1, s2, r2):
    return s1 > s2 or (s1 == s2 and r1 > r2)


@njit(cache=True, nogil=True)
def sift_down(hs, hr, hd, size, i):
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        worst = left
        right = left + 1
        if right < size and better(hs[left], hr[left], hs[right], hr[right]):
            worst = right
        if better(hs[i], hr[i], hs[worst], hr[worst]):
            hs[i], hs[worst] = hs[worst], hs[i]
            hr[i], hr[worst] = hr[worst], hr[i]
            hd[i], hd[worst] = hd[worst], hd[i]
            i = worst
        else:
            return


@njit(cache=True, nogil=True)
def sift_up(hs, hr, hd, i):
    while i > 0:
        parent = (i - 1) >> 1
        if better(hs[parent], hr[parent], hs[i], hr[i]):
            hs[i], hs[parent] = hs[parent], hs[i]
            hr[i], hr[parent] = hr[parent], hr[i]
            hd[i], hd[parent] = hd[parent], hd[i]
            i = parent
        else:
            return


@njit(cache=True, nogil=True)
def bit(mask, j):
    return j < MAX_TERMS and (mask >> j) & 1 == 1


@njit(cache=True, nogil=True)
def choose(ub, cost, thr, mask):
    """The non-essential terms (a bit mask over the distinct terms, a superset of ``mask``): bounds summing below
    ``thr``, chosen so that the essential terms have the fewest postings to walk (every subset for up to
    ``EXHAUSTIVE`` terms, else the lowest bounds first)."""
    m = len(ub)
    if m > MAX_TERMS:
        return mask  # every term essential: exact, unpruned
    best, best_cost = mask, 0.0
    for j in range(m):
        if not bit(mask, j):
            best_cost += cost[j]
    if m <= EXHAUSTIVE:
        for cand in range(1 << m):
            if cand & mask != mask:
                continue
            bound_sum, walk = 0.0, 0.0
            for j in range(m):
                if bit(cand, j):
                    bound_sum += ub[j]
                else:
                    walk += cost[j]
            if bound_sum < thr and walk < best_cost:
                best, best_cost = cand, walk
        return best
    bound_sum = 0.0
    for j in range(m):
        if bit(mask, j):
            bound_sum += ub[j]
    for j in np.argsort(ub, kind="mergesort"):
        if not bit(best, j):
            if bound_sum + ub[j] >= thr:
                break
            bound_sum += ub[j]
            best |= 1 << j
    return best


@njit(cache=True, nogil=True)
def arrange(ub, mask):
    """(order, ne): the non-essential terms by bound ascending, then the essential ones; ``ne``: how many
    non-essential terms there are."""
    m = len(ub)
    by_bound = np.argsort(ub, kind="mergesort")
    order = np.empty(m, dtype=np.int64)
    ne = 0
    for j in by_bound:
        if bit(mask, j):
            order[ne] = j
            ne += 1
    at = ne
    for j in by_bound:
        if not bit(mask, j):
            order[at] = j
            at += 1
    return order, ne


@njit(cache=True, nogil=True)
def ascii_tokens(codes, table, text_lengths):
    """``bm25_tokens``' cut of ASCII texts (``codes``: the texts' bytes joined by one separator byte that is no
    token's; ``table``: which bytes tokens are made of) in one pass: (the tokens' bytes back to back, their offsets,
    tokens per text)."""
    n = len(codes)
    out = np.empty(n, dtype=np.uint8)
    offsets = np.empty(n // 2 + 2, dtype=np.int64)
    lengths = np.zeros(len(text_lengths), dtype=np.int64)
    offsets[0] = 0
    at = 0
    n_tokens = 0
    start = 0
    for i in range(len(text_lengths)):
        end = start + text_lengths[i]
        inside = False
        for p in range(start, end):
            if table[codes[p]]:
                out[at] = codes[p]
                at += 1
                inside = True
            elif inside:
                n_tokens += 1
                offsets[n_tokens] = at
                lengths[i] += 1
                inside = False
        if inside:
            n_tokens += 1
            offsets[n_tokens] = at
            lengths[i] += 1
        start = end + 1
    return out[:at], offsets[:n_tokens + 1], lengths
