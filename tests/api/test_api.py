"""The Python API (docs/python-api.md): the page's example runs as written and prints what the page shows;
each function gives the numbers of an independent computation (pytrec_eval, RRF spelled out as sums of
1/(k+rank), scipy's paired t-test) and the same numbers as the CLI; a wrong argument is a HarnessError naming it,
never an AttributeError, KeyError or TypeError from deep inside; ``import harness`` stays light."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
import yaml

import harness
from clihelp import ROOT, harness as cli
from conftest import charts_drawn
from harness.core.errors import ConfigError, HarnessError, InputError, MetricError
from harness.core.types import Hit, RankedList

QRELS = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 0, "d5": 1}, "q3": {"d6": 1}, "q4": {"d1": 2, "d9": 1}}
# q3 is judged and absent; q9 is in the run only; q1 holds a score tie (d7, d2), broken by doc id descending.
RUN = {"q1": {"d3": 0.5, "d1": 0.9, "d7": 0.3, "d2": 0.3}, "q2": {"d4": 2.0, "d5": 1.0, "d8": 0.5},
       "q4": {"d9": 0.8, "d3": 0.7, "d1": 0.1}, "q9": {"d1": 1.0}}
PYTREC = {"map": "ap", "ndcg": "ndcg", "recip_rank": "rr", "P_2": "precision@2", "recall_3": "recall@3",
          "Rprec": "rprec", "ndcg_cut_2": "ndcg@2"}


def _trec_run(run: dict) -> str:
    return "".join(f"{q} Q0 {d} {r} {s!r} t\n" for q, docs in run.items()
                   for r, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1))


def _trec_qrels(qrels: dict) -> str:
    return "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())


def _quiet(call: Callable, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo BM25 run written by the API, and a second run (BM25 with b=0.3) to compare against it."""
    tmp = tmp_path_factory.mktemp("api")
    config = harness.load_config(ROOT / "configs" / "demo-bm25.yaml")
    with charts_drawn():  # test_run_returns_what_it_writes lists the PNG charts
        result = _quiet(harness.run, config, out=tmp / "bm25")
    variant = dict(config.resolved(), name="demo-bm25-b03",
                   retriever=dict(config.retriever, b=0.3))
    other = _quiet(harness.run, variant, out=tmp / "b03")
    return {"tmp": tmp, "config": config, "result": result, "other": other}


# ---- import harness stays light -----------------------------------------------------------------------------------

HEAVY = ("torch", "pandas", "matplotlib", "sentence_transformers", "scipy", "sklearn")


def _modules_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def test_import_harness_loads_nothing_heavy():
    loaded = _modules_after("import harness")
    assert not loaded & set(HEAVY + ("numpy", "pydantic", "yaml", "pyarrow")), loaded & set(HEAVY)
    # Evaluating dicts needs numpy, and still none of the heavy libraries.
    loaded = _modules_after("import harness\nharness.evaluate({'q': {'a': 1}}, {'q': {'a': 0.5}}, 'ndcg@10')")
    assert "numpy" in loaded and not loaded & set(HEAVY + ("pydantic",))


def test_public_names():
    from harness.result.model import Result
    from harness.core.runtable import Run, Qrels
    from harness.metrics.engine import MetricTable

    assert harness.Run is harness.Run is Run and harness.Qrels is Qrels
    assert harness.Result is Result and harness.MetricTable is MetricTable and harness.HarnessError is HarnessError
    assert set(harness.__all__) <= set(dir(harness))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        harness.nope  # noqa: B018


# ---- the documented example runs as written -----------------------------------------------------------------------

API_PAGE = ROOT / "docs" / "python-api.md"


def page_cells() -> list[tuple[str, str | None]]:
    """(python code, the text block right after it or None) for every python block of docs/python-api.md."""
    blocks: list[tuple[str, list[str], bool]] = []  # (language, lines, only blank lines since the previous block)
    inside, fence, gap_blank = False, None, True
    for line in API_PAGE.read_text(encoding="utf-8").split("\n"):
        if not inside:
            inside = line == "# Python API"
            continue
        if fence is None and line.startswith("```"):
            fence = (line[3:].strip(), [], gap_blank)
        elif fence is not None and line == "```":
            blocks.append(fence)
            fence, gap_blank = None, True
        elif fence is not None:
            fence[1].append(line)
        elif line.strip():
            gap_blank = False
    assert inside, "docs/python-api.md has no '# Python API' title"
    cells = []
    for i, (language, lines, _) in enumerate(blocks):
        if language == "python":
            following = blocks[i + 1] if i + 1 < len(blocks) else None
            shown = "\n".join(following[1]) + "\n" if following and following[0] == "text" and following[2] else None
            cells.append(("\n".join(lines) + "\n", shown))
    return cells


def test_documented_python_api_example_runs_as_written(monkeypatch):
    from harness.retrievers import REGISTRY, base, kinds

    cells = page_cells()
    assert len(cells) >= 4 and all(shown is not None for _, shown in cells)
    monkeypatch.chdir(ROOT)
    before = set(kinds())  # the built-in kinds, loaded: only what the example adds is removed after it
    # The cells share one module, as a notebook's cells share __main__ (pydantic resolves annotations through it).
    module = types.ModuleType("docs_python_api")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    try:
        for n, (code, shown) in enumerate(cells, 1):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(code, f"docs/python-api.md cell {n}", "exec"), namespace)
            assert out.getvalue() == shown, f"cell {n} printed:\n{out.getvalue()}"
    finally:
        for name in set(REGISTRY) - before:  # the example registers a kind: leave the registry as it was
            del base.REGISTRY[name]  # the registry itself: harness.retrievers.REGISTRY is a read-only view


