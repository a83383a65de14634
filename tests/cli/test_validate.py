"""Where `harness validate` said ok and `run` then exited 2 (a review, 2026-12): a retriever's optional extra not
installed, an external run's hits that name no chunk of the corpus; and a TREC qrels file read as a native golden
set, which gave one "not valid JSON" line per row. validate makes run's checks through the same function
(``check_before_retrieval``), so each case checks that both say the same lines."""

from __future__ import annotations

import sys

import pytest

from clihelp import ROOT, assert_input_error, demo_config, harness
from conftest import require_installed

CONFIGS = ROOT / "configs"


def _errors(proc) -> list[str]:
    """The error lines of a command (warnings and progress aside)."""
    lines = proc.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("error:"))
    return [line for line in lines[start:] if line.strip()]


# ---- 1. a backend's optional extra is not installed ------------------------------------------------------------

def _missing(monkeypatch, *modules: str) -> None:
    for name in modules:  # `import name` raises ImportError, installed or not
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("config, module, extra", [("demo-qdrant.yaml", "qdrant_client", "qdrant"),
                                                   ("demo-lancedb.yaml", "lancedb", "lancedb"),
                                                   ("demo-pgvector.yaml", "psycopg", "pgvector")])
def test_validate_names_a_missing_backend_extra_in_runs_words(tmp_path, monkeypatch, config, module, extra):
    _missing(monkeypatch, module)
    checked = harness("validate", CONFIGS / config)
    assert_input_error(checked, f"needs {module}: pip install 'rag-harness[{extra}]'")
    ran = harness("run", CONFIGS / config, "--out", tmp_path / "out", "-q")
    assert_input_error(ran)
    assert _errors(checked) == _errors(ran) == [f"error: retriever.kind {extra}: needs {module}: pip install "
                                                f"'rag-harness[{extra}]'"]
    assert not (tmp_path / "out").exists()  # said before any work


def test_a_hybrids_children_missing_extras_are_each_one_line(tmp_path, monkeypatch):
    _missing(monkeypatch, "tantivy", "faiss")
    cfg = demo_config(tmp_path, retriever="{kind: hybrid, children: [{kind: tantivy}, {kind: dense, weight: 0.5}, "
                                          "{kind: tantivy, tokenizer: default}]}")
    proc = harness("validate", cfg)
    assert_input_error(proc, "pip install 'rag-harness[tantivy]'", "dense retrieval needs faiss-cpu")
    assert sum("rag-harness[tantivy]" in line for line in _errors(proc)) == 1  # two tantivy children, one line


def test_a_pgvector_server_given_by_dsn_does_not_need_pgserver(tmp_path, monkeypatch):
    require_installed("psycopg")
    require_installed("pgvector")
    _missing(monkeypatch, "pgserver")
    monkeypatch.setenv("PG_DSN", "postgresql://nobody@127.0.0.1:1/none")  # validate connects to nothing
    proc = harness("validate", CONFIGS / "demo-pgvector.yaml", "--set", "retriever.dsn_env=PG_DSN")
    assert proc.returncode == 0, proc.stderr
    assert_input_error(harness("validate", CONFIGS / "demo-pgvector.yaml"), "needs pgserver")


# ---- 2. an external run's hits that cannot be placed on the corpus ---------------------------------------------

JSONL_RUN = (
    '{"query_id": "q01", "hits": [{"doc_id": "install-desktop", "score": 3.0}, {"chunk_id": "nope#0-10", "score": 2.0}]}\n'
    '{"query_id": "q02", "hits": [{"doc_id": "no-such-doc", "score": 1.0}, '
    '{"doc_id": "install-desktop", "start": 0, "end": 99999, "score": 0.5}]}\n')
TREC_RUN = "q01 Q0 install-desktop 1 3.0 sys\nq01 Q0 ghost-doc 2 2.0 sys\n"


