"""Cut documents into chunks that keep their character span in the document.

Chunk ids are ``<doc_id>#<start>-<end>``: deterministic, so two runs over the same corpus and chunking are comparable.
"""

from __future__ import annotations

from typing import Sequence

from .config import ChunkingConfig
from .text import TokenCounter, paragraph_spans, sentence_spans
from .types import Chunk, Document


def _windows(spans: list[tuple[int, int]], size: int, overlap: int) -> list[tuple[int, int]]:
    """Group unit spans ``size`` at a time, consecutive groups sharing ``overlap`` units."""
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


def chunk_spans(text: str, cfg: ChunkingConfig, counter: TokenCounter | None = None) -> list[tuple[int, int]]:
    if cfg.strategy == "none":
        return [(0, len(text))]
    if cfg.strategy == "tokens":
        units = (counter or TokenCounter("words")).token_spans(text)
    elif cfg.strategy == "sentences":
        units = sentence_spans(text)
    else:
        units = paragraph_spans(text)
    return _windows(units, cfg.size, cfg.overlap) or [(0, len(text))]


def make_chunk(doc: Document, start: int, end: int, include_title: bool) -> Chunk:
    text = doc.text[start:end]
    index_text = f"{doc.title}\n{text}" if include_title and doc.title else text
    return Chunk(f"{doc.doc_id}#{start}-{end}", doc.doc_id, start, end, text, index_text)


def chunk_documents(docs: Sequence[Document], cfg: ChunkingConfig) -> list[Chunk]:
    counter = None
    if cfg.strategy == "tokens":
        counter = TokenCounter(str(cfg.tokenizer) if cfg.unit == "tokenizer" else "words")
    chunks: list[Chunk] = []
    for doc in docs:
        for start, end in chunk_spans(doc.text, cfg, counter):
            chunks.append(make_chunk(doc, start, end, cfg.include_title))
    return chunks
