"""Issue 36, 'Broken by hostile input': each probe class ends in one located line or a stated acceptance."""

from __future__ import annotations

import re

import pytest

from harness.render.fmt import md
from clihelp import demo_config, harness as run_harness
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


@pytest.mark.parametrize("module, body, said", [  # a module name each: the CLI runs in this interpreter
    ("quit_zero", "sys.exit(0)", "called sys.exit(0)"),
    ("quit_text", "raise SystemExit('bye')", "called sys.exit('bye')"),
    ("quit_ctrl_c", "raise KeyboardInterrupt", "raised KeyboardInterrupt"),
])
def test_a_python_retriever_that_exits_of_its_own_fails_the_run(tmp_path, module, body, said):
    (tmp_path / f"{module}.py").write_text(f"import sys\n\n\ndef search(texts, k):\n    {body}\n")
    config = demo_config(tmp_path, retriever=f"{{kind: python, target: '{module}:search', path: {tmp_path}}}")
    # A KeyboardInterrupt is told from a Ctrl-C by the CLI's signal handlers, which a real process installs.
    proc = run_harness("run", config, "--out", tmp_path / "out", "-q", fresh="Keyboard" in body)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith(f"error: retriever.kind 'python' ({module}:search) failed in retrieve: " + said)
    assert last.endswith(f"{module}.py:5)") and not (tmp_path / "out").exists()


def test_through_the_api_a_retrievers_own_exit_is_a_harness_error_not_the_end_of_the_interpreter(tmp_path):
    import harness
    from harness.core.errors import HarnessError

    (tmp_path / "quitter2.py").write_text("import sys\n\n\ndef search(texts, k):\n    sys.exit(3)\n")
    config = demo_config(tmp_path, retriever=f"{{kind: python, target: 'quitter2:search', path: {tmp_path}}}")
    with pytest.raises(HarnessError, match=r"quitter2:search\) failed in retrieve: called sys.exit\(3\)") as exc:
        harness.run(harness.load_config(config), progress=False)
    assert exc.value.exit_code == 2


def test_a_csv_golden_set_with_a_cell_over_128_kib_is_read(tmp_path):
    from harness.config.schema import GoldsetConfig
    from harness.gold.load import read_goldset

    long_query = "why " * 60_000  # 240,000 characters: past the csv module's default 131,072 per field
    (tmp_path / "gold.csv").write_text(f'query_id,query,doc_id,grade\nq1,"{long_query}",d1,1\nq2,short,d2,2\n')
    queries = read_goldset(GoldsetConfig(path=tmp_path / "gold.csv", format="csv"))
    assert [(q.query_id, len(q.text)) for q in queries] == [("q1", len(long_query.strip())), ("q2", 5)]
