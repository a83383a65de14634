"""Structure-aware pieces of a document, as character spans into its text: Markdown sections by heading, HTML
sections from the extraction, and the recursive separator splitter (LangChain's ``RecursiveCharacterTextSplitter``
rule, computed on offsets so that every piece is exactly ``text[start:end]``).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import deque
from typing import Callable, Mapping, Sequence

from ..core.errors import CorpusError

Span = tuple[int, int]
Section = tuple[int, int, tuple[str, ...]]  # start, end, heading path (outermost first)

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)  # the extraction's ATX heading rule
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)", re.MULTILINE)


def _paths(marks: Sequence[tuple[int, int, str]]) -> list[tuple[str, ...]]:
    """The heading path at each (start, level, title) mark: a heading closes every open one of its level or deeper."""
    stack: list[tuple[int, str]] = []
    paths = []
    for _, level, title in marks:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        paths.append(tuple(t for _, t in stack))
    return paths


def _sections(length: int, marks: Sequence[tuple[int, int, str]]) -> list[Section]:
    """One section from each heading to the next, and the text before the first heading (no path)."""
    paths = _paths(marks)
    starts = [m[0] for m in marks]
    out: list[Section] = [(0, starts[0], ())] if starts and starts[0] > 0 else []
    if not starts:
        return [(0, length, ())]
    for i, (start, path) in enumerate(zip(starts, paths)):
        out.append((start, starts[i + 1] if i + 1 < len(starts) else length, path))
    return out


def markdown_sections(text: str) -> list[Section]:
    """ATX headings (``#`` .. ``######``) outside fenced code blocks: a ``# comment`` in a shell example is code."""
    # fence lines pair up (open, close); a heading after an odd number of them is inside a block (an unclosed
    # fence runs to the end, as CommonMark reads it)
    fences = [m.start() for m in _FENCE.finditer(text)]
    marks = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in _HEADING.finditer(text)
             if bisect_left(fences, m.start()) % 2 == 0]
    return _sections(len(text), marks)


def html_sections(doc_id: str, text: str, metadata: Mapping[str, object]) -> list[Section]:
    """The sections the extraction found (``metadata["sections"]``: start, end, title, level); a document without
    them is one section. A corpus may bring its own metadata, so the spans are checked, never trusted."""
    given = metadata.get("sections") or []
    marks = []
    for i, sec in enumerate(given if isinstance(given, list) else [None]):
        start = sec.get("start") if isinstance(sec, dict) else None
        level = sec.get("level", 1) if isinstance(sec, dict) else None
        if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start <= len(text) \
                or not isinstance(level, int) or (marks and start < marks[-1][0]):
            raise CorpusError(f"document {doc_id!r}: metadata.sections[{i}]: expected {{start, end, title, level}} "
                              f"with starts in order inside the text ({len(text)} characters), got {sec!r}"[:300])
        marks.append((start, level, str(sec.get("title", ""))))
    return _sections(len(text), marks)


def strip_span(text: str, start: int, end: int) -> Span:
    """The span without its leading and trailing whitespace (str.strip's rule); empty when all of it is space."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split(text: str, start: int, end: int, sep: str) -> list[Span]:
    """Pieces of ``[start, end)`` cut before each ``sep`` (the separator opens the next piece: LangChain's
    ``keep_separator=True``); ``""`` cuts between characters. Empty pieces are dropped."""
    if sep == "":
        return [(i, i + 1) for i in range(start, end)]
    pieces, prev = [], start
    at = text.find(sep, start, end)
    while at != -1:
        if at > prev:
            pieces.append((prev, at))
        prev = at
        at = text.find(sep, at + len(sep), end)
    if end > prev:
        pieces.append((prev, end))
    return pieces


def _merge(text: str, pieces: list[Span], size: int, overlap: int, length: Callable[[int, int], int]) -> list[Span]:
    """LangChain's ``_merge_splits`` on contiguous pieces: fill a chunk up to ``size``; the next chunk starts with
    the last pieces of this one that fit in ``overlap``."""
    out: list[Span] = []
    current: deque[Span] = deque()
    lengths: deque[int] = deque()
    total = 0
    for piece in pieces:
        n = length(*piece)
        if total + n > size and current:
            out.append(strip_span(text, current[0][0], current[-1][1]))
            while current and (total > overlap or (total + n > size and total > 0)):
                total -= lengths.popleft()
                current.popleft()
        current.append(piece)
        lengths.append(n)
        total += n
    if current:
        out.append(strip_span(text, current[0][0], current[-1][1]))
    return [s for s in out if s[0] < s[1]]


def recursive_spans(text: str, start: int, end: int, size: int, overlap: int, separators: Sequence[str],
                    length: Callable[[int, int], int]) -> list[Span]:
    """Cut ``[start, end)`` with the first separator that occurs in it; merge the pieces shorter than ``size``,
    and cut each longer one again with the separators after it (the rule of LangChain's recursive character
    splitter, with ``length`` measuring a span in the configured unit)."""
    chosen, rest = separators[-1], []
    for i, sep in enumerate(separators):
        if sep == "":
            chosen = sep
            break
        if text.find(sep, start, end) != -1:
            chosen, rest = sep, list(separators[i + 1:])
            break
    out: list[Span] = []
    good: list[Span] = []
    for piece in _split(text, start, end, chosen):
        if length(*piece) < size:
            good.append(piece)
            continue
        if good:
            out += _merge(text, good, size, overlap, length)
            good = []
        if rest:
            out += recursive_spans(text, piece[0], piece[1], size, overlap, rest, length)
        elif not text[piece[0]:piece[1]].isspace():
            out.append(piece)
    if good:
        out += _merge(text, good, size, overlap, length)
    return out