# ---- evaluate: pytrec_eval's numbers from every input form ----------------------------------------------------------

def test_evaluate_dicts_match_pytrec_eval():
    from pytrec_worker import reference

    per_query = reference(QRELS, {q: v for q, v in RUN.items() if q in QRELS}, list(PYTREC))
    assert per_query is not None, "pytrec_eval did not answer"
    table = harness.evaluate(QRELS, RUN, list(PYTREC.values()), trec_compat=True)
    assert isinstance(table, harness.MetricTable)
    ours = table.per_query()
    for m, name in PYTREC.items():
        for q in per_query:
            assert ours[q][name] == pytest.approx(per_query[q][m], abs=1e-12), (q, m)
        # trec_eval -c: every judged query in the mean, absent ones (q3) as 0
        assert table.mean()[name] == pytest.approx(sum(per_query.get(q, {}).get(m, 0.0) for q in QRELS) / 4,
                                                   abs=1e-12)
    assert table.counts["absent_from_run_query_ids"] == ["q3"] and table.counts["unjudged_run_queries"] == 1


def test_evaluate_every_input_form_gives_the_same_table(tmp_path):
    (tmp_path / "qrels.txt").write_text(_trec_qrels(QRELS))
    (tmp_path / "run.trec").write_text(_trec_run(RUN))
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    metrics = ["ndcg@10", "ap", "rr", "precision@2"]
    expected = harness.evaluate(QRELS, RUN, metrics).per_query()
    forms = [(tmp_path / "qrels.txt", tmp_path / "run.trec"), (str(tmp_path / "qrels.tsv"), str(tmp_path / "run.trec")),
             (harness.Qrels.from_dict(QRELS), harness.Run.from_dict(RUN)),
             ({q: {d: float(g) for d, g in docs.items()} for q, docs in QRELS.items()}, RUN)]  # 1.0 is 1
    for qrels, run in forms:
        assert harness.evaluate(qrels, run, metrics).per_query() == expected
    # The same numbers as `harness eval` on the files
    proc = cli("eval", "qrels.txt", "run.trec", *[a for m in metrics for a in ("-m", m)], "--per-query", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["per_query"] == expected


def test_evaluate_options_pass_through():
    zero = harness.evaluate({"a": {"x": 1}, "b": {"y": 0}}, {"a": {"x": 1.0}, "b": {"y": 1.0}}, "rr",
                            query_policy="zero")
    exclude = harness.evaluate({"a": {"x": 1}, "b": {"y": 0}}, {"a": {"x": 1.0}, "b": {"y": 1.0}}, "rr")
    assert zero.mean() == {"rr": 0.5} and exclude.mean() == {"rr": 1.0}
    # order="rank" trusts the given ranks: x is ranked 2nd although it scores higher
    ranked = harness.Run.from_lists({"a": [("y", 0.1), ("x", 0.9)]}, ranks={"a": [1, 2]})
    assert harness.evaluate({"a": {"x": 1}}, ranked, "rr", order="rank").mean() == {"rr": 0.5}
    assert harness.evaluate({"a": {"x": 1}}, ranked, "rr").mean() == {"rr": 1.0}


def test_evaluate_dataframes(tmp_path):
    pd = pytest.importorskip("pandas")
    qrels = pd.DataFrame([(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()],
                         columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame([(q, d, s) for q, docs in RUN.items() for d, s in docs.items()],
                       columns=["query_id", "doc_id", "score"]).sample(frac=1.0, random_state=3)  # rows in any order
    metrics = ["ndcg@10", "ap", "rr", "precision@2"]
    assert harness.evaluate(qrels, run, metrics).per_query() == harness.evaluate(QRELS, RUN, metrics).per_query()
    numeric = pd.DataFrame({"query_id": [1, 1], "doc_id": [10, 11], "relevance": [1.0, 0.0]})  # ids as numbers
    assert harness.evaluate(numeric, {"1": {"10": 0.2, "11": 0.9}}, "rr").per_query() == {"1": {"rr": 0.5}}


# ---- fuse: RRF spelled out, min-max and z-score by hand, the hybrid retriever's numbers --------------------------

A = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}}
B = {"q1": {"c": 9.0, "a": 8.0, "d": 7.0}, "q3": {"y": 0.5, "z": 0.5}}


def test_fuse_rrf_is_the_sum_of_reciprocal_ranks():
    fused = harness.fuse([A, B])
    assert isinstance(fused, harness.Run)
    assert fused.to_dict() == {
        "q1": {"a": 1 / (60 + 1) + 1 / (60 + 2), "c": 1 / (60 + 3) + 1 / (60 + 1), "b": 1 / (60 + 2),
               "d": 1 / (60 + 3)},
        "q2": {"x": 1 / (60 + 1)},
        "q3": {"z": 1 / (60 + 1), "y": 1 / (60 + 2)},  # tied scores: the larger doc id ranks first
    }
    assert list(fused.to_dict()["q1"]) == ["a", "c", "b", "d"] and fused.ranks.tolist() == [1, 2, 3, 4, 1, 1, 2]
    weighted = harness.fuse([A, B], weights=[2.0, 0.5], k=10).to_dict()["q1"]
    assert weighted == {"a": 2 / 11 + 0.5 / 12, "b": 2 / 12, "c": 2 / 13 + 0.5 / 11, "d": 0.5 / 13}


def test_fuse_normalised_scores():
    minmax = harness.fuse([A, B], "minmax").to_dict()["q1"]
    assert minmax == pytest.approx({"a": 1.0 + 0.5, "b": 0.5, "c": 0.0 + 1.0, "d": 0.0}, abs=1e-15)
    z = harness.fuse([A, B], "zscore", weights=[1.0, 3.0]).to_dict()["q1"]
    za = [(s - 2.0) / math.sqrt(2 / 3) for s in (3.0, 2.0, 1.0)]  # population std of 3, 2, 1
    zb = [(s - 8.0) / math.sqrt(2 / 3) for s in (9.0, 8.0, 7.0)]
    assert z == pytest.approx({"a": za[0] + 3 * zb[1], "b": za[1], "c": za[2] + 3 * zb[0], "d": 3 * zb[2]}, abs=1e-12)
    single = harness.fuse([{"q": {"a": 2.0, "b": 2.0}}, {"q": {"a": 1.0}}], "minmax").to_dict()
    assert single == {"q": {"a": 2.0, "b": 1.0}}  # all-equal scores map to 1


def test_fuse_takes_each_runs_evaluation_order_and_best_copy(tmp_path):
    # A TREC run whose rank column disagrees with its scores and that repeats a doc: trec_eval ranks by score
    # and counts a repeated doc once, at its best rank; fusion ranks the same way.
    (tmp_path / "r.trec").write_text("q Q0 a 1 0.1 t\nq Q0 b 2 0.9 t\nq Q0 a 3 0.5 t\n")
    fused = harness.fuse([tmp_path / "r.trec", {"q": {"a": 1.0}}]).to_dict()
    assert fused == {"q": {"a": 1 / 62 + 1 / 61, "b": 1 / 61}}


@pytest.mark.parametrize("method", ["rrf", "minmax", "zscore"])
def test_fuse_equals_the_hybrid_retrievers_fusion(method):
    from harness.retrievers.compose import fuse as hybrid_fuse

    rng = np.random.default_rng(7)
    runs = [{f"q{q}": {f"d{d}": float(rng.integers(0, 5)) for d in rng.choice(30, 12, replace=False)}
             for q in range(20)} for _ in range(3)]
    fused = harness.fuse(runs, method, weights=[1.0, 0.4, 2.5]).to_dict()
    for q in runs[0]:
        lists = []
        for run in runs:  # what a retriever returns: score descending, ties by id descending, ranks 1..n
            order = sorted(run[q].items(), key=lambda x: (x[1], x[0]), reverse=True)
            lists.append(RankedList(q, tuple(Hit(d, d, s, r) for r, (d, s) in enumerate(order, 1))))
        hits = hybrid_fuse(lists, [1.0, 0.4, 2.5], method, 60.0)
        assert list(fused[q].items()) == [(h.chunk_id, h.score) for h in hits]


# ---- compare: tables and results ------------------------------------------------------------------------------------

def test_compare_tables_matches_a_hand_computed_paired_test():
    from scipy import stats

    other = {"q1": {"d3": 0.9, "d1": 0.5}, "q2": {"d5": 1.0, "d4": 0.2}, "q4": {"d1": 0.9}}
    t1, t2 = harness.evaluate(QRELS, RUN, ["ndcg@10", "rr"]), harness.evaluate(QRELS, other, ["ndcg@10", "rr"])
    c = harness.compare({"base": t1, "other": t2}, test="ttest", correction="none")
    assert isinstance(c, harness.Comparison) and c.baseline == "base" and c.runs == ["base", "other"]
    assert [(r.run, r.metric) for r in c.rows] == [("other", "ndcg@10"), ("other", "rr")]
    for row, metric in zip(c.rows, ["ndcg@10", "rr"]):
        counted = t1.included  # q1, q2, q3 (absent: 0), q4 all have a relevant document
        a, b = t1.column(metric)[counted], t2.column(metric)[counted]
        assert row.n == 4 and row.delta == pytest.approx(float(np.mean(b - a)), abs=1e-15)
        assert (row.wins, row.ties, row.losses) == ((b > a).sum(), (b == a).sum(), (b < a).sum())
        assert row.p == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-12)
    assert "| other | ndcg@10 |" in c.to_markdown()
    names = harness.compare([t1, t2], "rr").runs
    assert names == ["run1", "run2"]


