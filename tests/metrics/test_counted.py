"""ONE rule for which queries count (``harness.metrics.table.included``), seen the same by every reader.

For each run below, every metric's mean is the same number over the same queries in: the summary, per_query.csv
(the mean of its counted rows), ``compare`` (as the baseline), ``gate`` (a rule's observed value; slices too), the
HTML report (the number printed on the page), the sweep leaderboard, report.md's "means over N of M", and the
verdicts' metric means. The numbers are recomputed here from the per-query values, never taken from the code under
test."""

from __future__ import annotations

import csv
import math
import html
import io
import json
import re
from pathlib import Path

import pytest

from clihelp import DEMO, harness
from conftest import ROOT
from harness.config.schema import parse_config
from harness.result.model import LEVELS, Result
from harness.result.read import load_result
from harness.pipeline.assemble import run_experiment
from harness.pipeline.sweep import build_leaderboard
from harness.render.outputs import per_query_csv, write_run_files
from harness.stats.compare import compare_runs
from harness.stats.gates import evaluate_gates, parse_rule

QUIET = {"progress": False, "log": lambda m: None}


def config(tmp: Path, name: str, *, goldset: Path = DEMO / "goldset.jsonl", retriever=None, **extra) -> object:
    data = {"name": name, "corpus": {"path": str(DEMO / "corpus.jsonl")},
            "chunking": {"strategy": "sentences", "size": 2}, "goldset": {"path": str(goldset)},
            "retriever": retriever or {"kind": "bm25", "backend": "fast"}, "cutoff": {"k": 5}, "depth": 50,
            "metrics": ["precision@5", "recall@5", "hit@5", "rr@10", "nothing_found@10", "ap", "rprec", "ndcg@10",
                        "ndcg(gain=exp)@10", "recall@20"], **extra}
    return parse_config(data, f"{name}.yaml", tmp)


def broken_goldset(tmp: Path) -> Path:
    """The demo golden set with two more errors: q03's quote is changed to text not in its document, and q10 also
    names a document that does not exist (its other judgments are fine)."""
    rows = [json.loads(line) for line in (DEMO / "goldset.jsonl").read_text().splitlines()]
    for row in rows:
        if row["id"] == "q03":
            for rel in row["relevant"]:
                for ev in rel.get("evidence", []):
                    if "quote" in ev:
                        ev["quote"] = "this sentence is in no document at all"
        if row["id"] == "q10":
            row["relevant"].append({"doc": "no-such-doc"})
    path = tmp / "broken.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def external_run(tmp: Path, base: Result) -> Path:
    """The demo BM25 run as a TREC file without q01 and with one query the golden set does not have."""
    lines = [line for line in base.run.to_trec("doc").splitlines() if not line.startswith("q01 ")]
    path = tmp / "ext.trec"
    path.write_text("\n".join(lines + ["qX Q0 install-desktop 1 3.5 other"]) + "\n")
    return path


SCENARIOS = ("demo", "more-goldset-errors", "absent-queries", "query-policy-zero")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Result, Result, Path]]:
    """scenario -> (the run, a second run over the same golden set and corpus, the folder its files are in)."""
    tmp = tmp_path_factory.mktemp("counted")
    bm25 = run_experiment(config(tmp, "demo"), **QUIET)
    other = {"kind": "bm25", "backend": "fast", "k1": 0.6, "b": 0.3}
    broken = broken_goldset(tmp)
    ext = external_run(tmp, bm25)
    pairs = {
        "demo": (bm25, run_experiment(config(tmp, "demo-other", retriever=other), **QUIET)),
        "more-goldset-errors": (run_experiment(config(tmp, "broken", goldset=broken), **QUIET),
                                run_experiment(config(tmp, "broken-other", goldset=broken, retriever=other), **QUIET)),
        "absent-queries": (run_experiment(config(tmp, "ext", retriever={"kind": "external", "path": str(ext)}),
                                          **QUIET), bm25),
        "query-policy-zero": (run_experiment(config(tmp, "zero", evaluation={"query_policy": "zero"}), **QUIET),
                              run_experiment(config(tmp, "zero-other", retriever=other,
                                                    evaluation={"query_policy": "zero"}), **QUIET)),
    }
    out = {}
    for name, (run, second) in pairs.items():
        folder = tmp / name
        write_run_files(run, folder)
        out[name] = (run, second, folder)
    return out


