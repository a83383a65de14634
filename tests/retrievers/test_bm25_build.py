"""The fast BM25 index built batch by batch (``bm25_postings``) is the same index whatever the batch sizes, and its
scores are rank-bm25's; the top k cut (``_above_kth``) keeps exactly ``top_k``'s ranking, ties included."""

from __future__ import annotations

import re

import numpy as np
import pytest

import harness.retrievers.bm25_postings as postings
from harness.core.types import Chunk, Query
from harness.retrievers.bm25 import BM25Config, BM25Retriever
from harness.retrievers.bm25_index import BM25Index, _above_kth
from harness.retrievers.bm25_postings import PostingsBuilder
from harness.retrievers.bm25_tokens import TokenBatches
from harness.retrievers.ranking import top_k

FIELDS = ("indptr", "docs", "weights", "dense_slot", "dense", "bound", "absent", "seed_ptr", "seed_docs")


def _texts(n: int = 700, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    words = ["The", "running", "runs", "a", "of", "épée", "naïve", "x1", "y_2"] + [f"w{i}" for i in range(120)]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    return [" ".join(rng.choice(words, rng.integers(0, 30), p=p)) for _ in range(n)]


def _index(texts: list[str], config: BM25Config, batch: int) -> tuple[BM25Index, list[str]]:
    batches, builder = TokenBatches(config.tokenizer.build()), PostingsBuilder()
    for ids, lengths in batches.of(texts, batch):
        builder.add(ids, lengths)
    return BM25Index.from_postings(builder.finish(len(batches.terms), 0.25), config), batches.terms


@pytest.mark.parametrize("section", [
    {}, {"variant": "l"}, {"variant": "plus"}, {"k1": 0.0, "b": 1.0},
    {"tokenizer": {"stemmer": "english", "stopwords": "english"}}, {"tokenizer": {"pattern": "[a-z]+"}}])
def test_batches_and_blocks_do_not_change_the_index(section, monkeypatch):
    texts, config = _texts(), BM25Config(backend="fast", **section)
    whole, terms = _index(texts, config, batch=len(texts))
    monkeypatch.setattr(postings, "WEIGHT_BLOCK", 97)  # contributions in blocks that split terms' postings
    cut, cut_terms = _index(texts, config, batch=13)
    assert cut_terms == terms
    for field in FIELDS:
        a, b = getattr(whole, field), getattr(cut, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field
    assert len(whole.dense) > 0 and len(whole.docs) > 0  # both kinds of terms were built


def test_scores_are_rank_bm25s():
    from rank_bm25 import BM25Okapi

    texts = _texts(400, seed=5)
    retriever = BM25Retriever(BM25Config(backend="fast"))
    retriever.index([Chunk(f"c{i}", f"c{i}", 0, len(t), t, t) for i, t in enumerate(texts)])
    reference = BM25Okapi([re.findall(r"\w+", t.lower()) for t in texts])
    for query in ("w3 w17 running", "the épée w100", "naïve"):
        expected = reference.get_scores(re.findall(r"\w+", query.lower()))
        np.testing.assert_allclose(retriever.scores(query), expected, rtol=0, atol=1e-9)


def test_above_kth_keeps_the_top_k_and_its_ties():
    rng = np.random.default_rng(0)
    for k in (64, 100, 1000):
        scores = np.round(rng.gamma(2.0, 3.0, 40_000), 1)  # rounded: many ties at the k-th score
        ids = rng.permutation(len(scores))
        kept = _above_kth(scores, k)
        assert kept is not None and k <= len(kept) < 40 * k
        kth = np.sort(scores)[::-1][k - 1]
        assert scores[kept].min() <= kth and np.isin(np.flatnonzero(scores >= kth), kept).all()
        np.testing.assert_array_equal(kept[top_k(scores[kept], k, ids[kept])], top_k(scores, k, ids))
    assert _above_kth(np.ones(100), 10) is None  # too small a sample to be worth it: top_k's partition


def test_one_pass_over_the_chunks_gives_the_chunk_table_of_the_list():
    from harness.retrievers.chunktable import ChunkTable

    texts = _texts(300, seed=7)
    chunks = [Chunk(f"c{(i * 37) % 300:03d}", f"d{i // 3}", 5, 5 + len(t), t, t) for i, t in enumerate(texts)]
    retriever = BM25Retriever(BM25Config(backend="fast"))
    retriever.index(c for c in chunks)  # a generator: read once
    expected = ChunkTable.from_chunks(chunks)
    for field in expected.__dataclass_fields__:
        a, b = getattr(expected, field), getattr(retriever._table, field)
        assert (a == b) if isinstance(a, bytes) else np.array_equal(a, b), field
    assert retriever.retrieve([Query("q", "w1 w2")], 3)[0].hits[0].chunk_id in {c.chunk_id for c in chunks}