def test_compare_results_matches_the_cli(demo):
    tmp = demo["tmp"]
    api = harness.compare([tmp / "bm25" / "results.json", demo["other"]], ["ndcg@10", "chunk.recall@5"])
    proc = cli("compare", tmp / "bm25" / "results.json", tmp / "b03" / "results.json", "-m", "ndcg@10",
               "-m", "chunk.recall@5", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert api.to_dict() == json.loads(proc.stdout)
    by_name = harness.compare({"main": demo["result"], "candidate": str(tmp / "b03" / "results.json")}, "ndcg@10",
                              baseline="candidate")
    assert by_name.baseline == "candidate" and by_name.rows[0].run == "main"
    assert by_name.rows[0].delta == pytest.approx(-api.rows[0].delta, abs=1e-15)


# ---- gate -----------------------------------------------------------------------------------------------------------

RULES = ["doc.ndcg@10 >= 0.80", "buried_evidence <= 0.01", {"check": "chunk.recall@window >= 0.75",
                                                             "slice": {"topic": "billing"}},
         {"regression": "doc.ndcg@10", "budget": 0.0}]


def test_gate_list_and_file_agree_with_the_cli(demo, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"rules": RULES}))
    result, other = demo["result"], demo["other"]
    from_list = _quiet(harness.gate, result, RULES, baseline=other)
    from_file = _quiet(harness.gate, result, rules, baseline=other)
    assert isinstance(from_list, harness.GateOutcome)
    assert from_list.to_dict() == from_file.to_dict()
    # budget 0 under non_inferiority (issue 35): the variant must be shown no worse at all, which 3 queries cannot
    assert [r.passed for r in from_list.results] == [True, False, True, False] and not from_list.passed
    assert from_list.results[3].verdict in ("INCONCLUSIVE", "FAIL"), from_list.results[3].message
    assert from_list.results[0].observed == pytest.approx(result.summary.doc["ndcg@10"], abs=1e-15)
    proc = cli("gate", demo["tmp"] / "bm25" / "results.json", "--rules", rules, "--baseline",
               demo["tmp"] / "b03" / "results.json")
    assert proc.returncode == 1 and proc.stdout == from_list.to_markdown()
    with pytest.warns(UserWarning, match="1 regression rule"):
        alone = harness.gate(result, RULES)
    assert [r.skipped for r in alone.results] == [False, False, False, True]
    assert harness.gate(demo["tmp"] / "bm25" / "results.json", RULES[:1]).passed


