"""core.jsonl: the one JSONL line rule shared by corpora, golden sets, answers, sheets and runs."""

import json

import pytest

from harness.config.schema import CorpusConfig
from harness.core.errors import CorpusError
from harness.io.jsonl import jsonl_rows, numbered_lines, parse_line
from harness.io.documents import load_corpus


def test_lines_end_at_newline_only_and_blank_lines_keep_their_numbers():
    text = '{"a": "x\u2028y"}\n\n  \n[1]\r\n'
    assert list(numbered_lines(text)) == [(1, '{"a": "x\u2028y"}'), (4, "[1]\r")]
    assert list(jsonl_rows(text)) == [(1, {"a": "x\u2028y"}, None), (4, [1], None)]


def test_a_bad_line_is_described_not_raised():
    deep = "[" * 100_000 + "]" * 100_000
    assert parse_line("{oops") == (None, "not valid JSON (Expecting property name enclosed in double quotes)")
    assert parse_line(deep) == (None, "nested too deeply")
    assert [(n, bad) for n, _, bad in jsonl_rows('{"a": 1}\n{oops\n')] == [
        (1, None), (2, "not valid JSON (Expecting property name enclosed in double quotes)")]


def test_a_corpus_line_nested_too_deeply_is_a_located_problem(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_text(json.dumps({"id": "d1", "text": "fine"}) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n{oops\n")
    with pytest.raises(CorpusError) as info:
        load_corpus(CorpusConfig(path=p, format="jsonl"))
    assert info.value.problems == [f"{p}:2: nested too deeply", f"{p}:3: not valid JSON (Expecting property name "
                                                                 f"enclosed in double quotes)"]
