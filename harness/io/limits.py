"""Size limits of what harness reads, so memory stays bounded by them whatever a file holds: a 3 MB ``.gz`` holding
one multi-GB line, a 2.5 MB DOCX inflating to gigabytes, a service answering 100 MB a query. Each is refused with
one line naming the file (or query) and the limit; docs/limits.md states them.

- ``line``: one line of a line-based file (JSONL corpus, golden set or run; TREC run or qrels), decompressed.
- ``document``: one document's text (a JSONL corpus row, or the text extracted from a folder's file).
- ``extracted``: a compressed file read whole (``.gz``), or one part of a DOCX, once decompressed.

A plain file read line by line is bounded by ``line``; its size is what the disk shows. The http retriever's body
limit is its own setting (``max_response_mb``)."""

from __future__ import annotations

import os

from ..core.errors import InputError

MB = 1 << 20
# kind -> (environment variable, default in MB). A real user may need more (a book-length document, a 2 GB .gz
# golden set); the variable raises a limit for every command, which a config key could not (eval has no config).
LIMITS = {
    "line": ("HARNESS_MAX_LINE_MB", 64),
    "document": ("HARNESS_MAX_DOCUMENT_MB", 64),
    "extracted": ("HARNESS_MAX_EXTRACTED_MB", 1024),
}


class TooLarge(InputError):
    """Input past a size limit: one line naming the file and the limit."""


def max_bytes(kind: str) -> int:
    """The limit of ``kind`` in bytes: its environment variable (a positive number of MB) or the default."""
    var, default = LIMITS[kind]
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default * MB
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 1 << 30:
        raise InputError(f"{var}={raw[:40]!r}: expected a positive number of megabytes (default {default})")
    return int(value * MB)


def too_large(where: str, what: str, kind: str) -> TooLarge:
    """The error for ``what`` at ``where`` (a file, file:line, or a query) past the ``kind`` limit."""
    var, _ = LIMITS[kind]
    return TooLarge(f"{where}: {what} is larger than the {max_bytes(kind) / MB:g} MB {kind} limit; set {var} "
                    f"(megabytes) to read it")


def read_at_most(fh, limit: int, where: str, what: str, kind: str) -> bytes:
    """All of ``fh`` (a binary stream), refused once it passes ``limit`` bytes: never more than that in memory."""
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise too_large(where, what, kind)
    return data
