"""``harness run`` of a composite says where evidence was lost, per stage, on stderr and in its files; the counts are
worked out by hand on constructed rankings (``composites``) and checked against the queries' own ``lost_at``."""

from __future__ import annotations

import json
from collections import Counter

from clihelp import harness
from composites import run

CHILD_1 = {"q1": ["d5", "d1"], "q2": ["d5", "d6", "d1"], "q3": ["d5", "d6"]}
CHILD_2 = {"q1": ["d2", "d3", "d4"], "q2": ["d2", "d3"], "q3": ["d2", "d3"]}


def test_run_counts_the_losses_per_stage(tmp_path):
    hybrid = {"kind": "hybrid", "children": [{"kind": "stagefixed", "ranking": CHILD_1},
                                             {"kind": "stagefixed", "ranking": CHILD_2}]}
    run(tmp_path, hybrid, queries=("q1", "q2", "q3"))  # writes the corpus, golden set and config
    proc = harness("run", tmp_path / "c.yaml", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    # k = 2. q1: child 1 has d1 at 2, fused at 4 (1/62 ties d3's, ids descending) -> fusion; q2: child 1 has it at
    # 3 only, fused at 5 -> window; q3: no child has it -> retriever
    line = ("Where the evidence was lost (stage attribution): the retrievers missed 1 query (no stage found the "
            "evidence), fusion lost 1 query, the window cut 1 query (no stage had the evidence within k).")
    assert line in proc.stderr.splitlines()
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    by_query = {q["id"]: q["verdict"]["detail"]["lost_at"]["stage"] for q in results["queries"]}
    assert by_query == {"q1": "fusion", "q2": "window", "q3": "retriever"}
    counted = Counter(by_query.values())
    assert results["summary"]["verdicts"]["lost_at"] == {s: counted.get(s, 0) for s in
                                                         ("retriever", "fusion", "rerank_candidates", "rerank",
                                                          "window")}
    assert line in (tmp_path / "out" / "report.md").read_text()
