"""What the public API keeps and shares to be fast (#37): a library-built Qrels codes its documents once per run
vocabulary and hashes its judgments once; an engine batch of consecutive queries is a view of the run; query rows
that are together are grouped without hashing. Each shortcut must give the numbers of the long way."""

import pickle

import numpy as np
import pytest

import harness
from harness.core import textcolumns
from harness.core.fingerprint import fingerprint_of_judgments
from harness.metrics.table import Deferred
from harness.core.runtable import Qrels, Run

pa = pytest.importorskip("pyarrow")

QRELS = {"q1": {"d1": 1, "d3": 1}}
RUN_A = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7}}  # relevant at ranks 1 and 3: AP = (1/1 + 2/3) / 2 = 5/6
RUN_B = {"q1": {"d3": 0.9, "d4": 0.5}}  # one of the two relevant, at rank 1: AP = (1/1) / 2 = 1/2


@pytest.fixture
def bulk(monkeypatch):
    monkeypatch.setattr(textcolumns, "BULK_MIN", 0)


def test_one_prebuilt_qrels_scores_each_run_against_that_runs_vocabulary(bulk):
    qrels, run_a, run_b = Qrels.from_dict(QRELS), Run.from_dict(RUN_A), Run.from_dict(RUN_B)
    # d3 is code 2 in run A's vocabulary (d1, d2, d3) and code 0 in run B's (d3, d4): codes kept for A are not B's
    aps = [harness.evaluate(qrels, run, "ap").mean()["ap"] for run in (run_a, run_b, run_a)]
    assert aps == pytest.approx([5 / 6, 1 / 2, 5 / 6], abs=1e-15)
    assert qrels.codes_for(run_a.doc_vocab) is qrels.codes_for(run_a.doc_vocab)  # coded once, then kept
    assert qrels.codes_for(run_b.doc_vocab).tolist() == [-1, 0]


def test_a_hand_built_qrels_is_coded_again_each_time():
    qrels = Qrels(np.array(["q1"], dtype=object), np.array([0, 2]), np.array(["d1", "d3"], dtype=object),
                  np.array([1, 1]))
    vocab = np.array(["d1", "d2", "d3"], dtype=object)
    assert qrels.codes_for(vocab).tolist() == [0, 2]
    assert qrels.codes_for(vocab) is not qrels.codes_for(vocab)


@pytest.mark.parametrize("doc", ["d", "a-document-id-longer-than-eight-bytes"])  # packed keys; Arrow text
def test_the_judgments_fingerprint_is_of_the_set_whatever_the_order(bulk, doc):
    queries = np.array(["q1", "q1", "q2", "q10"], dtype=object)
    docs = np.array([doc + "1", doc + "2", doc + "1", doc + "3"], dtype=object)
    grades = np.array([1, 0, 2, 1])
    first = fingerprint_of_judgments(queries, docs, grades)
    backwards = slice(None, None, -1)
    assert fingerprint_of_judgments(queries[backwards], docs[backwards], grades[backwards]) == first
    assert fingerprint_of_judgments(queries, docs, np.array([1, 0, 2, 2])) != first  # a grade changed
    assert fingerprint_of_judgments(queries[[0, 1, 3, 2]], docs, grades) != first  # a judgment moved query


def test_a_prebuilt_qrels_carries_the_fingerprint_of_its_dict(bulk):
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}
    reordered = {"q2": {"d1": 2}, "q1": {"d2": 0, "d1": 1}}
    run = {"q1": {"d1": 1.0}, "q2": {"d1": 1.0}}
    built = Qrels.from_dict(qrels)
    tables = [harness.evaluate(q, run, "rr") for q in (qrels, reordered, built, built)]
    assert all(isinstance(vars(t)["judgments"], Deferred) for t in tables)  # hashed when first read, not before
    assert len({t.judgments for t in tables}) == 1 and tables[0].judgments
    assert vars(tables[0])["judgments"] == tables[0].judgments  # then kept
    assert pickle.loads(pickle.dumps(tables[1])).judgments == tables[1].judgments


def test_consecutive_queries_are_a_view_and_others_a_copy():
    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0}, "q2": {"c": 1.0}, "q3": {"a": 0.5, "c": 0.25}})
    view, copy = run.select(np.array([1, 2])), run.select(np.array([2, 1]))
    assert np.shares_memory(view.scores, run.scores) and not np.shares_memory(copy.scores, run.scores)
    assert view.to_dict() == {"q2": {"c": 1.0}, "q3": {"a": 0.5, "c": 0.25}}
    assert copy.to_dict() == {"q3": {"a": 0.5, "c": 0.25}, "q2": {"c": 1.0}}
    assert view.offsets.tolist() == [0, 1, 3] and copy.offsets.tolist() == [0, 2, 3]


def test_query_rows_not_together_are_grouped_by_their_first_row(bulk):
    # q1's rows come back after q2's: rows are grouped by hashing, queries in order of first appearance
    rows = {"query_id": ["q1", "q2", "q1"], "doc_id": ["d1", "d1", "d3"], "score": [0.9, 0.5, 0.8]}
    table = harness.evaluate({"q1": {"d3": 1}, "q2": {"d1": 1}}, pa.table(rows), "rr")
    assert table.per_query() == {"q1": {"rr": 0.5}, "q2": {"rr": 1.0}}  # q1: d1 (unjudged) at 1, d3 at 2
    assert textcolumns.grouped_starts(pa.array(rows["query_id"])) is None
    distinct, starts = textcolumns.grouped_starts(pa.array(["q2", "q2", "q1"]))
    assert distinct.to_pylist() == ["q2", "q1"] and starts.tolist() == [0, 2]
