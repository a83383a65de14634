"""harness goldset pool and merge: pool the unjudged hits of a run, judge some in the sheet, merge them back, run
again: the judged hits are no longer unjudged and leave the next pool. Conflicts are reported, not resolved."""

from __future__ import annotations

import csv
import json

import pytest

from clihelp import DEMO, Case, demo_config, harness, run_case

GOLD = DEMO / "goldset.jsonl"


def _run(tmp, gold, name):
    cfg = demo_config(tmp, f"{name}.yaml", cutoff="{k: 5}") if gold == GOLD else None
    if cfg is None:
        cfg = tmp / f"{name}.yaml"
        cfg.write_text(demo_config(tmp, "base.yaml", cutoff="{k: 5}").read_text().replace(str(GOLD), str(gold)))
    proc = harness("run", cfg, "--out", tmp / name, "-q")
    assert proc.returncode == 0, proc.stderr
    return tmp / name / "results.json"


def _unjudged(results, depth):
    data = json.loads(results.read_text())
    return {(q["id"], h["chunk_id"]) for q in data["queries"] for h in q["hits"]
            if h["rank"] <= depth and h["grade"] is None}


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pool")
    return tmp, _run(tmp, GOLD, "r1")


def test_pool_merge_round_trip(first):
    tmp, results = first
    sheet = tmp / "to_judge.csv"
    proc = harness("goldset", "pool", results, "--depth", 5, "-o", sheet)
    assert proc.returncode == 0, proc.stderr
    assert "hits in the context windows are unjudged" in proc.stderr
    rows = list(csv.DictReader(sheet.open()))
    assert {(r["query_id"], r["chunk_id"]) for r in rows} == _unjudged(results, 5)
    corpus = {json.loads(line)["id"]: json.loads(line)["text"] for line in (DEMO / "corpus.jsonl").open()}
    for r in rows:
        assert corpus[r["doc_id"]][int(r["start"]):int(r["end"])] == r["text"] and r["grade"] == ""
    # A person judges the rows of the first two queries: the first row of each relevant with a quote, the rest 0.
    judged_queries = list(dict.fromkeys(r["query_id"] for r in rows))[:2]
    judged = {}
    for r in rows:
        if r["query_id"] in judged_queries:
            relevant = (r["query_id"], r["doc_id"]) not in judged and not judged
            r["grade"] = "1" if relevant else "0"
            r["evidence"] = r["text"] if relevant else ""
            judged.setdefault((r["query_id"], r["doc_id"]), 0)
            judged[(r["query_id"], r["doc_id"])] = max(judged[(r["query_id"], r["doc_id"])], int(r["grade"]))
    with sheet.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    gold2 = tmp / "gold2.jsonl"
    proc = harness("goldset", "merge", GOLD, sheet, "-o", gold2)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(judged)} judgment(s) added (with 1 evidence quote(s))" in proc.stderr  # one row was given a quote
    assert f"harness goldset check {gold2} --corpus" in proc.stderr  # merge has no corpus to check it against
    merged = {json.loads(line)["id"]: json.loads(line) for line in gold2.read_text().splitlines()}
    original = {json.loads(line)["id"]: json.loads(line) for line in GOLD.read_text().splitlines()}
    for (qid, doc), grade in judged.items():
        rel = next(r for r in merged[qid]["relevant"] if r["doc"] == doc)
        assert rel["grade"] == grade and (("evidence" in rel) == (grade > 0))
    assert all(merged[q] == original[q] for q in original if q not in judged_queries)
    # Run again on the grown golden set: the judged hits are judged now, and leave the pool.
    results2 = _run(tmp, gold2, "r2")
    before, after = _unjudged(results, 5), _unjudged(results2, 5)
    assert after == {k for k in before if k[0] not in judged_queries}
    data = json.loads(results2.read_text())
    assert not [p for p in data["goldset"]["problems"] if p["query_id"] in judged_queries]  # quotes resolved
    again = tmp / "again.jsonl"
    proc = harness("goldset", "pool", results2, "--depth", 5, "-o", again)
    assert proc.returncode == 0
    assert len(again.read_text().splitlines()) == len(after)


def test_pool_of_two_runs_lists_each_hit_once(first, tmp_path):
    _, results = first
    out = tmp_path / "p.jsonl"
    proc = harness("goldset", "pool", results, results, "--depth", 3, "-o", out)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(_unjudged(results, 3)) and all(r["runs"] == "t" for r in rows)


def test_a_grade_written_1_0_is_read_as_1(tmp_path):
    """As the golden-set table reader reads it: "1.0" in a sheet is grade 1 (it was refused)."""
    sheet = tmp_path / "s.csv"
    sheet.write_text("query_id,doc_id,chunk_id,grade,evidence\nq01,new-doc,new-doc#0-5,1.0,\n")
    out = tmp_path / "g2.jsonl"
    proc = harness("goldset", "merge", GOLD, sheet, "-o", out)
    assert proc.returncode == 0, proc.stderr
    q01 = next(json.loads(line) for line in out.read_text().splitlines() if json.loads(line)["id"] == "q01")
    assert {"doc": "new-doc", "grade": 1} in q01["relevant"], q01


