"""Issue 35: compare (and report.html) open with who won on each metric: better / worse / not distinguishable at
the golden set's size, with the MDE."""

from __future__ import annotations

import math

import numpy as np

from harness.render.compare_view import decision_lines, to_markdown
from harness.stats.compare import compare_runs
from resultfactory import fake_result

Z = 1.959963984540054 + 0.8416212335729143


def run(name, values):
    return fake_result(name, values, ["ok"] * len(values), [{"topic": "a"}] * len(values))


def test_better_worse_and_not_distinguishable_with_the_mde():
    base = run("main", [0.5] * 40)
    better = run("up", [0.7] * 40)  # every query +0.2: significant
    worse = run("down", [0.3] * 40)
    noise = run("noise", [0.6, 0.4] * 20)  # mean 0, sd of the differences 0.1013: MDE = Z * 0.1013 / sqrt(40)
    c = compare_runs([base, better, worse, noise], ["ndcg@10"])
    assert [r.decision for r in c.rows] == ["better", "worse", "not distinguishable"]
    lines = decision_lines(c)
    assert lines[0].startswith("up vs main on doc.ndcg@10: BETTER (delta +0.2000, corrected p ")
    assert lines[1].startswith("down vs main on doc.ndcg@10: WORSE (delta -0.2000")
    mde = Z * float(np.std(np.array([0.1, -0.1] * 20), ddof=1)) / math.sqrt(40)
    assert lines[2] == (f"noise vs main on doc.ndcg@10: not distinguishable at 40 queries (delta +0.0000, MDE "
                        f"{mde:.4f}: a true difference smaller than the MDE is likely missed)")
    md = to_markdown(c)
    assert md.index("- up vs main on doc.ndcg@10: BETTER") < md.index("| run | metric |")  # the summary opens it
    assert c.to_dict()["rows"][2]["decision"] == "not distinguishable"


def test_the_comparison_report_opens_with_the_decisions_too():
    from harness.render.compare_html import html_tables

    c = compare_runs([run("main", [0.5] * 10), run("up", [0.7] * 10)], ["ndcg@10"])
    html = html_tables(c)
    assert '<ul id="decisions"><li>up vs main on doc.ndcg@10: BETTER (delta +0.2000' in html
    assert html.index('id="decisions"') < html.index('id="comparison"')
