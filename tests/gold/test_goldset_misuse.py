"""What a newcomer's session found in the golden-set lifecycle (a helper walking goldset build/check/merge/pool/
stats, init and cache as a careless user, 2026-12-04): a sheet written over the corpus it was pooled from, a cache
clear that removed a user's folders, evidence read one way when it could mean two (a quote found twice, a quote
beside a span, a span whose recorded text it no longer reads, a key given twice), metadata dropped on the way
through. Each case runs the command as a user does and checks the exit code, the message and the user's files."""

from __future__ import annotations

import hashlib
import json

import pytest

from clihelp import DEMO, assert_input_error, harness

CORPUS = '{"id": "d1", "title": "Alpha", "text": "The cat sat on the mat. The dog ran in the park. The cat sat on the mat."}\n'


def _sum(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    for name in ("corpus.jsonl", "goldset.jsonl"):
        (tmp / name).write_bytes((DEMO / name).read_bytes())
    cfg = tmp / "cfg.yaml"
    cfg.write_text(f"name: t\ncorpus: {{path: {tmp / 'corpus.jsonl'}}}\nchunking: {{strategy: sentences, size: 2}}\n"
                   f"goldset: {{path: {tmp / 'goldset.jsonl'}}}\nretriever: {{kind: bm25, backend: fast}}\n")
    assert harness("run", cfg, "--out", tmp / "out", "-q").returncode == 0
    return tmp


def test_pool_never_writes_over_the_corpus_or_the_golden_set_of_its_runs(demo_run):
    before = {n: _sum(demo_run / n) for n in ("corpus.jsonl", "goldset.jsonl")}
    results = demo_run / "out" / "results.json"
    for target, extra in (("corpus.jsonl", []), ("corpus.jsonl", ["--corpus", demo_run / "corpus.jsonl"]),
                          ("goldset.jsonl", [])):
        proc = harness("goldset", "pool", results, *extra, "-o", demo_run / target, "--force")
        assert_input_error(proc, "is one of the inputs")
    assert {n: _sum(demo_run / n) for n in before} == before


def test_init_into_a_dangling_link_or_under_a_file_is_one_line(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "missing")
    assert_input_error(harness("init", tmp_path / "link"), "is a link to nothing")
    (tmp_path / "afile").write_text("x")
    assert_input_error(harness("init", tmp_path / "afile" / "sub"), "is a file, not a folder")
    assert (tmp_path / "afile").read_text() == "x"


# ---- evidence that could mean two things ---------------------------------------------------------------------------

def _gold(tmp_path, evidence, name="g.jsonl", corpus=CORPUS):
    (tmp_path / "corpus.jsonl").write_text(corpus)
    path = tmp_path / name
    path.write_text(json.dumps({"id": "q1", "query": "cat", "relevant": [{"doc": "d1", "grade": 2,
                                                                          "evidence": evidence}]}) + "\n")
    return path


def _validate(tmp_path, gold):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: t\ncorpus: {{path: {tmp_path / 'corpus.jsonl'}}}\ngoldset: {{path: {gold}}}\n"
                   f"retriever: {{kind: bm25, backend: fast}}\ncutoff: {{k: 1}}\n")
    return harness("validate", cfg)


def test_a_quote_found_twice_is_not_anchored_at_the_first(tmp_path):
    gold = _gold(tmp_path, [{"quote": "The cat sat on the mat."}])
    proc = _validate(tmp_path, gold)
    # its one query is a golden-set error, so nothing could be counted: refused, naming the problem (issue 35)
    assert proc.returncode == 2 and "is found more than once in document 'd1' (at 0 and 49)" in proc.stderr
    proc = harness("goldset", "check", gold, "--corpus", tmp_path / "corpus.jsonl")
    assert proc.returncode == 1 and "ambiguous: the quote is found 2 times in its document (0..23, 49..72)" in proc.stdout


@pytest.mark.parametrize("evidence, fragment", [
    ({"quote": "The dog", "qoute": "x"}, "unknown key(s) qoute"),
    ({"start": 0, "end": 3, "quote": "The"}, "a quote and a span"),
    ({"start": 0, "end": 3, "text": 5}, "'text' (what the span reads) must be text"),
])
def test_evidence_keys_are_checked(tmp_path, evidence, fragment):
    assert_input_error(_validate(tmp_path, _gold(tmp_path, [evidence])), "evidence[0]", fragment)


def test_a_span_that_no_longer_reads_its_text_is_flagged_and_re_anchored(tmp_path):
    gold = _gold(tmp_path, [{"start": 24, "end": 48, "text": "The dog ran in the park.", "how": "fuzzy",
                             "score": 0.95}])
    assert _validate(tmp_path, gold).returncode == 0 and "span_text_differs" not in _validate(tmp_path, gold).stderr
    edited = CORPUS.replace("The cat sat on the mat. The dog", "A cat sat. The dog")  # the dog moved 13 left
    (tmp_path / "corpus.jsonl").write_text(edited)
    proc = _validate(tmp_path, gold)
    assert "reads 'n the park. The cat sat ', not its recorded text 'The dog ran in the park.'" in proc.stderr
    fixed = tmp_path / "fixed.jsonl"
    proc = harness("goldset", "check", gold, "--corpus", tmp_path / "corpus.jsonl", "--fix", fixed)
    assert proc.returncode == 1 and "re_anchorable" in proc.stdout
    evidence = json.loads(fixed.read_text())["relevant"][0]["evidence"]
    assert evidence == [{"start": 11, "end": 35, "text": "The dog ran in the park.", "how": "fuzzy", "score": 0.95}]


