"""The run reader parses a TREC run block by block (bounded memory for a million-query run): a file read in many
small blocks gives the same run, vocabulary and metrics as one read in a single block and as the line reader."""

import numpy as np
import pytest

from harness.io import fast_trec
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
    monkeypatch.setattr(fast_trec, "BLOCK_BYTES", 4096)


@pytest.mark.parametrize("interleaved", [False, True])
def test_many_blocks_read_as_one(tmp_path, small_blocks, interleaved):
    path = tmp_path / "run.trec"
    _write_run(path, np.random.default_rng(1), interleaved)
    assert path.stat().st_size > 20 * 4096  # many blocks
    blocks = fast_trec.read_run(path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fast_trec, "BLOCK_BYTES", 1 << 26)
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


@pytest.mark.parametrize("last_line", ["q9 Q0 d1 1 nan run\n", "q9 Q0 d1 1 0.5 \n", "q9  Q0 d1 1 0.5 run\n"])
def test_a_problem_in_a_late_block_declines(tmp_path, small_blocks, last_line):
    path = tmp_path / "run.trec"
    _write_run(path, np.random.default_rng(3), interleaved=False)
    with path.open("a") as fh:
        fh.write(last_line)
    assert fast_trec.read_run(path) is None  # the line reader then reads it, naming the line
