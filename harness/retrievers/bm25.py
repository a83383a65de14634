"""BM25 with rank-bm25's semantics: ``backend: rank_bm25`` calls the library, ``backend: fast`` computes the same
scores from a precomputed sparse term x chunk weight matrix (rank-bm25's idf rules, epsilon floor included)."""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np
from pydantic import Field, field_validator

from ..core.schema import Strict
from ..text import Analyzer, token_pattern_problem
from ..core.types import Chunk, Query, RankedList
from .base import BuildContext, RetrieverKind, register
from .ranking import id_order, ranked_list, top_k


class AnalyzerConfig(Strict):
    lowercase: bool = True
    pattern: str = r"\w+"
    stopwords: Literal["none", "english"] = "none"
    stemmer: Literal["none", "english", "porter"] = "none"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        why = token_pattern_problem(pattern)
        if why:
            raise ValueError(why)
        return pattern

    def build(self) -> Analyzer:
        return Analyzer(self.lowercase, self.pattern, self.stopwords, self.stemmer)


class BM25Config(Strict):
    kind: Literal["bm25"] = "bm25"
    variant: Literal["okapi", "l", "plus"] = "okapi"
    k1: float = Field(1.5, ge=0)
    b: float = Field(0.75, ge=0, le=1)
    epsilon: float = Field(0.25, ge=0, description="okapi: floor for negative idf, as a share of the mean idf")
    delta: float | None = Field(None, ge=0, description="l: default 0.5; plus: default 1.0")
    tokenizer: AnalyzerConfig = AnalyzerConfig()
    backend: Literal["rank_bm25", "fast"] = "rank_bm25"


class BM25Retriever:
    def __init__(self, config: BM25Config):
        self.config = config
        self.analyze = config.tokenizer.build()
        self._chunks: Sequence[Chunk] = ()
        self._ids = np.zeros(0, dtype=np.int64)
        self._engine = None

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = chunks
        self._ids = id_order(chunks)
        tokenized = [self.analyze(c.index_text) for c in chunks]
        cls = FastBM25 if self.config.backend == "fast" else RankBM25
        self._engine = cls(tokenized, self.config)

    def scores(self, query_text: str) -> np.ndarray:
        return self._engine.get_scores(self.analyze(query_text))

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        out = []
        for q in queries:
            scores = self.scores(q.text)
            idx = top_k(scores, k, self._ids)
            out.append(ranked_list(q.query_id, self._chunks, idx, scores[idx]))
        return out

    def term_contributions(self, query_text: str, chunk_index: int) -> dict[str, float]:
        """Per query term, its share of the chunk's score (for explaining a hit)."""
        out: dict[str, float] = {}
        for term in self.analyze(query_text):
            out[term] = out.get(term, 0.0) + float(self._engine.get_scores([term])[chunk_index])
        return out


def _delta(config: BM25Config) -> float:
    if config.delta is not None:
        return config.delta
    return 0.5 if config.variant == "l" else 1.0


class RankBM25:
    """The reference: rank-bm25's own classes."""

    def __init__(self, tokenized: list[list[str]], config: BM25Config):
        import rank_bm25

        # rank-bm25 divides by the corpus size and the mean length; guard the empty cases it does not.
        safe = tokenized if any(tokenized) else [["\0empty"]] * max(len(tokenized), 1)
        if config.variant == "okapi":
            self.model = rank_bm25.BM25Okapi(safe, k1=config.k1, b=config.b, epsilon=config.epsilon)
        elif config.variant == "l":
            self.model = rank_bm25.BM25L(safe, k1=config.k1, b=config.b, delta=_delta(config))
        else:
            self.model = rank_bm25.BM25Plus(safe, k1=config.k1, b=config.b, delta=_delta(config))
        self.n = len(tokenized)
        self.plus_delta = _delta(config) if config.variant == "plus" else 0.0

    def get_scores(self, query: list[str]) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):  # the 0/0 below is handled, not warned about
            scores = np.asarray(self.model.get_scores(query), dtype=np.float64)[: self.n]
        if np.isnan(scores).any():
            # rank-bm25 divides 0/0 for a term a chunk lacks when k1 = 0, or for an empty chunk when b = 1. A NaN
            # cannot be ranked, so such a term adds what it adds to any chunk lacking it (0; BM25Plus: delta x idf),
            # as the fast backend does; the terms are summed in rank-bm25's order, so other scores stay bit-equal.
            scores = np.zeros(self.n, dtype=np.float64)
            for term in query:
                absent = (self.model.idf.get(term) or 0) * self.plus_delta
                with np.errstate(invalid="ignore", divide="ignore"):
                    term_scores = np.asarray(self.model.get_scores([term]), dtype=np.float64)[: self.n]
                scores += np.nan_to_num(term_scores, nan=absent)
        return scores


