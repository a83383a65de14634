"""Cut documents into chunks that keep their character span in the document.

Chunk ids are ``<doc_id>#<start>-<end>``: deterministic, so two runs over the same corpus and chunking are comparable.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..config.schema import DEFAULT_SEPARATORS, LIBRARY_STRATEGIES, RECURSIVE_STRATEGIES, ChunkingConfig
from ..core.errors import ConfigError
from ..core.types import Chunk, Document
from .analysis import TokenCounter, grouped_spans, paragraph_spans, sentence_spans, word_bounds
from .libraries import library_chunker
from .structure import html_sections, markdown_sections, recursive_spans, strip_span

MAX_PROBLEMS = 20  # a library that shifts every chunk would otherwise print one line per chunk of the corpus


def _bounds(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.array(spans, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _unit_length(text: str, cfg: ChunkingConfig, counter: TokenCounter | None) -> Callable[[int, int], int]:
    """How long a span is in the configured unit: characters, or the words (tokens) that overlap it, which is
    the count of the span's own text for words (a word is a maximal run of non-space characters)."""
    if cfg.unit == "characters":
        return lambda s, e: e - s
    starts, ends = word_bounds(text) if counter is None else _bounds(counter.token_spans(text))

    def length(s: int, e: int) -> int:
        return int(np.searchsorted(starts, e, "left") - np.searchsorted(ends, s, "right"))
    return length


def chunk_spans(text: str, cfg: ChunkingConfig, counter: TokenCounter | None = None) -> list[tuple[int, int]]:
    """Linear in the text for the window strategies (a 50 MB document chunks in seconds)."""
    return [(s, e) for s, e, _ in chunk_pieces(Document("", text), cfg, counter)]


def chunk_pieces(doc: Document, cfg: ChunkingConfig, counter: TokenCounter | None = None
                 ) -> list[tuple[int, int, tuple[str, ...]]]:
    """The built-in strategies' chunks of ``doc``: (start, end, heading path)."""
    text = doc.text
    if cfg.strategy == "none":
        return [(0, len(text), ())]
    if cfg.strategy in RECURSIVE_STRATEGIES:
        sections = (markdown_sections(text) if cfg.strategy == "markdown" else
                    html_sections(doc.doc_id, text, doc.metadata) if cfg.strategy == "html" else [(0, len(text), ())])
        length = _unit_length(text, cfg, counter)
        separators = cfg.separators or DEFAULT_SEPARATORS
        pieces = []
        for start, end, path in sections:
            if length(start, end) <= cfg.size:  # a section that fits is one chunk, whatever its separators
                start, end = strip_span(text, start, end)
                if start < end:
                    pieces.append((start, end, path))
            else:  # cut as it stands, surrounding space included, as the recursive character splitter does
                pieces += [(s, e, path) for s, e in recursive_spans(text, start, end, cfg.size, cfg.overlap,
                                                                      separators, length)]
        return pieces or [(0, len(text), ())]
    if cfg.strategy == "tokens":
        if counter is None:  # whitespace words: two arrays, not millions of tuples
            starts, ends = word_bounds(text)
        else:
            starts, ends = _bounds(counter.token_spans(text))
    elif cfg.strategy == "sentences":
        starts, ends = _bounds(sentence_spans(text))
    else:
        starts, ends = _bounds(paragraph_spans(text))
    return [(s, e, ()) for s, e in grouped_spans(starts, ends, cfg.size, cfg.overlap)] or [(0, len(text), ())]


def make_chunk(doc: Document, start: int, end: int, include_title: bool) -> Chunk:
    return Chunk.of_span(doc, start, end, include_title)


def _library_pieces(doc: Document, chunk: Callable, label: str, where: str, problems: list[str]
                    ) -> list[tuple[int, int, tuple[str, ...]]]:
    """A library's chunks of ``doc``, each checked against the document text at its own offsets."""
    pieces = []
    text = doc.text
    for i, (start, end, piece) in enumerate(chunk(text)):
        ok = isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)
        if not ok or text[start:end] != piece:
            found = text.find(piece)
            hint = f"; that text is at [{found}, {found + len(piece)})" if found >= 0 and piece else ""
            problems.append(f"{where}: {label} chunk {i} of document {doc.doc_id!r} says [{start}, {end}) but its "
                            f"text {_snippet(piece)} is not the document's text there{hint}")
            continue
        if piece.strip():
            pieces.append((start, end, ()))
    # as every strategy does: a document the library leaves without a chunk (blank) is one chunk
    return pieces or ([] if problems else [(0, len(text), ())])


def _snippet(text: str, width: int = 40) -> str:
    return repr(text if len(text) <= width else text[:width] + "...")


def chunk_documents(docs: Sequence[Document], cfg: ChunkingConfig, where: str = "chunking") -> list[Chunk]:
    """Every chunk keeps (doc_id, start, end) into its document's text: ``doc.text[start:end] == chunk.text``.
    A library's chunk whose text is not the document's at its offsets fails the whole chunking (``where`` names
    the config section in the message), so nothing is evaluated on shifted spans."""
    counter = None
    if cfg.unit == "tokenizer" and (cfg.strategy == "tokens" or cfg.strategy in RECURSIVE_STRATEGIES):
        counter = TokenCounter(str(cfg.tokenizer), where=f"{where}.tokenizer")
    library = library_chunker(cfg, where) if cfg.strategy in LIBRARY_STRATEGIES else None
    label = f"{cfg.strategy} {cfg.chunker}" if cfg.chunker and cfg.strategy != "semchunk" else cfg.strategy
    problems: list[str] = []
    chunks: list[Chunk] = []
    for doc in docs:
        pieces = (_library_pieces(doc, library, label, where, problems) if library is not None
                  else chunk_pieces(doc, cfg, counter))
        seen: set[tuple[int, int]] = set()  # one chunk per span: its id is the span
        for start, end, path in pieces:
            if (start, end) not in seen:
                seen.add((start, end))
                chunks.append(Chunk.of_span(doc, start, end, cfg.include_title, path, cfg.prepend_headings))
        if len(problems) >= MAX_PROBLEMS:
            break
    if problems:
        shown = problems[:MAX_PROBLEMS]
        raise ConfigError(f"{where}: {len(shown)}{'+' if len(problems) > len(shown) else ''} chunk(s) not at their "
                          f"offsets in the document text", shown)
    return chunks