def test_conflicts_are_reported_and_not_merged(tmp_path):
    sheet = tmp_path / "s.jsonl"
    sheet.write_text("\n".join(json.dumps(r) for r in [
        {"query_id": "q01", "doc_id": "install-desktop", "chunk_id": "install-desktop#0-5", "grade": 1},  # gold: 2
        {"query_id": "q02", "doc_id": "install-linux", "chunk_id": "install-linux#0-9", "grade": 1},
        {"query_id": "q02", "doc_id": "install-linux", "chunk_id": "install-linux#0-9", "grade": 0},
        {"query_id": "q03", "doc_id": "install-mobile", "chunk_id": "install-mobile#0-9", "grade": ""},
    ]) + "\n")
    out = tmp_path / "g2.jsonl"
    proc = harness("goldset", "merge", GOLD, sheet, "-o", out)
    assert proc.returncode == 1
    assert "conflict: query 'q01', document 'install-desktop': the sheet grades it 1, the golden set 2" in proc.stderr
    assert f"conflict: {sheet}:3: chunk 'install-linux#0-9' of query 'q02' graded 0 here and 1" in proc.stderr
    assert ("0 judgment(s) added (with 0 evidence quote(s)), 0 evidence quote(s) added to judgments it had, 1 row(s) "
            "not judged yet, 2 conflict(s)") in proc.stderr
    assert out.read_text().splitlines() == [json.dumps(json.loads(line), ensure_ascii=False)
                                           for line in GOLD.read_text().splitlines()]


def _sheet(t, text, name="s.csv"):
    (t / name).write_text(text)
    return ["goldset", "merge", str(GOLD), name, "-o", "g2.jsonl"]


CASES = [
    Case("no-grade-column", lambda t: _sheet(t, "query_id,doc_id\nq01,a\n"), ("s.csv:1", "lacks column(s) grade")),
    Case("bad-grades", lambda t: _sheet(t, "query_id,doc_id,grade\nq01,a,x\nq99,a,1\n"),
         ("s.csv:2: grade 'x' is not a whole number", "s.csv:3: query 'q99' is not in the golden set")),
    # one reading of a grade, the golden-set table reader's: 1.0 is 1; 1_0 (int() would read 10) and non-ASCII
    # digits are refused, named by line
    Case("grade-not-ascii-whole", lambda t: _sheet(t, "query_id,doc_id,grade\nq01,a,1_0\nq01,b,\u0662\n"
                                                      "q01,c,\uff11\nq01,d,1.5\n"),
         ("s.csv:2: grade '1_0' is not a whole number", "s.csv:3: grade '\u0662' is not a whole number",
          "s.csv:4: grade '\uff11' is not a whole number", "s.csv:5: grade '1.5' is not a whole number")),
    Case("grade-jsonl-sheet", lambda t: _sheet(t, '{"query_id": "q01", "doc_id": "a", "grade": "1_0"}\n'
                                                  '{"query_id": "q01", "doc_id": "b", "grade": true}\n', "s.jsonl"),
         ("s.jsonl:1: grade '1_0' is not a whole number", "s.jsonl:2: 'grade' must be a whole number, got True")),
    # a row with more cells than the header (an unquoted comma in a quote) is refused, not cut
    # (every such row, with the sheet's other problems: the reader stopped at the first)
    Case("more-cells-than-header", lambda t: _sheet(t, "query_id,doc_id,grade,evidence\n"
                                                       "q01,a,1,At their meeting, OAPEC proclaimed it\n"
                                                       "q01,b,x,\nq01,c,1\n"),
         ("s.csv: 3 problem(s)", "s.csv:2: 5 cells, but the header (line 1) has 4 columns",
          "s.csv:3: grade 'x' is not a whole number", "s.csv:4: 3 cells, but the header (line 1) has 4 columns")),
    Case("multi-line-cell", lambda t: _sheet(t, 'query_id,doc_id,grade,evidence\nq01,a,1,"one\ntwo"\nq98,a,1,\n'),
         ("s.csv:4: query 'q98'",)),
    Case("pool-extension", lambda t: ["goldset", "pool", "r.json", "-o", "x.txt"], ("-o x.txt", ".csv or .jsonl")),
    Case("pool-results-missing", lambda t: ["goldset", "pool", "r.json", "-o", "x.csv"], ("r.json", "not found")),
    Case("merge-out-is-input", lambda t: _sheet(t, "query_id,doc_id,grade\n")[:4] + ["-o", "s.csv"],
         ("-o s.csv", "is one of the inputs"), keep=(".",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2(case, tmp_path):
    run_case(case, tmp_path)


def test_a_sheets_problems_come_in_line_order_and_quote_the_cell(tmp_path):
    """Rows of another width were listed before the grade problems of earlier lines; a grade too large for any
    judgment was quoted after a trip through a float (1e20 for 99999999999999999999)."""
    args = _sheet(tmp_path, "query_id,doc_id,grade\nq01,a,x\nq01,b,1,extra\nq01,c,99999999999999999999\n")
    proc = harness(*args, cwd=tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    assert proc.returncode == 2 and [line.split(":")[1] for line in lines] == ["2", "3", "4"], proc.stderr
    assert "grade 99999999999999999999 is out of range" in proc.stderr
