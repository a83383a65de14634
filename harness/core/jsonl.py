"""Reading JSONL: the one rule for which lines count and how a line that is not JSON is described, for corpora,
golden sets, answers, judging sheets and runs. What a row must hold is each reader's own business."""

from __future__ import annotations

import json
from typing import Iterator


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines that are not blank, numbered from 1. Lines end at "\\n" only: a JSON string may hold a raw U+2028,
    which splitlines() would cut."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield lineno, line


def parse_line(line: str) -> tuple[object, str | None]:
    """One line's value and ``None``, or ``None`` and why it is not JSON (to be put after ``file:line: ``)."""
    try:
        return json.loads(line), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg})"
    except RecursionError:  # json.loads recurses once per nesting level
        return None, "nested too deeply"


def jsonl_rows(text: str) -> Iterator[tuple[int, object, str | None]]:
    """``(line number, value, None)`` for each JSON line of ``text``, ``(line number, None, why)`` for the others."""
    for lineno, line in numbered_lines(text):
        yield (lineno, *parse_line(line))
