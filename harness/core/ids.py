"""What an id may be, and how a line of a TREC file (run or qrels) splits into columns.

Ids travel into run.trec and qrels files, whose columns are separated by whitespace: an id holding whitespace (or an
empty one) would come back as other columns, so every loader rejects it where it reads it, naming the line. Control
characters are rejected with it: trec_eval stops an id at a NUL.

TREC lines split as trec_eval 10 splits them: on ASCII whitespace only, lines on "\\n" only; a line whose first
non-blank character is ``#`` is a comment (trec_eval 10 skips these in runs, and at the start of a line in qrels).
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Iterator

ASCII_WS = " \t\n\v\f\r"
_ASCII_SPLIT = re.compile(r"[ \t\n\v\f\r]+")
# Whitespace to Python but not to C's isspace (NBSP, U+2028, \x1c...), and control characters: what an id cannot hold
# beyond the ASCII whitespace that already separates columns.
ODD_CHARS = re.compile(r"[^\S \t\n\v\f\r]|[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_BAD_ID = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
BAD_ID_CHAR = _BAD_ID  # what id_problem refuses, a character at a time (core.textcolumns checks many ids with it)
_COMMENT = re.compile(r"^[ \t\v\f\r]*#", re.MULTILINE)

# Grades beyond this are typos or garbage, and would overflow the engine's integers.
GRADE_LIMIT = 2**31


def read_id(value: object, what: str, missing: str) -> tuple[str | None, str | None]:
    """``(the id as text, None)``, or ``(None, why not)``: ``missing`` when there is none, else ``id_problem``."""
    if value is None or value == "":
        return None, missing
    bad = id_problem(value, what)
    return (None, bad) if bad else (str(value), None)


def id_problem(value: object, what: str) -> str | None:
    """Why ``value`` cannot be an id (``what`` names it, as in "document id"), or None. A string or an integer:
    a float, bool, list or mapping would be written back differently from how the user wrote it."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"{what} must be a string, got {type(value).__name__} {shown(value)}"
    if isinstance(value, int) and value.bit_length() > 200:  # str() of one past 4,300 digits is a ValueError
        return f"{what} is {shown(value)}: not an id"
    text = str(value)
    if not text:
        return f"{what} is empty"
    bad = _BAD_ID.search(text)
    if bad:
        return (f"{what} {text!r} contains whitespace or a control character ({bad.group()!r}); TREC run and qrels "
                f"files cannot hold it")
    return None


def is_whole(value: object) -> bool:
    """An int, and not a bool (which Python counts as one)."""
    return isinstance(value, int) and not isinstance(value, bool)


class NumberText(str):
    """A number as a YAML golden set wrote it (``2.0``), kept as its text so an id written ``1.10`` stays itself;
    ``whole`` reads it as the number it is where a number belongs."""


_WHOLE_TEXT = re.compile(r"[+-]?[0-9]{1,30}(?:\.0*)?")


def whole(value: object) -> int | None:
    """THE rule for a whole number (grades, ranks, offsets, counts) in every input: an integer, or a finite number
    with nothing after the point (``2.0`` is 2, as qrels files, CSV cells and JSON writers give it). Never a boolean;
    never text in a typed input (JSON, YAML, a config, a dict handed to the API): ``"2"`` is a string there, said
    so. Text formats (qrels, runs, CSV/TSV cells) read their cells with ``whole_text``, the same rule on text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, NumberText):
        return whole_text(value)
    return None


def whole_text(text: str) -> int | None:
    """A cell's text ``2``, ``+2`` or ``2.0`` (ASCII digits, at most 30 of them) as its integer, else None."""
    return int(text.split(".")[0]) if _WHOLE_TEXT.fullmatch(text) else None


def shown(value: object) -> str:
    """``repr(value)`` for a message, whatever the value holds: Python refuses to print an integer of more than
    4,300 digits (a ValueError where the message was being made), so such an integer is described by its size."""
    if is_whole(value) and value.bit_length() > 200:
        return f"an integer of {math.floor(math.log10(abs(value))) + 1:,} digits"
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} holding an integer too long to print"
    return text if len(text) <= 200 else text[:197] + "..."


def is_finite_number(value: object) -> bool:
    """A number a ranking can hold: an int or float, not a bool, not NaN or infinite, and an int small enough to
    be a float (JSON reads 1 followed by 400 zeros as an int that ``float`` refuses with OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def grade_problem(value: object) -> str | None:
    """Why ``value`` is no grade (``whole``'s rule, and |grade| < 2**31), or None."""
    grade = whole(value)
    if grade is None:
        return f"'grade' must be a whole number, got {shown(value)}"
    if not -GRADE_LIMIT < grade < GRADE_LIMIT:
        return f"grade {shown(grade)} is out of range (|grade| < 2**31)"
    return None


def has_comment(text: str) -> bool:
    return _COMMENT.search(text) is not None


def split_line(line: str) -> list[str]:
    """The columns of one line, split on ASCII whitespace (as trec_eval does)."""
    stripped = line.strip(ASCII_WS)
    return _ASCII_SPLIT.split(stripped) if stripped else []


def data_lines(text: str | Iterable[tuple[int, str]]) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, line, columns) of every line that is neither blank nor a comment, of a whole text or of
    numbered lines read a block at a time (``core.textfile.utf8_lines``)."""
    numbered = enumerate(text.split("\n"), start=1) if isinstance(text, str) else text
    for lineno, line in numbered:
        fields = split_line(line)
        if fields and not fields[0].startswith("#"):
            yield lineno, line, fields


def tab_problem(line_fields: list[str], line: str, tab_columns: int, id_columns: tuple[int, ...]) -> str | None:
    """A tab-separated line with ``tab_columns`` columns, one of whose id columns holds a space, reads as other
    columns when split on whitespace: a TSV with 'doc 1' in it. Which was meant cannot be told; say so."""
    if "\t" not in line:
        return None
    cells = [c.strip(ASCII_WS) for c in line.split("\t")]
    cells = [c for c in cells if c]
    if len(cells) != tab_columns or len(cells) == len(line_fields):
        return None
    for i in id_columns:
        if _ASCII_SPLIT.search(cells[i]):
            return (f"tab-separated column {i + 1} is {cells[i]!r}: ids cannot contain whitespace (split on "
                    f"whitespace, the line has {len(line_fields)} columns)")
    return None


# An evidence unit's id (``hits.units``): its document and spans, e.g. ``doc#unit:12-80,95-130``, or ``doc#unit:doc``
# for a judgment without a span (the whole document), as run.chunks.trec and qrels.chunks.trec name it. No chunk id
# of the project's holds the mark.
UNIT_MARK = "#unit:"
WHOLE_DOCUMENT = "doc"


def unit_id(doc_id: str, spans: Iterable) -> str:
    return doc_id + UNIT_MARK + (",".join(f"{s.start}-{s.end}" for s in spans) or WHOLE_DOCUMENT)


def parse_unit_id(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """(document id, spans: [] for the whole document) of a unit id; None when ``text`` is not one."""
    doc, mark, rest = text.rpartition(UNIT_MARK)
    if not mark or not doc:
        return None
    if rest == WHOLE_DOCUMENT:
        return doc, []
    spans = []
    for part in rest.split(","):
        start, dash, end = part.partition("-")
        if not dash or not start.isdigit() or not end.isdigit() or int(start) >= int(end):
            return None
        spans.append((int(start), int(end)))
    return doc, spans
