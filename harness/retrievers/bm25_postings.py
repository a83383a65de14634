"""The fast BM25 index's postings, built batch by batch so that memory follows the postings, not the tokens: each
batch of chunks becomes term-major (term, chunk, tf) runs at once (a sort of its int64 keys term x batch + chunk),
kept as 6 bytes a posting (chunk int32, tf uint16), and the batches are scattered into one term-major array at the
end. The terms in at least ``dense_share`` of the chunks go to their own arrays (they become dense columns).

The contributions are computed here too, block by block, with rank-bm25's formulas in one fixed order of
operations, so the same postings give the same floats whatever the block or batch sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

WEIGHT_BLOCK = 1 << 22  # postings per block when computing contributions: bounds the float64 temporaries


@dataclass
class Postings:
    """Term-major postings of the sparse terms (``indptr`` over all terms, empty for dense ones), the dense terms'
    postings apart (``dense_ptr`` over ``dense_terms``), tokens per chunk (``lengths``) and document frequencies."""

    n: int
    lengths: np.ndarray  # int64 per chunk
    df: np.ndarray  # int64 per term
    indptr: np.ndarray
    docs: np.ndarray  # int32
    tf: np.ndarray  # uint16 or uint32
    dense_terms: np.ndarray  # int64, ascending
    dense_ptr: np.ndarray
    dense_docs: np.ndarray
    dense_tf: np.ndarray


class PostingsBuilder:
    """``add`` each batch's term ids (chunk after chunk) and tokens per chunk, then ``finish``."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._lengths: list[np.ndarray] = []
        self._df = np.zeros(0, dtype=np.int64)
        self.n = 0

    def add(self, term_ids: np.ndarray, lengths: np.ndarray) -> None:
        lengths = np.asarray(lengths, dtype=np.int64)
        size = len(lengths)
        if size:
            local = np.repeat(np.arange(size, dtype=np.int64), lengths)
            keys = np.asarray(term_ids, dtype=np.int64) * size + local
            del local
            keys, tf = np.unique(keys, return_counts=True)
            terms, docs = np.divmod(keys, size)
            del keys
            first = np.flatnonzero(np.concatenate([[True], terms[1:] != terms[:-1]])) if len(terms) else terms
            run_terms = terms[first]
            run_len = np.diff(np.append(first, len(terms)))
            if len(run_terms) and run_terms[-1] >= len(self._df):
                self._df = np.concatenate([self._df, np.zeros(int(run_terms[-1]) + 1 - len(self._df), np.int64)])
            self._df[run_terms] += run_len
            tf = tf.astype(np.uint16 if not len(tf) or tf.max() <= np.iinfo(np.uint16).max else np.uint32)
            self._parts.append((run_terms.astype(np.int32), run_len.astype(np.int32),
                                (docs + self.n).astype(np.int32), tf))
        self._lengths.append(lengths)
        self.n += size

    def finish(self, n_terms: int, dense_share: float) -> Postings:
        n, df = self.n, np.zeros(n_terms, dtype=np.int64)
        df[:len(self._df)] = self._df
        dense = df >= max(dense_share * n, 1) if dense_share <= 1 else np.zeros(n_terms, dtype=bool)
        tf_type = np.uint32 if any(p[3].dtype == np.uint32 for p in self._parts) else np.uint16
        sparse_ptr = np.concatenate([[0], np.cumsum(np.where(dense, 0, df))]).astype(np.int64)
        dense_terms = np.flatnonzero(dense)
        dense_ptr = np.concatenate([[0], np.cumsum(df[dense_terms])]).astype(np.int64)
        # Where a term's next posting goes: its sparse slot, or (dense terms) its slot among the dense postings.
        fill = sparse_ptr[:-1].copy()
        fill[dense_terms] = dense_ptr[:-1]
        docs = np.empty(int(sparse_ptr[-1]), dtype=np.int32)
        tf = np.empty(len(docs), dtype=tf_type)
        dense_docs = np.empty(int(dense_ptr[-1]), dtype=np.int32)
        dense_tf = np.empty(len(dense_docs), dtype=tf_type)
        parts, self._parts = self._parts, []
        parts.reverse()
        while parts:  # batches in chunk order, so each term's chunks stay ascending; each freed once placed
            run_terms, run_len, part_docs, part_tf = parts.pop()
            starts = np.repeat(fill[run_terms] - np.concatenate([[0], np.cumsum(run_len[:-1], dtype=np.int64)]),
                               run_len)
            at = starts + np.arange(len(part_docs), dtype=np.int64)
            del starts
            in_dense = dense[np.repeat(run_terms, run_len)]
            if in_dense.any():
                docs[at[~in_dense]], tf[at[~in_dense]] = part_docs[~in_dense], part_tf[~in_dense]
                dense_docs[at[in_dense]], dense_tf[at[in_dense]] = part_docs[in_dense], part_tf[in_dense]
            else:
                docs[at], tf[at] = part_docs, part_tf
            fill[run_terms] += run_len
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        self._lengths = []
        return Postings(n, lengths, df, sparse_ptr, docs, tf, dense_terms, dense_ptr, dense_docs, dense_tf)