# ---- run ------------------------------------------------------------------------------------------------------------

def test_run_returns_what_it_writes(demo):
    result = demo["result"]
    assert isinstance(result, harness.Result) and result.name == "demo-bm25"
    saved = json.loads((demo["tmp"] / "bm25" / "results.json").read_text())
    assert result.model_dump(mode="json") == saved
    assert sorted(p.name for p in (demo["tmp"] / "bm25").iterdir() if not p.name.startswith(".")) == [
        "hits.parquet", "per_query.csv", "plot_first_rank.png", "plot_precision.png", "plot_recall_ndcg.png",
        "plot_verdicts_by_difficulty.png", "plot_verdicts_by_topic.png", "qrels.chunks.trec", "report.html",
        "report.md", "results.json", "run.chunks.trec", "run.trec"]
    # a path and a mapping give the same numbers as the loaded config
    from_path = _quiet(harness.run, str(ROOT / "configs" / "demo-bm25.yaml"))
    assert from_path.summary == result.summary
    # the warnings of `harness run` are Python warnings here
    with pytest.warns(UserWarning) as caught:
        harness.run(demo["config"])
    assert [str(w.message).split(": ")[1][:11] for w in caught] == ["query 'q44'", "query 'q45'"]


def test_register_retriever_runs_a_third_party_kind():
    from pydantic import BaseModel
    from typing import Literal

    from harness.retrievers import REGISTRY, base

    class FirstChunks(BaseModel):
        kind: Literal["first-chunks"] = "first-chunks"

    class Retriever:
        def __init__(self, config, context):
            self.chunks = []

        def index(self, chunks):
            self.chunks = list(chunks)

        def retrieve(self, queries, k):
            return [RankedList(q.query_id, tuple(Hit(c.chunk_id, c.doc_id, float(k - i), i + 1, c.start, c.end)
                                                 for i, c in enumerate(self.chunks[:k]))) for q in queries]

    config = yaml.safe_load((ROOT / "configs" / "demo-bm25.yaml").read_text())
    config.update(name="first", retriever={"kind": "first-chunks"}, metrics=["recall@5"])
    config["corpus"]["path"] = str(ROOT / "goldsets" / "demo" / "corpus.jsonl")
    config["goldset"]["path"] = str(ROOT / "goldsets" / "demo" / "goldset.jsonl")
    harness.register_retriever("first-chunks", FirstChunks, Retriever, "the first chunks, whatever the query")
    try:
        assert REGISTRY["first-chunks"].summary == "the first chunks, whatever the query"
        result = _quiet(harness.run, config)
        first = [h.chunk_id for h in result.queries[0].hits]
        assert len(first) == min(100, result.corpus.chunks)
        assert all([h.chunk_id for h in q.hits] == first for q in result.queries)
        harness.register_retriever("first-chunks", FirstChunks, Retriever)  # a re-run notebook cell replaces it
    finally:
        del base.REGISTRY["first-chunks"]  # the registry itself: harness.retrievers.REGISTRY is a read-only view


# ---- typed errors: one row per bad argument --------------------------------------------------------------------

@dataclass(frozen=True)
class Bad:
    id: str
    call: Callable[[dict], Any]  # gets the demo fixture
    fragments: tuple[str, ...]
    error: type = InputError


def _sweep_config(demo):
    return dict(demo["config"].resolved(), sweep={"retriever.b": [0.3, 0.75]})


class NoKind:  # a config model without a kind field
    pass


