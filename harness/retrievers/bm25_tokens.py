"""Tokenising a whole corpus for BM25 into term ids, with exactly ``Analyzer``'s tokens but without a Python object
per token: for the token patterns ``\\w+`` (the default) and ``\\S+`` the token boundaries come from a per-code-point
table over each batch of texts (an ASCII batch is cut in one compiled pass when numba is installed), and the token
strings are hashed by Arrow's dictionary encoding. Other patterns use the regex per text. Stopwords and stemming are
functions of the token, so they are applied once per distinct token (the vocabulary), not once per occurrence.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..text.analysis import SPACE_CODE_POINTS, Analyzer

BATCH_CHUNKS = 20_000  # texts per batch: bounds the memory of the per-code-point arrays
VECTOR_PATTERNS = (r"\w+", r"\S+")


@lru_cache(maxsize=2)
def _table(pattern: str, unicode: bool) -> np.ndarray:
    """Which code points a token of ``pattern`` is made of. Python's ``\\w`` is ``str.isalnum()`` or '_' (sre's
    SRE_UNI_IS_WORD); ``\\S`` is not ``str.isspace()``; a test checks both against ``re`` on every code point."""
    size = 0x110000 if unicode else 128
    if pattern == r"\S+":
        table = np.ones(size, dtype=bool)
        table[[c for c in SPACE_CODE_POINTS if c < size]] = False
    else:
        table = np.fromiter((chr(c).isalnum() or c == 0x5F for c in range(size)), dtype=bool, count=size)
    table.setflags(write=False)  # cached: one array for the whole process, so no caller may write into it
    return table


class CorpusTokens:
    """Term ids of every token (``ids``, chunk after chunk), tokens per chunk (``lengths``) and the terms."""

    def __init__(self, terms: list[str], ids: np.ndarray, lengths: np.ndarray):
        self.terms, self.ids, self.lengths = terms, ids, lengths


def tokenize_corpus(texts: Iterable[str], analyzer: Analyzer, batch: int = BATCH_CHUNKS) -> CorpusTokens:
    batches = TokenBatches(analyzer)
    ids, lengths = [], []
    for got in batches.of(texts, batch):
        ids.append(got[0])
        lengths.append(got[1])
    all_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32)
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    return CorpusTokens(batches.terms, all_ids, all_lengths)


class _Vocab(dict):
    """Term -> id, numbering new terms in order of first appearance and keeping them in a list."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def __missing__(self, term: str) -> int:
        self[term] = i = len(self.order)
        self.order.append(term)
        return i


