"""Hit columns spilled to a temp file (core/spilled.SpilledColumn, HitTableBuilder past SPILL_HITS) read back as the
in-memory columns they replace: every slice, every ranked list, every derived column, and a whole run's outputs; a
large table's metric values (SpilledRows, engine.SPILL_VALUES_ABOVE) give the same means, rows and columns."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow.parquet as pq
import pytest

from harness.hits import table as hittable
from harness.io.spilled import SpilledColumn, SpilledRows
from test_hittable import _chunks, _lists, _table


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_slices_read_back_what_was_appended(dtype):
    rng = np.random.default_rng(3)
    parts = [rng.integers(-2**30, 2**30, size=n).astype(dtype) for n in (0, 1, 7, 4096, 3, 0, 100_000)]
    column, whole = SpilledColumn(dtype), np.concatenate(parts)
    for part in parts:
        column.append(part)
    assert len(column) == len(whole) and column.shape == whole.shape and column.dtype == whole.dtype
    assert column.nbytes == whole.nbytes
    for lo, hi in [(0, len(whole)), (0, 0), (5, 6), (7, 8), (4000, 4200), (len(whole) - 3, len(whole)),
                   (len(whole), len(whole) + 5), (-10, None), (None, -99_990), (10, 5)]:
        got = column[lo:hi]
        assert got.dtype == whole.dtype and np.array_equal(got, whole[lo:hi]), (lo, hi)
    assert np.array_equal(np.asarray(column), whole) and column.tolist() == whole.tolist()
    got = column[3:9]
    got[0] = 1  # a fresh, writable array: the file is not changed
    assert column[3:4][0] == whole[3]
    import copy
    import pickle

    for copied in (pickle.loads(pickle.dumps(column)), copy.deepcopy(column)):
        assert isinstance(copied, np.ndarray) and np.array_equal(copied, whole) and copied.dtype == whole.dtype


def test_only_contiguous_slices():
    column = SpilledColumn(np.int32)
    column.append(np.arange(10, dtype=np.int32))
    for key in (3, slice(0, 10, 2), [1, 2], np.array([True] * 10)):
        with pytest.raises(TypeError):
            column[key]


def test_appended_values_take_the_columns_dtype():
    column = SpilledColumn(np.int32)
    column.append(np.array([1, 2, 3], dtype=np.int64))
    column.append([4.0])
    assert column[0:4].tolist() == [1, 2, 3, 4] and column[0:4].dtype == np.int32


@pytest.mark.parametrize("spill_hits", [0, 5, 40])
@pytest.mark.parametrize("seed", range(8))
def test_spilled_table_equals_the_table_in_memory(seed, spill_hits):
    """Spilled from the first hit, or from a later batch (the batches held so far are written first)."""
    rng = random.Random(seed)
    chunks = _chunks(rng, rng.randint(1, 12))
    lists = _lists(rng, chunks, rng.randint(1, 30), depth=rng.randint(1, 9))
    memory, spilled = (_table(lists, chunks, batch=4, spill_hits=limit) for limit in (1 << 40, spill_hits))
    assert isinstance(memory.chunk, np.ndarray)
    assert isinstance(spilled.chunk, SpilledColumn) == (memory.n_hits > spill_hits)
    assert list(spilled) == list(memory) == lists and spilled[-1] == lists[-1] and spilled[1:3] == lists[1:3]
    assert spilled.n_hits == memory.n_hits and np.array_equal(spilled.offsets, memory.offsets)
    assert np.array_equal(np.asarray(spilled.chunk), memory.chunk) and spilled.chunk.dtype == memory.chunk.dtype
    assert np.array_equal(np.asarray(spilled.scores), memory.scores)
    for start in range(len(lists)):
        stop = rng.randint(start, len(lists))
        assert np.array_equal(spilled.ranks(start, stop), memory.ranks(start, stop))
        assert np.array_equal(spilled.best_per_doc(start, stop), memory.best_per_doc(start, stop))
    for level in ("doc", "chunk"):
        assert list(spilled.trec_blocks(level, "t", batch=3)) == list(memory.trec_blocks(level, "t", batch=3))


@pytest.mark.parametrize("batch", [1, 3, 1000])
@pytest.mark.parametrize("seed", range(6))
def test_chunks_in_order_of_first_appearance(seed, batch, monkeypatch):
    """hitjudge.JudgedTable.chunk_indices (which chunks.parquet lists), a batch of queries at a time, spilled or not."""
    from harness.hits import judge as hitjudge

    monkeypatch.setattr(hitjudge, "BATCH_QUERIES", batch)
    rng = random.Random(seed)
    chunks = _chunks(rng, rng.randint(1, 12))
    lists = _lists(rng, chunks, rng.randint(0, 30), depth=rng.randint(1, 9))
    index = {c.chunk_id: i for i, c in enumerate(chunks)}
    expected = list(dict.fromkeys(index[h.chunk_id] for r in lists for h in r.hits))
    for limit in (1 << 40, 0):
        table = _table(lists, chunks, batch=max(len(lists), 1), spill_hits=limit)
        judged = hitjudge.JudgedTable(table, {}, {}, np.zeros(len(lists), dtype=np.int64))
        got = judged.chunk_indices()
        assert got.tolist() == expected and got.dtype == np.int32


def _outputs(folder):
    result = json.loads((folder / "results.json").read_text())
    for key in ("created_at", "timings", "latency"):
        result.pop(key, None)
    files = {name: (folder / name).read_bytes() for name in ("run.trec", "run.chunks.trec", "per_query.csv")}
    parquet = [pq.read_table(folder / name) for name in ("hits.parquet", "chunks.parquet") if (folder / name).exists()]
    return result, files, parquet


@pytest.mark.parametrize("kept", [None, 0])
@pytest.mark.parametrize("cutoff", ["{k: 3}", "{token_budget: 40, tokenizer: words}"])
def test_a_spilled_run_writes_the_same_outputs(tmp_path, monkeypatch, cutoff, kept):
    """The demo with every hit spilled (SPILL_HITS 0) and held (the default for so small a run): results.json
    (metrics, verdicts, counts, kept hits), per_query.csv, both TREC files and hits.parquet are the same; also as a
    large run writes them (``kept`` 0: hits of a selection of queries kept, chunks.parquet written), judged 7
    queries at a time."""
    from clihelp import demo_config
    from harness import api
    from harness.hits import judge as hitjudge
    from harness.result import selection
    from harness.metrics import engine

    monkeypatch.setattr(hitjudge, "BATCH_QUERIES", 7)
    if kept is not None:
        monkeypatch.setattr(selection, "KEEP_ALL_HITS_UP_TO", kept)
    config = demo_config(tmp_path, cutoff=cutoff, depth=100)
    api.run(config, out=tmp_path / "held")
    monkeypatch.setattr(hittable, "SPILL_HITS", 0)
    monkeypatch.setattr(engine, "SPILL_VALUES_ABOVE", 0)  # the metric values too
    spilled, tables = [], []
    real = hittable.HitTableBuilder.build
    monkeypatch.setattr(hittable.HitTableBuilder, "build",
                        lambda self, chunks: spilled.append(real(self, chunks)) or spilled[-1])
    real_parts = engine.evaluate_parts
    monkeypatch.setattr(engine, "evaluate_parts", lambda *a, **k: tables.append(real_parts(*a, **k)) or tables[-1])
    api.run(config, out=tmp_path / "spilled")
    assert spilled and isinstance(spilled[0].chunk, SpilledColumn)
    assert len(tables) == 2 and all(isinstance(t.values, SpilledRows) for t in tables)
    held, spilled_out = _outputs(tmp_path / "held"), _outputs(tmp_path / "spilled")
    assert held[0] == spilled_out[0] and held[1] == spilled_out[1]
    assert len(held[2]) == len(spilled_out[2]) == (1 if kept is None else 2)
    assert all(a.equals(b) for a, b in zip(held[2], spilled_out[2]))


@pytest.mark.parametrize("width", [1, 2, 5, 13])
def test_spilled_rows_read_back_what_was_written_and_give_the_same_means(width, monkeypatch):
    """Rows written in batches in any order (some never: zeros) read back as the matrix: a row, a cell, a column, a
    mask, every row; a table's means over them are the in-memory table's to the last bit (the summary of a spilled
    run is the number an in-memory one prints), whatever the block size."""
    from harness.metrics.spec import parse_metrics
    from harness.metrics.table import build_table

    monkeypatch.setattr(SpilledRows, "BLOCK", 1000)
    rng = np.random.default_rng(width)
    n = 10_007
    whole = rng.random((n, width)) ** 3
    written = np.sort(rng.choice(n, size=n - 50, replace=False))  # 50 rows never written: they read as zeros
    whole[np.setdiff1d(np.arange(n), written)] = 0.0
    rows = SpilledRows(n, width)
    for part in np.array_split(rng.permutation(written), 37):  # each batch's rows in no order
        rows[part] = whole[part]
    assert len(rows) == n and rows.shape == whole.shape and rows.nbytes == whole.nbytes
    assert np.array_equal(np.asarray(rows), whole) and np.array_equal(np.array(list(rows)), whole)
    for i in (0, 1, 999, 1000, 5555, n - 1, -1):
        assert np.array_equal(rows[i], whole[i]) and rows[i, width - 1] == whole[i, width - 1]
    for j in range(width):
        assert np.array_equal(rows[:, j], whole[:, j])
    assert np.array_equal(rows[:, 1:3], whole[:, 1:3]) and np.array_equal(rows[:, [0, width - 1]], whole[:, [0, -1]])
    mask = rng.random(n) < 0.6
    assert np.array_equal(rows[mask], whole[mask])
    specs = tuple(parse_metrics([f"p@{k}" for k in range(1, width + 1)]))
    ids = [f"q{i}" for i in range(n)]
    n_rel, in_run = rng.integers(0, 3, n), np.ones(n, bool)
    held = build_table(ids, specs, whole, n_rel, in_run, query_policy="exclude", conventions={})
    spilled = build_table(ids, specs, rows, n_rel, in_run, query_policy="exclude", conventions={})
    assert spilled.mean() == held.mean() and spilled.mean(mask) == held.mean(mask)
    assert spilled.mean(np.zeros(n, bool)) == held.mean(np.zeros(n, bool))
    assert np.array_equal(spilled.column(specs[-1].name), held.column(specs[-1].name))
    assert spilled.per_query() == held.per_query()
    selections = [mask, None, ~mask, np.zeros(n, bool)]
    reads = []
    real_rows = SpilledRows.rows
    monkeypatch.setattr(SpilledRows, "rows", lambda self, lo, hi: reads.append(lo) or real_rows(self, lo, hi))
    assert spilled.means(selections) == [held.mean(m) for m in selections] == held.means(selections)
    assert len(reads) == width * -(-n // SpilledRows.BLOCK)  # each metric's column read once for all selections
    import pickle

    assert np.array_equal(pickle.loads(pickle.dumps(rows)), whole)
    with pytest.raises(IndexError):
        rows[np.array([3, 3])] = whole[[3, 3]]
    with pytest.raises(IndexError):
        rows[np.array([n])] = whole[:1]
    with pytest.raises(TypeError):
        rows[1:5]


def test_spilled_rows_on_a_full_disk_name_the_folder(monkeypatch):
    import errno
    import os

    rows = SpilledRows(10, 2)

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    from harness.core.errors import InputError

    with pytest.raises(InputError, match="cannot write the run's metric values to a temporary file .*TMPDIR"):
        rows[np.arange(3)] = np.ones((3, 2))


def test_mallocs_mmap_threshold_is_fixed_unless_the_user_set_it():
    """`harness run` fixes glibc's mmap threshold (core/heap.py); a user's MALLOC_MMAP_THRESHOLD_ is left to glibc."""
    import os
    import platform
    import subprocess
    import sys

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    code = "from harness.cli.heap import return_large_frees as f; print(f())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    run = lambda extra: subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True,
                                       text=True, check=True).stdout.strip()
    assert run({}) == "True" and run({"MALLOC_MMAP_THRESHOLD_": "65536"}) == "False"


class _FullDisk:
    """A temp file on a full disk: every write fails as the kernel says."""

    def seek(self, *args):
        return 0

    def write(self, data):
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")

    flush = write


def test_a_full_disk_is_one_error_naming_the_folder(monkeypatch, tmp_path):
    """Hits, per-query records and a run spread by query go to temp files: a full disk (or no temp folder) is one
    error that names the folder and TMPDIR, not a traceback."""
    import tempfile

    from harness.core.errors import HarnessError
    from harness.result.querystore import QueryStore
    from harness.result.model import QueryMetrics

    column = SpilledColumn(np.int32)
    monkeypatch.setattr(column, "_file", _FullDisk())
    with pytest.raises(HarnessError, match=r"cannot write the run's hits to a temporary file \(No space left on "
                                           r"device\); set TMPDIR"):
        column.append(np.arange(3))
    store = QueryStore(QueryMetrics)
    monkeypatch.setattr(store, "_file", _FullDisk())
    with pytest.raises(HarnessError, match="cannot write the per-query records"):
        store.append(QueryMetrics(doc={}, chunk={}))

    def no_folder(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_folder)
    with pytest.raises(HarnessError, match=f"^{tempfile.gettempdir()}: cannot write the run's hits"):
        SpilledColumn(np.float64)
    from harness.io import run_buckets

    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1 r\nq2 Q0 d1 1 1 r\nq1 Q0 d2 2 0.5 r\n")
    with pytest.raises(HarnessError, match="cannot write the run, spread by query"):
        list(run_buckets.query_batches(run, True))


def test_mean_of_a_column_read_in_blocks_is_the_exact_mean():
    """``mean_of`` reads a long column a block at a time (no list of every value): still the correctly rounded
    sum over the count, whatever the blocks, equal to fsum of the whole list."""
    import math

    from harness.metrics.table import mean_of

    rng = np.random.default_rng(7)
    values = np.concatenate([rng.random(150_001) * 1e-9, rng.random(50_000) * 1e9, -rng.random(3) * 1e9])
    rng.shuffle(values)
    assert mean_of(values) == math.fsum(values.tolist()) / len(values)
    assert mean_of(values[:10].tolist()) == math.fsum(values[:10].tolist()) / 10


def test_a_column_of_spilled_rows_holds_the_column_not_the_matrix():
    """``values[:, j]`` (the summary's and the verdicts' means read each metric so) holds one column and a block or
    two at a time: a list of each block's column views kept every block alive (the whole matrix, ~100 bytes a query
    with 12 metrics, at 1M queries the largest part of assembling a run's result)."""
    import tracemalloc

    n, width = 300_000, 12
    rows = SpilledRows(n, width)
    whole = np.random.default_rng(3).random((n, width))
    rows[np.arange(n)] = whole
    tracemalloc.start()
    try:
        column = rows[:, 3]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(column, whole[:, 3])
    assert peak < column.nbytes + 3 * SpilledRows.BLOCK * width * 8 < whole.nbytes  # (the old way: the matrix)
