"""Issue 36, 'Broken by hostile input': each probe class ends in one located line or a stated acceptance."""

from __future__ import annotations

import re

from harness.render.fmt import md
from resultfactory import fake_result


def test_gate_and_compare_markdown_escape_user_text_as_report_md_does():
    from harness.render.compare_view import to_markdown
    from harness.render.gate import summary_markdown
    from harness.stats.compare import compare_runs
    from harness.stats.gates import evaluate_gates, parse_rule

    tag, value = "<b>topic</b>", "*x*[y](javascript:z)"
    run = fake_result("cand", [0.9, 0.5], ["ok", "ok"], [{tag: value}, {tag: "other"}])
    rules = [parse_rule({"check": "ndcg@10 >= 0.5", "name": "<img src=x>**bold**"}),
             parse_rule({"check": "ndcg@10 >= 0.5", "slice": {tag: value}})]
    text = summary_markdown("c`a<n>d", evaluate_gates(run, rules))
    named, sliced = text.splitlines()[-2:]
    unescaped = re.compile(r"(?<!\\)[<*\[]")
    assert not unescaped.search(named + sliced), text
    assert named.startswith("| ✅ | \\<img src=x>\\*\\*bold\\*\\* | ")
    assert md(tag) in sliced and md(value) in sliced and md(value) == "\\*x\\*\\[y\\](javascript:z)"
    assert text.startswith("## Retrieval gate for ``c`a<n>d``: PASS\n")
    other = fake_result("b", [0.5, 0.5], ["ok", "ok"], [{tag: value}, {tag: "other"}])
    out = to_markdown(compare_runs([run, other], ["ndcg@10"]))
    assert "<b>" not in out.replace("\\<b>", "") and "| b | doc.ndcg@10 |" in out
    assert f"| {md(tag)}={md(value)} |" in out
