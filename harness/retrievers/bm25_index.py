"""The ``backend: fast`` BM25 index: per-(term, chunk) score contributions computed once at index time (bm25s-style
eager scoring) with rank-bm25's formulas, held as plain NumPy arrays so the index pickles cheaply and slices into
shards that score with the corpus-wide idf and average length.

A query's score for a chunk is the sum of the stored contributions of the query terms the chunk holds (repeats
counted again, as in rank-bm25), always added in one order (``_summation_order``), so a chunk's score is the same
float whichever path or shard found it; BM25Plus's contribution for a term a chunk lacks (delta x idf) is a
per-query constant added at the end. Top-k is exact, with the one tie rule (score descending, chunk id descending),
and usually touches a small part of the corpus (MaxScore-style): the chunks where the query's highest-weight terms
weigh most (found at index time) are scored exactly and their k-th best score is a threshold; the terms whose
largest contributions together stay below it cannot bring a chunk into the top k on their own, so only chunks
holding one of the other terms are scored, one by one or, when that would cost more, by adding whole terms into a
vector over all chunks. The most common terms are dense columns: adding one is a vector add, looking one up a
gather.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .bm25_postings import Postings, PostingsBuilder, contributions, delta_of, idf_of
from .ranking import top_k

DENSE_SHARE = 0.25  # a term in at least this share of the chunks is stored as a dense column
SEED_SIZE = 512  # chunks per seed term scored exactly to find the pruning threshold
SEED_TERMS = 3  # the query terms with the highest bounds seed it
SPARSE_PATH_SHARE = 1.0  # score chunks one by one while that costs less than this share of accumulating terms
BUILD_BATCH = 20_000  # chunks per batch of postings built at once (BM25Index.build)
WIDE_K = 256  # from this depth on, the top k over all chunks is cut from a sample of all their scores
SAMPLE_TOP = 64  # _above_kth: the cut is this best of a sample holding ~SAMPLE_TOP/2 of the top k
MARGIN = 1e-9  # relative safety margin of the pruning test against rounding in sums of bounds
JIT = True  # top k by the numba kernel (bm25_kernel) when numba is installed; False: the NumPy path below
# The compiled top k from this many chunks on. Below it the NumPy path answers a query in about a millisecond, and
# numba's one-time compile of the kernel (about 20 s on 2 idle cores, on a machine's first use) would not pay back.
JIT_MIN_CHUNKS = 100_000


# ``config`` below is bm25.BM25Config (variant, k1, b, epsilon, delta); not imported, as bm25 imports this module.
bm25_delta = delta_of


@dataclass
class BM25Index:
    """Term-major postings (``indptr`` over terms; ``docs`` ascending within a term; ``weights``), dense columns
    for very common terms (``dense[dense_slot[t]]``, their postings empty), each term's largest contribution
    (``bound``) and BM25Plus's absent-term constant (``absent``). ``n`` chunks, numbered from 0 in this index."""

    n: int
    indptr: np.ndarray  # int64, n_terms + 1
    docs: np.ndarray  # int32
    weights: np.ndarray  # float64
    dense_slot: np.ndarray  # int32 per term, -1 = sparse
    dense: np.ndarray  # float64, (n_dense, n)
    bound: np.ndarray  # float64 per term
    absent: np.ndarray  # float64 per term
    nonnegative: bool  # pruning and "untouched chunks score 0" need contributions >= 0 (okapi's floor can be < 0)
    # Per term with more than SEED_SIZE chunks: the SEED_SIZE chunks where it weighs most (``seed_ptr`` over terms).
    seed_ptr: np.ndarray | None = None
    seed_docs: np.ndarray | None = None
    # The compiled scorer's one byte a chunk per dense column, an upper bound of its contribution (bm25_kernel).
    dense_q: np.ndarray | None = None
    dense_scale: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.seed_ptr is None:
            self.seed_ptr, self.seed_docs = self._seed_lists()

    def _seed_lists(self) -> tuple[np.ndarray, np.ndarray]:
        """Where a query's threshold comes from: a term's best chunks, found once at index time (an argpartition
        over a long postings list per query would cost more than the pruning saves)."""
        sizes = np.zeros(self.n_terms, dtype=np.int64)
        parts = []
        for t in self._long_terms():
            weights = self.dense[self.dense_slot[t]] if self.dense_slot[t] >= 0 else \
                self.weights[self.indptr[t]:self.indptr[t + 1]]
            if len(weights) <= SEED_SIZE:
                continue
            best = np.argpartition(weights, len(weights) - SEED_SIZE)[len(weights) - SEED_SIZE:]
            parts.append(np.sort(best if self.dense_slot[t] >= 0 else self.docs[self.indptr[t] + best]))
            sizes[t] = SEED_SIZE
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return ptr, (np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, dtype=np.int32))

    def _long_terms(self) -> list[int]:
        long = (np.diff(self.indptr) > SEED_SIZE) | (self.dense_slot >= 0)
        return np.flatnonzero(long).tolist()

    @property
    def n_terms(self) -> int:
        return len(self.indptr) - 1

    # ---- building -----------------------------------------------------------------------------------------------

    @classmethod
    def build(cls, term_ids: np.ndarray, lengths: np.ndarray, n_terms: int, config: Any,
              dense_share: float = DENSE_SHARE, batch: int = BUILD_BATCH) -> "BM25Index":
        """``term_ids``: every chunk's tokens in chunk order; ``lengths``: tokens per chunk."""
        builder = PostingsBuilder()
        lengths = np.asarray(lengths, dtype=np.int64)
        ends = np.concatenate([[0], np.cumsum(lengths)])
        for lo in range(0, len(lengths), batch):
            hi = min(lo + batch, len(lengths))
            builder.add(term_ids[ends[lo]:ends[hi]], lengths[lo:hi])
        return cls.from_postings(builder.finish(n_terms, dense_share), config)

    @classmethod
    def from_postings(cls, p: Postings, config: Any) -> "BM25Index":
        """The index of ``p`` (``bm25_postings``), whose arrays are released as it goes (tf is the largest)."""
        n, n_terms = p.n, len(p.df)
        idf, absent = idf_of(config, n, p.df)
        weights = contributions(config, p.lengths, p.indptr, np.arange(n_terms), p.docs, p.tf, idf, absent)
        p.tf = None
        dense_weights = contributions(config, p.lengths, p.dense_ptr, p.dense_terms, p.dense_docs, p.dense_tf, idf,
                                      absent)
        p.dense_tf = None
        # rank-bm25 divides 0/0 for a term a chunk lacks when k1 = 0 or for an empty chunk when b = 1; here only
        # chunks holding a term have a contribution, so none of that arises (a NaN would be a bug, not data).
        dense = np.zeros((len(p.dense_terms), n), dtype=np.float64)
        dense_slot = np.full(n_terms, -1, dtype=np.int32)
        bound = np.zeros(n_terms)
        for slot, t in enumerate(p.dense_terms.tolist()):
            lo, hi = p.dense_ptr[slot], p.dense_ptr[slot + 1]
            dense[slot, p.dense_docs[lo:hi]] = dense_weights[lo:hi]
            dense_slot[t] = slot
            bound[t] = dense_weights[lo:hi].max()
        sparse = np.diff(p.indptr) > 0
        if sparse.any():
            bound[sparse] = np.maximum.reduceat(weights, p.indptr[:-1][sparse])
        nonnegative = bool((len(weights) == 0 or weights.min() >= 0)
                           and (len(dense_weights) == 0 or dense_weights.min() >= 0))
        return cls(n, p.indptr, p.docs, weights, dense_slot, dense, bound, absent, nonnegative)

    def slice(self, lo: int, hi: int) -> "BM25Index":
        """The chunks ``lo:hi`` (renumbered from 0) with their contributions unchanged: the corpus-wide idf and
        average length stay in them, so a shard's scores are the whole index's scores."""
        inside = (self.docs >= lo) & (self.docs < hi)
        kept = np.concatenate([[0], np.cumsum(inside)])
        indptr = kept[self.indptr]
        weights = self.weights[inside]
        bound = np.zeros(self.n_terms)
        df = np.diff(indptr)
        if (df > 0).any():
            bound[df > 0] = np.maximum.reduceat(weights, indptr[:-1][df > 0])
        dense = np.ascontiguousarray(self.dense[:, lo:hi])
        dense_bound = dense.max(axis=1) if dense.shape[1] else np.zeros(len(dense))
        has_dense = self.dense_slot >= 0
        bound[has_dense] = dense_bound[self.dense_slot[has_dense]]
        return BM25Index(hi - lo, indptr, (self.docs[inside] - lo).astype(np.int32), weights, self.dense_slot.copy(),
                         dense, bound, self.absent.copy(), self.nonnegative)

    # ---- scoring ------------------------------------------------------------------------------------------------

    def constant(self, query: np.ndarray) -> float:
        total = 0.0
        for t in query.tolist():
            total += float(self.absent[t])
        return total

    def get_scores(self, query: np.ndarray) -> np.ndarray:
        """Every chunk's score (a dense vector; for tests, explanations and indexes with negative contributions)."""
        scores = self._accumulate(self._summation_order(query.tolist()))
        constant = self.constant(query)
        return scores + constant if constant else scores

    def _summation_order(self, terms: list[int]) -> list[int]:
        """The order a chunk's contributions are added in, the same on every path and in every shard (dense-ness
        is the whole index's), so a chunk's score is the same float however it was found: the sparse terms in
        query order, then the dense ones (rank-bm25 adds in query order; the sums agree to rounding)."""
        slots = self.dense_slot
        return [t for t in terms if slots[t] < 0] + [t for t in terms if slots[t] >= 0]

    def _accumulate(self, ordered: list[int]) -> np.ndarray:
        sparse = [t for t in ordered if self.dense_slot[t] < 0]
        if sparse:
            # One pass in C that adds each posting in turn, from 0.0: the same sums as adding term by term.
            docs = np.concatenate([self.docs[self.indptr[t]:self.indptr[t + 1]] for t in sparse])
            weights = np.concatenate([self.weights[self.indptr[t]:self.indptr[t + 1]] for t in sparse])
            scores = np.bincount(docs, weights=weights, minlength=self.n).astype(np.float64, copy=False)
        else:
            scores = np.zeros(self.n)
        for t in ordered[len(sparse):]:
            scores += self.dense[self.dense_slot[t]]
        return scores

    def lookup(self, t: int, chunks: np.ndarray) -> np.ndarray:
        """Term ``t``'s contribution to each of ``chunks`` (ascending), 0 where a chunk lacks it."""
        slot = self.dense_slot[t]
        if slot >= 0:
            return self.dense[slot, chunks]
        lo, hi = self.indptr[t], self.indptr[t + 1]
        out = np.zeros(len(chunks))
        if hi > lo and len(chunks):
            post = self.docs[lo:hi]
            if hi - lo <= len(chunks):  # walk the postings into the chunks, or the chunks into the postings
                at = np.searchsorted(chunks, post)
                found = at < len(chunks)
                found[found] = chunks[at[found]] == post[found]
                out[at[found]] = self.weights[lo:hi][found]
            else:
                at = np.minimum(np.searchsorted(post, chunks), hi - lo - 1)
                found = post[at] == chunks
                out[found] = self.weights[lo:hi][at[found]]
        return out

    def _exact(self, ordered: list[int], chunks: np.ndarray) -> np.ndarray:
        """Scores of ``chunks``, bit-equal to ``_accumulate``'s (same order; x + 0.0 == x for an absent term)."""
        scores = np.zeros(len(chunks))
        for t in ordered:
            scores += self.lookup(t, chunks)
        return scores

    def _postings(self, t: int) -> np.ndarray:
        slot = self.dense_slot[t]
        if slot >= 0:
            return np.flatnonzero(self.dense[slot] != 0).astype(np.int32)
        return self.docs[self.indptr[t]:self.indptr[t + 1]]

    def _df(self, t: int) -> int:
        return self.n if self.dense_slot[t] >= 0 else int(self.indptr[t + 1] - self.indptr[t])

    def top(self, query: np.ndarray, k: int, id_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The k best chunks (positions in this index) and their scores, in the tie rule's order; ``id_rank`` is
        each chunk's rank in chunk-id order (any increasing function of the id: shards pass the global ranks)."""
        k = min(k, self.n)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        constant = self.constant(query)
        terms = self._summation_order(query.tolist())
        kernel = _kernel() if self.nonnegative and self.n >= JIT_MIN_CHUNKS else None
        if kernel is not None:
            if self.dense_q is None:
                self.dense_q, self.dense_scale = kernel.quantise(self.dense)
            chunks, scores, positive = kernel.top_k(
                np.asarray(terms, dtype=np.int64), k, constant, id_rank, self.n, self.indptr, self.docs,
                self.weights, self.dense_slot, self.dense, self.dense_q, self.dense_scale, self.bound, self.seed_ptr,
                self.seed_docs)
            if positive:  # else chunks holding no query term may be in the top k: the NumPy path handles them
                return chunks, scores
        if not self.nonnegative:
            scores = self.get_scores(query)
            idx = top_k(scores, k, id_rank)
            return idx, scores[idx]
        floor, candidates = self._prune(terms, k, constant)
        if candidates is None:
            # Too many chunks to score one by one: accumulate every term over all chunks (adding only the essential
            # ones and scoring the survivors one by one measured slower: common terms rarely have small bounds).
            acc = self._accumulate(terms)
            # Deep lists: the seed's floor leaves most chunks above it, so cut all the scores from a sample of them.
            candidates = _above_kth(acc, k, floor) if not constant and k >= WIDE_K else None
            if candidates is not None:
                stored = acc[candidates]
            else:
                candidates = np.flatnonzero(acc >= floor)
                stored = acc[candidates]
                kept = _above_kth(stored, k) if not constant else None  # a tighter cut than the seed's floor
                if kept is not None:
                    candidates, stored = candidates[kept], stored[kept]
        else:
            stored = self._exact(terms, candidates)
            if len(candidates) < k or (len(stored) and np.partition(stored, len(stored) - k)[len(stored) - k] <= 0):
                # Chunks holding no query term score 0 (+ BM25Plus's constant) and may belong in the top k: the
                # first k of them in the tie rule's order (chunk id descending) are the only ones that can.
                candidates, stored = self._with_untouched(candidates, stored, k, id_rank)
        final = stored + constant if constant else stored
        pick = top_k(final, k, id_rank[candidates])
        return candidates[pick], final[pick]

    def _prune(self, terms: list[int], k: int, constant: float) -> tuple[float, np.ndarray | None]:
        """(floor, candidates) for MaxScore-style pruning: every chunk that can be in the top k scores at least
        ``floor`` and holds an essential term (the other terms' largest contributions sum to less than a score k
        chunks are known to reach). ``candidates``: the chunks holding an essential term, or None when there are
        too many to score one by one."""
        if not terms:
            return -np.inf, np.zeros(0, dtype=np.int64)
        bounds = self.bound[terms]
        # Seed: the chunks where the highest-bound terms weigh most, scored exactly; their k-th best score is a
        # lower bound of the true k-th best.
        seed_parts = []
        for t in dict.fromkeys(terms[j] for j in np.argsort(-bounds, kind="stable")[:SEED_TERMS].tolist()):
            lo, hi = self.seed_ptr[t], self.seed_ptr[t + 1]
            seed_parts.append(self.seed_docs[lo:hi] if hi > lo else self._postings(t))
        seed = _union(seed_parts)
        threshold = -np.inf
        if len(seed) >= k:
            seed_scores = self._exact(terms, seed)
            threshold = float(np.partition(seed_scores, len(seed) - k)[len(seed) - k])
        if not np.isfinite(threshold):
            essential, margin = list(terms), 0.0
        else:
            # Non-essential terms: the lowest bounds whose sum stays below the threshold. The margin covers rounding
            # in either sum and in adding BM25Plus's constant, so no pruned chunk comes level with the k-th.
            order = np.argsort(bounds, kind="stable")
            sums = np.cumsum(bounds[order])
            margin = MARGIN * (abs(threshold) + abs(constant) + float(sums[-1]))
            n_rest = int((sums + margin < threshold).sum())
            essential = [terms[j] for j in order[n_rest:].tolist()]
        # Scoring candidates one by one costs a binary search per term; accumulating costs a pass over all chunks.
        essential = list(set(essential))
        if self._exact_cost(terms, sum(self._df(t) for t in essential)) > SPARSE_PATH_SHARE * self._sum_cost(terms):
            return threshold - margin, None
        return threshold - margin, _union([self._postings(t) for t in essential])

    # Rough costs in nanoseconds (measured on 1M chunks), to choose between scoring chunks one by one and adding
    # whole terms into a vector over all chunks; either way the result is exact.
    def _exact_cost(self, terms: list[int], size: int) -> float:
        cost = 0.0
        for t in terms:
            df = self._df(t)
            cost += 4.0 * size if self.dense_slot[t] >= 0 else 4.0 * min(size * np.log2(df + 2), df * np.log2(size + 2))
        return cost

    def _sum_cost(self, terms: list[int]) -> float:
        sparse = sum(self._df(t) for t in terms if self.dense_slot[t] < 0)
        return 6.0 * sparse + self.n * (1.5 + sum(1.0 for t in terms if self.dense_slot[t] >= 0))

    def _with_untouched(self, candidates, stored, k, id_rank):
        touched = np.zeros(self.n, dtype=bool)
        touched[candidates] = True
        by_id_desc = np.argsort(-id_rank[: self.n], kind="stable")
        extra = by_id_desc[: k + len(candidates)]
        extra = extra[~touched[extra]][:k]
        return np.concatenate([candidates, extra]), np.concatenate([stored, np.zeros(len(extra))])


def _kernel():
    """The compiled scorer's module, or None (JIT off, or ``compiled`` found none)."""
    return compiled("bm25_kernel") if JIT else None


def compiled(module: str):
    """One of this package's numba modules (``bm25_kernel``, ``bm25_kernel_parts``), imported (compiled or read
    from numba's cache) when first needed; None when numba is not installed or has no folder to cache in."""
    import importlib

    try:
        return importlib.import_module(f"{__package__}.{module}")
    except (ImportError, RuntimeError):  # numba's "cannot cache function ...: no locator available"
        return None


def _union(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0].astype(np.int64)
    s = np.sort(np.concatenate(parts)).astype(np.int64)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def _above_kth(scores: np.ndarray, k: int, floor: float = -np.inf) -> np.ndarray | None:
    """Positions of the scores at or above a cut that at least k of them reach (so it is at most the k-th best, and
    ties with the k-th are in), with ~2k positions; None when no cut is cheaper than ``top_k``'s partition. The cut:
    the 64th best of every (k/32)-th score, which a full pass then checks (a partition of n/(k/32) values instead
    of n: at depth 1000 on 8.8M chunks, 275k). None too when the cut is not above ``floor``."""
    step = k // (SAMPLE_TOP // 2)
    if step < 2 or len(scores) < 8 * k:
        return None
    sample = scores[::step]
    cut = np.partition(sample, len(sample) - SAMPLE_TOP)[len(sample) - SAMPLE_TOP]
    if cut <= floor:
        return None
    above = scores >= cut
    return np.flatnonzero(above) if np.count_nonzero(above) >= k else None
