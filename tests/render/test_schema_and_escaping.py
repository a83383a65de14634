"""results.json is read through one strict schema (harness/result/model.py), and every report escapes what it prints.

Table rows: hostile, hand-made and truncated results.json given to report, compare, explain and gate exit 2 with
the file and the field path named, never a traceback, and nothing is written. Then: every results.json the demo
configs write validates and round-trips through the models (the schema cannot drift from the writer), the
Markdown writers escape table cells and text, and the HTML module routes every interpolation through ``e``."""

from __future__ import annotations

import ast
import copy
import json
import re
import typing
from pathlib import Path

import pytest

from clihelp import ROOT, Case, harness, run_case

HOSTILE = "<img src=x onerror=alert(1)>"
RULES = "rules:\n  - 'doc.ndcg@10 >= 0.5'\n  - 'missing_document <= 0.5'\n"


@pytest.fixture(scope="module")
def demo_run(demo_bm25_run) -> Path:
    """The session's demo BM25 run (conftest); cases start from its results.json and write elsewhere."""
    return demo_bm25_run / "results.json"


# ---- table: bad results.json through every command that reads one --------------------------------------------

def _write(tmp: Path, name: str, data) -> Path:
    path = tmp / "in" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _base(tmp: Path) -> dict:
    return json.loads((tmp / "base.json").read_text())


def _command(cmd: str, bad: Path, tmp: Path) -> list:
    good = tmp / "base.json"
    if cmd == "report":
        return ["report", bad, "--out", tmp / "out" / "report.html"]
    if cmd == "compare":
        return ["compare", good, bad, "-m", "ndcg@10"]
    if cmd == "compare-first":
        return ["compare", bad, good]
    if cmd == "explain":
        return ["explain", bad, "q01", "--format", "md"]
    if cmd == "gate":
        (tmp / "rules.yaml").write_text(RULES)
        return ["gate", bad, "--rules", tmp / "rules.yaml", "--summary", tmp / "out" / "gate.md"]
    if cmd == "gate-baseline":
        (tmp / "rules.yaml").write_text(RULES + "  - {regression: doc.ndcg@10, budget: 0.02}\n")
        return ["gate", good, "--rules", tmp / "rules.yaml", "--baseline", bad]
    raise AssertionError(cmd)


def edited(cmd: str, edit) -> typing.Callable[[Path], list]:
    """Setup: the demo result, changed by ``edit(data)`` (which may also return replacement text), given to ``cmd``."""
    def setup(tmp: Path) -> list:
        data = _base(tmp)
        replaced = edit(data)
        return _command(cmd, _write(tmp, "results.json", data if replaced is None else replaced), tmp)
    return setup


def raw(cmd: str, content: bytes) -> typing.Callable[[Path], list]:
    def setup(tmp: Path) -> list:
        path = tmp / "in" / "results.json"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
        return _command(cmd, path, tmp)
    return setup


def _set(path: str, value):
    """An edit that sets the dotted ``path`` (list indexes as numbers) to ``value``."""
    def edit(data):
        *parents, last = path.split(".")
        node = data
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[int(last) if isinstance(node, list) else last] = value
    return edit


def _del(path: str):
    def edit(data):
        *parents, last = path.split(".")
        node = data
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        del node[last]
    return edit


def _all_ranks_hostile(data):
    for q in data["queries"]:
        for h in q["hits"]:
            h["rank"] = HOSTILE


def _drop_last_query(data):
    data["queries"].pop()
    data["goldset"]["queries"] -= 1


