"""Reading a user's text file: bytes that are not UTF-8 are an input error naming the file and line, not a crash.
A name ending in ``.gz`` is read through gzip (TREC runs and qrels are often shipped that way)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

from ..core.errors import InputError

# What a damaged .gz raises while it is read: a bad header (an OSError), a stream cut short, corrupt compressed
# data (zlib's own error, not an OSError).
GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


def not_a_file(path: Path, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` ("run file", "config file"), or None when it is a regular file: a
    folder or a device was "not found", which sent users looking for a file that is there."""
    if path.is_file():
        return None
    if path.is_dir():
        return f"{path}: a folder, not a {what}"
    if path.exists():
        return f"{path}: not a regular file (a device or a pipe?); give a {what}"
    return f"{path}: {what} not found"


def require_file(path: Path, what: str, error: type[Exception] = InputError) -> None:
    """Raise ``error`` with ``not_a_file``'s reason unless ``path`` is a regular file: every reader's check before
    it opens a file the user named."""
    problem = not_a_file(path, what)
    if problem:
        raise error(problem)


def is_gzip(path: Path) -> bool:
    return path.suffix == ".gz"


def base_suffix(path: Path) -> str:
    """The suffix that says the format: ``run.jsonl.gz`` is JSONL."""
    return Path(path.stem).suffix if is_gzip(path) else path.suffix


def open_binary(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if is_gzip(path) else path.open("rb")


def read_utf8(path: Path, error: type[InputError]) -> str:
    """The whole file as text; a ``.gz`` is refused past the ``extracted`` limit once decompressed (a 3 MB file
    can hold gigabytes), a plain file is what the disk shows."""
    from .limits import max_bytes, read_at_most

    try:
        with open_binary(path) as fh:
            if is_gzip(path):
                data = read_at_most(fh, max_bytes("extracted"), str(path), "its decompressed text", "extracted")
            else:
                data = fh.read()
    except GZIP_ERRORS as exc:
        raise error(f"{path}: not a complete gzip file ({exc})") from None
    try:
        # A leading byte-order mark (Excel's "CSV UTF-8", Notepad) says the encoding; it is not the first
        # column's name nor part of the first JSON line.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def utf8_lines(path: Path, error: type[InputError], block: int = 1 << 23) -> Iterator[tuple[int, str]]:
    """``numbered_lines(read_utf8(path, error))`` a block of bytes at a time: every line that is not blank, numbered
    from 1, ending at "\\n" only, the byte-order mark stripped. A 1M-query golden set (110 MB) read whole was its
    bytes, its text and a list of its lines at once: ~300 MB above the run's peak while it loaded."""
    from .limits import max_bytes, too_large

    longest = max_bytes("line")
    lineno, offset, rest = 0, 0, b""
    try:
        with open_binary(path) as fh:
            while True:
                data = fh.read(block)
                lines = (rest + data).split(b"\n")
                rest = lines.pop() if data else b""
                if len(rest) > longest:  # a line not ended yet, already past the limit: never read further
                    raise too_large(f"{path}:{lineno + len(lines) + 1}", "a line", "line")
                for raw in lines:
                    if len(raw) > longest:
                        raise too_large(f"{path}:{lineno + 1}", "a line", "line")
                    lineno += 1
                    try:
                        line = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise error(f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                                    f"{offset + exc.start})") from None
                    offset += len(raw) + 1
                    if lineno == 1:
                        line = line.removeprefix("\ufeff")
                    if line.strip():
                        yield lineno, line
                if not data:
                    return
    except GZIP_ERRORS as exc:
        raise error(f"{path}: not a complete gzip file ({exc})") from None