class TokenBatches:
    """A corpus's term ids batch by batch (``of``), so a caller never holds every token at once; ``terms`` (after
    the last batch): the vocabulary, by id. Stopwords and stems are decided once per new distinct token."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer
        self._raw = _Vocab()  # the tokens as the pattern cut them
        self._plain = not analyzer.stop and analyzer.stemmer == "none"
        self._final = _Vocab()  # after stopwords and stemming
        self._mapping = np.zeros(0, dtype=np.int32)  # raw id -> final id, -1 for a stopword

    @property
    def terms(self) -> list[str]:
        return self._raw.order if self._plain else self._final.order

    def of(self, texts: Iterable[str], batch: int = BATCH_CHUNKS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(term ids chunk after chunk, int32; tokens per chunk, int64) per batch of ``batch`` texts."""
        analyzer, it = self.analyzer, iter(texts)
        while True:
            texts_batch = list(itertools.islice(it, batch))
            if not texts_batch:
                return
            if analyzer.lowercase:
                texts_batch = [t.lower() for t in texts_batch]
            got = _vector_batch(texts_batch, analyzer.pattern, self._raw) \
                if analyzer.pattern in VECTOR_PATTERNS else None
            if got is None:
                got = _regex_batch(texts_batch, analyzer, self._raw)
            yield got if self._plain else self._normalise(*got)

    def _normalise(self, ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Drop stopwords and stem: the tokens first seen in this batch get their final ids (in order of first
        appearance, so the numbering is the one a single pass over the whole corpus gives)."""
        analyzer, new = self.analyzer, self._raw.order[len(self._mapping):]
        if new:
            stop = analyzer.stop
            kept = [t for t in new if t not in stop]
            final = iter(map(self._final.__getitem__, analyzer._stem(kept) if analyzer._stem is not None else kept))
            added = np.array([-1 if t in stop else next(final) for t in new], dtype=np.int32)
            self._mapping = np.concatenate([self._mapping, added])
        if not len(ids):
            return ids, lengths
        mapped = self._mapping[ids]
        keep = mapped >= 0
        chunk_of = np.repeat(np.arange(len(lengths)), lengths)
        return mapped[keep], np.bincount(chunk_of[keep], minlength=len(lengths)).astype(np.int64)


def _regex_batch(texts: Sequence[str], analyzer: Analyzer, vocab) -> tuple[np.ndarray, np.ndarray]:
    tokens = list(map(analyzer._regex.findall, texts))
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    ids = np.fromiter(map(vocab.__getitem__, itertools.chain.from_iterable(tokens)), dtype=np.int32,
                      count=int(lengths.sum()))
    return ids, lengths


def _vector_batch(texts: Sequence[str], pattern: str, vocab) -> tuple[np.ndarray, np.ndarray] | None:
    # "\n" is neither \w nor \S, so no token spans two texts; lowercasing already happened text by text.
    joined = "\n".join(texts)
    ascii_text = joined.isascii()
    parts = _compiled() if ascii_text else None
    if parts is not None:
        token_bytes, offsets, lengths = parts.ascii_tokens(
            np.frombuffer(joined.encode("ascii"), dtype=np.uint8), _table(pattern, False),
            np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        return _encode(token_bytes, offsets, lengths, vocab)
    if ascii_text:
        data = joined.encode("ascii")
        codes = np.frombuffer(data, dtype=np.uint8)
        word = _table(pattern, False)[codes]
        byte_word, byte_at = word, None
    else:
        try:
            data = joined.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for Arrow; the regex path handles it
            return None
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        word = _table(pattern, True)[codes]
        width = 1 + (codes >= 0x80) + (codes >= 0x800) + (codes >= 0x10000)
        byte_word = np.repeat(word, width)
        byte_at = np.concatenate([[0], np.cumsum(width)])
    edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    text_starts = np.concatenate([[0], np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1)])
    which = np.searchsorted(text_starts, starts, side="right") - 1
    lengths = np.bincount(which, minlength=len(texts)).astype(np.int64)
    if byte_at is not None:
        starts, ends = byte_at[starts], byte_at[ends]
    token_bytes = np.frombuffer(data, dtype=np.uint8)[byte_word]
    offsets = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    return _encode(token_bytes, offsets, lengths, vocab)


def _compiled():
    """bm25_kernel_parts (numba) for the one-pass ASCII cut, or None without numba (or a folder to cache in)."""
    from .bm25_index import compiled

    return compiled("bm25_kernel_parts")


def _encode(token_bytes: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, vocab
            ) -> tuple[np.ndarray, np.ndarray]:
    """Term ids of the tokens (``token_bytes`` cut at ``offsets``), hashed by Arrow's dictionary encoding."""
    import pyarrow as pa

    tokens = pa.Array.from_buffers(pa.large_string(), len(offsets) - 1, [None, pa.py_buffer(offsets),
                                                                         pa.py_buffer(token_bytes)])
    encoded = tokens.dictionary_encode()
    local = encoded.indices.to_numpy(zero_copy_only=False)
    to_global = np.fromiter(map(vocab.__getitem__, encoded.dictionary.to_pylist()), dtype=np.int32,
                            count=len(encoded.dictionary))
    return to_global[local] if len(local) else np.zeros(0, dtype=np.int32), lengths
