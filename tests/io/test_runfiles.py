"""The TREC run reader's two paths (pyarrow's CSV reader, and whitespace splitting) read the same files the same
way, and every file the fast path declines still reads, or fails with the line named."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.io import fast_trec
from harness.core.errors import RunFileError
from harness.io.runfiles import read_trec_run

pytest.importorskip("pyarrow")


def slow_read(path):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fast_trec, "read_run", lambda p: None)
        return read_trec_run(path)


def sorted_vocab(run):
    """The run's vocabulary in sorted order, however the run keeps it."""
    if run.doc_order is None:
        return run.doc_vocab.tolist()
    return run.doc_vocab[np.argsort(run.doc_order)].tolist()


def assert_same(a, b):
    assert a.query_ids.tolist() == b.query_ids.tolist()
    assert a.offsets.tolist() == b.offsets.tolist()
    assert [a.doc_vocab[c] for c in a.doc_codes] == [b.doc_vocab[c] for c in b.doc_codes]
    assert sorted_vocab(a) == sorted_vocab(b) == sorted(set(b.doc_vocab.tolist()))
    assert a.scores.tolist() == b.scores.tolist()  # exact: both parse the decimal text to the nearest double
    assert a.ranks.tolist() == b.ranks.tolist()


ids = st.text(alphabet=st.sampled_from("abcXYZ019_-.éü中"), min_size=1, max_size=6)
lines = st.lists(st.tuples(st.sampled_from(["q1", "q2", "10", "q-é"]), ids,
                           st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: repr(round(f, 4)))),
                 min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lines, st.booleans())
def test_fast_and_exact_paths_agree(tmp_path_factory, rows, grouped):
    if grouped:
        rows = sorted(rows, key=lambda r: r[0])  # each query's lines together
    path = tmp_path_factory.mktemp("run") / "run.trec"
    path.write_text("".join(" ".join([q, "Q0", d, str(i), s, "tag"]) + "\n" for i, (q, d, s) in enumerate(rows, 1)),
                    encoding="utf-8")
    fast = fast_trec.read_run(path)
    assert fast is not None
    assert_same(fast, slow_read(path))


def test_vocab_is_in_python_string_order(tmp_path):
    path = tmp_path / "run.trec"
    docs = ["b", "a", "B", "é", "z", "中", "aa", "a b"[0]]
    path.write_text("".join(f"q Q0 {d} {i} {10 - i} t\n" for i, d in enumerate(docs, 1)), encoding="utf-8")
    run = fast_trec.read_run(path)
    assert sorted_vocab(run) == sorted(set(docs))  # doc_order ranks the vocabulary as Python sorts strings
    assert [run.doc_vocab[c] for c in run.doc_codes] == docs


@pytest.mark.parametrize("text", [
    "q Q0 d1 1 1.5 t\n\nq Q0 d2 2 1.0 t\n",        # a blank line
    "q  Q0 d1 1 1.5 t\nq Q0 d2 2 1.0 t\n",          # two spaces
    "q Q0 d1 1 1.5 t \nq Q0 d2 2 1.0 t\n",          # trailing space
    "q\tQ0 d1 1 1.5 t\nq Q0 d2 2 1.0 t\n",          # mixed separators
    "q\tQ0\td1\t1\t1.5\tt\nq\tQ0\td2\t2\t1.0\tt\n",  # tabs
    "q Q0 d1 1 1.5 t\r\nq Q0 d2 2 1.0 t\r\n",        # CRLF
])
def test_irregular_whitespace_still_reads(tmp_path, text):
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    run = read_trec_run(path)
    assert sorted_vocab(run) == ["d1", "d2"] and run.scores.tolist() == [1.5, 1.0]
    assert_same(run, slow_read(path))


@pytest.mark.parametrize("text", [
    "q\tQ0\td1\t1\t1.5\tt\nq\tQ0\td2\t2\t1.0\tt\n",            # a TSV export
    "q Q0 d1 1 1.5 t\r\nq Q0 d2 2 1.0 t\r\n",                      # CRLF line ends
])
def test_tab_delimited_and_crlf_files_take_the_fast_path(tmp_path, text):
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    fast = fast_trec.read_run(path)
    assert fast is not None and sorted_vocab(fast) == ["d1", "d2"] and fast.scores.tolist() == [1.5, 1.0]
    assert_same(fast, slow_read(path))


