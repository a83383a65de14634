"""harness goldset stats: counts read independently from the golden-set file, and the minimum detectable effect
recomputed by hand from a run's per-query values (counted queries only)."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from clihelp import DEMO, Case, demo_config, harness, run_case

GOLD = DEMO / "goldset.jsonl"
Z = 1.959963984540054 + 0.8416212335729143  # z(0.975) + z(0.80), from tables


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stats")
    proc = harness("run", demo_config(tmp, cutoff="{k: 5}", metrics="[ndcg@10, recall@5]"), "--out", tmp / "r", "-q")
    assert proc.returncode == 0, proc.stderr
    return tmp / "r" / "results.json"


def test_stats_of_the_demo_golden_set(results):
    rows = [json.loads(line) for line in GOLD.read_text().splitlines() if line.strip()]
    proc = harness("goldset", "stats", GOLD, "--results", results, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    judgments = [r for row in rows for r in row.get("relevant", [])]
    assert s["queries"] == len(rows) and s["judgments"] == len(judgments)
    assert s["judgments_per_query"]["max"] == max(len(r.get("relevant", [])) for r in rows)
    assert sum(s["grades"].values()) == len(judgments)
    assert s["evidence"]["with_evidence"] == sum(bool(j.get("evidence")) for j in judgments if j.get("grade", 1) > 0)
    topics = {}
    for row in rows:
        topics[row["tags"]["topic"]] = topics.get(row["tags"]["topic"], 0) + 1
    assert s["slices"]["topic"] == dict(sorted(topics.items()))
    data = json.loads(results.read_text())
    values = [q["metrics"]["doc"]["ndcg@10"] for q in data["queries"] if q["counted"]["doc"]]
    power = s["power"]
    assert power["metric"] == "ndcg@10" and power["queries"] == len(values)
    assert power["mde"] == pytest.approx(Z * statistics.stdev(values) / math.sqrt(len(values)), abs=1e-4)


def test_chunk_metric_and_table(results):
    proc = harness("goldset", "stats", GOLD, "--results", results, "-m", "chunk.recall@5")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(results.read_text())
    values = [q["metrics"]["chunk"]["recall@5"] for q in data["queries"] if q["counted"]["chunk"]]
    mde = Z * statistics.stdev(values) / math.sqrt(len(values))
    assert f"minimum detectable effect (chunk.recall@5, {len(values)} queries" in proc.stdout
    assert f"{mde:.4f}" in proc.stdout
    assert proc.stdout.startswith("queries: 46")


CASES = [
    Case("metric-not-in-run", lambda t: ["goldset", "stats", GOLD, "--results", t / "r.json", "-m", "ap"],
         ("r.json", "not found")),
    Case("metric-without-results", lambda t: ["goldset", "stats", GOLD, "-m", "ap"], ("--metric needs --results",)),
    Case("gold-missing", lambda t: ["goldset", "stats", "nope.jsonl"], ("nope.jsonl", "not found")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2(case, tmp_path):
    run_case(case, tmp_path)


def test_a_metric_the_run_lacks_is_named(results):
    proc = harness("goldset", "stats", GOLD, "--results", results, "-m", "ap")
    assert proc.returncode == 2 and "--metric ap: not in the run" in proc.stderr