def _truncate(data):
    text = json.dumps(data, indent=2)
    return text[: len(text) // 2]


def _top_level_list(data):
    return json.dumps([data])


def _duplicate_id(data):
    data["queries"][3]["id"] = data["queries"][0]["id"]


def _twenty_and_the_rest(tmp, proc):
    hits = sum(len(q["hits"]) for q in _base(tmp)["queries"])
    listed = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    assert len(listed) == 21 and listed[-1] == f"  - ... and {hits - 20} more", proc.stderr


def _existing_report_then(cmd: str, edit):
    def setup(tmp: Path) -> list:
        (tmp / "out").mkdir()
        # an earlier report harness wrote (a file it did not write is refused before anything is read)
        (tmp / "out" / "report.html").write_text('<meta name="generator" content="harness"> an earlier report')
        return edited(cmd, edit)(tmp)
    return setup


def _nothing_written(tmp, proc):
    assert not (tmp / "out" / "report.html").exists() and not (tmp / "out" / "gate.md").exists()


F = "{tmp}/in/results.json"
CASES = [
    Case("report-rank-markup", edited("report", _set("queries.3.hits.0.rank", HOSTILE)),
         (f"{F}: queries.3.hits.0.rank: expected a whole number, got '{HOSTILE}'",), check=_nothing_written),
    Case("report-corpus-count-script", edited("report", _set("corpus.documents", "<script>alert(1)</script>")),
         (f"{F}: corpus.documents: expected a whole number, got '<script>alert(1)</script>'",)),
    Case("report-count-markup", edited("report", _set("summary.counts.doc.nothing_found_in_window", HOSTILE)),
         (f"{F}: summary.counts.doc.nothing_found_in_window: expected a whole number",)),
    Case("report-depth-string", edited("report", _set("cutoff.depth", "100")),
         (f"{F}: cutoff.depth: expected a whole number, got '100'",)),
    Case("report-score-bool", edited("report", _set("queries.0.hits.1.score", True)),
         (f"{F}: queries.0.hits.1.score: expected a number, got true",)),
    Case("report-name-markup", edited("report", _set("name", "<b onmouseover=alert(1)>x</b>")),
         (f"{F}: name: expected a run name",)),
    Case("report-retriever-not-object", edited("report", _set("config.retriever", "<svg onload=alert(1)>")),
         (f"{F}: config.retriever: expected an object, got '<svg onload=alert(1)>'",)),
    Case("report-unknown-field", edited("report", _set("queries.0.hits.0.scroe", 1.0)),
         (f"{F}: queries.0.hits.0.scroe: unknown field; did you mean 'score'?",)),
    Case("report-missing-field", edited("report", _del("summary")), (f"{F}: summary: required field is missing",)),
    Case("report-many-problems-capped", edited("report", _all_ranks_hostile),
         (f"{F}: queries.0.hits.0.rank: expected a whole number",), check=_twenty_and_the_rest),
    Case("report-truncated", edited("report", _truncate), (f"{F}:", ": not valid JSON ("), check=_nothing_written),
    Case("report-empty-file", raw("report", b""), (f"{F}:1: not valid JSON",)),
    Case("report-not-utf8", raw("report", b'{"name": "\xff"}'), (f"{F}: not UTF-8 text",)),
    Case("report-top-level-list", edited("report", _top_level_list), (f"{F}: <root>: expected a JSON object",)),
    Case("report-no-such-file", lambda tmp: ["report", tmp / "nope.json", "--out", tmp / "r.html"],
         ("{tmp}/nope.json: results file not found",)),
    Case("report-keeps-existing-report", _existing_report_then("report", _set("queries.0.verdict.kind", "pwned")),
         (f"{F}: queries.0.verdict.kind: expected one of 'goldset_error'",), keep=("out",)),
    Case("compare-metric-null", edited("compare", _set("queries.0.metrics.doc.ndcg@10", None)),
         (f"{F}: queries.0.metrics.doc.ndcg@10: expected a number, got null",)),
    Case("compare-metric-missing", edited("compare", _del("queries.5.metrics.chunk.ap")),
         (f"{F}: queries.5.metrics.chunk: metric names differ from summary.chunk; missing ap",)),
    Case("compare-duplicate-id", edited("compare", _duplicate_id),
         (f"{F}: queries.3.id: duplicate query id 'q01' (first at queries.0)",)),
    Case("compare-query-dropped", edited("compare-first", _drop_last_query),
         (f"{F}: goldset.query_ids_fingerprint: does not match the ids in 'queries'",)),
    Case("compare-count-mismatch", edited("compare", _set("goldset.queries", 7)),
         (f"{F}: goldset.queries: says 7 queries, but 'queries' has 46",)),
    Case("explain-verdict-kind", edited("explain", _set("queries.0.verdict.kind", HOSTILE)),
         (f"{F}: queries.0.verdict.kind: expected one of",)),
    Case("explain-flag", edited("explain", _set("queries.0.verdict.flags", ["pwned"])),
         (f"{F}: queries.0.verdict.flags.0: expected one of 'partial', 'noisy_context' or 'unjudged_in_window'",)),
    Case("explain-span-not-pair", edited("explain", _set("queries.0.gold.0.evidence", [[1]])),
         (f"{F}: queries.0.gold.0.evidence.0: expected a [start, end] pair",)),
    Case("explain-tag-number", edited("explain", _set("queries.0.tags.topic", 5)),
         (f"{F}: queries.0.tags.topic: expected a string, got 5",)),
    Case("explain-negative-k", edited("explain", _set("queries.0.effective_k", -1)),
         (f"{F}: queries.0.effective_k: must be at least 0, got -1",)),
    # A second walk (2026-12-05): an edited verdict kind showed in explain and the rows, the old one in the counts
    # and the gate; an edited rank showed as written.
    Case("explain-verdict-kind-edited", edited("explain", _set("queries.0.verdict.kind", "missing_document")),
         (f"{F}: summary.verdicts.counts.missing_document: says ", "queries have that verdict "
          "(queries.N.verdict.kind; edited by hand?)", f"{F}: summary.verdicts.counts.ok: says ")),
    Case("explain-nan-in-a-query-not-counted", edited("explain", _set("queries.43.metrics.doc.ndcg@10", float("nan"))),
         (f"{F}: queries.43.metrics.doc.ndcg@10: Input should be a finite number, got nan",)),
    Case("explain-rank-edited", edited("explain", _set("queries.2.hits.1.rank", 10**30)),
         (f"{F}: queries.2.hits.1.rank: says {10**30}, but it is hit 2 of the list",)),
    Case("explain-rank-repeated", edited("explain", _set("queries.0.hits.1.rank", 1)),
         (f"{F}: queries.0.hits.1.rank: says 1, but it is hit 2 of the list",)),
    # The walk found gate trusting a hand-edited summary mean while compare read the per-query values.
    Case("gate-summary-mean-edited", edited("gate", _set("summary.doc.ndcg@10", 0.99)),
         (f"{F}: summary.doc.ndcg@10: says 0.99, but the mean of the",)),
    Case("gate-share-string", edited("gate", _set("summary.verdicts.shares.ok", "1")),
         (f"{F}: summary.verdicts.shares.ok: expected a number, got '1'",), check=_nothing_written),
    Case("gate-kind-missing", edited("gate", _del("summary.verdicts.counts.missing_document")),
         (f"{F}: summary.verdicts.counts.missing_document: required field is missing",)),
    Case("gate-means-key", edited("gate", _set("summary.verdicts.metric_means.pwned", {})),
         (f"{F}: summary.verdicts.metric_means: key 'pwned': expected one of",)),
    Case("gate-baseline-truncated", edited("gate-baseline", _truncate), (f"{F}:", "not valid JSON")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_results_json_is_a_located_input_error(case, tmp_path, demo_run):
    (tmp_path / "base.json").write_bytes(demo_run.read_bytes())
    proc = run_case(case, tmp_path)
    assert len(proc.stderr.splitlines()) <= 22  # at most 20 problems, the headline and "... and N more"
    if not any(s in proc.stderr for s in ("not valid JSON", "not found", "UTF-8")):
        # schema problems: a headline, then one located line per problem
        assert "not a valid results.json" in proc.stderr and "\n  - " in proc.stderr


# ---- the schema against the writer -----------------------------------------------------------------------------

DEMOS = sorted(p.name for p in (ROOT / "configs").glob("demo-*.yaml"))


@pytest.mark.parametrize("config", DEMOS)
def test_every_demo_results_json_validates_and_round_trips(config, tmp_path):
    from harness.result.model import Result
    from harness.result.read import load_result

    proc = harness("run", ROOT / "configs" / config, "--out", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / "out").rglob("results.json"))
    assert len(files) == (6 if config == "demo-sweep.yaml" else 1)
    for path in files:
        data = json.loads(path.read_text())
        result = load_result(path)
        # Nothing in the file is dropped or reshaped by the models: dumping them gives the file back.
        assert result.to_dict() == data and json.loads(result.to_json()) == data
        assert Result.model_validate(data).model_dump(mode="json") == data
        # Over the same counted queries, a relevant chunk in the top k puts its document in the top k.
        s = result.summary
        for name in [m for m in s.doc if m.startswith("hit@")]:
            assert s.chunk[name] <= s.doc[name], (path, name)


def test_schema_literals_follow_the_diagnostics():
    from harness.diagnostics.verdicts import FLAGS, KINDS
    from harness.result.model import FlagCounts, Kind, KindCounts, KindShares

    assert typing.get_args(Kind) == KINDS
    assert tuple(KindCounts.model_fields) == KINDS and tuple(KindShares.model_fields) == KINDS
    assert tuple(FlagCounts.model_fields) == FLAGS


def test_writer_refuses_a_result_the_schema_rejects(demo_run):
    import warnings

    from harness.core.errors import HarnessError, InputError
    from harness.result.read import load_result

    result = load_result(demo_run).with_memory(run=object(), chunk_text={"c": "t"})  # in-memory parts: not written
    assert json.loads(result.to_json()) == json.loads(demo_run.read_text())
    # model_copy skips validation: the writer's own check is the last line of defence
    q = result.queries[2]
    bad_q = q.model_copy(update={"hits": [q.hits[0].model_copy(update={"rank": "1"})] + q.hits[1:]})
    bad = result.model_copy(update={"queries": result.queries[:2] + [bad_q] + result.queries[3:]})
    with pytest.raises(HarnessError) as exc, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic warns while dumping the str it did not expect
        bad.to_json()
    assert not isinstance(exc.value, InputError) and exc.value.exit_code == 1
    assert "results.json: queries.2.hits.0.rank: expected a whole number, got '1'" in str(exc.value)


def test_ints_pass_as_floats_but_nothing_is_coerced(demo_run):
    from harness.result.model import schema_problems

    data = json.loads(demo_run.read_text())
    data["queries"][0]["hits"][0]["score"] = 7  # a whole score is still a number
    assert schema_problems(data) == []
    data["summary"]["doc"]["ndcg@10"] = None  # typed as "a mean or null", but here 43 queries are counted
    assert [p.split(":")[0] for p in schema_problems(data)] == ["summary.doc.ndcg@10"]
    data["summary"]["doc"]["ndcg@10"] = json.loads(demo_run.read_text())["summary"]["doc"]["ndcg@10"]
    data["queries"][0]["hits"][0]["start"] = 1.0
    data["queries"][0]["hits"][0]["relevant"] = 1
    data["queries"][0]["hits"][0]["grade"] = "2"
    assert schema_problems(data) == ["queries.0.hits.0.start: expected a whole number, got 1.0",
                                     "queries.0.hits.0.relevant: expected true or false, got 1",
                                     "queries.0.hits.0.grade: expected a whole number, got '2'"]


# ---- Markdown ------------------------------------------------------------------------------------------------

def _unescaped(text: str, chars: str) -> list[str]:
    return re.findall(r"(?<!\\)[" + re.escape(chars) + "]", text)


def live_html(text: str) -> list[str]:
    """Each '<' that a CommonMark renderer could read as the start of HTML: not backslash-escaped and not inside a
    code span (a backtick run closed by a run of the same length on the line; escaped backticks open nothing)."""
    found = []
    for line in text.splitlines():
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c == "`":
                run = re.match(r"`+", line[i:])[0]
                close = re.compile(r"(?<!`)" + run + r"(?!`)").search(line, i + len(run))
                i = close.end() if close else i + len(run)
                continue
            if c == "<":
                found.append(line[i:i + 30])
            i += 1
    return found


def test_leaderboard_cells_escape_pipes_html_and_newlines():
    from harness.render.sweep import leaderboard_markdown

    value = "a|b <script>alert(1)</script>\nnext [x](javascript:alert(2))"
    board = {"name": "s", "metric": "doc.ndcg@10", "best": "s-a", "test": "randomization", "correction": "holm",
             "runs": [{"run": "s-a", "params": {"retriever.prompt": value, "chunking.size": 2}, "mean": 0.5,
                       "queries": 43, "delta_vs_best": 0.0, "p_corrected": None, "tied_with_best": True},
                      {"run": "s-b", "params": {"retriever.prompt": "plain", "chunking.size": 2}, "mean": 0.25,
                       "queries": 43, "delta_vs_best": -0.25, "p_corrected": 0.0123, "tied_with_best": False}]}
    lines = leaderboard_markdown(board).splitlines()
    rows = [line for line in lines if line.startswith("| ")]
    assert rows[1] == ("| 1 | s-a | retriever.prompt=a\\|b \\<script>alert(1)\\</script> next \\[x\\](javascript:alert(2)), "
                       "chunking.size=2 | 0.5000 | 43 | +0.0000 |  | yes | n/a | n/a |")  # no window sizes given
    assert rows[2] == ("| 2 | s-b | retriever.prompt=plain, chunking.size=2 | 0.2500 | 43 | -0.2500 | 0.0123 | no "
                       "| n/a | n/a |")
    # every row has exactly the table's 10 cells: 11 unescaped pipes
    assert all(len(_unescaped(r, "|")) == 11 for r in rows)
    assert len(lines) == 8 and not live_html("\n".join(lines))


def test_report_md_escapes_every_value(demo_run):
    from harness.render.outputs import markdown

    data = json.loads(demo_run.read_text())
    q = next(q for q in data["queries"] if q["verdict"]["kind"] == "wrong_chunk")
    q["text"] = "<script>alert(1)</script>\n# heading | [a](javascript:x)"
    q["verdict"]["reason"] = HOSTILE
    q["hits"][0]["chunk_id"] = "c`|<b>`"
    data["summary"]["verdicts"]["advice"] = ["<iframe src=javascript:alert(3)>"]
    data["summary"]["verdicts"]["by_slice"] = {"to|pic": {"a<b>|c": data["summary"]["verdicts"]["counts"]}}
    data["conventions"] = {"k<i>": "v & <u>"}
    text = markdown(data)
    assert "“\\<script>alert(1)\\</script> # heading \\| \\[a\\](javascript:x)”: \\<img src=x onerror=alert(1)>" in text
    assert "`` c`|<b>` ``" in text  # a code span whose fence the id cannot close; HTML inside shows as text
    assert "- \\<iframe src=javascript:alert(3)>" in text and "- **k\\<i>**: v \\& \\<u>" in text
    assert "### By to\\|pic" in text and "| a\\<b>\\|c |" in text
    assert not live_html(text)


def test_leaderboard_page_escapes_params_in_runner_up_and_kfold(demo_run):
    """The HTML leaderboard's winner-vs-runner-up and k-fold sections show grid values (user strings) as text."""
    from harness.render.html import render

    hostile = "<script>alert(1)</script>"
    a, b = {"retriever.prompt": hostile, "chunking.size": 2}, {"retriever.prompt": "x\" onclick=\"alert(2)", "chunking.size": 2}
    board = {"name": "s", "metric": "doc.ndcg@10", "best": "s-a", "test": "randomization", "correction": "holm",
             "runs": [{"run": "s-a", "params": a, "mean": 0.5, "queries": 43, "delta_vs_best": 0.0,
                       "p_corrected": None, "tied_with_best": True},
                      {"run": "s-b", "params": b, "mean": 0.25, "queries": 43, "delta_vs_best": -0.25,
                       "p_corrected": 0.0123, "tied_with_best": False}],
             "runner_up": {"winner": "s-a", "run": "s-b", "params": b, "metric": "doc.ndcg@10", "n": 43,
                           "winner_mean": 0.5, "mean": 0.25, "delta_vs_winner": -0.25, "p": 0.006,
                           "p_corrected": 0.0123, "correction": "holm", "test": "randomization", "significant": True},
             "kfold": {"k": 2, "seed": 0, "metric": "doc.ndcg@10", "queries": 43, "assignment": "dealt <b>in turn</b>",
                       "folds": [{"fold": 1, "train_queries": 21, "heldout_queries": 22, "chosen": "s-a", "params": a,
                                  "train_mean": 0.51, "heldout_mean": 0.49},
                                 {"fold": 2, "train_queries": 22, "heldout_queries": 21, "chosen": "s-b", "params": b,
                                  "train_mean": 0.3, "heldout_mean": 0.2}],
                       "mean_train": 0.405, "mean_heldout": 0.345, "optimism_gap": 0.06, "final": "s-a"}}
    page = render([json.loads(demo_run.read_text())], [{}], leaderboard=board)
    runner_up = page[page.index('<h2 id="runner-up">'):page.index('<h2 id="kfold">')]
    kfold = page[page.index('<h2 id="kfold">'):page.index('id="kfold-final"')]
    shown = "retriever.prompt=&lt;script&gt;alert(1)&lt;/script&gt;, chunking.size=2"
    quoted = "retriever.prompt=x&quot; onclick=&quot;alert(2), chunking.size=2"
    assert runner_up.count(shown) == 1 and runner_up.count(quoted) == 1  # the winner's and the runner-up's
    assert kfold.count(shown) == 1 and kfold.count(quoted) == 1 and "dealt &lt;b&gt;in turn&lt;/b&gt;" in kfold
    assert f"Final choice: s-a ({shown})" in page
    assert "<td>+0.0600</td>" in kfold and "<td>0.0060</td><td>0.0123</td><td>yes</td>" in runner_up
    assert page.count("<script") == 1 and "<b>in turn" not in page  # the one script: the page's own
    assert 'x" onclick' not in runner_up + kfold  # (the sweep chart shows it as SVG text, where a quote is inert)

    one = {k: v for k, v in board.items() if k not in ("runner_up", "kfold")}  # one point, no select_on.kfold
    one["runs"] = one["runs"][:1]
    page = render([json.loads(demo_run.read_text())], [{}], leaderboard=one)
    assert 'id="runner-up"' not in page and 'id="kfold"' not in page


def test_md_helpers():
    from harness.render.outputs import md, md_code

    assert md("snake_case _em_ *b* a\\b `c` <x> & [l]") == "snake_case \\_em\\_ \\*b\\* a\\\\b \\`c\\` \\<x> \\& \\[l\\]"
    assert md(3) == "3" and md("a\r\nb\nc") == "a b c"
    assert md_code("a``b") == "```a``b```" and md_code("`x") == "`` `x ``" and md_code("a|b", in_table=True) == "`a\\|b`"


# ---- HTML: every interpolation goes through e() -----------------------------------------------------------------

@pytest.mark.parametrize("module", ["html.py", "compare_html.py", "stages_html.py", "leaderboard_html.py",
                                    "svg_html.py"])
def test_html_module_escapes_every_interpolation(module):
    """Each f-string placeholder in the HTML renderers is ``e(...)``, an already-built ``*_html`` fragment, or a
    module constant (CSS, JS); placeholders inside an ``e(...)`` argument build text that ``e`` then escapes."""
    tree = ast.parse((ROOT / "harness" / "render" / module).read_text())
    inside_e = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "e":
            inside_e.update(id(n) for arg in node.args for n in ast.walk(arg))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and id(node) not in inside_e:
            v = node.value
            if not ((isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "e")
                    or (isinstance(v, ast.Name) and (v.id.endswith("_html") or v.id.isupper()))):
                bad.append(f"line {node.lineno}: {{{ast.unparse(v)}}}")
    assert bad == []


def test_html_attributes_are_quoted_and_escaped(demo_run):
    from harness.render.html import render

    data = json.loads(demo_run.read_text())
    for q in data["queries"]:
        q["tags"]["topic"] = "x\" onmouseover=\"alert(1)' onfocus='alert(2)"
    page = render([data], [{}])
    assert 'data-tag1="x&quot; onmouseover=&quot;alert(1)&#x27; onfocus=&#x27;alert(2)"' in page
    assert '<option value="x&quot; onmouseover=&quot;alert(1)&#x27; onfocus=&#x27;alert(2)">' in page
    # no attribute value left unquoted (inside the SVG plots, matplotlib's, left out: their own tags are ours)
    tags = re.findall(r"<[a-z][^>]*>", re.sub(r"(<svg\b[^>]*>).*?</svg>", r"\1", page, flags=re.S))
    unquoted = [t for t in tags if re.search(r"=[^\s>]", re.sub(r'"[^"]*"|\'[^\']*\'', "", t))]
    assert len(tags) > 100 and unquoted == []


# ---- a result with a payload in every free-text string the schema accepts --------------------------------------

def payload(n: int) -> str:
    """Breaks out of text, of double- and single-quoted attributes, and of a code span, if anything is unescaped."""
    return f"\"'`><img src=x onerror=\"alert({n})\"><script>alert({n})</script>|{n}"


def poison(data: dict) -> tuple[dict, dict[str, str]]:
    """A copy of a valid result in which every string the schema takes as free text (values and mapping keys,
    inside the JSON-typed config and verdict details too) carries ``payload``; the same string gets the same
    payload everywhere, so ids and metric names still agree. Literals and the run name (a pattern) stay. Walks the
    schema's own types, so a string field added later is poisoned too. Returns the copy and original -> poisoned."""
    from pydantic import BaseModel, JsonValue

    from harness.pipeline.assemble import fingerprint
    from harness.result.model import Result

    made: dict[str, str] = {}

    def make(s: str) -> str:
        if s not in made:
            made[s] = s + payload(len(made))
        return made[s]

    def json_value(v):
        if isinstance(v, str):
            return make(v)
        if isinstance(v, list):
            return [json_value(x) for x in v]
        if isinstance(v, dict):
            return {make(k): json_value(x) for k, x in v.items()}
        return v

    def walk(tp, v, metadata=()):
        if v is None:
            return None
        if tp is JsonValue:
            return json_value(v)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            out = {}
            for key, x in v.items():
                field = tp.model_fields.get(key)
                out[key] = walk(field.annotation, x, field.metadata) if field else json_value(x)  # typed extras
            return out
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Annotated:
            return walk(args[0], v, tuple(tp.__metadata__))
        if origin is typing.Literal:
            return v
        if origin is list:
            return [walk(args[0], x) for x in v]
        if origin is dict:
            poison_keys = args[0] is str
            return {(make(k) if poison_keys else k): walk(args[1], x) for k, x in v.items()}
        if args:  # X | None
            return walk(next(a for a in args if a is not type(None)), v, metadata)
        if tp is str:
            constrained = any(getattr(m, "pattern", None) for m in metadata)
            return v if constrained else make(v)
        return v

    out = walk(Result, copy.deepcopy(data))
    out["goldset"]["query_ids_fingerprint"] = fingerprint(sorted(q["id"] for q in out["queries"]))
    return out, made


def test_poisoned_result_is_valid_and_reaches_every_string(demo_run):
    from harness.result.model import schema_problems

    data = json.loads(demo_run.read_text())
    bad, made = poison(data)
    assert schema_problems(bad) == []
    q = bad["queries"][0]
    for value in (q["id"], q["text"], q["hits"][0]["chunk_id"], q["hits"][0]["doc_id"], q["verdict"]["reason"],
                  next(iter(q["tags"])), next(iter(q["tags"].values())), bad["config"]["retriever"]["kind"],
                  bad["config"]["corpus"][made["path"]], bad["created_at"], next(iter(bad["summary"]["doc"])),
                  bad["summary"]["verdicts"]["advice"][0], next(iter(bad["conventions"].values()))):
        assert "<script>alert(" in value
    assert bad["name"] == data["name"] and q["verdict"]["kind"] == data["queries"][0]["verdict"]["kind"]


def test_markdown_writers_escape_every_poisoned_string(demo_run):
    from harness.render.explain import explain_result, to_markdown
    from harness.render.outputs import markdown

    bad, _ = poison(json.loads(demo_run.read_text()))
    texts = [markdown(bad)]
    for q in bad["queries"]:
        texts.append(to_markdown(explain_result(bad, q["id"], {}, {})))
    for text in texts:
        assert "<script>" in text and not live_html(text)


def test_the_means_sentence_says_how_many_ids_it_does_not_list():
    """"45 with a golden-set error excluded (q01, ..., q10)" listed ten ids and did not say there were 35 more."""
    from types import SimpleNamespace

    from harness.render.fmt import means_sentence

    ids = [f"q{i:02}" for i in range(1, 46)]
    counts = SimpleNamespace(excluded_goldset_error=45, excluded_goldset_error_query_ids=ids, no_relevant_queries=3,
                             no_relevant_query_ids=["a", "b", "c"], evaluated_queries=5, judged_queries=50)
    result = SimpleNamespace(summary=SimpleNamespace(level_counts=lambda level: counts))
    assert means_sentence(result, "doc") == (
        "doc level: means over 5 of 50 queries; 45 with a golden-set error excluded (q01, q02, q03, q04, q05, q06, "
        "q07, q08, q09, q10 and 35 more); 3 with no relevant document counted as 0 (a, b, c).")