@pytest.mark.parametrize("name, text, lines", [
    ("ext.jsonl", JSONL_RUN, ["ext.jsonl:1: query 'q01': chunk 'nope#0-10' is not a chunk of this corpus",
                              "ext.jsonl:2: query 'q02': document 'no-such-doc' is not in the corpus",
                              "ext.jsonl:2: query 'q02': span 0..99999 is outside document 'install-desktop'"]),
    ("ext.trec", TREC_RUN, ["ext.trec:2: query 'q01': document 'ghost-doc' is not in the corpus"])])
def test_validate_finds_the_external_hits_run_cannot_place(tmp_path, name, text, lines):
    (tmp_path / name).write_text(text)
    cfg = demo_config(tmp_path, retriever=f"{{kind: external, path: {name}}}")
    checked = harness("validate", cfg)
    assert_input_error(checked, f"{len(lines)} hit(s) could not be placed in the corpus", *lines)
    ran = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert _errors(checked) == _errors(ran)  # the same hits, in the same words
    assert not (tmp_path / "out").exists()


def test_in_a_long_external_run_validate_counts_the_lines_it_read(tmp_path):
    good = '{"query_id": "q01", "doc_id": "install-desktop", "score": 1.0}\n'
    bad = '{"query_id": "q01", "doc_id": "ghost-doc", "score": 0.5}\n'
    (tmp_path / "ext.jsonl").write_text(bad + good * 1_000 + bad)  # lines 1 and 1,002 name no document
    cfg = demo_config(tmp_path, retriever="{kind: external, path: ext.jsonl}")
    proc = harness("validate", cfg)
    assert_input_error(proc, "ext.jsonl: 1 hit(s) in its first 1,000 lines could not be placed in the corpus",
                       "ext.jsonl:1: query 'q01': document 'ghost-doc' is not in the corpus")
    assert "ext.jsonl:1002" not in proc.stderr


def test_validate_ok_on_a_long_external_run_says_it_read_only_its_first_lines(tmp_path):
    """A bad line after the first 1,000 passes validate's quick check: its ok says what it read (it said nothing,
    and the run then failed, exit 2); a short file's ok has no such note."""
    good = '{"query_id": "q01", "doc_id": "install-desktop", "score": 1.0}\n'
    bad = '{"query_id": "q01", "doc_id": "ghost-doc", "score": 0.5}\n'
    (tmp_path / "ext.jsonl").write_text(good * 1_200 + bad)
    cfg = demo_config(tmp_path, retriever="{kind: external, path: ext.jsonl}")
    proc = harness("validate", cfg)
    assert proc.returncode == 0, proc.stderr
    assert (f"note: {tmp_path / 'ext.jsonl'}: validate read its first 1,000 lines; harness run reads every line"
            in proc.stderr)
    assert_input_error(harness("run", cfg, "--out", tmp_path / "out", "-q"), "ext.jsonl:1201")
    (tmp_path / "ext.jsonl").write_text(good * 3)
    proc = harness("validate", cfg)
    assert proc.returncode == 0 and "note:" not in proc.stderr, proc.stderr


def test_in_a_long_external_run_run_names_every_hit_it_cannot_place(tmp_path):
    good = '{"query_id": "q01", "doc_id": "install-desktop", "score": 1.0}\n'
    bad = '{"query_id": "q01", "doc_id": "ghost-doc", "score": 0.5}\n'
    (tmp_path / "ext.jsonl").write_text(bad + good * 1_000 + bad)  # lines 1 and 1,002 name no document
    cfg = demo_config(tmp_path, retriever="{kind: external, path: ext.jsonl}")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert_input_error(proc, "ext.jsonl: 2 hit(s) could not be placed in the corpus",
                       "ext.jsonl:1: query 'q01': document 'ghost-doc' is not in the corpus",
                       "ext.jsonl:1002: query 'q01': document 'ghost-doc' is not in the corpus")
    assert not (tmp_path / "out").exists()


