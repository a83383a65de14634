"""Half a UTF-16 surrogate pair written as a JSON or YAML escape (``"\\ud800"`` with no other half) is no character:
json.loads, pydantic and PyYAML accept it, and the first UTF-8 output, hash or column of its text crashed with a
traceback (a golden-set query, a corpus document, a results.json opened by ``harness report``). Every reader now
refuses it with exit 2 and the line; pairs, escaped backslashes and other escapes still read as before."""

from __future__ import annotations

import json

import pytest

from clihelp import DEMO, assert_input_error, harness
from harness.io.jsonl import lone_surrogate, parse_line


@pytest.mark.parametrize("text, found", [
    (r'"\ud800"', (1, r"\ud800")),  # a high half alone
    (r'"\udc00"', (1, r"\udc00")),  # a low half alone
    (r'"a\uDBFF b"', (2, r"\uDBFF")),  # upper case, followed by text
    (r'"\ud83d\ude00"', None),  # a pair: one character
    (r'"\uD83D\uDE00 and \ud83d"', (18, r"\ud83d")),  # a pair, then a lone half
    (r'"\ude00\ud83d"', (1, r"\ude00")),  # the halves in the wrong order
    (r'"\ud83d\u0041"', (1, r"\ud83d")),  # a high half before another escape
    (r'"\\ud800"', None),  # an escaped backslash, then text
    (r'"\\\ud800"', (3, r"\ud800")),  # an escaped backslash, then the escape
    (r'"\u00e9 \u2028 \n"', None),  # other escapes
    ('"plain \U0001F600 text"', None),
])
def test_lone_surrogate_finds_exactly_the_unpaired_halves(text, found):
    assert lone_surrogate(text.encode()) == found
    value, why = parse_line(text)
    assert (why is None) == (found is None)
    if found is None:
        assert value == json.loads(text)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # every accepted value can be written
    else:
        assert found[1] in why and "not a character" in why


def _config(tmp, corpus, goldset):
    path = tmp / "cfg.yaml"
    path.write_text(f"name: t\ncorpus: {{path: {corpus}}}\ngoldset: {{path: {goldset}}}\n"
                    "retriever: {kind: bm25, backend: fast}\ncutoff: {k: 5}\n")
    return path


def test_a_golden_set_query_with_half_a_pair_is_refused_with_its_line(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q1", "query": "fine \\ud83d\\ude00", "relevant": ["install-desktop"]}\n'
                    '{"id": "q2", "query": "broken \\ud800 text", "relevant": ["install-desktop"]}\n')
    proc = harness("run", _config(tmp_path, DEMO / "corpus.jsonl", gold), "--out", tmp_path / "out")
    assert_input_error(proc, f"{gold}:2: holds \\ud800", "not a character")
    assert ":1:" not in proc.stderr and not (tmp_path / "out").exists()


def test_a_yaml_golden_set_and_a_config_with_half_a_pair_are_refused(tmp_path):
    gold = tmp_path / "gold.yaml"
    gold.write_text('queries:\n  - id: q1\n    query: "bad \\udfff text"\n    relevant: [install-desktop]\n')
    proc = harness("validate", _config(tmp_path, DEMO / "corpus.jsonl", gold))
    assert_input_error(proc, f"{gold} (line 3", "\\udfff", "not a character")
    config = tmp_path / "bad.yaml"
    config.write_text(_config(tmp_path, DEMO / "corpus.jsonl", DEMO / "goldset.jsonl").read_text()
                      .replace("name: t", 'name: "t\\ud800"'))
    assert_input_error(harness("validate", config), f"{config} (line 1", "\\ud800")


def test_a_corpus_document_with_half_a_pair_is_refused(tmp_path):
    lines = (DEMO / "corpus.jsonl").read_text().splitlines()
    lines[3] = lines[3].replace('"text": "', '"text": "\\udc80', 1)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    assert_input_error(harness("validate", _config(tmp_path, corpus, DEMO / "goldset.jsonl")), f"{corpus}:4: holds \\udc80")


@pytest.mark.parametrize("layout", ["whole", "record per line"])
def test_a_results_json_with_half_a_pair_is_refused_by_report(tmp_path, monkeypatch, layout):
    """A small run's indented results.json is read whole, a large run's a record at a time: both name the line."""
    from harness.result import selection

    if layout != "whole":  # the writer's one-record-a-line layout, as above KEEP_ALL_HITS_UP_TO queries
        monkeypatch.setattr(selection, "KEEP_ALL_HITS_UP_TO", 10)
        monkeypatch.setattr(selection.select, "__defaults__", (12,))  # its cap (SHOWN_QUERIES), bound at import
        monkeypatch.setattr(selection, "SAMPLE", 3)
    proc = harness("run", _config(tmp_path, DEMO / "corpus.jsonl", DEMO / "goldset.jsonl"), "--out",
                   tmp_path / "run", "-q")
    assert proc.returncode == 0, proc.stderr
    results = tmp_path / "run" / "results.json"
    lines = results.read_text().split("\n")
    assert (lines.count('  "queries": [') == 1 and lines[-3].startswith("    {")) == (layout != "whole")
    at = next(i for i, line in enumerate(lines) if '"How do I install Orbit on macOS?"' in line)
    lines[at] = lines[at].replace("How do I", "How do \\ud800 I")
    results.write_text("\n".join(lines))
    proc = harness("report", results, "--out", tmp_path / "r.html")
    assert_input_error(proc, str(results), f"line {at + 1}" if layout != "whole" else f":{at + 1}:", "\\ud800")
    assert not (tmp_path / "r.html").exists()
