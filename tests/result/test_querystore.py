"""Per-query records spooled to disk (issue 14, core/querystore.py): a run over ``SPOOL_ABOVE`` queries keeps its
``Result.queries`` as JSON bytes in an anonymous temp file, read back on access. The same run built with the
records in memory and spooled gives equal per-query metrics, verdicts and hits, the same results.json bytes and
per_query.csv, and the saved file loads back equal."""

from __future__ import annotations

import gc
import os
import pickle
import random
import tempfile

import pytest

from clihelp import demo_config


def _run(tmp, monkeypatch, *, spool: bool, keep_all: bool):
    from harness.config.schema import load_config
    from harness.result import querystore, selection
    from harness.pipeline.assemble import run_experiment

    monkeypatch.setattr(querystore, "SPOOL_ABOVE", 0 if spool else 10**9)
    if not keep_all:  # 46 demo queries over the threshold: a bounded set keeps its hits, the rest are in the run
        monkeypatch.setattr(selection, "KEEP_ALL_HITS_UP_TO", 10)
        monkeypatch.setattr(selection.select, "__defaults__", (12,))  # its cap (SHOWN_QUERIES), bound at import
        monkeypatch.setattr(selection, "SAMPLE", 3)
    return run_experiment(load_config(demo_config(tmp, retriever="{kind: bm25, backend: fast}")), progress=False,
                          log=lambda m: None)


def _same_clock(result, like):
    """``result`` with ``like``'s wall-clock fields (creation time, timings, latency), the only ones two runs of one
    config may differ in."""
    return result.model_copy(update={"created_at": like.created_at, "timings": like.timings,
                                     "latency": like.latency, "executor": like.executor})


@pytest.mark.parametrize("keep_all", [True, False], ids=["all-hits-kept", "selected-hits"])
def test_a_spooled_result_equals_the_one_in_memory(tmp_path, monkeypatch, keep_all):
    from harness.result.querystore import QueryStore
    from harness.result.read import load_result
    from harness.render.outputs import per_query_csv, write_outputs

    plain = _run(tmp_path, monkeypatch, spool=False, keep_all=keep_all)
    spooled = _run(tmp_path, monkeypatch, spool=True, keep_all=keep_all)
    assert isinstance(plain.queries, list) and isinstance(spooled.queries, QueryStore)
    assert len(spooled.queries) == len(plain.queries) == 46
    assert plain.hits_kept == spooled.hits_kept == ("all" if keep_all else "selected")
    # record by record: metrics, counted flags, gold, verdict (with its detail) and the kept hits
    for a, b in zip(plain.queries, spooled.queries):
        assert a.model_dump() == b.model_dump()
        assert a.metrics.chunk["rr@window"] == b.metrics.chunk["rr@window"]  # exact floats, not approx
    assert spooled.queries == plain.queries and plain.queries == spooled.queries
    # every hit, kept in the record or read from the run's columns
    assert [spooled.hits_of(q) for q in spooled.queries] == [plain.hits_of(q) for q in plain.queries]
    kept = sum(q.hits is not None for q in spooled.queries)
    assert kept == sum(q.hits is not None for q in plain.queries) and (kept == 46 if keep_all else 0 < kept <= 12)
    spooled = _same_clock(spooled, plain)
    assert all(getattr(spooled, f) == getattr(plain, f) for f in type(plain).model_fields)  # (not the run's timer)
    assert spooled.to_json() == plain.to_json()
    assert per_query_csv(spooled) == per_query_csv(plain)
    assert spooled.to_dict() == plain.to_dict()  # a store is dumped as the list it reads as
    # written out and read back: the same results.json bytes, and the loaded Result equals the spooled one
    out_a, out_b = write_outputs(plain, tmp_path / "a"), write_outputs(spooled, tmp_path / "b")
    for name in ("results.json", "per_query.csv", "run.trec", "run.chunks.trec", "hits.parquet"):
        assert (out_a / name).read_bytes() == (out_b / name).read_bytes(), name
    loaded = load_result(out_b / "results.json")
    # a large run's one-record-a-line file is read a record at a time and spooled again (SPOOL_ABOVE is 0 here); a
    # small run's indented file is read whole, as a list
    assert isinstance(loaded.queries, list if keep_all else QueryStore) and loaded.queries == spooled.queries
    assert loaded.to_json() == spooled.to_json()


def test_reading_a_spooled_result_by_id_index_slice_and_level(tmp_path, monkeypatch):
    plain = _run(tmp_path, monkeypatch, spool=False, keep_all=True)
    spooled = _run(tmp_path, monkeypatch, spool=True, keep_all=True)
    qs, ps = spooled.queries, plain.queries
    assert qs[0] == ps[0] and qs[-1] == ps[-1] and qs[45] == ps[45]
    assert qs[3:9] == ps[3:9] and qs[::-5] == ps[::-5] and isinstance(qs[1:3], list)
    with pytest.raises(IndexError):
        qs[46]
    for qid in ("q01", "q16", "q45", ps[-1].id):
        assert spooled.query(qid) == plain.query(qid) is not None
    assert spooled.query("no-such-query") is None and spooled.query("q01 ") is None and spooled.query("q1") is None
    for level in ("doc", "chunk"):
        assert spooled.counted(level) == plain.counted(level)
        assert [q.id for q in spooled.counted(level)] != []


