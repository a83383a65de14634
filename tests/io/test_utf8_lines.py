"""``core.textfile.utf8_lines`` reads a file a block at a time and gives exactly the lines ``numbered_lines`` gives
of the whole text (``read_utf8``): the same numbers, the byte-order mark stripped, "\\n" the only line end, blank
lines skipped, bad UTF-8 named by line and file offset. Checked on random files with every block size down to 1."""

from __future__ import annotations

import gzip
import random

import pytest

from harness.core.errors import GoldSetError
from harness.io.jsonl import numbered_lines
from harness.io.textfile import read_utf8, utf8_lines

PIECES = ["a", "é", "\u2028", "{\"x\": 1}", " ", "\t", "\r", "\n", "\n\n", "日本", "\ufeff", "\\u00e9"]


def _text(rng: random.Random) -> str:
    text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 60)))
    return ("\ufeff" if rng.random() < 0.3 else "") + text


@pytest.mark.parametrize("seed", range(30))
def test_the_same_lines_as_the_whole_text(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / ("f.jsonl.gz" if seed % 3 == 0 else "f.jsonl")
    data = _text(rng).encode("utf-8")
    path.write_bytes(gzip.compress(data) if seed % 3 == 0 else data)
    want = list(numbered_lines(read_utf8(path, GoldSetError)))
    for block in (1, 2, 3, 7, 64, 1 << 23):
        assert list(utf8_lines(path, GoldSetError, block)) == want, block


def test_bad_utf8_is_named_by_line_and_offset_as_the_whole_read_names_it(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": "\xff"}\n')
    with pytest.raises(GoldSetError) as whole:
        read_utf8(path, GoldSetError)
    for block in (1, 4, 1 << 23):
        with pytest.raises(GoldSetError) as streamed:
            list(utf8_lines(path, GoldSetError, block))
        assert str(streamed.value) == str(whole.value) == f"{path}:3: not UTF-8 text (byte 0xff at offset 17)"
    path = tmp_path / "f.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n')[:-6])
    with pytest.raises(GoldSetError, match="not a complete gzip file"):
        list(utf8_lines(path, GoldSetError))