class FastBM25:
    """Precomputed per-(term, chunk) weights; a query sums the postings of its terms (repeats count again,
    as in rank-bm25). BM25Plus gives every chunk a constant for a term it lacks: added as a scalar."""

    def __init__(self, tokenized: list[list[str]], config: BM25Config):
        self.n = n = len(tokenized)
        vocab: dict[str, int] = {}
        term_ids, doc_ids = [], []
        for d, tokens in enumerate(tokenized):
            for t in tokens:
                term_ids.append(vocab.setdefault(t, len(vocab)))
                doc_ids.append(d)
        self.vocab = vocab
        doc_len = np.array([len(t) for t in tokenized], dtype=np.float64)
        avgdl = doc_len.sum() / n if n and doc_len.sum() else 1.0
        keys = np.array(term_ids, dtype=np.int64) * max(n, 1) + np.array(doc_ids, dtype=np.int64)
        uniq, tf = np.unique(keys, return_counts=True)
        terms, docs = uniq // max(n, 1), uniq % max(n, 1)
        df = np.bincount(terms, minlength=len(vocab)).astype(np.float64)
        k1, b, delta = config.k1, config.b, _delta(config)
        norm = 1 - b + b * doc_len[docs] / avgdl
        tf = tf.astype(np.float64)
        if config.variant == "okapi":
            idf = np.log(n - df + 0.5) - np.log(df + 0.5)
            # rank-bm25 floors negative idf at epsilon x the mean idf over all terms (math.log, same values).
            average_idf = idf.sum() / len(idf) if len(idf) else 0.0
            idf = np.where(idf < 0, config.epsilon * average_idf, idf)
            weights = idf[terms] * (tf * (k1 + 1) / (tf + k1 * norm))
            self.absent = np.zeros(len(vocab))
        elif config.variant == "l":
            idf = np.log(n + 1) - np.log(df + 0.5)
            ctd = tf / norm
            # rank-bm25 0.2.2 multiplies BM25L's term score by tf, so a term a chunk lacks adds nothing.
            weights = idf[terms] * tf * (k1 + 1) * (ctd + delta) / (k1 + ctd + delta)
            self.absent = np.zeros(len(vocab))
        else:
            idf = np.log((n + 1) / df)
            weights = idf[terms] * (delta + (tf * (k1 + 1)) / (k1 * norm + tf))
            self.absent = idf * delta
            weights = weights - self.absent[terms]
        order = np.argsort(terms, kind="stable")
        self.post_docs = docs[order]
        self.post_weights = weights[order]
        self.post_start = np.searchsorted(terms[order], np.arange(len(vocab) + 1))

    def get_scores(self, query: list[str]) -> np.ndarray:
        scores = np.zeros(self.n, dtype=np.float64)
        constant = 0.0
        for term in query:
            t = self.vocab.get(term)
            if t is None:
                continue
            lo, hi = self.post_start[t], self.post_start[t + 1]
            # np.add.at is slow; postings of one term have unique docs, so fancy-index add is exact.
            scores[self.post_docs[lo:hi]] += self.post_weights[lo:hi]
            constant += self.absent[t]
        if constant:
            scores += constant
        return scores


def _factory(config: BM25Config, context: BuildContext) -> BM25Retriever:
    return BM25Retriever(config)


register(RetrieverKind("bm25", BM25Config, _factory, "lexical BM25 (rank-bm25 semantics; backend fast for scale)"))