BAD = [
    Bad("qrels-list", lambda d: harness.evaluate([("q1", "d1", 1)], RUN),
        ("qrels: expected a Qrels, a dict {query_id: {doc_id: grade}}", "got list")),
    Bad("qrels-grade-fraction", lambda d: harness.evaluate({"q1": {"d1": 1.5}}, RUN),
        ("qrels['q1']['d1']: expected a whole-number grade, got 1.5",)),
    Bad("arguments-swapped", lambda d: harness.evaluate(RUN, QRELS),
        ("qrels['q1']['d3']: expected a whole-number grade, got 0.5 (a score? the judgments come first",)),
    Bad("qrels-inner-not-dict", lambda d: harness.evaluate({"q1": ["d1"]}, RUN),
        ("qrels['q1']: expected a dict {doc_id: grade}, got list",)),
    Bad("every-problem-at-once", lambda d: harness.evaluate({"q1": {"d 1": 1, "d2": "1"}, "": {"d": 1}}, RUN),
        ("3 problem(s)", "qrels['q1']['d 1']: document id 'd 1' contains whitespace",
         "qrels['q1']['d2']: expected a whole-number grade, got '1'", "qrels['']: query id is empty")),
    Bad("id-twice", lambda d: harness.evaluate({1: {"a": 1}, "1": {"a": 1}}, RUN),
        ("qrels['1']: query id '1' is given twice",)),
    Bad("run-is-qrels", lambda d: harness.evaluate(QRELS, harness.Qrels.from_dict(QRELS)),
        ("run: expected a Run, a dict {query_id: {doc_id: score}}", "got a Qrels (the run comes second")),
    Bad("run-nan", lambda d: harness.evaluate(QRELS, {"q1": {"d1": float("nan")}}),
        ("run['q1']['d1']: a NaN score has no place in a ranking",)),
    Bad("run-score-text", lambda d: harness.evaluate(QRELS, {"q1": {"d1": "0.5"}}),
        ("run['q1']['d1']: expected a number as score, got '0.5'",)),
    Bad("run-score-bool", lambda d: harness.evaluate(QRELS, {"q1": {"d1": True}}),
        ("expected a number as score, got True",)),
    Bad("metric-unknown", lambda d: harness.evaluate(QRELS, RUN, ["ndcg@10", "bleu@3"]),
        ("unknown metric 'bleu'",), MetricError),
    Bad("metrics-number", lambda d: harness.evaluate(QRELS, RUN, 10), ("metrics: expected a metric name",)),
    Bad("query-policy", lambda d: harness.evaluate(QRELS, RUN, query_policy="drop"),
        ("unknown query policy 'drop'",), MetricError),
    Bad("trec-compat-text", lambda d: harness.evaluate(QRELS, RUN, trec_compat="yes"),
        ("trec_compat: expected True or False",)),
    Bad("qrels-path-missing", lambda d: harness.evaluate(d["tmp"] / "nope.txt", RUN),
        ("nope.txt: qrels file not found",)),
    Bad("run-path-missing", lambda d: harness.evaluate(QRELS, str(d["tmp"] / "nope.trec")),
        ("nope.trec: run file not found",)),
    Bad("fuse-one-run", lambda d: harness.fuse([A]), ("runs: expected a list of two or more runs, got a list of 1",)),
    Bad("fuse-not-a-list", lambda d: harness.fuse(A), ("runs: expected a list of two or more runs, got dict",)),
    Bad("fuse-arguments", lambda d: harness.fuse([A, B], "borda", weights=[1, -1], k=0),
        ("method: expected one of rrf, minmax, zscore, got 'borda'", "weights[1]: expected a number >= 0, got -1")),
    Bad("fuse-weights-length", lambda d: harness.fuse([A, B], weights=[1.0]),
        ("weights: expected one number per run (2)",)),
    Bad("fuse-k-not-rrf", lambda d: harness.fuse([A, B], "minmax", k=10), ("k: only rrf takes k",)),
    Bad("fuse-k-zero", lambda d: harness.fuse([A, B], k=0), ("k: expected a number > 0, got 0",)),
    Bad("fuse-bad-run", lambda d: harness.fuse([A, {"q1": {"a": "high"}}]),
        ("runs[1]['q1']['a']: expected a number as score, got 'high'",)),
    Bad("compare-one", lambda d: harness.compare([d["result"]]),
        ("compare needs two or more results or MetricTables, got 1",)),
    Bad("compare-not-a-list", lambda d: harness.compare(d["result"]), ("results: expected a list",)),
    Bad("compare-mix", lambda d: harness.compare([d["result"], harness.evaluate(QRELS, RUN)]), ("not a mix",)),
    Bad("compare-other-queries", lambda d: harness.compare([harness.evaluate(QRELS, RUN), harness.evaluate(
        {"q1": QRELS["q1"]}, RUN)]), ("results[1]: covers other queries than the first table",)),
    Bad("compare-other-judgments", lambda d: harness.compare([harness.evaluate(QRELS, RUN), harness.evaluate(
        dict(QRELS, q4={"d1": 0}), RUN)]), ("results[1]: was evaluated against other judgments",)),
    Bad("compare-table-level", lambda d: harness.compare([harness.evaluate(QRELS, RUN)] * 2, "chunk.rr"),
        ("a MetricTable has one level",)),
    Bad("compare-baseline", lambda d: harness.compare([d["result"], d["other"]], baseline="main"),
        ("baseline 'main' is not one of the runs: demo-bm25, demo-bm25-b03",)),
    Bad("compare-bad-dict", lambda d: harness.compare([{"name": "x"}, d["result"]]),
        ("results[0]: not a valid result", "config: required field is missing")),
    Bad("compare-metric-missing", lambda d: harness.compare([d["result"], d["other"]], "ndcg@3"),
        ("metric doc.ndcg@3 is not in run 'demo-bm25'",)),
    Bad("gate-one-rule-as-text", lambda d: harness.gate(d["result"], "doc.ndcg@10 >= 0.8"),
        ("rules: 'doc.ndcg@10 >= 0.8' is not a file; to give one rule, pass a list",)),
    Bad("gate-rules-file-missing", lambda d: harness.gate(d["result"], d["tmp"] / "rules.yaml"),
        ("rules.yaml: rules file not found",)),
    Bad("gate-bad-rules", lambda d: harness.gate(d["result"], ["doc.ndcg@10 >= 0.8", "ndcg@10 = 1", {"check": 3},
                                                           "doc.ndcg@3 >= 0.5"]),
        ("rules.1: cannot read check 'ndcg@10 = 1'", "rules.2: check: expected a string",
         "rules.3: metric doc.ndcg@3 is not in this run")),
    Bad("gate-rules-empty", lambda d: harness.gate(d["result"], []),
        ("rules: expected a rules YAML path or a non-empty list",)),
    Bad("gate-result-type", lambda d: harness.gate(42, ["doc.ndcg@10 >= 0.8"]), ("result: expected a Result",)),
    Bad("load-config-type", lambda d: harness.load_config(42), ("load_config: expected the path",), ConfigError),
    Bad("load-config-missing", lambda d: harness.load_config(d["tmp"] / "none.yaml"),
        ("none.yaml: config file not found",), ConfigError),
    Bad("run-config-type", lambda d: harness.run(42), ("config: expected the path of an experiment YAML",),
        ConfigError),
    Bad("run-config-mapping", lambda d: harness.run({"name": "x"}), ("config: invalid config", "corpus"), ConfigError),
    Bad("run-sweep", lambda d: harness.run(_sweep_config(d)), ("sweep: harness.run runs one experiment",), ConfigError),
    Bad("register-builtin", lambda d: harness.register_retriever("bm25", NoKind, print), (
        "retriever kind 'bm25': config_model must be a pydantic model class",), ConfigError),
    Bad("register-no-kind", lambda d: harness.register_retriever("mine", ConfigError.__class__, 3), (
        "config_model must be a pydantic model class",), ConfigError),
]


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_bad_arguments_are_typed_errors(case, demo):
    with pytest.raises(HarnessError) as info:
        _quiet(case.call, demo)
    assert isinstance(info.value, case.error) and info.value.exit_code == 2, type(info.value)
    message = str(info.value)
    for fragment in case.fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"