def counted_ids(result: Result, level: str) -> list[str]:
    return [q.id for q in result.queries if getattr(q.counted, level)]


def test_the_scenarios_exclude_what_the_rule_says(runs):
    """The rule, spelled out per scenario: golden-set errors out at both levels, no-relevant queries out at their
    level (in, as 0, under query_policy zero), everything else in, absent from the run or not."""
    expect_errors = {"demo": ["q44", "q45"], "more-goldset-errors": ["q03", "q10", "q44", "q45"],
                     "absent-queries": ["q44", "q45"], "query-policy-zero": ["q44", "q45"]}
    for name, (run, _, _) in runs.items():
        for level in LEVELS:
            c = run.summary.level_counts(level)
            errors = expect_errors[name]
            assert c.excluded_goldset_error_query_ids == errors, (name, level)
            assert c.no_relevant_query_ids == ["q46"], (name, level)
            out = set(errors) | (set() if name == "query-policy-zero" else {"q46"})
            assert counted_ids(run, level) == [q.id for q in run.queries if q.id not in out], (name, level)
            assert c.evaluated_queries == 46 - len(out) and c.judged_queries == 46
        assert "goldset_error" in run.conventions["counted_queries"]
    absent = runs["absent-queries"][0]
    assert absent.query("q01").counted.doc and absent.query("q01").metrics.doc["ndcg@10"] == 0.0  # absent: scored 0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_reader_shows_the_same_mean_over_the_same_queries(scenario, runs):
    run, second, folder = runs[scenario]
    rows = list(csv.DictReader(io.StringIO((folder / "per_query.csv").read_text())))
    assert [r["query_id"] for r in rows] == [q.id for q in run.queries]
    page = (folder / "report.html").read_text()
    report = (folder / "report.md").read_text()
    saved = load_result(folder / "results.json")
    assert saved.to_dict() == run.to_dict()

    metrics = [f"{level}.{m}" for level in LEVELS for m in run.summary.means(level)]
    comparison = compare_runs([saved, second], metrics)
    gates = evaluate_gates(saved, [parse_rule(f"{m} >= 0") for m in metrics])
    tags = sorted({(t, v) for q in run.queries for t, v in q.tags.items()})
    sliced = evaluate_gates(saved, [parse_rule({"check": f"{m} >= 0", "slice": {t: v}}) for m in metrics
                                    for t, v in tags])
    metrics_table = page.split('<table id="metrics"', 1)[1].split("</table>", 1)[0]
    page_means = {html.unescape(n): (d, c) for n, d, c in
                  re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td></tr>", metrics_table)}
    assert len(page_means) == len(run.summary.doc)
    checked = 0
    for i, name in enumerate(metrics):
        level, metric = name.split(".", 1)
        counted = [r for r in rows if r[f"counted.{level}"] == "1"]
        assert [r["query_id"] for r in counted] == counted_ids(run, level)
        n = len(counted)
        # per_query.csv, recomputed here under the one rule (metrics.table.mean_of): the same number to the last digit
        mean = math.fsum(float(r[name]) for r in counted) / n
        summary = run.summary.means(level)[metric]
        assert summary == mean, name
        assert n == run.summary.level_counts(level).evaluated_queries
        row = comparison.row(second.name, name)
        assert row.n == n and row.baseline_mean == summary, name
        assert gates[i].observed == summary and gates[i].n == n, name
        for (tag, value), g in zip(tags, sliced.results[i * len(tags):(i + 1) * len(tags)]):
            in_slice = [float(r[name]) for r in counted if r[f"tag.{tag}"] == value]
            if in_slice:
                assert g.observed == math.fsum(in_slice) / len(in_slice), (name, tag, value)
                assert g.n == len(in_slice)
            else:
                assert g.observed is None and g.failed
        shown = page_means[metric][0 if level == "doc" else 1]
        assert shown == f"{mean:.4f}", (name, shown)
        board, _, _ = build_leaderboard("s", name, [(run.name, {}, saved), (second.name, {}, second)])
        entry = next(r for r in board["runs"] if r["run"] == run.name)
        assert entry["mean"] == summary and entry["queries"] == n
        # the verdicts' metric means: the same mask, one kind at a time
        for kind, means in run.summary.verdicts.metric_means.items():
            of_kind = [float(r[name]) for r in counted if r["verdict"] == kind]
            if of_kind:
                assert means[name] == pytest.approx(sum(of_kind) / len(of_kind), rel=1e-12), (kind, name)
            else:
                assert name not in means
        checked += 1
    assert checked == len(metrics) >= 28
    # the HTML curves are over the same queries: at k = 5 they are the chunk-level recall@5 and precision@5
    from harness.render.html import _curves
    recall, precision, firsts = _curves(saved)
    assert len(firsts) == run.summary.counts.chunk.evaluated_queries
    assert recall[4] == pytest.approx(run.summary.chunk["recall@5"], rel=1e-12)
    assert precision[4] == pytest.approx(run.summary.chunk["precision@5"], rel=1e-12)
    assert "goldset_error" not in run.summary.verdicts.metric_means  # never counted, so never averaged
    for level in LEVELS:
        c = run.summary.level_counts(level)
        sentence = f"{level} level: means over {c.evaluated_queries} of {c.judged_queries} queries"
        assert sentence in report and sentence in page


def test_per_query_csv_rows_carry_the_counted_flags(runs):
    run = runs["demo"][0]
    rows = list(csv.DictReader(io.StringIO(per_query_csv(run))))
    flags = {r["query_id"]: (r["counted.doc"], r["counted.chunk"]) for r in rows}
    assert flags["q44"] == flags["q45"] == flags["q46"] == ("0", "0") and flags["q01"] == ("1", "1")


def test_a_broken_quote_does_not_make_every_chunk_of_its_document_relevant(runs):
    """q45's quote is not in 'sync-bandwidth': before, that judgment had no spans left, so every chunk of the
    document counted as evidence (chunk hit@5 over doc hit@5 in demo-dense)."""
    q = runs["demo"][0].query("q45")
    assert q.verdict.kind == "goldset_error" and q.n_relevant.chunk == 0 and q.n_relevant.doc == 1
    doc_hits = [h for h in q.hits if h.doc_id == "sync-bandwidth"]
    assert doc_hits and all(h.doc_relevant and not h.relevant for h in doc_hits)
    assert not q.counted.doc and not q.counted.chunk
    # q03 of the broken golden set: the same, and its verdict names the quote
    q3 = runs["more-goldset-errors"][0].query("q03")
    assert q3.verdict.kind == "goldset_error" and "evidence quote" in q3.verdict.reason
    assert not any(h.relevant for h in q3.hits)


def test_chunk_hit_never_exceeds_doc_hit_over_the_counted_queries(runs):
    for run, _, _ in runs.values():
        s = run.summary
        for name in ("hit@5", "hit@window"):
            assert s.chunk[name] <= s.doc[name], (run.name, name)


def test_a_saved_result_whose_counts_disagree_with_its_flags_is_refused(runs, tmp_path):
    data = runs["demo"][0].to_dict()
    data["queries"][0]["counted"]["doc"] = False
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    proc = harness("gate", path, "--rules", ROOT / "configs" / "gates.yaml")
    assert proc.returncode == 2 and "summary.counts.doc.evaluated_queries: says 43, but 42 queries are counted" \
        in proc.stderr


# ---- an external run that lacks a query and holds one the golden set does not have -----------------------------

def test_external_run_counts_match_harness_eval(runs, tmp_path):
    src = external_run(tmp_path, runs["demo"][0])
    cfg = tmp_path / "ext.yaml"
    cfg.write_text(f"name: ext\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\n"
                   f"chunking: {{strategy: sentences, size: 2}}\ngoldset: {{path: {DEMO / 'goldset.jsonl'}}}\n"
                   f"retriever: {{kind: external, path: {src}}}\ncutoff: {{k: 5}}\n")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    ev = harness("eval", DEMO / "goldset.jsonl", src, "-m", "ndcg@10", "-m", "recall@100", "-m", "ap", "--format", "json",
                 "--per-query")  # the CLI branch: per-query values only with --per-query
    assert ev.returncode == 0, ev.stderr
    evaluated = json.loads(ev.stdout)
    assert "1 of 46 judged queries is absent from the run and scores 0: q01" in ev.stderr
    for level in LEVELS:
        counts = result["summary"]["counts"][level]
        assert (counts["absent_from_run"], counts["absent_from_run_query_ids"], counts["unjudged_run_queries"]) \
            == (1, ["q01"], 1), level
    e = evaluated["counts"]
    assert (e["absent_from_run"], e["absent_from_run_query_ids"], e["unjudged_run_queries"]) == (1, ["q01"], 1)
    # the same numbers per query on both paths (q01 scores 0 on both)
    for q in result["queries"]:
        for metric in ("ndcg@10", "recall@100", "ap"):
            assert q["metrics"]["doc"][metric] == pytest.approx(evaluated["per_query"][q["id"]][metric], abs=1e-12)
    q01 = next(q for q in result["queries"] if q["id"] == "q01")
    assert q01["verdict"]["kind"] == "missing_document" and q01["verdict"]["detail"]["where"] == "absent_from_run"
    assert q01["verdict"]["reason"] == "the run has no ranking for this query (absent from the run): it scores 0"
    assert q01["counted"] == {"doc": True, "chunk": True}
    assert result["summary"]["verdicts"]["by_where"]["absent_from_run"] == 1
    report = (tmp_path / "out" / "report.md").read_text()
    assert "The run lacks 1 judged query (q01) (scored 0) and holds 1 query the golden set does not have" in report
    assert any("absent from the run" in a for a in result["summary"]["verdicts"]["advice"])


# ---- the rule itself -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy,expect", [("exclude", [True, False, False, False]), ("zero", [True, True, False, False])])
def test_included_is_the_rule(policy, expect):
    import numpy as np

    from harness.metrics.table import included

    n_relevant = np.array([2, 0, 3, 0])
    gold_error = np.array([False, False, True, True])
    assert included(n_relevant, policy, gold_error).tolist() == expect
    assert included(n_relevant, policy).tolist() == [True, policy == "zero", True, policy == "zero"]


def test_eval_counts_keep_their_shape_and_a_pipeline_lists_golden_set_errors():
    """``harness eval`` knows no golden-set errors: its counts are trec_eval's; a pipeline table lists them."""
    from harness.core.runtable import Run, Qrels
    from harness.metrics.engine import evaluate

    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {}})
    run = Run.from_dict({"q1": {"a": 1.0}, "q2": {"a": 1.0}, "q9": {"a": 1.0}})
    plain = evaluate(qrels, run, ["hit@1"])
    assert "excluded_goldset_error" not in plain.counts and plain.mean() == {"hit@1": 0.5}
    piped = evaluate(qrels, run, ["hit@1"], gold_errors={"q2"})
    assert piped.counted() == {"q1": True, "q2": False, "q3": False} and piped.mean() == {"hit@1": 1.0}
    assert piped.counts == {"judged_queries": 3, "evaluated_queries": 1, "no_relevant_queries": 1,
                            "no_relevant_query_ids": ["q3"], "excluded_goldset_error": 1,
                            "excluded_goldset_error_query_ids": ["q2"], "absent_from_run": 1,
                            "absent_from_run_query_ids": ["q3"], "unjudged_run_queries": 1, "dropped_duplicates": 0}
