"""Dicts, DataFrames and Arrow tables read in bulk (#37): the bulk readers (core.dictcolumns, metrics.frames) give
exactly what the entry-by-entry readers give, hand every input they are not sure of to those readers (so every
message stays), and a Run or Qrels the library built is not checked again. ``BULK_MIN = 0`` puts small inputs
through the bulk path."""

import numpy as np
import pytest

import harness
from harness.core import textcolumns
from harness.core.dictinput import checked_grades, checked_scores
from harness.core.errors import InputError
from harness.core.runtable import Qrels, Run, is_checked

pa = pytest.importorskip("pyarrow")

# Short ids (packed keys), long ids (Arrow's hashing), non-ASCII ids (the regex check), ties in score.
RUN = {"q1": {"d1": 0.9, "d2": 0.9, "a-very-long-document-id": 0.5, "é9": 0.1},
       "q2": {"d2": 1.0, "d10": 0.25}, "q3": {}}
QRELS = {"q1": {"d2": 1, "é9": 2, "gone": 1}, "q2": {"d10": 0, "d3": 3}, "q4": {"d1": 1}}


@pytest.fixture
def bulk(monkeypatch):
    monkeypatch.setattr(textcolumns, "BULK_MIN", 0)


def _rows(data: dict, value: str):
    return {"query_id": [q for q, docs in data.items() for _ in docs], "doc_id": [d for docs in data.values() for d in docs],
            value: [v for docs in data.values() for v in docs.values()]}


def test_a_dict_read_in_bulk_is_the_dict_read_entry_by_entry(bulk):
    run, qrels = Run.from_dict(RUN), Qrels.from_dict(QRELS)
    assert run == Run.from_checked_dict(checked_scores(RUN, "run")) and is_checked(run)
    assert qrels == Qrels.from_checked_dict(checked_grades(QRELS, "qrels")) and is_checked(qrels)
    assert run.doc_vocab.tolist() == sorted({d for docs in RUN.values() for d in docs})  # sorted as Python sorts
    # grades given as 1.0 are 1, numpy scalars are their values
    assert Qrels.from_dict({"q": {"a": 2.0, "b": np.int64(1)}}).grades.tolist() == [2, 1]


@pytest.mark.parametrize("bad, fragment", [
    ({"q1": {"d1": float("nan")}}, "run['q1']['d1']: a NaN score has no place in a ranking"),
    ({"q1": {"d1": True}}, "run['q1']['d1']: expected a number as score, got True"),
    ({"q1": {"d 1": 1.0}}, "run['q1']['d 1']: document id 'd 1' contains whitespace"),
    ({"q1": {"d\u00a01": 1.0}}, "contains whitespace or a control character ('\\xa0')"),
    ({"q1": {b"d1": 1.0}}, "run['q1'][b'd1']: document id must be a string, got bytes"),
    ({"": {"d1": 1.0}}, "run['']: query id is empty"),
    ({1: {"d1": 1.0}, "1": {"d1": 1.0}}, "query id '1' is given twice"),
    ({"q1": ["d1"]}, "run['q1']: expected a dict {doc_id: score}, got list"),
    ({"q1": {"d\x001": 1.0}}, "run['q1']['d\\x001']: document id 'd\\x001' contains whitespace or a control"),
])
def test_a_bad_dict_read_in_bulk_keeps_its_located_message(bulk, bad, fragment):
    with pytest.raises(InputError) as caught:
        harness.evaluate({"q1": {"d1": 1}}, dict(bad, **{f"pad{i}": {"x": 1.0} for i in range(3)}), "rr")
    assert fragment in str(caught.value), str(caught.value)


def test_a_fractional_grade_in_bulk_is_named(bulk):
    with pytest.raises(InputError, match=r"qrels\['q1'\]\['d1'\]: expected a whole-number grade, got 1.5"):
        harness.evaluate({"q1": {"d1": 1.5, "d2": 1}}, RUN, "rr")


def test_every_form_gives_the_table_of_the_dicts(bulk):
    import pandas as pd

    metrics = ["ndcg@10", "ap", "rr", "precision@2", "recall@3"]
    with pytest.warns(UserWarning):  # q4 is judged and absent from the run, as harness eval says it
        expected = harness.evaluate(QRELS, RUN, metrics).per_query()
        frames = pd.DataFrame(_rows(QRELS, "relevance")), pd.DataFrame(_rows(RUN, "score"))
        tables = pa.table(_rows(QRELS, "relevance")), pa.table(_rows(RUN, "score"))
        assert harness.evaluate(*frames, metrics).per_query() == expected
        assert harness.evaluate(*tables, metrics).per_query() == expected
        # a query's rows need not be together: rows in reverse order, the same numbers
        shuffled = pa.table(_rows(RUN, "score")).take(pa.array(np.arange(6)[::-1].copy()))
        assert harness.evaluate(tables[0], shuffled, metrics).per_query() == expected
        assert harness.evaluate(Qrels.from_dict(QRELS), Run.from_dict(RUN), metrics).per_query() == expected


