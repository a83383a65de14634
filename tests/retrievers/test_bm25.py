import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.retrievers import build_retriever
from harness.retrievers.bm25 import BM25Config, FastBM25, RankBM25
from harness.core.types import Chunk, Query

words = st.sampled_from([f"w{i}" for i in range(25)])
corpora = st.lists(st.lists(words, min_size=0, max_size=12), min_size=1, max_size=25).filter(any)


@settings(max_examples=60, deadline=None)
@given(corpora, st.lists(st.lists(words | st.just("unseen"), min_size=1, max_size=6), min_size=1, max_size=4),
       st.sampled_from(["okapi", "l", "plus"]), st.floats(0.5, 2.0) | st.just(0.0), st.floats(0.0, 1.0) | st.just(1.0))
def test_fast_backend_scores_equal_rank_bm25(docs, queries, variant, k1, b):
    cfg = BM25Config(variant=variant, k1=k1, b=b)
    fast, ref = FastBM25(docs, cfg), RankBM25(docs, cfg)
    for q in queries:
        mine, theirs = fast.get_scores(q), ref.get_scores(q)
        # rank-bm25 divides 0/0 for a term a chunk lacks when k1 = 0, and for an empty chunk when b = 1 (NaN, which
        # no ranking can order). Both backends score such a term as for any chunk lacking it: 0 for okapi and l,
        # BM25Plus's delta x idf constant for plus.
        assert np.isfinite(mine).all() and np.isfinite(theirs).all()
        assert np.allclose(mine, theirs, rtol=0, atol=1e-9)


def test_rank_bm25_nan_terms_score_as_absent_and_other_chunks_stay_bit_equal():
    import rank_bm25

    docs = [["a", "b"], ["b"], [], ["c", "a", "a"]]
    cfg = BM25Config(variant="plus", k1=1.2, b=1.0)
    ref = RankBM25(docs, cfg)
    with np.errstate(invalid="ignore"):
        raw = rank_bm25.BM25Plus(docs, k1=1.2, b=1.0, delta=1.0).get_scores(["a", "c", "zz"])
    scores = ref.get_scores(["a", "c", "zz"])
    assert np.isnan(raw[2]) and not np.isnan(raw[[0, 1, 3]]).any()
    assert scores[[0, 1, 3]].tolist() == raw[[0, 1, 3]].tolist()  # bit for bit
    idf = ref.model.idf
    assert scores[2] == pytest.approx((idf["a"] + idf["c"]) * 1.0)  # delta x idf of each term the chunk lacks


def test_okapi_epsilon_floor_for_negative_idf():
    # "common" is in 3 of 4 docs: idf = log(1.5/3.5) < 0, floored at epsilon x mean idf, as rank-bm25 does.
    docs = [["common", "a"], ["common", "b"], ["common", "c"], ["d"]]
    cfg = BM25Config(epsilon=0.25)
    assert np.allclose(FastBM25(docs, cfg).get_scores(["common"]), RankBM25(docs, cfg).get_scores(["common"]),
                       atol=1e-12)


def chunk(i, text):
    return Chunk(f"d{i}#0-{len(text)}", f"d{i}", 0, len(text), text, text)


def test_retriever_ranks_by_score_with_stemming_and_stopwords():
    chunks = [chunk(0, "Rotating the API keys"), chunk(1, "Billing and invoices"), chunk(2, "The key rotation")]
    r = build_retriever({"kind": "bm25", "tokenizer": {"stopwords": "english", "stemmer": "english"}})
    r.index(chunks)
    (ranked,) = r.retrieve([Query("q", "rotate keys")], k=3)
    assert [h.rank for h in ranked.hits] == [1, 2, 3]
    assert ranked.hits[0].doc_id in ("d0", "d2") and ranked.hits[-1].doc_id == "d1"
    scores = [h.score for h in ranked.hits]
    assert scores == sorted(scores, reverse=True)


def test_both_backends_give_identical_rankings():
    texts = ["alpha beta", "beta gamma gamma", "delta", "alpha alpha beta gamma"]
    chunks = [chunk(i, t) for i, t in enumerate(texts)]
    out = {}
    for backend in ("rank_bm25", "fast"):
        r = build_retriever({"kind": "bm25", "backend": backend})
        r.index(chunks)
        out[backend] = [(h.chunk_id, round(h.score, 12)) for h in r.retrieve([Query("q", "alpha gamma")], 4)[0].hits]
    assert out["rank_bm25"] == out["fast"]
