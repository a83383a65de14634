"""Long chunks read as windows: an encoder reads a few hundred tokens and drops the rest of a longer text, so a
``dense`` retriever or a late-interaction stage with ``windows:`` encodes each chunk as overlapping windows of
whitespace words, each window behind the chunk's own prefix (its title and heading path, what ``index_text`` adds
before the text). A chunk is still one hit: ``dense`` scores it by its best window (MaxP), late interaction by
MaxSim over the tokens of all its windows. A chunk of ``size`` words or fewer is one window, its ``index_text``."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from pydantic import Field, model_validator

from ..core.schema import MAX_RANK, Strict
from ..core.types import Chunk
from ..text.analysis import grouped_spans, word_bounds


class WindowsConfig(Strict):
    size: int = Field(ge=1, le=MAX_RANK)
    """words a window (whitespace-separated); choose it so a window and the prefix fit in the model's limit"""
    overlap: int = Field(0, ge=0)
    """words shared by consecutive windows; smaller than size"""

    @model_validator(mode="after")
    def _overlap_below_size(self):
        if self.overlap >= self.size:
            raise ValueError(f"windows.overlap ({self.overlap}) must be smaller than windows.size ({self.size})")
        return self


def window_texts(chunks: Sequence[Chunk], cfg: WindowsConfig) -> tuple[list[str], np.ndarray]:
    """The texts to encode and, for each, the position of its chunk in ``chunks`` (ascending: a chunk's windows
    are consecutive, in text order). A window is the chunk's prefix (``index_text`` before ``text``) followed by
    ``cfg.size`` words of the text, consecutive windows sharing ``cfg.overlap`` (the chunking ``tokens`` rule,
    words kept as they are written between them). A chunk whose ``index_text`` does not end with its text (a
    retriever's own) is one window, as is a chunk of ``size`` words or fewer."""
    texts: list[str] = []
    owner: list[int] = []
    for position, chunk in enumerate(chunks):
        spans: list[tuple[int, int]] = []
        if chunk.text and chunk.index_text.endswith(chunk.text):
            starts, ends = word_bounds(chunk.text)
            spans = grouped_spans(starts, ends, cfg.size, cfg.overlap)
        if len(spans) <= 1:
            texts.append(chunk.index_text)
            owner.append(position)
            continue
        prefix = chunk.index_text[: len(chunk.index_text) - len(chunk.text)]
        texts += [prefix + chunk.text[start:end] for start, end in spans]
        owner += [position] * len(spans)
    return texts, np.asarray(owner, dtype=np.int64)


def first_rows(owner: np.ndarray) -> np.ndarray:
    """The row of each chunk's first window (``owner`` ascending), and the number of rows at the end."""
    if len(owner) == 0:
        return np.zeros(1, dtype=np.int64)
    return np.concatenate([np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]), [len(owner)]]).astype(np.int64)