BAD_FRAMES = [
    ("missing-column",
     lambda pd: harness.evaluate(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "grade": [1]}), RUN),
     ("qrels: the DataFrame has no column 'relevance'", "it has query_id, doc_id, grade")),
    ("nan-id-and-score", lambda pd: harness.evaluate(QRELS, pd.DataFrame(
        {"query_id": ["q1", None], "doc_id": ["d1", "d2"], "score": [float("nan"), 1.0]})),
     ("run.iloc[0].score: a NaN score", "run.iloc[1].query_id: query id is missing (nan)")),
    ("judged-twice", lambda pd: harness.evaluate(pd.DataFrame(
        {"query_id": ["q", "q"], "doc_id": ["d", "d"], "relevance": [1, 2]}), RUN),
     ("qrels: query 'q', doc 'd' is judged twice",)),
    ("string-and-number-id", lambda pd: harness.evaluate(pd.DataFrame(
        {"query_id": ["1", 1], "doc_id": ["d", "e"], "relevance": [1, 2]}), RUN),
     ("id '1' is given both as a string and as a number",)),
]


@pytest.mark.parametrize("call, fragments", [c[1:] for c in BAD_FRAMES], ids=[c[0] for c in BAD_FRAMES])
def test_bad_dataframes_are_typed_errors(call, fragments):
    pd = pytest.importorskip("pandas")
    with pytest.raises(InputError) as info:
        call(pd)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


# ---- what a careless notebook user passed (a walk of the API, 2026-12-05) ---------------------------------------

@pytest.mark.parametrize("make, fragment", [
    # ids are read as strings here as evaluate reads a dict: document 2 was kept an int and never matched "2"
    (lambda: harness.Run.from_lists({"q1": ["d1"]}), "Run.from_lists['q1'][0]: expected a (doc_id, score) pair"),
    (lambda: harness.Run.from_lists("x"), "Run.from_lists: expected a dict"),
    (lambda: harness.Run.from_lists({"q1": [("d1", 1.0)]}, ranks={"q1": [1.5]}), "ranks['q1']: a rank is a whole"),
    (lambda: harness.Run.from_lists({"q1": [("d1", 1.0)]}, ranks={"q1": [2**70]}), "ranks['q1']: a rank is a whole"),
    (lambda: harness.Run.from_dict("run.trec"), "Run.from_dict: expected a dict"),
    (lambda: harness.Run.from_dict({"q1 ": {"d1": 1.0}}), "query id 'q1 ' contains whitespace"),
    (lambda: harness.Run.from_dict({"q1": {"d1": float("nan")}}), "a NaN score"),
    (lambda: harness.Qrels.from_dict({"q1": {"d1": 1.5}}), "expected a whole-number grade, got 1.5"),
    (lambda: harness.Qrels.from_dict("x"), "Qrels.from_dict: expected a dict"),
    (lambda: harness.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": float("inf")}}, ["rr"]), "score inf is not a finite"),
    (lambda: harness.parse_metric(10), "a metric is a name such as 'ndcg@10' or a MetricSpec, got int 10"),
    (lambda: harness.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, [harness.MetricSpec("ndcg", -5)]),
     "cannot parse metric name 'ndcg@-5'"),
    (lambda: harness.parse_metric(harness.MetricSpec("ndcg", 5, 1, "exq")), "gain must be one of"),
    (lambda: harness.parse_metric(harness.MetricSpec("zzz", 5)), "unknown metric family 'zzz'"),
])
def test_the_public_constructors_check_what_evaluate_checks(make, fragment):
    with pytest.raises(HarnessError, match=None) as caught:
        make()
    assert isinstance(caught.value, (InputError, MetricError)) and fragment in str(caught.value)