def idf_of(config: Any, n: int, df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(idf per term, BM25Plus's absent-term constant per term): rank-bm25's rules (okapi's epsilon floor)."""
    df = df.astype(np.float64)
    if config.variant == "okapi":
        idf = np.log(n - df + 0.5) - np.log(df + 0.5)
        # rank-bm25 floors negative idf at epsilon x the mean idf over all terms.
        average_idf = idf.sum() / len(idf) if len(idf) else 0.0
        return np.where(idf < 0, config.epsilon * average_idf, idf), np.zeros(len(df))
    if config.variant == "l":
        return np.log(n + 1) - np.log(df + 0.5), np.zeros(len(df))
    with np.errstate(divide="ignore"):
        idf = np.log((n + 1) / df)
    return idf, np.where(df > 0, idf * delta_of(config), 0.0)


def delta_of(config: Any) -> float:
    if config.delta is not None:
        return config.delta
    return 0.5 if config.variant == "l" else 1.0


def contributions(config: Any, lengths: np.ndarray, indptr: np.ndarray, terms: np.ndarray, docs: np.ndarray,
                  tf: np.ndarray, idf: np.ndarray, absent: np.ndarray) -> np.ndarray:
    """Each posting's contribution (float64); ``indptr`` over ``terms`` says whose postings ``docs``/``tf`` are."""
    n = len(lengths)
    doc_len = lengths.astype(np.float64)
    total = doc_len.sum()
    avgdl = total / n if n and total else 1.0
    k1, b, delta = config.k1, config.b, delta_of(config)
    norm_of_chunk = (1 - b) + b * doc_len / avgdl
    k1_norm = k1 * norm_of_chunk
    out = np.empty(len(docs), dtype=np.float64)
    for lo in range(0, len(docs), WEIGHT_BLOCK):
        hi = min(lo + WEIGHT_BLOCK, len(docs))
        # The terms whose postings meet [lo, hi), each with how many of them lie inside it.
        t0, t1 = np.searchsorted(indptr, [lo, hi - 1], side="right") - 1
        inside = np.diff(np.clip(indptr[t0:t1 + 2], lo, hi))
        rep = np.repeat(idf[terms[t0:t1 + 1]], inside)
        block_docs, block_tf = docs[lo:hi], tf[lo:hi].astype(np.float64)
        if config.variant == "okapi":
            # idf * (tf * (k1 + 1) / (tf + k1 * norm)), in place
            w = np.take(k1_norm, block_docs)
            w += block_tf
            np.multiply(block_tf, k1 + 1, out=block_tf)
            np.divide(block_tf, w, out=w)
            w *= rep
        elif config.variant == "l":
            ctd = block_tf / np.take(norm_of_chunk, block_docs)
            # rank-bm25 0.2.2 multiplies BM25L's term score by tf, so a term a chunk lacks adds nothing.
            w = rep * block_tf * (k1 + 1) * (ctd + delta) / (k1 + ctd + delta)
        else:
            norm = np.take(norm_of_chunk, block_docs)
            w = rep * (delta + (block_tf * (k1 + 1)) / (k1 * norm + block_tf))
            w -= np.repeat(absent[terms[t0:t1 + 1]], inside)
        out[lo:hi] = w
    return out
