"""A large run's writer keeps per-query columns only of what its reports read (``querycolumns.REPORTED``) and sums
the other metrics a block of queries at a time. The sums are the full columns' exact sums over the counted queries,
the kept columns are the full ones, and asking a slim set for another metric reads the records again and gives the
full builder's column (compare or gate on a run in the same process)."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace as NS

import numpy as np
import pytest

from harness.result import querycolumns
from harness.result.querycolumns import ColumnsBuilder

NAMES = {"doc": ["ndcg@10", "ap", "rr@window"], "chunk": ["recall@window", "rr@window", "hit@window"]}


def _records(rng: random.Random, n: int, lacking: int | None = None) -> list:
    out = []
    for i in range(n):
        metrics = {level: {m: rng.choice([0.0, 1.0, rng.random(), 1 / 3]) for m in names}
                   for level, names in NAMES.items()}
        if i == lacking:
            del metrics["doc"]["ap"]  # a record without one of the summary's metrics (refused by the checks)
        out.append(NS(id=f"q{i}", counted=NS(doc=rng.random() < 0.8, chunk=rng.random() < 0.7),
                      n_relevant=NS(doc=1, chunk=2), gold=[], metrics=NS(**metrics), tags={},
                      verdict=NS(kind=rng.choice(["ok", "wrong_chunk"]))))
    return out


@pytest.mark.parametrize("n, block, lacking", [(0, 4, None), (1, 4, None), (9, 4, None), (8, 4, 3),
                                               (1000, 64, 500), (1000, 1 << 16, None)])
def test_slim_columns_sum_what_the_full_ones_hold(monkeypatch, n, block, lacking):
    monkeypatch.setattr(querycolumns, "BLOCK", block)
    records = _records(random.Random(n + block), n, lacking)
    full, slim = ColumnsBuilder(NAMES), ColumnsBuilder(NAMES, slim=True)
    for q in records:
        full.add(q)
        slim.add(q)
    f, s = full.build(records), slim.build(records)
    assert list(s.values["chunk"]) == ["rr@window"] and not s.values["doc"]
    assert np.array_equal(s.values["chunk"]["rr@window"], f.values["chunk"]["rr@window"])
    for level, names in NAMES.items():
        assert np.array_equal(s.counted[level], f.counted[level])
        for name in names:
            total, count = s.counted_sum(level, name)
            want = f.value(level, name)[f.counted[level] & f.has(level, name)]
            assert count == len(want) and math.isclose(total, math.fsum(want.tolist()), rel_tol=1e-12,
                                                       abs_tol=1e-12), (level, name)
    # another metric asked for: the records are read again, and the slim set is then the full one
    assert np.array_equal(s.value("doc", "ap"), f.value("doc", "ap"), equal_nan=True)
    assert not s.summed and all(np.array_equal(s.value(lv, m), f.value(lv, m), equal_nan=True)
                                for lv, names in NAMES.items() for m in names)
    assert np.array_equal(s.has("doc", "ap"), f.has("doc", "ap"))


def test_known_ids_are_kept_as_the_callers_strings():
    """A run in memory hands its golden set's id strings: equal record ids are kept as those (one string per id),
    others as the record has them."""
    from types import SimpleNamespace

    from harness.result.querycolumns import ColumnsBuilder

    def record(qid):
        return SimpleNamespace(id=qid, counted=SimpleNamespace(doc=True, chunk=True), n_relevant=None, gold=(),
                               metrics=SimpleNamespace(doc={"ap": 0.5}, chunk={"ap": 0.25}),
                               verdict=SimpleNamespace(kind="ok"), tags={})

    known = ["".join(["q", str(i)]) for i in range(3)]
    builder = ColumnsBuilder({"doc": ["ap"], "chunk": ["ap"]}, known_ids=known)
    decoded = [str(i).join(["q", ""]) for i in (0, 1, 7, 3)]  # equal strings, other objects; the third differs
    for qid in decoded:
        builder.add(record(qid))
    ids = builder.build(source=None).ids
    assert ids == ["q0", "q1", "q7", "q3"]
    assert ids[0] is known[0] and ids[1] is known[1] and ids[2] is decoded[2] and ids[3] is decoded[3]
