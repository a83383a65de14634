"""Hardening of the engine: linear chunkers, huge cutoffs, empty inputs, a cache path that is not a folder, and
dense encoding that resumes after an interruption."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clihelp import DEMO, ROOT, Case, assert_input_error, demo_config, harness, run_case
from harness.chunking import chunk_documents
from harness.config import ChunkingConfig, CorpusConfig
from harness.corpus import load_corpus
from harness.text import SPACE_CODE_POINTS, paragraph_spans, sentence_spans, word_spans

# --------------------------------------------------------------------------------------------------------------
# The chunkers before they were made linear: the reference their spans must equal byte for byte.

_OLD_WORD = re.compile(r"\S+")
_OLD_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_OLD_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def old_word_spans(text):
    return [m.span() for m in _OLD_WORD.finditer(text)]


def old_sentence_spans(text):
    spans, start = [], 0
    for m in _OLD_SENTENCE_END.finditer(text):
        end = m.end()
        stripped_end = len(text[:end].rstrip())
        if stripped_end > start:
            spans.append((start, stripped_end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return [(s + (len(text[s:e]) - len(text[s:e].lstrip())), e) for s, e in spans]


def old_paragraph_spans(text):
    spans, start = [], 0
    for m in _OLD_PARAGRAPH_BREAK.finditer(text):
        if text[start:m.start()].strip():
            spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def old_windows(spans, size, overlap):
    if not spans:
        return []
    step = size - overlap
    out = []
    for i in range(0, len(spans), step):
        group = spans[i:i + size]
        out.append((group[0][0], group[-1][1]))
        if i + size >= len(spans):
            break
    return out


OLD_UNITS = {"tokens": old_word_spans, "sentences": old_sentence_spans, "paragraphs": old_paragraph_spans}


def old_chunk_spans(text, cfg):
    if cfg.strategy == "none":
        return [(0, len(text))]
    return old_windows(OLD_UNITS[cfg.strategy](text), cfg.size, cfg.overlap) or [(0, len(text))]


def scifact() -> Path:
    """The shared SciFact folder: beside the checkout (../shared) or, from a git worktree, one level further up."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "datasets" / "scifact").is_dir():
            return base / "shared" / "datasets" / "scifact"
    pytest.skip("../shared/datasets/scifact is not present")


CONFIGS = [ChunkingConfig(strategy=s, size=size, overlap=o)
           for s in ("tokens", "sentences", "paragraphs") for size, o in ((1, 0), (2, 0), (2, 1), (3, 1), (5, 4), (7, 2))]


def assert_same_as_before(docs):
    for cfg in CONFIGS:
        new = [(c.doc_id, c.start, c.end) for c in chunk_documents(docs, cfg)]
        old = [(d.doc_id, s, e) for d in docs for s, e in old_chunk_spans(d.text, cfg)]
        assert new == old, cfg
    for d in docs:
        assert sentence_spans(d.text) == old_sentence_spans(d.text)
        assert paragraph_spans(d.text) == old_paragraph_spans(d.text)
        assert word_spans(d.text) == old_word_spans(d.text)


def test_chunks_equal_the_old_implementation_on_the_demo_corpus():
    assert_same_as_before(load_corpus(CorpusConfig(path=DEMO / "corpus.jsonl")))


def test_chunks_equal_the_old_implementation_on_scifact():
    docs = load_corpus(CorpusConfig(path=scifact() / "corpus.jsonl", format="beir"))
    assert len(docs) > 5000
    assert_same_as_before(docs[::7])  # ~740 abstracts x 18 configurations; the rest adds time, not cases


# Characters that matter to the chunkers: every terminator, closing quote and bracket, every kind of whitespace
# (the Unicode ones too), and letters, ASCII and not.
PIECES = [".", "!", "?", '"', "'", ")", "]", "\n", "\n\n", " ", "\t", "\r\n", "\u00a0", "\u2003", "\u3000", "\x1c",
          "\u0085", "word", "Zeta", "é", "日本", "x.y", "(", "...", "?!"]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.sampled_from(CONFIGS + [ChunkingConfig(strategy="none")]))
def test_chunks_equal_the_old_implementation_on_random_text(text, cfg):
    from harness.chunking import chunk_spans

    assert chunk_spans(text, cfg) == old_chunk_spans(text, cfg)
    assert sentence_spans(text) == old_sentence_spans(text)
    assert paragraph_spans(text) == old_paragraph_spans(text)
    assert word_spans(text) == old_word_spans(text)


def test_the_whitespace_table_is_exactly_what_str_isspace_and_regex_s_match():
    every = {c for c in range(0x110000) if chr(c).isspace()}
    assert set(SPACE_CODE_POINTS) == every
    assert every == {c for c in range(0x110000) if re.match(r"\s", chr(c))}


@pytest.fixture(scope="module")
def big_text():
    """50 MB of real prose: SciFact abstracts, one paragraph each, repeated."""
    path = scifact() / "corpus.jsonl"
    abstracts = [json.loads(line)["text"] for line in path.open(encoding="utf-8")]
    base = "\n\n".join(abstracts) + "\n\n"
    return (base * (50_000_000 // len(base) + 1))[:50_000_000]


@pytest.mark.parametrize("strategy,size,overlap", [("sentences", 3, 1), ("paragraphs", 2, 0), ("tokens", 200, 50)])
def test_a_50_mb_document_chunks_in_seconds(big_text, strategy, size, overlap):
    from harness.types import Document

    cfg = ChunkingConfig(strategy=strategy, size=size, overlap=overlap)
    t0 = time.perf_counter()
    chunks = chunk_documents([Document("big", big_text)], cfg)
    took = time.perf_counter() - t0
    # Before: sentences took 4.7 s for 2.2 MB and never finished 50 MB; a linear pass takes a few seconds even on
    # a busy 2-core machine. The bound is loose on purpose; quadratic would be hours.
    assert took < 60, f"{strategy}: {took:.1f} s"
    starts = np.array([c.start for c in chunks])
    ends = np.array([c.end for c in chunks])
    assert starts[0] == 0 and ends[-1] == len(big_text.rstrip())
    assert (np.diff(starts) > 0).all() and (np.diff(ends) > 0).all() and (ends > starts).all()
