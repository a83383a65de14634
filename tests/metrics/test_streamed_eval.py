"""``harness eval`` scores a TREC run as it reads it (``metrics.streamed``): a batch of whole queries at a time,
each batch with its own doc vocabulary. Its table must be the table of the whole run read by the line readers
(``io.runfiles``, ``gold.load``) and scored at once: every value, every count, whatever the batches cut through
(a query spanning blocks, ties broken by doc id, duplicates, unjudged and absent queries, ids that do not pack).
A run whose queries are not together is declined and read whole."""

import gzip

import numpy as np
import pytest

from harness.core.runtable import Qrels
from harness.gold.load import read_qrels_file
from harness.io import run_batches, run_stream
from harness.io.runfiles import read_trec_run
from harness.metrics import streamed
from harness.metrics.engine import evaluate

pytest.importorskip("pyarrow")

METRICS = ["ap", "ap@5", "ndcg@5", "ndcg", "dcg@3", "P@3", "rr", "recall@10", "rprec", "hit@1", "nothing_found@5", "bpref", "infAP", "judged@5"]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 KB: a run of a few hundred queries is read in dozens of batches, queries cut at block ends."""
    monkeypatch.setattr(run_batches, "BATCH_BYTES", 4096)
    monkeypatch.setattr(run_stream, "BLOCK_BYTES", 4096)


def _doc(rng, long_ids: bool) -> str:
    short = rng.choice(["d1", "d10", "d2", "é", "éa", "e", "d1é", "D"]) + str(rng.integers(0, 40))
    return short + "-of-a-longer-document-id" if long_ids and rng.random() < 0.3 else short


def _run_lines(rng, queries, depth=15, long_ids=False):
    # Two-decimal scores: many ties, broken by doc id; a doc may repeat in a query (a duplicate, dropped).
    return [f"{q} Q0 {_doc(rng, long_ids)} {r + 1} {rng.integers(0, 20) / 10:.2f} run\n"
            for q in queries for r in range(rng.integers(1, depth + 1))]


def _qrels_lines(rng, queries, long_ids=False):
    judged = {(q, _doc(rng, long_ids)): rng.integers(-1, 4) for q in queries for _ in range(4)}  # one per doc
    return [f"{q} 0 {doc} {grade}\n" for (q, doc), grade in judged.items()]


def _write(tmp_path, run_lines, qrels_lines, gz=False):
    run = tmp_path / ("run.trec.gz" if gz else "run.trec")
    data = "".join(run_lines).encode()
    run.write_bytes(gzip.compress(data) if gz else data)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(qrels_lines))
    return qrels, run


def _whole(qrels, run, **options):
    """The reference: both files read by the line readers, the run scored at once."""
    return evaluate(Qrels.from_dict(read_qrels_file(qrels)), read_trec_run(run), METRICS, **options)


def assert_same_table(got, want):
    assert got is not None, "the streamed path declined the files"
    assert got.per_query() == want.per_query()
    assert got.mean() == want.mean()
    assert got.counts == want.counts and got.conventions == want.conventions


# ---- the same table as the whole run's ---------------------------------------------------------------------------

@pytest.mark.parametrize("spill", [False, True])
@pytest.mark.parametrize("options", [{}, {"order": "rank"}, {"trec_compat": True}, {"query_policy": "zero"}])
def test_batches_score_as_the_whole_run(tmp_path, small_blocks, options, spill, monkeypatch):
    """(``spill``: the table's values go to a temp file, as a run of more than SPILL_VALUES_ABOVE queries' do.)"""
    from harness.io.spilled import SpilledRows
    from harness.metrics import engine

    if spill:
        monkeypatch.setattr(engine, "SPILL_VALUES_ABOVE", 0)
    rng = np.random.default_rng(1)
    run_queries = [f"q{i}" for i in range(300)]
    judged = [f"q{i}" for i in range(0, 340, 2)]  # some run queries unjudged, some judged ones absent
    qrels, run = _write(tmp_path, _run_lines(rng, run_queries), _qrels_lines(rng, judged))
    assert run.stat().st_size > 10 * 4096
    got = streamed.evaluate_files(qrels, run, METRICS, **options)
    assert_same_table(got, _whole(qrels, run, **options))
    assert got.counts["unjudged_run_queries"] == 150 and got.counts["absent_from_run"] == 20
    assert isinstance(got.values, SpilledRows) == spill


def test_one_query_across_many_blocks(tmp_path, small_blocks):
    """A query of 2,000 hits spans several 4 KB blocks; batches carry it on until it ends."""
    rng = np.random.default_rng(2)
    lines = _run_lines(rng, ["q1"], depth=1) + [
        f"q2 Q0 d{i % 700} {i + 1} {1 - i / 5000:.4f} run\n" for i in range(2000)] + _run_lines(rng, ["q3", "q4"])
    qrels, run = _write(tmp_path, lines, _qrels_lines(rng, ["q1", "q2", "q3", "q4", "q5"]) + ["q2 0 d5 2\n"])
    assert_same_table(streamed.evaluate_files(qrels, run, METRICS), _whole(qrels, run))


@pytest.mark.parametrize("where", ["run", "qrels", "both"])
def test_ids_that_do_not_pack(tmp_path, small_blocks, where):
    """Doc ids longer than 8 bytes in the run (read again as strings), in the qrels, or in both."""
    rng = np.random.default_rng(3)
    queries = [f"q{i}" for i in range(200)]
    qrels, run = _write(tmp_path, _run_lines(rng, queries, long_ids=where != "qrels"),
                        _qrels_lines(rng, queries, long_ids=where != "run"))
    assert_same_table(streamed.evaluate_files(qrels, run, METRICS), _whole(qrels, run))


def test_a_long_id_late_in_the_run(tmp_path, small_blocks):
    """Batches already scored packed when a doc id that does not pack comes: the run is scored again as strings."""
    rng = np.random.default_rng(7)
    queries = [f"q{i}" for i in range(200)]
    lines = _run_lines(rng, queries)
    lines[-1] = lines[-1].split()[0] + " Q0 a-document-id-of-many-bytes 99 0.001 run\n"
    judged = _qrels_lines(rng, queries) + [lines[-1].split()[0] + " 0 a-document-id-of-many-bytes 1\n"]
    qrels, run = _write(tmp_path, lines, judged)
    assert_same_table(streamed.evaluate_files(qrels, run, METRICS), _whole(qrels, run))


def test_long_query_ids_and_gzip(tmp_path, small_blocks):
    """Query ids longer than 8 bytes are looked up by name; a gzip run is read the same way."""
    rng = np.random.default_rng(4)
    queries = [f"query-number-{i}" for i in range(150)] + [f"q{i}" for i in range(50)]
    qrels, run = _write(tmp_path, _run_lines(rng, queries), _qrels_lines(rng, queries[::3] + ["absent-query-id"]),
                        gz=True)
    assert_same_table(streamed.evaluate_files(qrels, run, METRICS), _whole(qrels, run))


# ---- what it declines ---------------------------------------------------------------------------------------------

def test_a_query_met_again_far_from_its_rows(tmp_path, small_blocks, monkeypatch):
    """q3 again after the other queries: the run is read again through buckets (not whole), with the same table."""
    from harness.io import run_buckets

    rng = np.random.default_rng(5)
    lines = _run_lines(rng, [f"q{i}" for i in range(100)])
    lines = lines + [f"q3 Q0 late {1000} 0.01 run\n"]  # q3 again, far from its other rows
    qrels, run = _write(tmp_path, lines, _qrels_lines(rng, [f"q{i}" for i in range(100)]))
    spread = []
    real = run_buckets.query_batches
    monkeypatch.setattr(run_buckets, "query_batches", lambda *a: spread.append(a) or real(*a))
    assert_same_table(streamed.evaluate_files(qrels, run, METRICS), _whole(qrels, run))
    assert spread


@pytest.fixture
def small_buckets(monkeypatch):
    """Buckets of ~8 KB of run text and batches of at most 50 rows: a run is spread over many files, and a bucket
    read back in several batches (a query of more rows is one batch of its own)."""
    from harness.io import run_buckets

    monkeypatch.setattr(run_buckets, "BUCKET_BYTES", 8192)
    monkeypatch.setattr(run_buckets, "BATCH_ROWS", 50)


@pytest.mark.parametrize("options", [{}, {"order": "rank"}, {"trec_compat": True}, {"query_policy": "zero"}])
@pytest.mark.parametrize("how", ["shuffled", "by rank", "long ids", "gzip"])
def test_a_run_whose_queries_are_not_together(tmp_path, small_blocks, small_buckets, options, how, monkeypatch):
    """Rows in random order, or rank by rank (every query's first hit, then every second...), with ids that do not
    pack, or gzip: scored through buckets, the same table as the whole run's (duplicates and ties included: a
    query's rows keep their file order)."""
    rng = np.random.default_rng(8)
    queries = [f"q{i}" for i in range(120)] + ["a-query-id-of-many-bytes"]
    lines = _run_lines(rng, queries, long_ids=how == "long ids")
    lines += [f"q1 Q0 d1 {900 + i} 0.5 run\n" for i in range(70)]  # one query of more rows than BATCH_ROWS
    if how == "by rank":
        lines = sorted(lines, key=lambda line: int(line.split()[3]))
    else:
        lines = list(rng.permutation(lines))
    qrels, run = _write(tmp_path, lines, _qrels_lines(rng, queries[::2] + ["absent"], long_ids=how == "long ids"),
                        gz=how == "gzip")
    if how == "shuffled":  # each batch's judged rows in no order, written to a spilled table
        from harness.metrics import engine

        monkeypatch.setattr(engine, "SPILL_VALUES_ABOVE", 0)
    got = streamed.evaluate_files(qrels, run, METRICS, **options)
    assert_same_table(got, _whole(qrels, run, **options))


def test_buckets_give_whole_queries_in_file_order(tmp_path, small_blocks, small_buckets):
    from harness.io import run_buckets

    rng = np.random.default_rng(9)
    lines = list(rng.permutation(_run_lines(rng, [f"q{i}" for i in range(80)])))
    _, run = _write(tmp_path, lines, [])
    rows: dict[str, list] = {}
    for line in lines:
        q, _, doc, rank, score, _ = line.split()
        rows.setdefault(q, []).append((doc, float(score), int(rank)))
    got: dict[str, list] = {}
    for packed in (True, False):
        got.clear()
        for batch in run_buckets.query_batches(run, packed):
            assert len(batch.offsets) == len(batch.query_ids) + 1 and batch.offsets[-1] <= max(50, batch.offsets[1])
            docs = packed_ids_unpacked(batch.docs) if packed else batch.docs.to_pylist()
            for i, q in enumerate(batch.query_ids.to_pylist()):
                assert q not in got  # each query in one batch, whole
                lo, hi = batch.offsets[i], batch.offsets[i + 1]
                got[q] = list(zip(docs[lo:hi], batch.scores[lo:hi].tolist(), batch.ranks[lo:hi].tolist()))
        assert got == rows


def test_a_query_ids_bucket_does_not_depend_on_its_block():
    """Blocks whose ids all pack are hashed as keys at once, others id by id: an id gets the same bucket either way."""
    import pyarrow as pa

    from harness.io import run_buckets

    short = [f"q{i}" for i in range(500)] + ["é", "12345678", "x"]
    for n in (1, 7, 64):
        together = run_buckets.bucket_of(pa.array(short), n).tolist()
        alone = run_buckets.bucket_of(pa.array(short + ["a-query-id-of-many-bytes"]), n).tolist()[:-1]
        assert together == alone and all(0 <= b < n for b in together)
        assert n == 1 or len(set(together)) == n  # spread over every bucket


def packed_ids_unpacked(keys):
    from harness.io import packed_ids

    return packed_ids.unpack(keys).to_pylist()


def test_an_unjudged_query_split_in_two_is_counted_once(tmp_path):
    """Its rows are never scored, so where they lie does not matter; it is counted once, as the whole read does."""
    qrels, run = _write(tmp_path, ["a Q0 d1 1 1 r\n", "b Q0 d1 1 1 r\n", "a Q0 d2 2 0.5 r\n"], ["b 0 d1 1\n"])
    got = streamed.evaluate_files(qrels, run, METRICS)
    assert_same_table(got, _whole(qrels, run))
    assert got.counts["unjudged_run_queries"] == 1


@pytest.mark.parametrize("run_text", ["", "# only a comment\n", "q1 Q0 d1 1 nan r\n", "q1 Q0 d\x01 1 1 r\n",
                                      "q1 Q0 d1 1 inf r\n", "q1 Q0 d1 1 -inf r\n", "q1 Q0 d1 1 1e400 r\n"])
def test_what_only_the_line_reader_can_judge_is_declined(tmp_path, run_text):
    qrels, run = _write(tmp_path, [run_text], ["q1 0 d1 1\n"])
    assert streamed.evaluate_files(qrels, run, METRICS) is None


def test_the_cli_gives_the_whole_runs_numbers_either_way(tmp_path):
    """Streamed (queries together) or read whole (not together): `harness eval` prints the same table."""
    from clihelp import harness

    rng = np.random.default_rng(6)
    lines = _run_lines(rng, [f"q{i}" for i in range(60)])
    qrels, run = _write(tmp_path, lines, _qrels_lines(rng, [f"q{i}" for i in range(0, 70, 3)]))
    shuffled = tmp_path / "shuffled.trec"
    shuffled.write_text("".join(rng.permutation(lines)))
    args = ["-m", "ap", "-m", "ndcg@10", "-m", "rr", "--format", "tsv", "--per-query"]
    together, apart = harness("eval", qrels, run, *args), harness("eval", qrels, shuffled, *args)
    assert together.returncode == apart.returncode == 0, together.stderr + apart.stderr
    assert together.stdout == apart.stdout
    assert together.stderr == apart.stderr  # the same coverage warnings
