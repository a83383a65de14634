"""harness goldset pool --order rbp: the rows by RBP priority, sum over the runs of (1-p) p^(rank-1), highest
first (trectools' rbp pooling), spelled out as arithmetic."""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace as NS

import pytest

from clihelp import DEMO, demo_config, harness
from harness.core.errors import InputError
from harness.gold.pool import pool


def _hit(chunk, rank, grade=None):
    return NS(chunk_id=chunk, doc_id=chunk.split("#")[0], start=0, end=3, rank=rank, grade=grade)


def _result(name, lists):
    """A stand-in for a Result: what ``pool`` reads (its name, queries, and hits per query)."""
    queries = [NS(id=q, text=f"text of {q}") for q in lists]
    return NS(name=name, queries=queries,
              each_with_hits=lambda depth=None: [(q, [h for h in lists[q.id] if depth is None or h.rank <= depth])
                                                 for q in queries])


DOCS = {d: NS(text="abcdef") for d in ("a", "b", "c", "d", "e", "x")}
RUN_1 = _result("one", {"q1": [_hit("a#0-3", 1), _hit("a#3-6", 2), _hit("b#0-3", 3), _hit("c#0-3", 4, grade=1)],
                        "q2": [_hit("d#0-3", 1), _hit("a#0-3", 2)]})
RUN_2 = _result("two", {"q1": [_hit("x#0-3", 1), _hit("b#0-3", 2), _hit("a#3-6", 3)],
                        "q2": [_hit("e#0-3", 1), _hit("e#3-6", 2), _hit("d#0-3", 3)]})


def test_priority_is_rbp_weight_of_the_document_rank_summed_over_runs():
    rows = pool([RUN_1, RUN_2], DOCS, depth=4, order="rbp", rbp_p=0.5)
    got = [(r.query_id, r.chunk_id, r.priority) for r in rows]
    # p = 0.5: document rank 1 weighs 0.5, rank 2 0.25, rank 3 0.125 (exact in binary). Document ranks: one q1
    # a, b, c (judged: not pooled); two q1 x, b, a; one q2 d, a; two q2 e, d (d's chunk is third, the document
    # second: e has two chunks above it).
    assert got == [
        ("q2", "d#0-3", 0.5 + 0.25),  # one: 1, two: 2
        ("q1", "a#0-3", 0.5 + 0.125),  # one: 1, two: 3; both chunks of a carry a's priority, the best-ranked first
        ("q1", "a#3-6", 0.5 + 0.125),
        ("q1", "b#0-3", 0.25 + 0.25),  # one: 2, two: 2
        ("q1", "x#0-3", 0.5),  # two: 1 (ties: query order, then document id)
        ("q2", "e#0-3", 0.5),  # two: 1
        ("q2", "e#3-6", 0.5),
        ("q2", "a#0-3", 0.25),  # one: 2
    ]
    assert rows[0].runs == ["one", "two"] and rows[0].to_dict()["priority"] == 0.75


def test_rank_order_is_unchanged_and_has_no_priority():
    rows = pool([RUN_1, RUN_2], DOCS, depth=4)
    assert [(r.query_id, r.chunk_id) for r in rows] == [
        ("q1", "a#0-3"), ("q1", "x#0-3"), ("q1", "a#3-6"), ("q1", "b#0-3"),
        ("q2", "d#0-3"), ("q2", "e#0-3"), ("q2", "a#0-3"), ("q2", "e#3-6")]
    assert all(r.priority is None for r in rows) and "priority" not in rows[0].to_dict()


@pytest.mark.parametrize("p", [0.0, 1.0, -0.2, 1.5])
def test_p_outside_zero_one_is_refused(p):
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        pool([RUN_1], DOCS, depth=3, order="rbp", rbp_p=p)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rbp")
    proc = harness("run", demo_config(tmp, "r.yaml", cutoff="{k: 5}"), "--out", tmp / "r", "-q")
    assert proc.returncode == 0, proc.stderr
    return tmp / "r" / "results.json"


def test_cli_writes_the_priority_column_highest_first(demo_run, tmp_path):
    sheet = tmp_path / "s.csv"
    proc = harness("goldset", "pool", demo_run, "--depth", 5, "--order", "rbp", "-o", sheet)
    assert proc.returncode == 0, proc.stderr
    assert "highest RBP priority first (p = 0.8)" in proc.stderr
    rows = list(csv.DictReader(sheet.open()))
    hits = {(q["id"], h["chunk_id"]): h["rank"] for q in json.loads(demo_run.read_text())["queries"]
            for h in q["hits"] if h["rank"] <= 5 and h["grade"] is None}
    assert {(r["query_id"], r["chunk_id"]) for r in rows} == set(hits)
    doc_rank = {}  # one run: the weight of each document's rank in its document list, 0.2 * 0.8^(rank - 1)
    for q in json.loads(demo_run.read_text())["queries"]:
        for h in sorted(q["hits"], key=lambda h: h["rank"]):
            doc_rank.setdefault((q["id"], h["doc_id"]), len([k for k in doc_rank if k[0] == q["id"]]) + 1)
    for r in rows:  # to the 6 digits a sheet shows
        assert float(r["priority"]) == pytest.approx(0.2 * 0.8 ** (doc_rank[(r["query_id"], r["doc_id"])] - 1),
                                                     rel=1e-5)
    priorities = [float(r["priority"]) for r in rows]
    assert priorities == sorted(priorities, reverse=True)


@pytest.mark.parametrize("args,message", [
    (["--order", "rbp", "--rbp-p", "1"], "--rbp-p: RBP's p is a persistence strictly between 0 and 1"),
    (["--rbp-p", "0.5"], "--rbp-p 0.5: p weighs the ranks of --order rbp only"),
])
def test_bad_p_exits_2_with_one_line(demo_run, tmp_path, args, message):
    proc = harness("goldset", "pool", demo_run, "-o", tmp_path / "s.csv", *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "s.csv").exists()


def test_an_unknown_order_is_a_usage_error(demo_run, tmp_path):
    proc = harness("goldset", "pool", demo_run, "-o", tmp_path / "s.csv", "--order", "random")
    assert proc.returncode == 2 and "rank" in proc.stderr and "rbp" in proc.stderr


def test_the_cli_choices_and_default_are_the_librarys():
    """The CLI keeps its own copy (importing harness.gold.pool would slow --help): held to the library's."""
    from harness.cli.goldset import PoolOrder, pool as command
    from harness.gold.pool import POOL_ORDERS, RBP_P

    assert [c.value for c in PoolOrder] == list(POOL_ORDERS)
    import inspect

    rbp_option = inspect.signature(command).parameters["rbp_p"].default
    assert f"[default: {RBP_P}]" in rbp_option.help