@pytest.mark.parametrize("text", [
    "q Q0 d1 1 1.5 t\rq Q0 d2 2 1.0 t\n",   # a lone CR: whitespace to the line reader, a line end to a CSV reader
    "q\tQ0\td1\t1\t1.5\tt\nq\tQ0 d2\t2\t1.0\tt\n",  # a space inside a tab-delimited line
    "q Q0 d1 1 1.5 t\x0b\n",               # a vertical tab
    "q Q0 d1 1 1.5 t\nq  d2 2 1.0 t\n",     # an empty Q0: five columns to the line reader
    "q Q0 d1 1 1.5 t\nq Q0 d2 2 1.0 \n",    # an empty tag
    "#q Q0 d0 1 9 t\nq Q0 d1 1 1.5 t\n",    # a comment line shaped like a run line
    "q Q0 d\u00a01 1 1.5 t\n",              # a no-break space: whitespace to Python, not to trec_eval
    "q Q0 d\x001 1 1.5 t\n",                # a control character in an id
    "q Q0 d1 1 nan t\n",                    # a NaN score
    "q Q0 d1 1 inf t\n",                    # an infinite score
    "q Q0 d1 1 1.5 t\nq Q0 d2 2 -inf t\n",
    "q Q0 d1 1 1e400 t\n",                  # a number past a float's range: infinity
    "q Q0 d1 1 1.5 t extra\n",              # a column after the tag
])
def test_files_the_fast_path_could_misread_go_to_the_line_reader(tmp_path, text):
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    assert fast_trec.read_run(path) is None


def test_a_tab_inside_a_column_is_a_separator_on_both_paths(tmp_path):
    # Seven columns, as trec_eval 10 reads it: doc 'd', rank 1, score 1, tag 1.5, and a seventh column it ignores.
    path = tmp_path / "run.trec"
    path.write_text("q Q0 d\t1 1 1.5 t\n")
    run = read_trec_run(path)
    assert run.doc_vocab.tolist() == ["d"] and run.scores.tolist() == [1.0] and run.ranks.tolist() == [1]


@pytest.mark.parametrize("text, message", [
    ("q Q0 d1 1 1.5 t\nq Q0 d2 2 abc t\n", r"run.trec:2: score 'abc' is not a number"),
    ("q Q0 d1 1 1.5 t\nq Q0 d2 2 NaN t\nq Q0 d3 x 1 t\n", r"run.trec:3: rank 'x' is not a whole number"),
    ("q Q0 d1 1 1.5 t\nq Q0 d2 2 1.0\n", r"run.trec:2: expected 6 columns"),
    ("q Q0 d1 1 1.5 t\nq Q0 d2 2 1.0\n#\n", r"run.trec:2: expected 6 columns"),
    ("q Q0 d1 1 1.5 t\nq Q0 d2 2 nan t\n", r"run.trec:2: score 'nan' is not a number \(a NaN score"),
    ("q Q0 d1 1 inf t\nq Q0 d2 2 1.0 t\n", r"run.trec:1: score 'inf' is not a finite number"),
    ("q Q0 d1 1 1.5 t\nq Q0 d2 2 -inf t\n", r"run.trec:2: score '-inf' is not a finite number"),
    ("q Q0 d1 1 1e400 t\nq Q0 d2 2 1.0 t\n", r"run.trec:1: score '1e400' is not a finite number"),
    ("q\tQ0\td1\t1\t-1e999\tt\n", r"run.trec:1: score '-1e999' is not a finite number"),
])
def test_malformed_lines_are_named_whichever_path_reads_first(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(RunFileError, match=message):
        read_trec_run(path)


def test_large_file_reads_in_blocks(tmp_path):
    # Bigger than pyarrow's 1 MB block: the reader's multithreaded chunks must join back in file order.
    rng = np.random.default_rng(3)
    path = tmp_path / "run.trec"
    with path.open("w") as fh:
        for q in range(800):
            for r in range(100):
                fh.write(f"q{q} Q0 doc{rng.integers(0, 5000)} {r + 1} {rng.random():.6f} run\n")
    assert path.stat().st_size > 2_000_000
    assert_same(fast_trec.read_run(path), slow_read(path))


def write_qrels(path, rows):
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows), encoding="utf-8")


qrels_rows = st.lists(st.tuples(st.sampled_from(["q1", "q2", "10", "q-é"]), ids, st.integers(-1, 3)),
                      min_size=1, max_size=30, unique_by=lambda r: (r[0], r[1]))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(qrels_rows)
def test_fast_qrels_reader_matches_the_line_reader(tmp_path_factory, rows):
    from harness.gold.load import read_qrels_file

    path = tmp_path_factory.mktemp("qrels") / "qrels.txt"
    write_qrels(path, rows)
    fast = fast_trec.read_qrels(path)
    assert fast is not None
    assert fast.to_dict() == read_qrels_file(path)
    assert list(fast.to_dict()) == list(read_qrels_file(path))  # queries in the same order


@settings(max_examples=40, deadline=None, derandomize=True)
@given(qrels_rows, lines)
def test_qrels_and_run_read_together_evaluate_as_read_apart(tmp_path_factory, qrows, rows):
    from harness.gold.load import read_qrels_file
    from harness.metrics.engine import evaluate
    from harness.core.runtable import Qrels

    folder = tmp_path_factory.mktemp("pair")
    write_qrels(folder / "qrels.txt", qrows)
    (folder / "run.trec").write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(rows, 1)),
                                     encoding="utf-8")
    qrels, run = fast_trec.read_qrels_and_run(folder / "qrels.txt", folder / "run.trec")
    assert run.doc_vocab is qrels.doc_vocab  # one vocabulary: the engine joins on codes
    metrics = ["ap", "ndcg@5", "precision@3", "rr", "rprec"]
    apart = evaluate(Qrels.from_dict(read_qrels_file(folder / "qrels.txt")), slow_read(folder / "run.trec"), metrics)
    together = evaluate(qrels, run, metrics)
    assert together.per_query() == apart.per_query()
    assert together.counts == apart.counts