def test_a_run_built_from_a_dict_reads_ids_as_evaluate_does():
    """``{"1": {2: 1.0}}`` names document "2", as evaluate reads the same dict (rr was 0.0, not 1.0)."""
    qrels = {"1": {"2": 1}}
    built = harness.evaluate(qrels, harness.Run.from_dict({"1": {2: 1.0}}), ["rr"])
    given = harness.evaluate(qrels, {"1": {2: 1.0}}, ["rr"])
    assert built.mean()["rr"] == given.mean()["rr"] == 1.0
    assert harness.evaluate(harness.Qrels.from_dict({1: {2: 1}}), {"1": {"2": 1.0}}, ["rr"]).mean()["rr"] == 1.0


def test_fusion_of_scores_near_the_float_limit_is_not_nan():
    """1e308 and -1e308 overflowed min-max's spread (NaN fused scores, ranked silently) and z-score's variance."""
    huge = {"q1": {"a": 1e308, "b": -1e308, "c": 0.0}}
    small = {"q1": {"a": 1.0, "b": -1.0, "c": 0.0}}
    for method in ("minmax", "zscore"):
        assert harness.fuse([huge, small], method).to_dict() == harness.fuse([small, small], method).to_dict()


def test_fuse_takes_weights_as_a_numpy_array():
    a, b = {"q1": {"d1": 1.0, "d2": 0.5}}, {"q1": {"d1": 0.2, "d2": 0.9}}
    assert harness.fuse([a, b], weights=np.array([1.0, 2.0])).to_dict() == harness.fuse([a, b], weights=[1, 2]).to_dict()


def test_a_run_dataframes_rank_column_is_read_for_order_rank():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [0.1, 0.9], "rank": [1, 2]})
    assert harness.evaluate({"q1": {"a": 1}}, frame, ["rr"], order="rank").mean()["rr"] == 1.0
    assert harness.evaluate({"q1": {"a": 1}}, frame, ["rr"]).mean()["rr"] == 0.5
    # 0-based ranks are ranks, as in a run file; a rank column is read only for order="rank" (a NaN in it, or no
    # such column, is nothing to the default order)
    assert harness.evaluate({"q1": {"a": 1}}, frame.assign(rank=[0, 1]), ["rr"], order="rank").mean()["rr"] == 1.0
    assert harness.evaluate({"q1": {"a": 1}}, frame.assign(rank=[float("nan"), 1]), ["rr"]).mean()["rr"] == 0.5
    with pytest.raises(InputError, match=r"run.iloc\[0\].rank: a rank is a whole number, got nan"):
        harness.evaluate({"q1": {"a": 1}}, frame.assign(rank=[float("nan"), 1]), ["rr"], order="rank")
    with pytest.raises(InputError, match=r"order='rank' reads the DataFrame's rank column, and it has none"):
        harness.evaluate({"q1": {"a": 1}}, frame.drop(columns="rank"), ["rr"], order="rank")
    assert harness.fuse([frame.assign(rank=[0, float("nan")]), frame]).to_dict()  # fusion reads no ranks


def test_compare_of_tables_speaks_of_tables():
    """A metric a table lacks was named 'doc.ap ... in run' (the stand-in Result's level); a None among tables was
    'not a mix' without saying which."""
    table = harness.evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}, "q2": {"a": 0.9, "b": 0.5}},
                             ["rr", "ndcg@10"])
    with pytest.raises(InputError, match=r"metrics: 'ap' not in the MetricTable results\[0\] \(it has rr, ndcg@10\)"):
        harness.compare([table, table], "ap")
    with pytest.raises(InputError, match=r"not a mix \(results\[1\] is NoneType\)"):
        harness.compare([table, None])
    assert [r.metric for r in harness.compare([table, table], "RR").rows] == ["rr"]


def test_table_means_without_selections_says_what_it_takes():
    table = harness.evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}}, ["rr"])
    with pytest.raises(MetricError, match=r"selections: expected a list of row masks .* table.mean\(\)"):
        table.means(None)
    assert table.means([None]) == [table.mean()]


def test_run_from_lists_finds_ranks_by_the_id_as_read():
    """Ranks keyed 1 for a list keyed "1" (or the other way) belong to it: both ids read as "1"."""
    run = harness.Run.from_lists({1: [("a", 0.1), ("b", 0.9)]}, ranks={"1": [1, 2]})
    assert harness.evaluate({"1": {"a": 1}}, run, ["rr"], order="rank").mean()["rr"] == 1.0


def test_fusion_scaling_rounds_nothing():
    """Scores above 1e100 are scaled by a power of two: min-max of a list that did not overflow is bit for bit the
    unscaled arithmetic."""
    from harness.retrievers.fusion import _normalised, normalise

    scores = np.array([3.3e120, 1.7e120, 2.9e119, -4.1e118])
    assert normalise(scores, "minmax").tolist() == _normalised(scores, "minmax").tolist()


def test_evaluate_warns_as_eval_does_when_judged_queries_are_absent():
    """A run whose query ids were renamed scored 0 everywhere with no word (the CLI's eval said it on stderr)."""
    import warnings

    with pytest.warns(UserWarning, match="the run and the qrels have no query in common"):
        assert harness.evaluate({"q1": {"d1": 1}}, {"Q1": {"d1": 1.0}}, ["rr"]).mean()["rr"] == 0.0
    with pytest.warns(UserWarning, match="1 of 2 judged queries is absent from the run and scores 0: q2"):
        harness.evaluate({"q1": {"d1": 1}, "q2": {"d1": 1}}, {"q1": {"d1": 1.0}}, ["rr"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a run that answers every judged query: nothing to say
        harness.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}, "q9": {"d1": 1.0}}, ["rr"])


