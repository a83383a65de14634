"""The fast BM25 index at scale: vectorised tokenisation equals the Analyzer, pruned top-k equals the dense
ranking (tie rule included), shards merged equal the unsharded ranking, and the retriever pickles to plain arrays."""

import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import harness.retrievers.bm25_index as bm25_index
from harness.core.errors import RetrieverError
from harness.core.types import Chunk, Query
from harness.retrievers import build_retriever
from harness.retrievers.bm25 import BM25Config, FastBM25, RankBM25
from harness.retrievers.bm25_index import BM25Index
from harness.retrievers.bm25_tokens import _table, tokenize_corpus
from harness.retrievers.ranking import merge_shard_lists, top_k
from harness.text.analysis import Analyzer

# ---- tokenisation -----------------------------------------------------------------------------------------------

ALPHABET = "abcXYZ019_ .,;-'\n\t\u00a0\u2003éÉßΣσςİı٣½ⅷ文字😀\u0301"
texts = st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=0, max_size=8)


@settings(max_examples=80, deadline=None)
@given(texts, st.sampled_from([r"\w+", r"\S+", r"[a-zé]+"]), st.booleans(), st.sampled_from(["none", "english"]),
       st.sampled_from(["none", "english"]), st.integers(1, 3))
def test_corpus_tokens_equal_the_analyzer(docs, pattern, lowercase, stopwords, stemmer, batch):
    analyzer = Analyzer(lowercase, pattern, stopwords, stemmer)
    got = tokenize_corpus(docs, analyzer, batch=batch)
    bounds = np.concatenate([[0], np.cumsum(got.lengths)])
    mine = [[got.terms[i] for i in got.ids[a:b]] for a, b in zip(bounds, bounds[1:])]
    assert mine == [analyzer(t) for t in docs]
    assert len(set(got.terms)) == len(got.terms)


def test_code_point_tables_match_python_re_on_every_code_point():
    for pattern, one in ((r"\w+", re.compile(r"\w")), (r"\S+", re.compile(r"\S"))):
        table = _table(pattern, True)
        expected = np.fromiter((one.match(chr(c)) is not None for c in range(0x110000)), dtype=bool, count=0x110000)
        assert np.array_equal(table, expected), pattern
        assert np.array_equal(_table(pattern, False), expected[:128])


# ---- pruned top-k == dense ranking ------------------------------------------------------------------------------

def zipf_corpus(rng, n_docs, vocab, max_len=12):
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    docs = [[f"w{w}" for w in rng.choice(vocab, size=int(rng.integers(0, max_len)), p=p)] for _ in range(n_docs)]
    queries = [[f"w{w}" for w in rng.choice(vocab, size=int(rng.integers(1, 6)), p=p)] for _ in range(25)]
    return docs, queries + [["unseen"], ["w0", "w0", "unseen"]]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("variant", ["okapi", "l", "plus"])
def test_pruned_top_k_equals_dense_ranking(seed, variant, monkeypatch):
    rng = np.random.default_rng(seed)
    docs, queries = zipf_corpus(rng, int(rng.integers(30, 400)), int(rng.integers(5, 60)))
    docs += [list(d) for d in docs[:10]]  # duplicates: exact score ties, ordered by id
    cfg = BM25Config(variant=variant, k1=float(rng.choice([0.0, 0.9, 1.5])), b=float(rng.choice([0.0, 0.75, 1.0])))
    # Small seeds and both scoring paths (one by one, or a dense accumulator), dense columns or none.
    monkeypatch.setattr(bm25_index, "SEED_SIZE", int(rng.choice([4, 64, 4096])))
    monkeypatch.setattr(bm25_index, "SPARSE_PATH_SHARE", float(rng.choice([0.05, 10.0])))
    fast = FastBM25(docs, cfg)
    fast.index = BM25Index.build(*_ids(fast, docs), len(fast.vocab), cfg, dense_share=float(rng.choice([0.2, 2.0])))
    ref = RankBM25(docs, cfg)
    id_rank = rng.permutation(len(docs))  # chunk-id order differs from position order
    for q in queries:
        dense = fast.get_scores(q)
        assert np.allclose(dense, ref.get_scores(q), rtol=0, atol=1e-9)
        for k in (1, 3, 10, len(docs) + 5):
            want = top_k(dense, k, id_rank)
            idx, scores = fast.index.top(fast.term_ids(q), k, id_rank)
            assert idx.tolist() == want.tolist(), (q, k)
            assert scores.tolist() == dense[want].tolist()  # the same floats, not merely close


