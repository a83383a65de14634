"""Issue 38: a golden-set query may be marked ``answerable: false`` (its answer is not in the corpus). A value that is
not a boolean, and a query both marked unanswerable and judged relevant somewhere, are located problems."""

from __future__ import annotations

import json

import pytest

from harness.config.schema import GoldsetConfig
from harness.core.errors import GoldSetError
from harness.core.types import Document
from harness.gold.load import read_goldset
from harness.gold.resolve import resolve_goldset
from harness.gold.sources import query_row
from harness.pipeline.prepare import goldset_fingerprint


def _jsonl(tmp_path, rows):
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _read(path):
    return read_goldset(GoldsetConfig(path=path))


ANSWERED = {"id": "a1", "query": "how to install", "relevant": [{"doc": "d1", "grade": 1}]}


def test_unanswerable_queries_are_read_and_kept_in_the_gold_set(tmp_path):
    rows = [ANSWERED, {"id": "u1", "query": "price in Japan?", "answerable": False},
            {"id": "u2", "query": "judged not relevant", "answerable": False, "relevant": [{"doc": "d1", "grade": 0}]},
            {"id": "a2", "query": "said answerable", "answerable": True, "relevant": ["d1"]}]
    raw = _read(_jsonl(tmp_path, rows))
    assert [q.answerable for q in raw] == [True, False, False, True]
    gold, problems = resolve_goldset(raw, {"d1": Document("d1", "text")}, "g")
    assert gold.unanswerable == frozenset({"u1", "u2"}) and not problems
    # written back (goldset repair, merge) the mark stays; a query without it is written as before
    assert query_row(raw[1], [])["answerable"] is False and "answerable" not in query_row(raw[0], [])
    # the mark is part of the golden set's identity (a compare of two runs checks it)
    plain, _ = resolve_goldset(_read(_jsonl(tmp_path, [ANSWERED, {"id": "u1", "query": "price in Japan?"}])),
                               {"d1": Document("d1", "text")}, "g")
    assert goldset_fingerprint(gold) != goldset_fingerprint(plain)


def test_bad_answerable_values_and_judged_unanswerable_queries_are_located(tmp_path):
    rows = [ANSWERED, {"id": "u1", "query": "q", "answerable": "no"},
            {"id": "u2", "query": "q", "answerable": 0},
            {"id": "u3", "query": "q", "answerable": False, "relevant": [{"doc": "d1", "grade": 2}, "d2"]}]
    path = _jsonl(tmp_path, rows)
    with pytest.raises(GoldSetError) as info:
        _read(path)
    assert info.value.problems == [
        f"{path}:2: query 'u1': 'answerable' must be true or false, got 'no'",
        f"{path}:3: query 'u2': 'answerable' must be true or false, got 0",
        f"{path}:4: query 'u3': marked answerable: false (its answer is not in the corpus) but it judges 2 "
        f"document(s) relevant ('d1', 'd2'); drop the judgments or the mark"]


def test_yaml_takes_true_and_false_only(tmp_path):
    path = tmp_path / "gold.yaml"
    path.write_text("- {id: u1, query: q, answerable: false}\n- {id: u2, query: r, answerable: False}\n"
                    "- {id: u3, query: s, answerable: no}\n- {id: u4, query: t, answerable: 'yes'}\n")
    with pytest.raises(GoldSetError) as info:
        _read(path)
    assert info.value.problems == [f"{path}:3: query 'u3': 'answerable' must be true or false, got 'no'",
                                   f"{path}:4: query 'u4': 'answerable' must be true or false, got 'yes'"]
    path.write_text("- {id: u1, query: q, answerable: false}\n- {id: u2, query: r, answerable: FALSE}\n")
    assert [q.answerable for q in _read(path)] == [False, False]


def test_run_exits_2_with_one_located_line_per_problem(tmp_path):
    from clihelp import DEMO, assert_input_error, demo_config, harness

    gold = _jsonl(tmp_path, [{"id": "u1", "query": "q", "answerable": "false"},
                             {"id": "u2", "query": "r", "answerable": False, "relevant": ["install-desktop"]}])
    cfg = demo_config(tmp_path)
    cfg.write_text(cfg.read_text().replace(str(DEMO / "goldset.jsonl"), str(gold)))
    proc = harness("run", cfg, "-q", cwd=tmp_path)
    assert_input_error(proc, f"{gold}:1: query 'u1': 'answerable' must be true or false, got 'false'",
                       f"{gold}:2: query 'u2': marked answerable: false")
    assert [line.startswith(f"  - {gold}:") for line in proc.stderr.splitlines()] == [False, True, True]
    assert not (tmp_path / "reports").exists()