def test_a_query_id_given_as_a_number_or_rules_as_bytes(demo):
    """`result.query(1)` was None on SciFact, whose query "1" exists (evaluate reads 1 as "1"); `query(None)` was
    None too; `gate(result, b"...")` read the bytes as 18 numbers, an error each."""
    result = demo["result"]
    numbered = result.model_copy(update={"queries": [q.model_copy(update={"id": q.id[1:].lstrip("0")})
                                                     for q in result.queries]})
    assert numbered.query(1).id == "1" and numbered.query("1").id == "1" and numbered.query(1000) is None
    for bad in (None, 1.0, True, ["q01"]):
        with pytest.raises(InputError, match="query id: expected text"):
            result.query(bad)
    with pytest.raises(InputError, match=r"^rules: expected a rules YAML path or a non-empty list") as caught:
        harness.gate(result, b"doc.ndcg@10 >= 0.8")
    assert not caught.value.problems


def test_a_run_or_qrels_built_from_arrays_is_checked_before_it_is_scored():
    """The public constructors took any arrays: a NaN score or a code past the vocabulary scored silently, float
    grades were read, lists or offsets past the rows were a raw TypeError or IndexError; `==` raised ValueError."""
    import numpy as np

    ids = lambda *xs: np.array(list(xs), dtype=object)  # noqa: E731
    qrels = {"q1": {"d1": 1}}
    run = lambda codes, scores: harness.Run(ids("q1"), np.array([0, 1]), ids("d1"), np.array(codes),  # noqa: E731
                                            np.array(scores))
    cases = [
        (lambda: harness.evaluate(qrels, run([0], [np.nan]), "rr"), "run.scores: a NaN or infinite score"),
        (lambda: harness.evaluate(qrels, run([7], [1.0]), "rr"), "run.doc_codes: a code outside the vocabulary"),
        (lambda: harness.evaluate(harness.Qrels(ids("q1"), np.array([0, 1]), ids("d1"), np.array([1.5])), {"q1": {"d1": 1.0}},
                                  "rr"), "qrels.grades: expected a one-dimensional NumPy array of whole numbers"),
        (lambda: harness.evaluate(harness.Qrels(["q1"], [0, 1], ["d1"], [1]), {"q1": {"d1": 1.0}}, "rr"),
         "qrels.query_ids: expected a one-dimensional NumPy array of ids"),
        (lambda: harness.evaluate(harness.Qrels(ids("q1"), np.array([0, 5]), ids("d1"), np.array([1])),
                                  {"q1": {"d1": 1.0}}, "rr"), "qrels.offsets: expected to rise from 0 to the 1 rows"),
        (lambda: harness.evaluate(qrels, harness.Run(ids("q1", "q1"), np.array([0, 1, 1]), ids("d1"), np.array([0]),
                                                     np.array([1.0])), "rr"), "run.query_ids: an id is given twice"),
    ]
    for make, fragment in cases:
        with pytest.raises(InputError) as caught:
            make()
        assert any(fragment in line for line in caught.value.problems), caught.value.problems
    assert harness.evaluate(qrels, run([0], [1.0]), "rr").mean()["rr"] == 1.0  # a sound one is scored
    same, other = harness.Run.from_dict({"q1": {"d1": 1.0}}), harness.Run.from_dict({"q1": {"d1": 2.0}})
    assert same == harness.Run.from_dict({"q1": {"d1": 1.0}}) and same != other and same != "run"
    assert harness.Qrels.from_dict(qrels) == harness.Qrels.from_dict(qrels)


def test_a_run_whose_vocabulary_is_not_in_sorted_order_is_refused():
    """Ties are broken by the vocabulary's sorted order: a hand-built run with ['d2', 'd1', 'd0'] and no doc_order
    scored rr 0.333 where the sorted one scores 1.0 (three tied hits). doc_codes=None was a raw TypeError."""
    import numpy as np

    ids = lambda *xs: np.array(list(xs), dtype=object)  # noqa: E731
    qrels = {"q1": {"d2": 1}}
    tied = dict(query_ids=ids("q1"), offsets=np.array([0, 3]), doc_codes=np.array([0, 1, 2]), scores=np.ones(3))
    assert harness.evaluate(qrels, harness.Run(doc_vocab=ids("d0", "d1", "d2"), **tied), "rr").mean()["rr"] == 1.0
    with pytest.raises(InputError) as caught:
        harness.evaluate(qrels, harness.Run(doc_vocab=ids("d2", "d1", "d0"), **tied), "rr")
    assert caught.value.problems == ["run.doc_vocab: not sorted (sort it, or give doc_order: each entry's sorted "
                                     "position)"]
    given = harness.Run(doc_vocab=ids("d2", "d1", "d0"), doc_order=np.array([2, 1, 0]),
                        **dict(tied, doc_codes=np.array([2, 1, 0])))
    assert harness.evaluate(qrels, given, "rr").mean()["rr"] == 1.0  # the same run, its order given
    with pytest.raises(InputError, match="do not fit together") as caught:
        harness.evaluate(qrels, harness.Run(doc_vocab=ids("d0", "d1", "d2"), **dict(tied, doc_codes=None)), "rr")
    assert caught.value.problems[0].startswith("run.doc_codes: expected a one-dimensional NumPy array")
    numbered = harness.Run.from_dict({"1": {"d": 1.0}})
    assert harness.evaluate({"1": {"d": 1}}, numbered, "rr").mean()["rr"] == 1.0
