"""The CLI as a user runs it: subprocesses, exit codes, one-line errors, no tracebacks."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytrec_eval = pytest.importorskip("pytrec_eval")


def harness(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "demo-bm25"
    proc = harness("run", "configs/demo-bm25.yaml", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out / "report.html")
    return out, json.loads((out / "results.json").read_text())


def test_demo_outputs_exist(demo):
    out, result = demo
    for name in ("results.json", "run.trec", "run.chunks.trec", "per_query.csv", "report.md"):
        assert (out / name).stat().st_size > 0
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "staging folder left behind"
    assert len(result["queries"]) == 46 and result["cutoff"]["k"] == 5


def test_demo_shows_every_verdict_kind(demo):
    counts = demo[1]["summary"]["verdicts"]["counts"]
    assert counts == {"goldset_error": 2, "unanswerable": 0, "no_gold": 1, "missing_document": 1, "wrong_chunk": 2,
                      "incomplete": 0, "buried_evidence": 3, "ok": 37}
    # the demo names no evidence group (never incomplete) and marks no query answerable: false


def test_demo_numbers_match_trec_eval_on_the_written_run(demo):
    out, result = demo
    qrels = {}
    for line in (ROOT / "goldsets/demo/goldset.jsonl").read_text().splitlines():
        row = json.loads(line)
        qrels[row["id"]] = {r["doc"]: r.get("grade", 1) for r in row["relevant"]}
    run = {}
    for line in (out / "run.trec").read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "recall_5", "ndcg_cut_10", "map", "Rprec"}).evaluate(run)
    # The counted rule: no relevant document (q46), or a golden-set entry that cannot be checked (q44 names a
    # document not in the corpus, q45 a quote not in its document): not in the means.
    errors = {p["query_id"] for p in result["goldset"]["problems"]}
    assert errors == {"q44", "q45"}
    with_rel = [q for q in ref if any(g > 0 for g in qrels[q].values()) and q not in errors]
    assert [q["id"] for q in result["queries"] if q["counted"]["doc"]] == with_rel
    mean = lambda m: sum(ref[q][m] for q in with_rel) / len(with_rel)
    s = result["summary"]["doc"]
    assert s["precision@5"] == pytest.approx(mean("P_5"), abs=1e-9)
    assert s["recall@5"] == pytest.approx(mean("recall_5"), abs=1e-9)
    assert s["ndcg@10"] == pytest.approx(mean("ndcg_cut_10"), abs=1e-9)
    assert s["ap"] == pytest.approx(mean("map"), abs=1e-9)
    assert s["rprec"] == pytest.approx(mean("Rprec"), abs=1e-9)
    assert result["summary"]["counts"]["doc"]["no_relevant_query_ids"] == ["q46"]
    assert result["summary"]["counts"]["doc"]["excluded_goldset_error_query_ids"] == ["q44", "q45"]
    assert result["summary"]["counts"]["doc"]["evaluated_queries"] == len(with_rel) == 43


def test_verdicts_agree_with_window_metrics(demo):
    for q in demo[1]["queries"]:
        kind = q["verdict"]["kind"]
        if kind in ("goldset_error", "no_gold"):
            continue
        assert (kind in ("ok", "incomplete", "buried_evidence")) == (q["metrics"]["chunk"]["hit@window"] == 1.0), q["id"]
        assert (kind == "missing_document") == (q["metrics"]["doc"]["hit@window"] == 0.0), q["id"]


def test_report_md_has_summary_verdicts_and_conventions(demo):
    md = (demo[0] / "report.md").read_text()
    for fragment in ("## Metrics", "| ndcg@10 |", "## Verdicts", "### By topic", "## Advice", "## Worst queries",
                     "### wrong_chunk", "## Conventions", "1/log2(rank + 1)"):
        assert fragment in md


def test_eval_command_json_matches_pytrec_eval(demo, tmp_path):
    out, _ = demo
    qrels = tmp_path / "qrels.txt"
    lines = []
    for line in (ROOT / "goldsets/demo/goldset.jsonl").read_text().splitlines():
        row = json.loads(line)
        lines += [f"{row['id']} 0 {r['doc']} {r.get('grade', 1)}" for r in row["relevant"]]
    qrels.write_text("\n".join(lines) + "\n")
    proc = harness("eval", str(qrels), str(out / "run.trec"), "-m", "nDCG@10", "-m", "MRR@10", "--format", "json",
                   "--per-query")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"mean", "per_query", "conventions", "counts"}
    assert set(data["mean"]) == {"ndcg@10", "rr@10"}
    tsv = harness("eval", str(qrels), str(out / "run.trec"), "-m", "ndcg@10", "--format", "tsv")
    assert tsv.stdout.startswith("ndcg@10\tall\t")


def test_trec_compat_equals_trec_eval_c(demo, tmp_path):
    out, _ = demo
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q01 0 install-desktop 2\nq01 0 nowhere 1\nqx 0 nothing 1\n")
    data = json.loads(harness("eval", str(qrels), str(out / "run.trec"), "-m", "map", "--trec-compat",
                              "--per-query").stdout)
    assert data["mean"]["ap"] == pytest.approx(data["per_query"]["q01"]["ap"] / 2)  # qx is absent: 0, counted
    assert data["counts"]["unjudged_run_queries"] == 45


def test_bad_config_exits_2_with_location_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "configs/demo-bm25.yaml").read_text().replace("k1: 1.2", "k_1: 1.2")
                   .replace("../goldsets", str(ROOT / "goldsets")))
    proc = harness("run", str(bad))
    assert proc.returncode == 2
    assert "retriever.k_1: unknown key; did you mean 'k1'?" in proc.stderr and str(bad) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_validate_reports_gold_problems_as_warnings_like_run():
    proc = harness("validate", "configs/demo-bm25.yaml")
    assert proc.returncode == 0  # run flags these queries (on_gold_error: flag), so they are warnings
    assert "warning: " in proc.stderr and "relevant document 'api-pagination' is not in the corpus" in proc.stderr
    assert "evidence quote 'LAN sync copies" in proc.stderr and "Traceback" not in proc.stderr


def test_eval_bad_run_line_exits_2(tmp_path):
    (tmp_path / "q.txt").write_text("q 0 d 1\n")
    (tmp_path / "r.trec").write_text("q Q0 d 1 x run\n")
    proc = harness("eval", str(tmp_path / "q.txt"), str(tmp_path / "r.trec"))
    assert proc.returncode == 2 and "r.trec:1: score 'x' is not a number" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_lists_commands_with_examples():
    proc = harness("run", "--help")
    assert proc.returncode == 0 and "Example: harness run configs/demo-bm25.yaml" in proc.stdout


def test_explain_saved_run_as_json(demo):
    out, _ = demo
    proc = harness("explain", str(out / "results.json"), "q16", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    ex = json.loads(proc.stdout)
    assert ex["verdict"]["kind"] == "wrong_chunk"
    assert ex["evidence"][0]["text"].startswith("Annual plans cancelled within the first 30 days")
    assert len(ex["window"]) == 5 and any(h["doc_relevant"] for h in ex["window"])
    assert ex["relevant_beyond_window"][0]["rank"] == ex["verdict"]["detail"]["evidence_rank"]


def test_explain_live_query_with_bm25_terms():
    proc = harness("explain", "configs/demo-bm25.yaml", "--query", "how do I rotate the API key?", "--doc", "api-keys",
                   "--quote", "choose Rotate next to the key", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    assert "**ok**: the evidence is at rank 2 of 5" in proc.stdout
    assert "terms: rotat" in proc.stdout and "| evidence |" in proc.stdout


def test_explain_unknown_query_is_a_clean_error(demo):
    proc = harness("explain", str(demo[0] / "results.json"), "nope")
    assert proc.returncode == 2 and "query 'nope' is not in this result" in proc.stderr


def test_compare_command_on_two_demo_runs(demo, tmp_path):
    out, _ = demo
    other = tmp_path / "demo-bm25-k10"
    cfg = tmp_path / "k10.yaml"
    cfg.write_text((ROOT / "configs/demo-bm25.yaml").read_text().replace("k: 5", "k: 10")
                   .replace("name: demo-bm25", "name: demo-bm25-k10").replace("../goldsets", str(ROOT / "goldsets")))
    assert harness("run", str(cfg), "--out", str(other), "-q").returncode == 0
    proc = harness("compare", str(out / "results.json"), str(other / "results.json"), "-m", "chunk.recall@window",
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert "cutoffs differ" in proc.stderr
    row = data["rows"][0]
    assert row["metric"] == "chunk.recall@window" and row["delta"] >= 0 and row["losses"] == 0


def test_gate_exit_codes_and_files(demo, tmp_path):
    out, _ = demo
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - 'doc.ndcg@10 >= 0.5'\n  - 'missing_document <= 0.5'\n")
    summary, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    ok = harness("gate", str(out / "results.json"), "--rules", str(rules), "--summary", str(summary),
                 "--junit", str(junit))
    assert ok.returncode == 0 and ": PASS" in summary.read_text() and "<testsuite" in junit.read_text()
    rules.write_text("rules:\n  - 'doc.ndcg@10 >= 0.99'\n")
    assert harness("gate", str(out / "results.json"), "--rules", str(rules)).returncode == 1
    rules.write_text("rules: []\n")
    bad = harness("gate", str(out / "results.json"), "--rules", str(rules))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