# One problem each, in each golden-set format that has an answerable mark: (file name, text, the located line).
ONE_PROBLEM = [
    ("gold.jsonl", '{"id": "a1", "query": "q", "relevant": ["install-desktop"]}\n{"id": "u1", "query": "r", "answerable": "no"}\n',
     "gold.jsonl:2: query 'u1': 'answerable' must be true or false, got 'no'"),
    ("gold.jsonl", '{"id": "u2", "query": "r", "answerable": false, "relevant": [{"doc": "install-desktop", "grade": 1}]}\n'
     '{"id": "a1", "query": "q", "relevant": ["install-desktop"]}\n',
     "gold.jsonl:1: query 'u2': marked answerable: false (its answer is not in the corpus) but it judges 1"),
    ("gold.yaml", "- {id: a1, query: q, relevant: [install-desktop]}\n- {id: u1, query: r, answerable: 1}\n",
     "gold.yaml:2: query 'u1': 'answerable' must be true or false, got 1"),
    ("gold.csv", "query_id,query,doc_id,grade,answerable\na1,q,install-desktop,1,\nu1,r,,,maybe\n",
     "gold.csv:3: query 'u1': 'answerable' must be true or false, got 'maybe'"),
    ("gold.csv", "query_id,query,doc_id,grade,answerable\na1,q,install-desktop,1,\nu2,r,install-desktop,2,false\n",
     "gold.csv:3: query 'u2': marked answerable: false (its answer is not in the corpus) but it judges 1"),
]


@pytest.mark.parametrize("name, text, says", ONE_PROBLEM, ids=["jsonl-text", "jsonl-judged", "yaml-number",
                                                                "csv-text", "csv-judged"])
@pytest.mark.parametrize("command", ["validate", "run", "goldset-stats"])
def test_each_command_that_reads_the_golden_set_says_the_one_problem_in_one_line(tmp_path, name, text, says,
                                                                                  command):
    from clihelp import DEMO, assert_input_error, demo_config, harness as cli

    gold = tmp_path / name
    gold.write_text(text)
    cfg = demo_config(tmp_path)
    fmt = ", format: csv" if name.endswith(".csv") else ""
    cfg.write_text(cfg.read_text().replace(f"{{path: {DEMO / 'goldset.jsonl'}}}", f"{{path: {gold}{fmt}}}"))
    args = {"validate": ["validate", cfg], "run": ["run", cfg, "--out", tmp_path / "out"],
            "goldset-stats": ["goldset", "stats", gold]}[command]
    proc = cli(*args, cwd=tmp_path)
    assert_input_error(proc, f"error: {gold}: 1 problem(s) in the golden set")
    problems = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and problems[0].startswith(f"  - {gold.parent / says}"), proc.stderr
    assert not (tmp_path / "out").exists()


def test_goldset_stats_counts_the_unanswerable_queries(tmp_path):
    from harness.gold.stats import goldset_stats
    from harness.render.goldset_stats import stats_lines

    stats = goldset_stats(_read(_jsonl(tmp_path, [ANSWERED, {"id": "u1", "query": "q", "answerable": False}])))
    assert (stats["queries"], stats["queries_without_relevant"], stats["unanswerable_queries"]) == (2, 1, 1)
    assert stats_lines(stats)[0] == "queries: 2 (1 without a relevant document, 1 of them marked answerable: false)"


def test_a_table_marks_unanswerable_queries_in_its_answerable_column(tmp_path):
    path = tmp_path / "gold.csv"
    path.write_text("query_id,query,doc_id,grade,answerable\n"
                    "a1,how to install,d1,1,\n"
                    "u1,price in Japan?,,,FALSE\n"
                    "u1,price in Japan?,,,false\n"
                    "a2,said answerable,d1,2,true\n")
    raw = read_goldset(GoldsetConfig(path=path, format="csv"))
    assert [(q.query_id, q.answerable) for q in raw] == [("a1", True), ("u1", False), ("a2", True)]
    path.write_text("query_id,query,doc_id,grade,answerable\n"
                    "u1,q,,,no\n"
                    "u2,r,d1,1,false\n"
                    "u3,s,,,false\n"
                    "u3,s,,,true\n")
    with pytest.raises(GoldSetError) as info:
        read_goldset(GoldsetConfig(path=path, format="csv"))
    assert info.value.problems == [
        f"{path}:5: query 'u3': answerable True here, False on an earlier row; a query is answerable or not"]
    path.write_text("query_id,query,doc_id,grade,answerable\n"
                    "u1,q,,,no\n"
                    "u2,r,d1,1,false\n")
    with pytest.raises(GoldSetError) as info:
        read_goldset(GoldsetConfig(path=path, format="csv"))
    assert info.value.problems == [
        f"{path}:2: query 'u1': 'answerable' must be true or false, got 'no'",
        f"{path}:3: query 'u2': marked answerable: false (its answer is not in the corpus) but it judges 1 "
        f"document(s) relevant ('d1'); drop the judgments or the mark"]