def test_merge_keeps_what_build_recorded_of_a_span(tmp_path):
    gold = _gold(tmp_path, [{"start": 24, "end": 48, "text": "The dog ran in the park.", "how": "fuzzy",
                             "score": 0.95}])
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("query_id,doc_id,chunk_id,grade\n")
    assert harness("goldset", "merge", gold, sheet, "-o", tmp_path / "m.jsonl").returncode == 0
    assert json.loads((tmp_path / "m.jsonl").read_text()) == json.loads(gold.read_text())


def test_a_key_given_twice_in_a_json_line_is_refused(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    gold = tmp_path / "g.jsonl"
    gold.write_text('{"id": "q1", "query": "cat", "relevant": [{"doc": "d1", "grade": 2, "grade": 1}]}\n')
    assert_input_error(_validate(tmp_path, gold), "g.jsonl:1", "key 'grade' is given twice")
    sheet = tmp_path / "sheet.jsonl"
    sheet.write_text('{"query_id": "q01", "doc_id": "x", "grade": 1, "grade": 2}\n{bad json\n')
    proc = harness("goldset", "merge", DEMO / "goldset.jsonl", sheet, "-o", tmp_path / "m.jsonl")
    assert_input_error(proc, "sheet.jsonl:1: key 'grade' is given twice", "sheet.jsonl:2: not valid JSON")


def test_a_sheet_row_contradicting_itself_is_refused_and_a_list_of_quotes_read(tmp_path):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("query_id,doc_id,chunk_id,grade\nq04,install-desktop,versions-ransomware#212-434,1\n")
    proc = harness("goldset", "merge", DEMO / "goldset.jsonl", sheet, "-o", tmp_path / "m.jsonl")
    assert_input_error(proc, "sheet.csv:2", "is a chunk of document 'versions-ransomware', not of doc_id")
    sheet = tmp_path / "sheet.jsonl"
    sheet.write_text(json.dumps({"query_id": "q04", "doc_id": "install-linux", "grade": 2,
                                 "evidence": ["Headless servers can run the daemon", "ORBIT_HEADLESS=1"]}) + "\n")
    assert harness("goldset", "merge", DEMO / "goldset.jsonl", sheet, "-o", tmp_path / "m.jsonl").returncode == 0
    merged = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()}
    judged = next(j for j in merged["q04"]["relevant"] if j["doc"] == "install-linux")
    assert {"quote": "Headless servers can run the daemon"} in judged["evidence"]  # added to the judgment it had
    assert {"quote": "ORBIT_HEADLESS=1"} in judged["evidence"]


# ---- goldset build ---------------------------------------------------------------------------------------------------

def test_build_refuses_tags_it_would_turn_into_text_and_leaves_an_unlocated_answer_out(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "a1", "query": "t", "answers": ["dog"], "tags": {"x": null}}\n')
    proc = harness("goldset", "build", "--from", answers, "--corpus", tmp_path / "corpus.jsonl", "-o", tmp_path / "g.jsonl")
    assert_input_error(proc, "answers.jsonl:1", "a tag's value must be text or a number")
    answers.write_text('{"id": "a2", "query": "t", "answers": ["a horse"], "doc": "d1"}\n')
    out = tmp_path / "g.jsonl"
    proc = harness("goldset", "build", "--from", answers, "--corpus", tmp_path / "corpus.jsonl", "-o", out)
    assert proc.returncode == 1  # an answer left for a person: listed, and out of the golden set (issue 36)
    assert out.read_text() == ""
    assert "query 'a2': answer 'a horse' missing" in proc.stderr
    assert "1 queries left out (none of their answers placed)" in proc.stderr


def test_a_squad_style_answer_whose_offset_disagrees_is_flagged(tmp_path):
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d2", "title": "", "text": "Refunds are due within 30 days."}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q2", "text": "how long"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td2\t1\n")
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_text('{"query-id": "q2", "corpus-id": "d2", "answers": [{"text": "30 days", "answer_start": 5}]}\n')
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: t\ncorpus: {{path: {beir}, format: beir}}\n"
                   f"goldset: {{path: {beir}, format: beir, evidence: {evidence}}}\nretriever: {{kind: bm25}}\n")
    proc = harness("validate", cfg)
    # its one query is a golden-set error, so nothing could be counted: refused, naming the problem (issue 35)
    assert proc.returncode == 2 and "reads 'ds are ', not its recorded text '30 days'" in proc.stderr
    evidence.write_text('{"query-id": "q2", "corpus-id": "d2", "answers": [{"text": "30 days", "answer_start": 23}]}\n')
    assert "problem" not in harness("validate", cfg).stderr.replace("0 problem(s)", "")


