from hypothesis import given, strategies as st

from harness.text.chunking import chunk_documents
from harness.config.schema import ChunkingConfig
from harness.text.analysis import sentence_spans
from harness.core.types import Document

texts = st.lists(st.sampled_from(["Alpha beta.", "Gamma delta epsilon!", "Zeta?", "eta theta", "\n\n", " ", "iota."]),
                 min_size=1, max_size=30).map("".join).filter(lambda t: t.strip())
configs = st.one_of(
    st.just(ChunkingConfig(strategy="none")),
    st.builds(lambda s, o: ChunkingConfig(strategy="tokens", size=s, overlap=min(o, s - 1)), st.integers(1, 8), st.integers(0, 4)),
    st.builds(lambda s, o: ChunkingConfig(strategy="sentences", size=s, overlap=min(o, s - 1)), st.integers(1, 4), st.integers(0, 2)),
    st.builds(lambda s: ChunkingConfig(strategy="paragraphs", size=s), st.integers(1, 3)),
)


@given(texts, configs)
def test_chunks_cover_the_document_within_bounds_with_unique_stable_ids(text, cfg):
    doc = Document("doc/1", text, "Title")
    chunks = chunk_documents([doc], cfg)
    assert chunks
    covered = [False] * len(text)
    for c in chunks:
        assert 0 <= c.start < c.end <= len(text)
        assert c.text == text[c.start:c.end]
        assert c.chunk_id == f"doc/1#{c.start}-{c.end}"
        for i in range(c.start, c.end):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace()), "a non-space character is in no chunk"
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert [c.chunk_id for c in chunk_documents([doc], cfg)] == [c.chunk_id for c in chunks]


def test_sentence_chunks_worked_example():
    text = "One two. Three four! Five? Six"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["One two.", "Three four!", "Five?", "Six"]
    chunks = chunk_documents([Document("d", text, "T")], ChunkingConfig(strategy="sentences", size=2, overlap=1))
    assert [c.text for c in chunks] == ["One two. Three four!", "Three four! Five?", "Five? Six"]
    assert chunks[0].index_text == "T\nOne two. Three four!"


def test_token_chunks_with_overlap():
    text = "a b c d e f g"
    chunks = chunk_documents([Document("d", text)], ChunkingConfig(strategy="tokens", size=3, overlap=1))
    assert [c.text for c in chunks] == ["a b c", "c d e", "e f g"]