def test_store_records_round_trip_and_the_spool_leaves_no_file(tmp_path, monkeypatch):
    from harness.result.querystore import QueryStore
    from harness.result.model import QueryResult

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    base = dict(text="t", tags={"lang": "ε"}, n_relevant={"doc": 1, "chunk": 0}, counted={"doc": True, "chunk": False},
                effective_k=3, gold=[{"doc_id": "d", "grade": 2, "evidence": [[0, 4]], "evidence_text": ["ab\"c"]}],
                verdict={"kind": "wrong_chunk", "reason": "r", "detail": {"above": [{"rank": 1}], "x": None},
                         "flags": ["partial"]})
    # (a metric is never NaN, a verdict's detail may hold one: the spool keeps it as JSON's NaN)
    records = [QueryResult.model_validate({**base, "id": f"q,{i}\"", "metrics": {
        "doc": {"ap": 1 / (i + 3), "odd": 0.1 * i}, "chunk": {"ap": 1e-300 * i}},
        "verdict": {**base["verdict"], "detail": {**base["verdict"]["detail"], "share": float("nan") if i == 2 else i}}})
        for i in range(2_500)]  # more than one read batch
    store = QueryStore(QueryResult).extend(records)
    assert os.listdir(tmp_path) == []  # the spool is an unlinked temp file: nothing to leave behind
    assert len(store) == 2_500 and store[7] == records[7] and store[-1] == records[-1]
    back = list(store)
    assert [r.model_dump_json() for r in back] == [r.model_dump_json() for r in records]  # NaN included
    assert store.index_of('q,1234"') == 1234 and store.index_of('q,1"') == 1 and store.index_of("q,1") is None
    with pytest.raises(RuntimeError):
        store.append(records[0])  # sealed once read
    assert store != records[:-1] and store != "text"
    copied = pickle.loads(pickle.dumps(store))  # another process gets the records as a list
    assert type(copied) is list and len(copied) == 2_500 and copied[7] == records[7]
    finalizer = store._close
    del store, back
    gc.collect()
    assert not finalizer.alive  # dropped: its file is closed


def test_a_large_run_spools_its_records_and_only_its_records(tmp_path, monkeypatch):
    """The default threshold: a run over SPOOL_ABOVE queries spools (tests/result/test_bounded_outputs.py runs 6,000
    queries through every output that way), a smaller one keeps a list."""
    from harness.result.querystore import SPOOL_ABOVE, QueryStore, stored
    from harness.result.model import QueryResult
    from harness.result.selection import KEEP_ALL_HITS_UP_TO

    assert SPOOL_ABOVE == KEEP_ALL_HITS_UP_TO  # a spooled record keeps hits only when it is one the reports show
    assert isinstance(stored(QueryResult, iter([]), SPOOL_ABOVE), list)
    assert isinstance(stored(QueryResult, iter([]), SPOOL_ABOVE + 1), QueryStore)


def test_spooled_verdicts_read_as_the_dict_they_replace(tmp_path, monkeypatch):
    from harness.result.querystore import SpooledMapping, stored_mapping
    from harness.result.model import Verdict

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    items = [(f"q{i}", Verdict(kind=["ok", "wrong_chunk"][i % 2], reason=f"r{i}",
                               detail={"rank": i, "near": i % 3 == 0}, flags=["partial"] if i % 5 else []))
             for i in range(1_234)]
    plain, spooled = stored_mapping(Verdict, iter(items), 1_234), stored_mapping(Verdict, iter(items), 1_234, 0)
    assert type(plain) is dict and isinstance(spooled, SpooledMapping) and os.listdir(tmp_path) == []
    assert len(spooled) == 1_234 and list(spooled) == list(plain) and spooled["q77"] == plain["q77"]
    assert list(spooled.values()) == list(plain.values()) and list(spooled.items()) == list(plain.items())
    assert dict(spooled) == plain and "q5" in spooled and "q9999" not in spooled
    with pytest.raises(KeyError):
        spooled["q9999"]
    with pytest.raises(ValueError):
        SpooledMapping(Verdict, [items[0], items[0]])
    with pytest.raises(ValueError):  # a duplicate far from its first
        SpooledMapping(Verdict, items[:600] + [items[3]] + items[600:700])
    # read by key in order (found by the guess), backwards and shuffled (found by the dict made on the first miss)
    fresh = stored_mapping(Verdict, iter(items), 1_234, 0)
    keys = [k for k, _ in items]
    assert [fresh[k] for k in keys] == [plain[k] for k in keys] and fresh._positions._by_id is None
    for order in (keys[::-1], random.Random(4).sample(keys, len(keys))):
        assert [spooled[k] for k in order] == [plain[k] for k in order]
    assert ("q1" in fresh) and (1 not in fresh) and (None not in fresh)
