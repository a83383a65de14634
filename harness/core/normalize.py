"""Text compared loosely: Unicode compatibility forms (NFKC), case, and runs of whitespace.

A retriever's hit text often differs from the corpus in exactly these ways (a store that lower-cases, an extractor
that collapses newlines, a curly quote). ``find_loose`` finds such a text in a document and returns the span of the
document's own characters, so the hit is placed on the real text; one that occurs twice is reported, never guessed.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class LooseText:
    """``text`` normalised, and for each of its characters the offset of the original character it came from."""

    text: str
    origin: tuple[int, ...]

    @classmethod
    def of(cls, original: str) -> "LooseText":
        out: list[str] = []
        origin: list[int] = []
        for i, ch in enumerate(original):
            for c in unicodedata.normalize("NFKC", ch).casefold():
                if c.isspace():
                    if not out or out[-1] == " ":
                        continue  # leading whitespace and runs of it count as one space
                    c = " "
                out.append(c)
                origin.append(i)
        while out and out[-1] == " ":
            out.pop()
            origin.pop()
        return cls("".join(out), tuple(origin))


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
