"""Bad corpora, golden sets and run files: every problem is reported with its location."""

import json

import pytest

from harness.config.schema import CorpusConfig, GoldsetConfig
from harness.io.documents import load_corpus
from harness.core.errors import CorpusError, GoldSetError, RunFileError
from harness.gold.load import read_goldset, read_qrels_file
from harness.gold.resolve import resolve_goldset
from harness.io.runfiles import read_trec_run
from harness.core.types import Document


def test_corpus_problems_all_listed_with_lines(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n{"id": "b", "text": "  "}\nnot json\n'
                  b'{"text": "no id"}\n' + '{"id": "c", "text": "\xff"}\n'.encode("latin-1"))
    with pytest.raises(CorpusError) as exc:
        load_corpus(CorpusConfig(path=p))
    msg = str(exc.value)
    assert f"{p}:2: duplicate document id 'a' (first on line 1)" in msg
    assert f"{p}:3: document 'b' has an empty or missing 'text'" in msg
    assert f"{p}:4: not valid JSON" in msg and f"{p}:5: missing 'id'" in msg and f"{p}:6: not UTF-8" in msg


def test_folder_corpus_ids_are_relative_paths(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("hello")
    (tmp_path / "b.txt").write_text("world")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    warned = []  # a text file in another encoding is skipped like an unreadable PDF: named, and the rest read
    assert [d.doc_id for d in load_corpus(CorpusConfig(path=tmp_path, format="folder"), warned.append)] == [
        "b.txt", "sub/a.md"]
    assert warned[0].startswith(f"{tmp_path / 'bad.txt'}: not UTF-8 text (byte 0)")


def test_goldset_structural_problems_listed(tmp_path):
    p = tmp_path / "g.jsonl"
    rows = [{"id": "q1", "query": "a", "relevant": [{"doc": "d", "grade": "high"}]},
            {"id": "q1", "query": "b"}, {"id": "q3", "query": ""},
            {"id": "q4", "query": "c", "relevant": [{"doc": "d", "evidence": [{"start": 5, "end": 2}]}]},
            {"id": "q5", "query": "d", "relevnt": []}]
    p.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(GoldSetError) as exc:
        read_goldset(GoldsetConfig(path=p))
    msg = str(exc.value)
    assert "g.jsonl:1: query 'q1' relevant[0]: 'grade' must be a whole number" in msg
    assert "g.jsonl:2: duplicate query id 'q1'" in msg
    assert "g.jsonl:3: query 'q3' has an empty or missing 'query'" in msg
    assert "need 0 <= start < end, got 5..2" in msg
    assert "g.jsonl:5: unknown key(s) relevnt" in msg


def test_gold_checked_against_corpus_without_dropping_anything(tmp_path):
    p = tmp_path / "g.jsonl"
    rows = [{"id": "q1", "query": "a", "relevant": [{"doc": "ghost"}]},
            {"id": "q2", "query": "b", "relevant": [{"doc": "d", "evidence": [{"quote": "not there"}]}]},
            {"id": "q3", "query": "c", "relevant": [{"doc": "d", "evidence": [{"start": 0, "end": 99}]}]},
            {"id": "q4", "query": "d", "relevant": [{"doc": "d", "grade": 2, "evidence": [{"quote": "world"}]}]}]
    p.write_text("\n".join(json.dumps(r) for r in rows))
    gold, problems = resolve_goldset(read_goldset(GoldsetConfig(path=p)), {"d": Document("d", "hello world")}, "g")
    assert [(x.query_id, x.kind) for x in problems] == [("q1", "unknown_document"), ("q2", "quote_not_found"),
                                                         ("q3", "span_out_of_range")]
    assert len(gold.queries) == 4
    q4 = [j for j in gold.judgments if j.query_id == "q4"][0]
    assert (q4.relevance, q4.evidence[0].start, q4.evidence[0].end) == (2, 6, 11)


def test_qrels_errors_name_line(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text("q1 0 d1 1\nq1 0 d1 2\nq2 0 d3\nq3 0 d4 high\n")
    with pytest.raises(GoldSetError) as exc:
        read_qrels_file(p)
    msg = str(exc.value)
    assert ":2: duplicate judgment for query 'q1', doc 'd1' (first on line 1)" in msg
    assert ":4: relevance 'high' is not a number" in msg


def test_trec_run_errors_name_line(tmp_path):
    p = tmp_path / "run.trec"
    p.write_text("q1 Q0 d1 1 1.5 t\nq1 Q0 d2 2 abc t\n")
    with pytest.raises(RunFileError, match=r"run.trec:2: score 'abc' is not a number"):
        read_trec_run(p)
    p.write_text("q1 Q0 d1 1 1.5 t\nq1 Q0 d2 2\n")
    with pytest.raises(RunFileError, match=r"run.trec:2: expected 6 columns"):
        read_trec_run(p)


def test_trec_run_interleaved_queries_are_grouped(tmp_path):
    p = tmp_path / "run.trec"
    p.write_text("q2 Q0 b 1 2 t\nq1 Q0 a 1 3 t\nq2 Q0 c 2 1 t\n")
    run = read_trec_run(p)
    groups = {str(q): [str(run.doc_vocab[c]) for c in run.doc_codes[run.offsets[i]:run.offsets[i + 1]]]
              for i, q in enumerate(run.query_ids)}
    assert groups == {"q1": ["a"], "q2": ["b", "c"]}