# ---- tables, and checks against another run ---------------------------------------------------------------------

@pytest.mark.parametrize("rows, fragment", [
    ("q1,dog,d1,2,,,,animals\nq1,dog,d1,2,,,,pets\n", "tag topic 'pets' here, 'animals' on its first row"),
    ("q1,dog,d1,2,,,,\nq1,dog,d1,2,,,,animals\nq1,dog,d1,2,,,,pets\n", "tag topic 'pets' here, 'animals'"),
    ("q1,dog,d1,,,,,animals\n", "the grade cell is empty"),
    ("q1,dog,d1,2,The dog ran in the park.,0,5,animals\n", "a quote and a span on one row"),
])
def test_a_csv_golden_set_row_that_could_mean_two_things_is_refused(tmp_path, rows, fragment):
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    table = tmp_path / "g.csv"
    table.write_text("query_id,query,doc_id,grade,quote,start,end,topic\n" + rows)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: t\ncorpus: {{path: {tmp_path / 'corpus.jsonl'}}}\n"
                   f"goldset: {{path: {table}, format: csv, columns: {{tags: [topic]}}}}\n"
                   f"retriever: {{kind: bm25, backend: fast}}\n")
    assert_input_error(harness("validate", cfg), "g.csv:", fragment)


def test_every_row_of_a_csv_golden_set_with_another_width_is_named_with_the_other_problems(tmp_path):
    """Each row with more or fewer cells than the header is named, with the file's other problems, in one error:
    the reader stopped at the first such row, so a sheet with ten unquoted commas took ten runs to fix."""
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    table = tmp_path / "g.csv"
    table.write_text("query_id,query,doc_id,grade,quote,start,end,topic\n"
                     "q1,dog,d1,2,The dog ran, in the park.,,,\n"
                     "q2,cat,d1,,,,,\n"
                     "q3,bird,d1,1,,,\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: t\ncorpus: {{path: {tmp_path / 'corpus.jsonl'}}}\n"
                   f"goldset: {{path: {table}, format: csv, columns: {{tags: [topic]}}}}\n"
                   f"retriever: {{kind: bm25, backend: fast}}\n")
    assert_input_error(harness("validate", cfg), "3 problem(s) in the golden set",
                       "g.csv:2: 9 cells, but the header (line 1) has 8 columns",
                       "g.csv:3: query 'q2' document 'd1': the grade cell is empty",
                       "g.csv:4: 7 cells, but the header (line 1) has 8 columns")


def test_check_and_stats_refuse_a_run_over_another_golden_set(demo_run, tmp_path):
    gold = _gold(tmp_path, [{"quote": "The dog ran in the park."}])
    results = demo_run / "out" / "results.json"
    proc = harness("goldset", "check", gold, "--corpus", tmp_path / "corpus.jsonl", "--against", results)
    assert_input_error(proc, "--against", "none of the 1 documents this golden set judges")
    assert_input_error(harness("goldset", "stats", gold, "--results", results), "--results", "other queries")
    proc = harness("goldset", "stats", demo_run / "goldset.jsonl", "--results", results)
    assert proc.returncode == 0 and "detectable" in proc.stdout.lower()


def test_check_and_stats_read_a_csv_golden_set(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    table = tmp_path / "g.csv"
    table.write_text("query_id,query,doc_id,grade,quote\nq1,dog,d1,2,The dog ran in the park.\n")
    proc = harness("goldset", "check", table, "--corpus", tmp_path / "corpus.jsonl")
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "valid: 1, re_anchorable: 0, split: 0, "
                                                                  "orphaned: 0, stale: 0")
    assert harness("goldset", "stats", table).stdout.startswith("queries: 1")


def test_the_commands_a_starter_config_suggests_in_its_comments_work(tmp_path):
    """`harness init`'s config says how to swap in a dense retriever; the --set it showed was refused (k1, b left)."""
    import re
    import shlex

    assert harness("init", tmp_path / "p").returncode == 0
    cfg = tmp_path / "p" / "harness.yaml"
    line = next(x for x in cfg.read_text().splitlines() if "Swap the retriever" in x)
    args = shlex.split(re.search(r"\(or (--set .*)\)$", line).group(1))
    proc = harness("validate", cfg, *args)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("command", [["check", "--corpus", "CORPUS"], ["stats"]])
def test_an_empty_golden_set_is_refused_as_run_refuses_it(tmp_path, command):
    """`goldset check` of an empty file printed "valid: 0" and exit 0 (a pass), `stats` zeros, while run refuses it."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    args = [str(DEMO / "corpus.jsonl") if a == "CORPUS" else a for a in command]
    proc = harness("goldset", command[0], empty, *args[1:])
    assert_input_error(proc, f"{empty}: the golden set has no queries")
