"""judged@k, bpref and infAP against trec_eval 10 itself: its per-query output (printed to the last bit) kept in
``data/trec_eval10/`` by ``tools/trec_eval_fixtures.py``, on trec_eval's own test files and on seeded random runs
with unjudged (-1) grades, ties and queries missing on either side. bpref and infAP must agree exactly; judged@k
is checked through trec_eval's ``unj_k`` (unjudged in the top k over k, short lists filled with judged documents),
from which the judged count of the top min(k, retrieved) follows."""

from __future__ import annotations

import gzip
from collections import defaultdict
from pathlib import Path

import pytest

from clihelp import harness
from harness.core.runtable import Qrels, Run
from harness.metrics.engine import evaluate

DATA = Path(__file__).parent / "data" / "trec_eval10"
CASES = sorted(p.stem for p in DATA.glob("*.txt"))


def read_case(name: str):
    lines = (DATA / f"{name}.txt").read_text().splitlines()
    header = lines[0].split()  # "# trec_eval 10.0 -q FLAGS... QRELS RUN"
    flags, qrels_name, run_name = header[4:-2], header[-2], header[-1]
    expected: dict[str, dict[str, float]] = defaultdict(dict)
    for line in lines[1:]:
        if not line.startswith("#"):
            measure, qid, value = line.split("\t")
            expected[qid][measure] = float(value)
    rel = int(flags[flags.index("-l") + 1]) if "-l" in flags else 1
    return "-c" in flags, rel, qrels_name, run_name, dict(expected)


def read_inputs(qrels_name: str, run_name: str):
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in gzip.decompress((DATA / f"{qrels_name}.gz").read_bytes()).decode().splitlines():
        qid, _, doc, grade = line.split()
        qrels[qid][doc] = int(grade)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for line in gzip.decompress((DATA / f"{run_name}.gz").read_bytes()).decode().splitlines():
        qid, _, doc, _, score = line.split()[:5]
        run[qid][doc] = float(score)  # trec_eval's atof: the same double
    return dict(qrels), dict(run)


@pytest.mark.parametrize("case", CASES)
def test_bpref_infap_and_judged_equal_trec_eval_10(case):
    complete, rel, qrels_name, run_name, expected = read_case(case)
    qrels, run = read_inputs(qrels_name, run_name)
    names = [f"bpref(rel={rel})", f"infAP(rel={rel})"] if rel != 1 else ["bpref", "infAP"]
    judged = ["judged@5", "judged@10", "judged@20"]
    # trec_eval's means are over every judged query here (-c, or a run that answers them all): policy zero
    table = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names + judged, query_policy="zero")
    ours = table.per_query()
    queries = [q for q in expected if q != "all"]
    assert queries
    for qid in queries:
        want = expected[qid]
        assert ours[qid][names[0]] == want["bpref"], (case, qid)  # exact: the same doubles in the same order
        assert ours[qid][names[1]] == want["infAP"], (case, qid)
        n = int(want["num_ret"])
        for k in (5, 10, 20):
            shown = min(k, n)
            unjudged = round(want[f"unj_{k}"] * k)  # trec_eval: unjudged in the top k over k
            assert round(ours[qid][f"judged@{k}"] * shown) == shown - unjudged, (case, qid, k)
            share = (shown - unjudged) / shown if shown else 0.0  # nothing retrieved (-c, absent): 0
            assert ours[qid][f"judged@{k}"] == pytest.approx(share, abs=1e-15)
    mean = table.mean()
    assert mean[names[0]] == pytest.approx(expected["all"]["bpref"], abs=1e-15)
    assert mean[names[1]] == pytest.approx(expected["all"]["infAP"], abs=1e-15)
    if complete:
        assert table.counts["judged_queries"] == len(qrels)


def test_fixtures_cover_unjudged_grades_rel_levels_and_absent_queries():
    """The cases are the ones they claim to be (else the test above would prove less than it says)."""
    seen_negative = seen_absent = False
    levels = set()
    for case in CASES:
        complete, rel, qrels_name, run_name, expected = read_case(case)
        qrels, run = read_inputs(qrels_name, run_name)
        levels.add(rel)
        seen_negative |= any(g < 0 for docs in qrels.values() for g in docs.values())
        seen_absent |= complete and any(q not in run for q in qrels)
    assert seen_negative and seen_absent and levels == {1, 2, 3}


def test_harness_eval_prints_trec_eval_10s_means(tmp_path):
    """The CLI on trec_eval's test files (gzipped): the means of ``trec_eval -c -m bpref -m infAP``, to the digit."""
    proc = harness("eval", DATA / "qrels.test.gz", DATA / "results.test.gz", "-m", "bpref", "-m", "infAP",
                   "--query-policy", "zero", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    import json

    mean = json.loads(proc.stdout)["mean"]
    expected = read_case("test_c")[-1]["all"]
    assert mean["bpref"] == expected["bpref"] == 0.19809711444522712
    assert mean["infAP"] == expected["infAP"] == 0.17854506408859483
