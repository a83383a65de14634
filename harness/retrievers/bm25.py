"""BM25 with rank-bm25's semantics: ``backend: rank_bm25`` calls the library, ``backend: fast`` computes the same
scores from a precomputed sparse term x chunk weight matrix (rank-bm25's idf rules, epsilon floor included)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Iterable, Iterator, Literal, Sequence

import numpy as np
from pydantic import Field, PrivateAttr, field_validator, model_validator

from ..core.errors import RetrieverError
from ..core.schema import Strict
from ..text.analysis import Analyzer, token_pattern_problem
from ..text.stopwords import BUILTIN as STOPWORD_LISTS, describe as describe_stopwords, read_stopword_file
from ..core.types import Chunk, Query, RankedList
from .base import BuildContext, RetrieverKind, register
from .bm25_index import DENSE_SHARE, BM25Index, bm25_delta
from .bm25_postings import PostingsBuilder
from .bm25_tokens import TokenBatches
from .chunktable import ChunkTable
from .contract import IndexedLists
from .ranking import top_k


class AnalyzerConfig(Strict):
    lowercase: bool = True
    """lower-case texts before tokenising"""
    pattern: str = r"\w+"
    """the token regex (\\w+ and \\S+ are vectorised; another pattern runs per chunk)"""
    stopwords: str | list[str] = "none"
    """a built-in list (none; english = lucene, 33 words; nltk, 179; sklearn, 318: harness/text/stopwords.py), the
    words themselves, or a file of words, one a line (any other text: a path from the config's folder)"""
    stemmer: Literal["none", "english", "porter"] = "none"
    """none, english (Snowball) or porter"""
    _words: tuple[str, ...] | None = PrivateAttr(None)  # a file's words, read once when the config is read

    @field_validator("stopwords")
    @classmethod
    def _stopwords(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and any(not w or any(c.isspace() for c in w) for w in value):
            raise ValueError("each stopword must be one word, without spaces (tokens never hold one)")
        return value

    @model_validator(mode="after")
    def _read_file(self) -> "AnalyzerConfig":
        if isinstance(self.stopwords, str) and self.stopwords not in STOPWORD_LISTS:
            try:
                self._words = read_stopword_file(self.stopwords)
            except ValueError as exc:
                raise ValueError(f"stopwords: {exc}; a built-in list is one of {describe_stopwords()}") from None
        return self

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        why = token_pattern_problem(pattern)
        if why:
            raise ValueError(why)
        return pattern

    def build(self) -> Analyzer:
        words = self._words if self._words is not None else self.stopwords
        return Analyzer(self.lowercase, self.pattern, words if isinstance(words, str) else tuple(words), self.stemmer)


class BM25Config(Strict):
    kind: Literal["bm25"] = "bm25"
    variant: Literal["okapi", "l", "plus"] = "okapi"
    """rank-bm25's BM25Okapi, BM25L or BM25Plus"""
    k1: float = Field(1.5, ge=0)
    """term-frequency saturation"""
    b: float = Field(0.75, ge=0, le=1)
    """length normalisation: 0 none, 1 full"""
    epsilon: float = Field(0.25, ge=0, description="okapi: floor for negative idf, as a share of the mean idf")
    delta: float | None = Field(None, ge=0, description="l: default 0.5; plus: default 1.0")
    tokenizer: AnalyzerConfig = AnalyzerConfig()
    """how chunk and query texts are tokenised"""
    backend: Literal["rank_bm25", "fast"] = "rank_bm25"
    """rank_bm25: the reference library; fast: the same scores to 1e-9 from precomputed contributions, exact top k by
    pruning, for large corpora and shards"""


class BM25Retriever:
    """After ``index()`` it holds plain arrays (the chunk table, the fast backend's index, its vocabulary) and its
    config: it pickles for worker processes, the analyzer (whose stemmer is a C method) being rebuilt on use."""

    def __init__(self, config: BM25Config):
        self.config = config
        self._analyzer: Analyzer | None = None
        self._table: ChunkTable | None = None
        self._index: BM25Index | None = None  # backend fast
        self._terms: list[str] = []
        self._vocab: dict[str, int] | None = None
        self._engine: RankBM25 | None = None  # backend rank_bm25

    @property
    def analyze(self) -> Analyzer:
        if self._analyzer is None:
            self._analyzer = self.config.tokenizer.build()
        return self._analyzer

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_analyzer": None, "_vocab": None}

    def index(self, chunks: Sequence[Chunk]) -> None:
        if self.config.backend == "fast":
            # One pass over the chunks (an iterable streaming them from disk will do), batch by batch: a batch's
            # tokens become postings at once, so neither all the texts nor all the tokens need be held.
            columns: tuple[list, list, list, list] = ([], [], [], [])
            batches, builder = TokenBatches(self.analyze), PostingsBuilder()
            for ids, lengths in batches.of(_texts(chunks, columns)):
                builder.add(ids, lengths)
            self._table = ChunkTable.from_columns(*columns)
            del columns
            self._terms, self._vocab = batches.terms, None
            self._index = BM25Index.from_postings(builder.finish(len(self._terms), DENSE_SHARE), self.config)
        else:
            self._table = ChunkTable.from_chunks(chunks)
            self._engine = RankBM25([self.analyze(c.index_text) for c in chunks], self.config)

    def _term_ids(self, text: str) -> np.ndarray:
        if self._vocab is None:
            self._vocab = dict(zip(self._terms, range(len(self._terms))))
        vocab = self._vocab
        return np.array([vocab[t] for t in self.analyze(text) if t in vocab], dtype=np.int64)

    def scores(self, query_text: str) -> np.ndarray:
        if self._index is not None:
            return self._index.get_scores(self._term_ids(query_text))
        return self._engine.get_scores(self.analyze(query_text))

    def _top(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions of the top ``k`` chunks in rank order, their scores) for one query."""
        if self._index is not None:
            return self._index.top(self._term_ids(text), k, self._table.id_rank)
        all_scores = self.scores(text)
        idx = top_k(all_scores, k, self._table.id_rank)
        return idx, all_scores[idx]

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        return [self._table.ranked_list(q.query_id, *self._top(q.text, k)) for q in queries]

    def retrieve_indexed(self, queries: Sequence[Query], k: int) -> IndexedLists:
        """``retrieve`` as positions in the indexed chunks (``contract.IndexedLists``): no Hit made."""
        parts, scored = [], []
        for q in queries:
            idx, scores = self._top(q.text, k)
            parts.append(np.asarray(idx, dtype=np.int64))
            scored.append(np.asarray(scores, dtype=np.float64))
        lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        return IndexedLists(lengths, np.concatenate(parts) if parts else np.zeros(0, np.int64),
                            np.concatenate(scored) if scored else np.zeros(0, np.float64))

    def shards(self, n: int) -> list["BM25Retriever"]:
        """``n`` picklable retrievers over contiguous slices of the indexed chunks, scoring with the whole corpus's
        idf and average length: merging their lists (``ranking.merge_shard_lists``) gives this retriever's."""
        if self._index is None:
            raise RetrieverError("executor.shards: only bm25 with backend: fast can be sharded (set "
                                 "retriever.backend: fast, or shards: 1)"
                                 if self._engine is not None else "bm25: index() the chunks before sharding")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"shards: n must be a positive integer, got {n!r}")
        bounds = np.linspace(0, len(self._table), n + 1).round().astype(int).tolist()
        out = []
        for lo, hi in zip(bounds, bounds[1:]):
            shard = BM25Retriever(self.config)
            shard._table = self._table.slice(lo, hi)
            shard._index = self._index.slice(lo, hi)
            shard._terms = self._terms
            out.append(shard)
        return out

    def term_contributions(self, query_text: str, chunk_index: int) -> dict[str, float]:
        """Per query term, its share of the chunk's score (for explaining a hit)."""
        out: dict[str, float] = {}
        if self._index is not None:
            self._term_ids("")  # builds the vocabulary if needed
        for term in self.analyze(query_text):
            if self._index is not None:
                t = self._vocab.get(term)
                value = 0.0 if t is None else float(self._index.lookup(t, np.array([chunk_index]))[0]
                                                     + self._index.absent[t])
            else:
                value = float(self._engine.get_scores([term])[chunk_index])
            out[term] = out.get(term, 0.0) + value
        return out


def _texts(chunks: Iterable[Chunk], columns: tuple[list, list, list, list]) -> Iterator[str]:
    """Each chunk's index text, noting its id, document, start and end in ``columns`` on the way."""
    ids, docs, starts, ends = columns
    for c in chunks:
        ids.append(c.chunk_id)
        docs.append(c.doc_id)
        starts.append(c.start)
        ends.append(c.end)
        yield c.index_text


def _delta(config: BM25Config) -> float:
    return bm25_delta(config)


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
    """``backend: fast`` over token lists (tests and benchmarks): the same index the retriever builds from text."""

    def __init__(self, tokenized: list[list[str]], config: BM25Config):
        vocab: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        lengths = np.fromiter(map(len, tokenized), dtype=np.int64, count=len(tokenized))
        ids = np.fromiter(map(vocab.__getitem__, itertools.chain.from_iterable(tokenized)), dtype=np.int32,
                          count=int(lengths.sum()))
        self.vocab = dict(vocab)
        self.n = len(tokenized)
        self.index = BM25Index.build(ids, lengths, len(vocab), config)

    def term_ids(self, query: list[str]) -> np.ndarray:
        return np.array([self.vocab[t] for t in query if t in self.vocab], dtype=np.int64)

    def get_scores(self, query: list[str]) -> np.ndarray:
        return self.index.get_scores(self.term_ids(query))


def _factory(config: BM25Config, context: BuildContext) -> BM25Retriever:
    return BM25Retriever(config)


register(RetrieverKind("bm25", BM25Config, _factory, "lexical BM25 (rank-bm25 semantics; backend fast for scale)"))
