"""Reading JSONL: the one rule for which lines count and how a line that is not JSON is described, for corpora,
golden sets, answers, judging sheets and runs. What a row must hold is each reader's own business."""

from __future__ import annotations

import json
import re
from typing import Iterator


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines that are not blank, numbered from 1. Lines end at "\\n" only: a JSON string may hold a raw U+2028,
    which splitlines() would cut."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield lineno, line


# A JSON escape of a UTF-16 surrogate (after an odd run of backslashes: "\\\\ud800" is a backslash and text).
# A high one followed by a low one is one character; either alone is no character at all, which json.loads and
# pydantic accept and no UTF-8 file, output or hash can hold.
_SURROGATE = re.compile(rb"(\\+)u[dD]([89a-fA-F])[0-9a-fA-F]{2}")
_LOW = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def lone_surrogate(text: bytes) -> tuple[int, str] | None:
    """(the byte offset, the escape) of the first escape of half a surrogate pair without its other half in the
    JSON ``text``, or None."""
    paired_low_at = -1
    for m in _SURROGATE.finditer(text):
        if len(m.group(1)) % 2 == 0:
            continue
        at = m.end(1) - 1  # the escape's backslash
        if m.group(2) in b"89abAB":  # high: the next escape must be a low one
            if _LOW.match(text, m.end()):
                paired_low_at = m.end()
                continue
        elif at == paired_low_at:  # low: right after its high one
            continue
        return at, text[at:m.end()].decode("ascii")
    return None


def lone_surrogate_problem(escape: str) -> str:
    return (f"holds {escape}, half of a UTF-16 surrogate pair without its other half: not a character (write the "
            "character itself, or both halves)")


def lone_surrogate_at(text: bytes, first_line: int = 1) -> tuple[int, str] | None:
    """(its line, the problem) of the first lone surrogate escape of ``text``, whose first line is ``first_line``;
    None when there is none (cheap then: most JSON text holds no ``\\u`` at all)."""
    found = lone_surrogate(text) if b"\\u" in text else None
    if found is None:
        return None
    return first_line + text.count(b"\n", 0, found[0]), lone_surrogate_problem(found[1])


class _RepeatedKey(Exception):
    pass


REPEATED_KEY = "is given twice in one object"  # how parse_line says it: a JSON line whose meaning is ambiguous


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """An object whose keys are all different: with a key given twice, which value was meant is not guessed (json
    keeps the last; a YAML golden set refuses it too)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


# Python turns at most 4,300 digits into an int (sys.get_int_max_str_digits), and a longer JSON integer was a
# ValueError traceback in every reader. No id, grade, offset or count of ours comes near: such a number is refused.
MAX_INT_DIGITS = 4300
_LONG_INT = re.compile(r"-?[0-9]{%d,}" % (MAX_INT_DIGITS + 1))


class _LongInteger(Exception):
    pass


def _int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS + digits.startswith("-"):
        raise _LongInteger(len(digits.lstrip("-")))
    return int(digits)


def long_integer(digits: int) -> str:
    """Why an integer of ``digits`` digits is refused (every reader says it in these words)."""
    return f"an integer of {digits:,} digits, past the {MAX_INT_DIGITS:,} that are read"


# As fast as json.loads on SciFact's corpus (measured): the C scanner calls ``_int`` only for integers.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_int)
_PLAIN = json.JSONDecoder(parse_int=_int)


def loads(text: str | bytes) -> object:
    """``json.loads`` for input harness did not write: an integer too long for Python is a ``JSONDecodeError``
    (located at the first run of that many digits) like any other JSON a reader refuses, not a ValueError. Every
    reader of JSON documents uses this (JSON lines: ``parse_line``)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    try:
        return _PLAIN.decode(text)
    except _LongInteger as exc:
        found = _LONG_INT.search(text)
        raise json.JSONDecodeError(f"holds {long_integer(exc.args[0])}", text, found.start() if found else 0) from None


def parse_line(line: str) -> tuple[object, str | None]:
    """One line's value and ``None``, or ``None`` and why it is not JSON (to be put after ``file:line: ``)."""
    try:
        value = _DECODER.decode(line)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg})"
    except _LongInteger as exc:
        return None, f"holds {long_integer(exc.args[0])}"
    except _RepeatedKey as exc:
        return None, f"key {exc.args[0]!r} {REPEATED_KEY}"
    except RecursionError:  # json.loads recurses once per nesting level
        return None, "nested too deeply"
    surrogate = lone_surrogate_at(line.encode("utf-8")) if "\\u" in line else None
    return (None, surrogate[1]) if surrogate else (value, None)


def jsonl_rows(text: str) -> Iterator[tuple[int, object, str | None]]:
    """``(line number, value, None)`` for each JSON line of ``text``, ``(line number, None, why)`` for the others."""
    for lineno, line in numbered_lines(text):
        yield (lineno, *parse_line(line))


def one_document(path, expected: str = "JSON Lines (one JSON object a line)") -> str | None:
    """Why ``path`` is not JSON Lines when it is one JSON document written over many lines (a results.json, a
    pretty-printed export): its first line is a lone "{" or "[". Said once, instead of a problem for each of its
    lines (a results.json given as a golden set was 398,263 of them). None for any other file."""
    from .textfile import open_binary

    try:
        with open_binary(path) as fh:
            head = fh.read(1 << 16)
    except (OSError, EOFError):
        return None
    first = next((line.strip() for line in head.split(b"\n") if line.strip()), b"").removeprefix(b"\xef\xbb\xbf")
    if first not in (b"{", b"["):
        return None
    what = (" (a harness results.json: harness report, explain, compare and gate read it)"
            if b'"harness_version"' in head and b'"summary"' in head else "")
    return f"one JSON document written over many lines{what}, not {expected}"
