"""The run reader parses a TREC run block by block (bounded memory for a million-query run): a file read in many
small blocks gives the same run, vocabulary and metrics as one read in a single block and as the line reader."""

import numpy as np
import pytest

from harness.io import fast_trec, run_stream
from test_runfiles import assert_same, slow_read

pytest.importorskip("pyarrow")


def _write_run(path, rng, interleaved: bool, n_queries=300, depth=20):
    rows = [(f"q{q}", f"doc{rng.integers(0, 2000)}", r + 1, f"{rng.random():.4f}")
            for q in range(n_queries) for r in range(depth)]
    if interleaved:
        rows = [rows[i] for i in rng.permutation(len(rows))]
    path.write_text("".join(f"{q} Q0 {d} {r} {s} run\n" for q, d, r, s in rows))


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(run_stream, "BLOCK_BYTES", 4096)


@pytest.mark.parametrize("interleaved", [False, True])
def test_many_blocks_read_as_one(tmp_path, small_blocks, interleaved):
    path = tmp_path / "run.trec"
    _write_run(path, np.random.default_rng(1), interleaved)
    assert path.stat().st_size > 20 * 4096  # many blocks
    blocks = fast_trec.read_run(path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(run_stream, "BLOCK_BYTES", 1 << 26)
        whole = fast_trec.read_run(path)
    assert_same(blocks, slow_read(path))
    assert blocks.doc_vocab.tolist() == whole.doc_vocab.tolist()  # first-appearance order across blocks
    assert blocks.doc_codes.tolist() == whole.doc_codes.tolist()


def test_qrels_and_run_in_blocks_evaluate_as_read_apart(tmp_path, small_blocks):
    from harness.core.runtable import Qrels
    from harness.gold.load import read_qrels_file
    from harness.metrics.engine import evaluate

    rng = np.random.default_rng(2)
    _write_run(tmp_path / "run.trec", rng, interleaved=False)
    (tmp_path / "qrels.txt").write_text("".join(f"q{q} 0 doc{d} {rng.integers(0, 3)}\n" for q in range(0, 320, 2)
                                                for d in rng.choice(2000, 6, replace=False)))
    qrels, run = fast_trec.read_qrels_and_run(tmp_path / "qrels.txt", tmp_path / "run.trec")
    assert run.doc_vocab is qrels.doc_vocab
    assert qrels.doc_vocab[:len(set(qrels.doc_ids.tolist()))].tolist() == list(dict.fromkeys(qrels.doc_ids.tolist()))
    metrics = ["ap", "ndcg@5", "precision@3", "rr", "recall@10"]
    apart = evaluate(Qrels.from_dict(read_qrels_file(tmp_path / "qrels.txt")), slow_read(tmp_path / "run.trec"),
                     metrics)
    together = evaluate(qrels, run, metrics)
    assert together.per_query() == apart.per_query() and together.counts == apart.counts


@pytest.mark.parametrize("last_line", ["q9 Q0 d1 1 nan run\n", "q9 Q0 d1 1 inf run\n", "q9 Q0 d1 1 1e400 run\n", "q9 Q0 d1 1 0.5 \n", "q9  Q0 d1 1 0.5 run\n"])
def test_a_problem_in_a_late_block_declines(tmp_path, small_blocks, last_line):
    path = tmp_path / "run.trec"
    _write_run(path, np.random.default_rng(3), interleaved=False)
    with path.open("a") as fh:
        fh.write(last_line)
    assert fast_trec.read_run(path) is None  # the line reader then reads it, naming the line


def _blocks_of(data: bytes, size: int) -> list[bytes]:
    import io

    from harness.io.trec_blocks import line_blocks
    return [bytes(b.view()) for b in line_blocks(io.BytesIO(data).read, size)]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 16, 64, 1000])
@pytest.mark.parametrize("data", [b"a b\ncc d\n", b"a b\ncc d", b"\n\nlong line with no end" * 3, b"x\r\ny\r\n",
                                  b"one\n", b"no newline at all"])
def test_line_blocks_are_whole_lines_in_order(data, size):
    blocks = _blocks_of(data, size)
    assert b"".join(blocks) == data  # nothing lost, doubled or reordered
    assert all(b.endswith(b"\n") for b in blocks[:-1]) and all(blocks)
    assert all(b.count(b"\n") >= 1 or b is blocks[-1] for b in blocks)


@pytest.mark.parametrize("text, clean", [("a b\n", True), ("a\tb\n", False), ("a b\r\n", True), ("a\rb\n", False),
                                         ("a\x0bb\n", False), ("a\x0cb\n", False), ("a  b\n", True)])
def test_only_the_delimiter_separates(text, clean):
    from harness.io.trec_blocks import line_blocks, only_delimiter_separates
    import io
    blocks = list(line_blocks(io.BytesIO(text.encode()).read, 64))
    # (two spaces in a row are an empty column, which the parsed columns show, not this byte check)
    assert all(only_delimiter_separates(b, b" ") for b in blocks) is clean


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_lines_across_block_edges_read_as_the_line_reader_reads(tmp_path, small_blocks, line_end):
    """Lines of every length cross the 4 KB block edges (their joints are parsed as blocks of their own)."""
    rng = np.random.default_rng(4)
    path = tmp_path / "run.trec"
    rows = [f"q{q} Q0 {'d' * int(rng.integers(1, 300))}{rng.integers(0, 50)} {r + 1} {rng.random():.5f} t"
            for q in range(60) for r in range(15)]
    path.write_bytes(line_end.join(rows).encode() + (b"" if line_end == "\n" else line_end.encode()))
    fast = fast_trec.read_run(path)
    assert fast is not None
    assert_same(fast, slow_read(path))
