"""Reading a user's text file: bytes that are not UTF-8 are an input error naming the file and line, not a crash."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError


def read_utf8(path: Path, error: type[InputError]) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