def test_an_arrow_table_with_a_bad_cell_is_read_row_by_row_and_located():
    table = pa.table({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3"], "score": [0.5, None, 1.0]})
    with pytest.raises(InputError, match=r"run.column\('score'\)\[1\]: expected a number as score, got None"):
        harness.evaluate({"q1": {"d1": 1}}, table, "rr")
    with pytest.raises(InputError, match="qrels: the Arrow table has no column 'relevance'"):
        harness.evaluate(pa.table({"query_id": ["q"], "doc_id": ["d"], "grade": [1]}), table, "rr")
    twice = pa.table({"query_id": ["q", "q"], "doc_id": ["d", "d"], "relevance": [1, 2]})
    with pytest.raises(InputError, match="query 'q', doc 'd' is judged twice"):
        harness.evaluate(twice, {"q": {"d": 1.0}}, "rr")
    numbered = pa.table({"query_id": [1, 1], "doc_id": [10, 11], "relevance": [1, 0]})  # ids as numbers: their text
    assert harness.evaluate(numbered, {"1": {"10": 1.0, "11": 2.0}}, "rr").mean()["rr"] == 0.5


def test_a_library_built_run_is_not_checked_again(monkeypatch):
    run, qrels = Run.from_dict(RUN), Qrels.from_dict(QRELS)

    def refuse(self, name):
        raise AssertionError("checked again")

    monkeypatch.setattr(Run, "problems", refuse)
    monkeypatch.setattr(Qrels, "problems", refuse)
    with pytest.warns(UserWarning):
        # q1: d1 and d2 tie at 0.9, the higher doc id first: d2, relevant, rr 1; q2 finds no relevant doc; q4 is
        # judged and absent: 0
        assert harness.evaluate(qrels, run, "rr").mean()["rr"] == pytest.approx(1 / 3)
    with pytest.raises(AssertionError, match="checked again"):  # one built by hand from arrays is checked
        harness.evaluate(qrels, Run(run.query_ids, run.offsets, run.doc_vocab, run.doc_codes, run.scores), "rr")


def test_a_large_hand_built_run_is_checked_in_bulk_with_the_same_messages(bulk):
    ids = lambda *xs: np.array(list(xs), dtype=object)  # noqa: E731
    base = dict(query_ids=ids("q1"), offsets=np.array([0, 2]), doc_codes=np.array([0, 1]), scores=np.ones(2))
    for vocab, message in [(ids("b", "a"), "run.doc_vocab: not sorted"), (ids("a", "a"), "an id is given twice"),
                           (ids("a", 3), "run.doc_vocab: ids are text, got int 3")]:
        with pytest.raises(InputError) as caught:
            harness.evaluate({"q1": {"a": 1}}, Run(doc_vocab=vocab, **base), "rr")
        assert any(message in line for line in caught.value.problems), caught.value.problems


def test_bulk_means_equal_pytrec_eval(bulk):
    """A random workload with ties, long and short ids: the means pytrec_eval computes, to 1e-12."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(7)
    run = {f"q{i}": {(f"doc-{c}" if c % 3 else f"d{c}"): float(s) for c, s in
                     zip(rng.choice(400, 30, replace=False).tolist(), rng.integers(0, 8, 30).tolist())}
           for i in range(60)}
    qrels = {q: {d: int(rng.integers(0, 3)) for d in list(docs)[:4]} | {"unretrieved": 1} for q, docs in run.items()}
    ours = harness.evaluate(qrels, run, ["ap", "ndcg@10", "precision@5", "recall@20"], trec_compat=True).mean()
    names = {"map": "ap", "ndcg_cut_10": "ndcg@10", "P_5": "precision@5", "recall_20": "recall@20"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
    for trec, name in names.items():
        assert ours[name] == pytest.approx(sum(v[trec] for v in ref.values()) / len(ref), abs=1e-12)


def test_a_table_run_is_scored_on_its_packed_keys_as_on_its_codes():
    """A run read from a table is scored on its doc ids' packed keys, not coded (``metrics.join.keyed``): the same
    table as when its codes were read first, ties (doc id descending) and repeats included; a run with an id that
    begins with a non-ASCII character, or judgments with a query of more judgments than the join lays out as columns,
    are coded as before."""
    from harness.core.vocab import uncoded_hits
    from harness.metrics.inputs import as_qrels, as_run
    from harness.metrics.join import JUDGED_COLUMNS, keyed

    metrics = ["ap", "rr", "ndcg@10", "P@2", "recall@3", "bpref", "judged@3"]
    rows = [("q1", "d3", 1.0), ("q1", "d10", 1.0), ("q1", "d2", 1.0), ("q1", "d3", 0.5), ("q1", "d9", 2.0),
            ("q2", "d1", 0.0), ("q2", "d4", 0.0), ("q3", "d7", 1.0), ("q3", "d5", 1.0)]
    few = {"q1": {"d10": 1, "d2": 2, "d9": 0}, "q2": {"d4": 1, "x": 1}, "q3": {"d5": 1, "é2": 1}}
    many = {"q1": {f"d{i}": i % 3 for i in range(JUDGED_COLUMNS + 1)}, "q2": {"d1": 1}}
    for extra, qrels, scored_on_keys in (([], few, True), ([], many, False), ([("q3", "é1", 1.0)], few, False)):
        table = pa.table(dict(zip(("query_id", "doc_id", "score"), map(list, zip(*rows + extra)))))
        assert (keyed(as_qrels(qrels), as_run(table)) is not None) == scored_on_keys
        on_keys = harness.evaluate(qrels, table, metrics)
        coded_run = as_run(table)
        coded_run.doc_codes  # read: coded
        assert uncoded_hits(coded_run) is None and coded_run.doc_vocab.tolist() == sorted({r[1] for r in rows + extra})
        coded = harness.evaluate(qrels, coded_run, metrics)
        assert np.array_equal(on_keys.values, coded.values) and on_keys.counts == coded.counts
    # q1 in evaluation order: d9 (2.0), then the 1.0 ties by doc id descending d3, d2, d10; the repeat of d3 dropped
    table = pa.table(dict(zip(("query_id", "doc_id", "score"), map(list, zip(*rows)))))
    assert harness.evaluate({"q1": {"d2": 1}}, table, ["rr"]).mean()["rr"] == pytest.approx(1 / 3)
    assert harness.evaluate({"q1": {"d10": 1}}, table, ["rr"]).mean()["rr"] == pytest.approx(1 / 4)
