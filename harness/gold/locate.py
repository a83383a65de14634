"""Finding a piece of text in documents: exact, then normalised (Unicode NFKC, case, whitespace), then a bounded
fuzzy match whose score is recorded. Every match maps back to character offsets in the original text, and the
caller sees every place found: one place is an answer, several are ambiguous and are never picked silently."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from ..text.normalize import normalise  # the one normalisation, shared with hit placement

FUZZY_MIN = 0.9  # similarity (0..1) a fuzzy match needs; below it the text counts as not found
FUZZY_MAX_TEXT = 2000  # longest needle tried fuzzily: longer quotes are pasted, and must match at least normalised


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    how: str  # exact | normalised | fuzzy
    score: float = 1.0


def find_all(haystack: str, needle: str) -> list[int]:
    """Every start of ``needle`` in ``haystack``, overlapping ones included."""
    out, at = [], haystack.find(needle)
    while at >= 0 and needle:
        out.append(at)
        at = haystack.find(needle, at + 1)
    return out


def _end(where: np.ndarray, text_len: int, index: int) -> int:
    """The original offset just past normalised character ``index - 1``."""
    if index >= len(where) - 1:
        return text_len
    # Several output characters may come from one input character (ß -> ss): end after that input character.
    return int(where[index - 1]) + 1


class NormCache:
    """Each document normalised once per command (searching a whole corpus for many labels would otherwise
    normalise every document again for each)."""

    def __init__(self) -> None:
        self._done: dict[str, tuple[str, np.ndarray]] = {}

    def of(self, key: str, text: str) -> tuple[str, np.ndarray]:
        if key not in self._done:
            self._done[key] = normalise(text)
        return self._done[key]


def locate(text: str, needle: str, *, fuzzy: bool = True, norm: tuple[str, np.ndarray] | None = None,
           norm_needle: str | None = None) -> list[Match]:
    """The places of ``needle`` in ``text`` by the first rule that finds any: exact, normalised, fuzzy. ``norm`` is
    ``normalise(text)`` and ``norm_needle`` the needle's normalised text when the caller has them already."""
    if not needle.strip():
        return []
    exact = find_all(text, needle)
    if exact:
        return [Match(s, s + len(needle), "exact") for s in exact]
    norm_text, where = norm or normalise(text)
    if norm_needle is None:
        norm_needle = normalise(needle)[0]
    if not norm_needle:
        return []
    starts = find_all(norm_text, norm_needle)
    if starts:
        return [Match(int(where[s]), _end(where, len(text), s + len(norm_needle)), "normalised") for s in starts]
    if not fuzzy or len(norm_needle) > FUZZY_MAX_TEXT or len(norm_needle) < 8:
        return []  # a short needle matches fuzzily almost anywhere: a guess, not a location
    found = _fuzzy(norm_text, norm_needle)
    return [Match(int(where[s]), _end(where, len(text), e), "fuzzy", round(score, 4)) for s, e, score in found]


def _fuzzy(text: str, needle: str) -> list[tuple[int, int, float]]:
    """The best-scoring windows of ``text`` similar to ``needle`` (difflib ratio >= FUZZY_MIN), as (start, end,
    score) in ``text``; several when they tie. Candidate windows start where a matching block of the needle's
    alignment places them, so the cost stays near one SequenceMatcher pass per candidate."""
    n = len(needle)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(needle)
    candidates: set[int] = set()
    probe = difflib.SequenceMatcher(None, text, needle, autojunk=False)
    for block in probe.get_matching_blocks():
        if block.size >= 4:
            candidates.add(max(0, block.a - block.b))
    # Also anchor on short pieces of the needle found exactly (the long-text alignment above keeps only one path).
    for piece_at in range(0, n - 6, max(1, n // 8)):
        piece = needle[piece_at:piece_at + 6]
        for s in find_all(text, piece)[:50]:
            candidates.add(max(0, s - piece_at))
    best: list[tuple[int, int, float]] = []
    best_score = FUZZY_MIN
    for s in sorted(candidates):
        for length in {n - n // 10, n, n + n // 10}:
            start, end = _whole_words(text, s, min(s + length, len(text)), matcher)
            matcher.set_seq1(text[start:end])
            score = matcher.ratio()
            if score > best_score + 1e-9:
                best_score, best = score, [(start, end, score)]
            elif abs(score - best_score) < 1e-9 and best and not any(abs(b[0] - start) < n for b in best):
                best.append((start, end, score))
    return best


def _whole_words(text: str, start: int, end: int, matcher: difflib.SequenceMatcher) -> tuple[int, int]:
    """The window moved to word boundaries: a window of fixed length cut the answer's last word ("a full refun")
    or took a piece of the next one. Each edge that falls inside a word goes out to the word's edge or back to the
    previous one, whichever reads closer to the needle (ties: the longer span, covering the whole answer)."""
    def edges(at: int, inside: bool, outward: int) -> list[int]:
        if not inside:
            return [at]
        out, back = at, at
        while 0 < out < len(text) and text[out - 1].isalnum() and text[out].isalnum():
            out += outward
        while 0 < back < len(text) and text[back - 1].isalnum() and text[back].isalnum():
            back -= outward
        return [out, back]

    inside = lambda at: 0 < at < len(text) and text[at - 1].isalnum() and text[at].isalnum()  # noqa: E731
    options = []
    for s in edges(start, inside(start), -1):
        for e in edges(end, inside(end), 1):
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            if e > s:
                matcher.set_seq1(text[s:e])
                options.append((matcher.ratio(), e - s, -s, s, e))
    if not options:
        return start, end
    return max(options)[3:]