def _ids(fast, docs):
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    ids = np.array([fast.vocab[t] for d in docs for t in d], dtype=np.int32)
    return ids, lengths


def test_negative_okapi_idf_ranks_chunks_lacking_the_term_first():
    # Most chunks hold "common": its idf is negative and the floor (epsilon x mean idf) is negative too, so a chunk
    # without it scores higher: pruning, which assumes contributions >= 0, must not be used.
    docs = [["common", "mid"]] * 4 + [["common"], ["other"]]
    fast = FastBM25(docs, BM25Config(epsilon=1.0))
    dense = fast.get_scores(["common"])
    assert dense.max() == 0 and dense.min() < 0
    idx, _ = fast.index.top(fast.term_ids(["common"]), 2, np.arange(6))
    assert idx.tolist() == top_k(dense, 2, np.arange(6)).tolist() == [5, 3]


# ---- the retriever: shards and pickling -------------------------------------------------------------------------

def make_chunks(rng, n, vocab=30):
    docs, _ = zipf_corpus(rng, n, vocab)
    ids = rng.permutation(n)
    chunks = []
    for i, words in enumerate(docs):
        text = " ".join(words if i % 7 else docs[0])  # every 7th repeats chunk 0's text: ties
        chunks.append(Chunk(f"c{ids[i]:05d}", f"d{i // 3}", 0, len(text), text, text))
    return chunks


@pytest.mark.parametrize("seed", range(4))
def test_merged_shards_equal_the_unsharded_ranking(seed):
    rng = np.random.default_rng(seed)
    chunks = make_chunks(rng, int(rng.integers(50, 300)))
    variant = ["okapi", "l", "plus"][seed % 3]
    r = build_retriever({"kind": "bm25", "backend": "fast", "variant": variant,
                         "tokenizer": {"stemmer": "english", "stopwords": "english"}})
    r.index(chunks)
    queries = [Query(f"q{i}", " ".join(f"w{w}" for w in rng.integers(0, 12, int(rng.integers(1, 5)))))
               for i in range(20)] + [Query("none", "zzz"), Query("empty", "")]
    for depth in (1, 5, 40, 1000):
        whole = r.retrieve(queries, depth)
        for n in (1, 2, 3, 7):
            shards = [pickle.loads(pickle.dumps(s)) for s in r.shards(n)]  # as a worker gets them
            merged = merge_shard_lists([s.retrieve(queries, depth) for s in shards], depth)
            assert merged == whole, (depth, n)


def test_shards_cover_contiguous_slices_and_keep_corpus_statistics():
    chunks = make_chunks(np.random.default_rng(9), 40)
    r = build_retriever({"kind": "bm25", "backend": "fast"})
    r.index(chunks)
    shards = r.shards(3)
    assert [len(s._table) for s in shards] == [13, 14, 13]
    full = r.scores("w1 w2")
    assert np.array_equal(np.concatenate([s.scores("w1 w2") for s in shards]), full)


def test_retriever_pickles_to_arrays_without_chunks_or_stemmer_methods():
    chunks = make_chunks(np.random.default_rng(3), 60)
    r = build_retriever({"kind": "bm25", "backend": "fast", "tokenizer": {"stemmer": "english"}})
    r.index(chunks)
    before = r.retrieve([Query("q", "w1 w3 w3")], 10)
    blob = pickle.dumps(r)
    assert b"harness.core.types" not in blob and b"Stemmer" not in blob
    clone = pickle.loads(blob)
    assert clone.retrieve([Query("q", "w1 w3 w3")], 10) == before
    assert clone.term_contributions("w1 w3", 0) == r.term_contributions("w1 w3", 0)


def test_rank_bm25_backend_cannot_be_sharded():
    r = build_retriever({"kind": "bm25"})
    r.index(make_chunks(np.random.default_rng(1), 10))
    with pytest.raises(RetrieverError, match="backend: fast"):
        r.shards(2)


def test_merge_shard_lists_refuses_misaligned_shards():
    from harness.core.types import Hit, RankedList

    a = [RankedList("q1", (Hit("c1", "d", 1.0, 1),)), RankedList("q2", ())]
    with pytest.raises(ValueError, match="one per query"):
        merge_shard_lists([a, a[:1]], 5)
    with pytest.raises(ValueError, match="same position"):
        merge_shard_lists([a, a[::-1]], 5)
    assert merge_shard_lists([a, [RankedList("q1", (Hit("c2", "d", 1.0, 1),)), RankedList("q2", ())]], 5)[0].hits \
        == (Hit("c2", "d", 1.0, 1), Hit("c1", "d", 1.0, 2))