def _bad_trec(tmp_path, lines=3000, bad=(10, 2001, 2501)):
    """A TREC run whose lines ``bad`` are wrong (a score that is no number, or three columns)."""
    rows = []
    for i in range(1, lines + 1):
        if i == bad[-1]:
            rows.append("q01 Q0 install-desktop\n")
        elif i in bad:
            rows.append(f"q01 Q0 d{i} {i} high sys\n")
        else:
            rows.append(f"q01 Q0 install-desktop {i} 1.0 sys\n")
    (tmp_path / "ext.trec").write_text("".join(rows))
    return demo_config(tmp_path, retriever="{kind: external, path: ext.trec}")


def test_each_bad_line_of_an_external_run_is_said_once_and_counted_right(tmp_path):
    cfg = _bad_trec(tmp_path, lines=3, bad=(1, 3))
    for proc in (harness("validate", cfg), harness("run", cfg, "--out", tmp_path / "out", "-q")):
        assert_input_error(proc, f"{cfg}: retriever.path: {tmp_path / 'ext.trec'}: 2 problem(s) in the external run")
        assert _errors(proc)[1:] == [f"  - {tmp_path / 'ext.trec'}:1: score 'high' is not a number",
                                     f"  - {tmp_path / 'ext.trec'}:3: expected 6 columns (qid Q0 docno rank score "
                                     f"tag), got 3"]
        assert "first 1,000 lines" not in proc.stderr  # the file has 3
    # with another problem: one located line each, counted right
    proc = harness("validate", cfg, "--set", "corpus.path=nope.jsonl")
    assert_input_error(proc, f"{cfg}: 3 problems")
    assert len(_errors(proc)) == 4


def test_run_names_every_bad_line_of_an_external_run_validate_says_it_sampled(tmp_path):
    cfg = _bad_trec(tmp_path)
    ran = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert_input_error(ran, "ext.trec: 3 problem(s) in the external run", "ext.trec:10: score 'high'",
                       "ext.trec:2001: score 'high'", "ext.trec:2501: expected 6 columns")
    assert len(_errors(ran)) == 4 and not (tmp_path / "out").exists()
    checked = harness("validate", cfg)
    assert_input_error(checked, "ext.trec: 1 problem(s) in the external run (in its first 1,000 lines: validate "
                                "reads no further; harness run reads every line)", "ext.trec:10: score 'high'")
    assert len(_errors(checked)) == 2


def test_external_hits_that_a_run_would_skip_are_not_errors(tmp_path):
    (tmp_path / "ext.trec").write_text(TREC_RUN)
    lenient = demo_config(tmp_path, "lenient.yaml", retriever="{kind: external, path: ext.trec, placement: lenient}")
    skip = demo_config(tmp_path, "skip.yaml", retriever="{kind: external, path: ext.trec}",
                       retriever_hits="{unplaceable: skip}")
    for cfg in (lenient, skip):  # not errors, but said: what the run will drop (it warned; validate said nothing)
        proc = harness("validate", cfg)
        assert proc.returncode == 0, proc.stderr
        assert "name no chunk of the corpus and will be dropped (retriever_hits.unplaceable: skip)" in proc.stderr


def test_an_external_child_of_a_hybrid_is_placed_too(tmp_path):
    (tmp_path / "ext.trec").write_text(TREC_RUN)
    cfg = demo_config(tmp_path, retriever="{kind: hybrid, children: [{kind: bm25, backend: fast}, "
                                          "{kind: external, path: ext.trec, weight: 0.5}]}")
    assert_input_error(harness("validate", cfg), "ext.trec:2: query 'q01': document 'ghost-doc' is not in the corpus")


# ---- 3. TREC qrels given where a native golden set is read -----------------------------------------------------

QRELS = "q01 0 install-desktop 2\nq01 0 install-linux 0\nq02 0 install-desktop 1\n"


