"""Doc ids of up to 8 bytes packed into uint64 keys (``io.packed_ids``): equal keys are equal ids, keys sort as
the ids do (Python's order), the ids come back from their keys; and the fast reader, which interns packed keys,
reads runs with short ids, long ids, and short ids giving way to long ones exactly as the line reader does."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.io import fast_trec, packed_ids, run_stream
from test_runfiles import assert_same, slow_read

pa = pytest.importorskip("pyarrow")

# Up to 8 bytes of UTF-8: ASCII, 2-byte (é) and 3-byte (中) characters, prefixes of one another.
short_ids = st.text(alphabet=st.sampled_from("aAz09_-.é中\u0080"), min_size=0, max_size=8).filter(
    lambda s: len(s.encode()) <= packed_ids.MAX_BYTES)


@settings(max_examples=200, deadline=None)
@given(st.lists(short_ids, min_size=1, max_size=50))
def test_keys_are_the_ids_in_order(ids):
    keys = packed_ids.pack(pa.array(ids, pa.string()))
    assert packed_ids.unpack(keys).to_pylist() == ids
    for i, a in enumerate(ids):  # equal keys exactly when equal ids, ordered as the ids
        assert [keys[i] == keys[j] for j in range(len(ids))] == [a == b for b in ids]
        assert [keys[i] < keys[j] for j in range(len(ids))] == [a < b for b in ids]
    positions = packed_ids.sorted_positions(np.unique(keys))
    assert positions.tolist() == list(range(len(positions)))


def test_a_slice_packs_as_its_own_array():
    ids = ["d0002738", "x", "", "abcdefgh", "é"]
    whole = pa.array(["head", *ids, "tail"], pa.string())
    assert packed_ids.pack(whole.slice(1, len(ids))).tolist() == packed_ids.pack(pa.array(ids)).tolist()


@pytest.mark.parametrize("ids", [["short", "longer_than_8"], ["a\x00b"], ["ab", "ab\x00"], ["中中中"]])
def test_what_does_not_pack(ids):
    assert packed_ids.pack(pa.array(ids, pa.string())) is None


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(run_stream, "BLOCK_BYTES", 4096)


def _lines(rng, n_queries, doc):
    # Two-decimal scores: many ties, which the doc ids (packed or not) break.
    return [f"q{q} Q0 {doc(rng)} {r + 1} {rng.integers(0, 20) / 10:.2f} run\n"
            for q in range(n_queries) for r in range(15)]


def _short(rng):
    return rng.choice(["d1", "d10", "d2", "é", "éa", "e", "d1é", "D"]) + str(rng.integers(0, 40))


@pytest.mark.parametrize("late_long_id", [False, True])
def test_runs_read_as_the_line_reader_reads_them(tmp_path, small_blocks, late_long_id):
    """Short ids throughout (packed), or a long id in the last block: the run is read again as strings."""
    rng = np.random.default_rng(7)
    lines = _lines(rng, 300, _short)
    if late_long_id:
        columns = lines[-1].split()
        columns[2] = "a-document-id-of-many-bytes"
        lines[-1] = " ".join(columns) + "\n"
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    assert path.stat().st_size > 10 * 4096
    run = fast_trec.read_run(path)
    assert ("a-document-id-of-many-bytes" in run.doc_vocab.tolist()) == late_long_id
    assert_same(run, slow_read(path))


@pytest.mark.parametrize("qrels_doc", ["d1é3", "a-document-id-of-many-bytes"])
def test_qrels_and_run_packed_or_not_evaluate_as_read_apart(tmp_path, small_blocks, qrels_doc):
    from harness.core.runtable import Qrels
    from harness.gold.load import read_qrels_file
    from harness.metrics.engine import evaluate

    rng = np.random.default_rng(8)
    (tmp_path / "run.trec").write_text("".join(_lines(rng, 200, _short)))
    judged = [f"q{q} 0 {_short(rng)} {rng.integers(-1, 3)}\n" for q in range(0, 220, 2)]
    (tmp_path / "qrels.txt").write_text("".join(dict.fromkeys(judged)) + f"q0 0 {qrels_doc} 2\n")
    qrels, run = fast_trec.read_qrels_and_run(tmp_path / "qrels.txt", tmp_path / "run.trec")
    assert run.doc_vocab is qrels.doc_vocab
    metrics = ["ap", "ndcg@5", "precision@3", "rr", "recall@10"]
    apart = evaluate(Qrels.from_dict(read_qrels_file(tmp_path / "qrels.txt")), slow_read(tmp_path / "run.trec"),
                     metrics)
    together = evaluate(qrels, run, metrics)
    assert together.per_query() == apart.per_query() and together.counts == apart.counts


def test_a_block_of_blank_lines(tmp_path, small_blocks):
    """A block with no rows (blank lines, CRLF ends) between blocks of hits reads as the line reader reads it."""
    rng = np.random.default_rng(9)
    lines = _lines(rng, 100, _short)
    path = tmp_path / "run.trec"
    path.write_bytes(("".join(lines[:700]) + "\n" * 9000 + "".join(lines[700:])).replace("\n", "\r\n").encode())
    run = fast_trec.read_run(path)
    assert run is not None  # read by the fast path, not declined
    assert_same(run, slow_read(path))
