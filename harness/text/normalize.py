"""Text compared loosely: Unicode compatibility forms (NFKC), case, and runs of whitespace.

A retriever's hit text often differs from the corpus in exactly these ways (a store that lower-cases, an extractor
that collapses newlines, a curly quote). ``find_loose`` finds such a text in a document and returns the span of the
document's own characters, so the hit is placed on the real text; one that occurs twice is reported, never guessed.
``harness goldset`` (gold/locate.py) finds answers and quotes by the same ``normalise``.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np


# The characters str.isspace() is true for, among the first 128.
_ASCII_SPACE = np.zeros(128, dtype=bool)
_ASCII_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_UPPER = np.arange(128, dtype=np.uint32)
_UPPER[65:91] += 32  # A-Z -> a-z


# Typographic quotes as the ASCII ones (NFKC keeps them apart): a store or an editor that curls them, or a person
# typing a quote with straight ones, still matches.
_QUOTES = {ord(c): "'" for c in "\u2018\u2019\u201a\u201b\u2032"} | {ord(c): '"' for c in "\u201c\u201d\u201e\u201f\u2033"}


def normalise(text: str) -> tuple[str, np.ndarray]:
    """NFKC + casefold (typographic quotes as ASCII ones), whitespace runs as one space (none at either end), with
    each output character's offset in ``text`` (one extra entry: the end). Vectorised over code points; only
    non-ASCII characters are mapped one by
    one, so a corpus of megabytes normalises in seconds. Character by character, so offsets stay exact; a combining
    sequence split across characters is rare in evidence text and would only make a match fall through to fuzzy."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).copy()
    ascii_ = codes < 128
    space = np.zeros(len(codes), dtype=bool)
    space[ascii_] = _ASCII_SPACE[codes[ascii_]]
    codes[ascii_] = _UPPER[codes[ascii_]]
    pieces: dict[int, str] = {}  # non-ASCII characters that do not map to exactly one character
    for i in np.nonzero(~ascii_)[0].tolist():
        ch = text[i]
        if ch.isspace():
            space[i] = True
            continue
        mapped = unicodedata.normalize("NFKC", ch).casefold().translate(_QUOTES)
        if len(mapped) == 1 and not mapped.isspace():
            codes[i] = ord(mapped)
        else:
            pieces[i] = mapped
    keep = ~space
    keep[1:] |= space[1:] & ~space[:-1]  # the first of each whitespace run, as one space
    if len(keep):
        keep[0] = keep[0] and not space[0]
    codes[space] = 32
    where = np.nonzero(keep)[0]
    if len(where) and space[where[-1]]:
        where = where[:-1]
    if pieces:
        parts: list[str] = []
        offsets: list[int] = []
        for i in where.tolist():
            for c in pieces.get(i, chr(codes[i])):
                if c.isspace():  # a compatibility form with a space in it (U+00A8 -> " \u0308")
                    if not parts or parts[-1] == " ":
                        continue  # leading whitespace and runs of it count as one space, as everywhere
                    c = " "
                parts.append(c)
                offsets.append(i)
        while parts and parts[-1] == " ":
            parts.pop()
            offsets.pop()
        norm = "".join(parts)
        where = np.array(offsets, dtype=np.int64)
    else:
        norm = codes[where].astype(np.uint32).tobytes().decode("utf-32-le")
    return norm, np.append(where.astype(np.int64), len(text))


@dataclass(frozen=True)
class LooseText:
    """``text`` normalised, and for each of its characters the offset of the original character it came from."""

    text: str
    origin: tuple[int, ...]

    @classmethod
    def of(cls, original: str) -> "LooseText":
        text, where = normalise(original)
        return cls(text, tuple(where[:-1].tolist()))


def loose(text: str) -> str:
    return LooseText.of(text).text


def find_loose(document: LooseText, text: str) -> tuple[int, int] | None | tuple[int, int, int]:
    """The span ``(start, end)`` in the original document of the one loose match of ``text``; None when there is
    none; ``(start, -1, second_start)`` when there are two or more (the caller reports the ambiguity)."""
    needle = loose(text)
    if not needle:
        return None
    at = document.text.find(needle)
    if at < 0:
        return None
    start, end = document.origin[at], document.origin[at + len(needle) - 1] + 1
    again = document.text.find(needle, at + 1)
    if again >= 0:
        return start, -1, document.origin[again]
    return start, end