@pytest.mark.parametrize("name, text", [("qrels.txt", QRELS), ("qrels", QRELS.replace(" ", "\t")),
                                        ("qrels.tsv", QRELS.replace(" ", "\t"))])
def test_goldset_stats_on_trec_qrels_is_one_line_saying_what_reads_them(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    proc = harness("goldset", "stats", tmp_path / name)
    assert_input_error(proc, f"{tmp_path / name}: this looks like TREC qrels", "goldset: {format: trec",
                       "harness eval QRELS RUN")
    assert len(_errors(proc)) == 1 and "not valid JSON" not in proc.stderr, proc.stderr


def test_a_config_reading_qrels_as_native_gets_the_hint_and_the_hint_works(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    cfg = demo_config(tmp_path, "native.yaml")
    proc = harness("validate", cfg, "--set", "goldset.path=qrels.txt")
    assert_input_error(proc, "this looks like TREC qrels", "read as a native JSONL golden set")
    assert len(_errors(proc)) == 1, proc.stderr
    (tmp_path / "queries.tsv").write_text("q01\tHow do I install Orbit on macOS?\nq02\tHow much disk space?\n")
    proc = harness("validate", cfg, "--set", "goldset={path: qrels.txt, format: trec, queries: queries.tsv}")
    assert proc.returncode == 0, proc.stderr


def test_jsonl_and_csv_golden_sets_are_not_taken_for_qrels(tmp_path):
    (tmp_path / "gold.csv.txt").write_text("query_id,query,doc_id,grade\nq01,install,install-desktop,2\n")
    proc = harness("goldset", "stats", tmp_path / "gold.csv.txt")
    assert_input_error(proc, "this looks like a CSV file")
    assert harness("goldset", "stats", ROOT / "goldsets" / "demo" / "goldset.jsonl").returncode == 0


@pytest.mark.parametrize("name", ["test.tsv", "test.jsonl"])
def test_beir_qrels_given_as_a_golden_set_is_one_line_naming_the_beir_format(tmp_path, name):
    qrels = tmp_path / name
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    proc = harness("goldset", "stats", qrels)
    assert_input_error(proc, "this looks like BEIR qrels", "goldset: {format: beir, path: THE_DATASET_FOLDER")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_folder_or_a_device_given_as_a_file_is_named_as_such(tmp_path):
    """A folder or /dev/null was 'config file not found' / 'run file not found', sending users looking for a
    file that is there."""
    assert_input_error(harness("validate", tmp_path), f"{tmp_path}: a folder, not a config file")
    assert_input_error(harness("validate", "/dev/null"), "/dev/null: not a regular file (a device or a pipe?)")
    gold = ROOT / "goldsets" / "demo" / "goldset.jsonl"
    assert_input_error(harness("eval", gold, tmp_path), f"{tmp_path}: a folder, not a run file")
    assert_input_error(harness("eval", gold, tmp_path / "nope.trec"), "nope.trec: run file not found")
    (tmp_path / "dir.jsonl").mkdir()
    assert_input_error(harness("eval", gold, tmp_path / "dir.jsonl"), "dir.jsonl: a folder, not a run file")
    assert_input_error(harness("eval", tmp_path, gold), f"{tmp_path}: a folder, not a qrels file")
    # every reader of a file the user names says the same (they said "not found" as well)
    assert_input_error(harness("validate", ROOT / "configs" / "demo-bm25.yaml", "--rules", tmp_path),
                       f"{tmp_path}: a folder, not a rules file")
    (tmp_path / "sheet.csv").mkdir()
    assert_input_error(harness("goldset", "merge", gold, tmp_path / "sheet.csv", "-o", tmp_path / "out.jsonl"),
                       "sheet.csv: a folder, not a judging sheet")
    assert_input_error(harness("report", "/dev/null", "-o", tmp_path / "r.html"),
                       "/dev/null: not a regular file (a device or a pipe?); give a results file")