@pytest.mark.parametrize("text", [
    "q1 0 d1 1\nq1 0 d1 2\n",         # a duplicate judgment: the line reader names both lines
    "q1 0 d1 1.0\n",                  # a float grade: the line reader accepts it
    "query-id corpus-id score\nq1 d1 1\n",  # a BEIR header
    "q1\td1\t1\n",                    # BEIR TSV
    "q1  d1 1\n",                      # an empty iteration column
    "q1 0 d1 2147483648\n",            # a grade out of range
    "#q1 0 d0 1\nq1 0 d1 1\n",         # a comment line
])
def test_fast_qrels_reader_declines_what_the_line_reader_must_judge(tmp_path, text):
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    assert fast_trec.read_qrels(path) is None
    assert fast_trec.read_qrels_and_run(path, path) is None


def test_cli_eval_reports_a_duplicate_judgment_by_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 1\nq1 0 d1 0\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 2.0 t\n")
    result = subprocess.run([sys.executable, "-m", "harness.cli.main", "eval", str(tmp_path / "qrels.txt"),
                             str(tmp_path / "run.trec")], capture_output=True, text=True)
    assert result.returncode == 2
    assert ":3: duplicate judgment for query 'q1', doc 'd1' (first on line 1)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["run", "qrels", "jsonl-run"])
def test_bytes_that_are_not_utf8_are_named_by_file_and_line(tmp_path, kind):
    from harness.core.errors import GoldSetError
    from harness.gold.load import read_qrels_file
    from harness.io.runfiles import read_run

    line1 = {"run": b"q Q0 d1 1 1.0 t\n", "qrels": b"q 0 d1 1\n", "jsonl-run": b'{"query_id": "q", "hits": []}\n'}[kind]
    line2 = {"run": b"q Q0 caf\xe9 2 0.5 t\n", "qrels": b"q 0 caf\xe9 1\n",
             "jsonl-run": b'{"query_id": "caf\xe9", "hits": []}\n'}[kind]
    path = tmp_path / ("run.jsonl" if kind == "jsonl-run" else "file.txt")
    path.write_bytes(line1 + line2)
    read, error = (read_qrels_file, GoldSetError) if kind == "qrels" else (read_run, RunFileError)
    with pytest.raises(error, match=r"file.txt:2: not UTF-8 text|run.jsonl:2: not UTF-8 text"):
        read(path)


def test_encoding_against_a_large_vocabulary_hashes_in_arrow_and_agrees_with_the_dict_path():
    from harness.core.runtable import encode

    vocab = np.array(sorted(f"doc{i:06d}" for i in range(120_000)), dtype=object)
    ids = ["doc000007", "nope", "doc119999", "doc000007", "é"]
    assert encode(vocab, ids).tolist() == [7, -1, 119_999, 7, -1]  # 120k + 5 > the arrow threshold
    assert encode(vocab[:50], ids[:2]).tolist() == [7, -1]  # the dict path


def test_gzipped_runs_and_qrels_read_like_plain_ones(tmp_path):
    import gzip

    from harness.metrics.engine import evaluate

    run_text = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.0 t\n"
    qrels_text = "q1 0 d2 1\nq2 0 d3 2\n"
    (tmp_path / "run.trec").write_text(run_text)
    (tmp_path / "qrels.txt").write_text(qrels_text)
    (tmp_path / "run.trec.gz").write_bytes(gzip.compress(run_text.encode()))
    (tmp_path / "qrels.txt.gz").write_bytes(gzip.compress(qrels_text.encode()))
    assert_same(fast_trec.read_run(tmp_path / "run.trec.gz"), slow_read(tmp_path / "run.trec"))
    assert_same(slow_read(tmp_path / "run.trec.gz"), slow_read(tmp_path / "run.trec"))
    plain = evaluate(*fast_trec.read_qrels_and_run(tmp_path / "qrels.txt", tmp_path / "run.trec"), ["ap", "rr"])
    zipped = evaluate(*fast_trec.read_qrels_and_run(tmp_path / "qrels.txt.gz", tmp_path / "run.trec.gz"), ["ap", "rr"])
    assert zipped.per_query() == plain.per_query() == {"q1": {"ap": 0.5, "rr": 0.5}, "q2": {"ap": 1.0, "rr": 1.0}}


def test_a_broken_gzip_file_is_an_input_error(tmp_path):
    import gzip

    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 2.0 t\n" * 1000)[:-30])  # truncated
    with pytest.raises(RunFileError, match=r"run.trec.gz: not a complete gzip file"):
        read_trec_run(path)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(RunFileError, match=r"run.trec.gz: not a complete gzip file"):
        read_trec_run(path)
