"""What a newcomer's session found (a helper walking the CLI as a careless user, 2026-12-04): each of these printed
a traceback or read a file wrong. Each case runs the command as a user does and checks the exit code, the located
message, and that the output is what the same input without the oddity gives."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import subprocess
import sys

import pytest

from clihelp import DEMO, ROOT, assert_input_error, harness


def _config(tmp, name="cfg", corpus=DEMO / "corpus.jsonl", goldset=f"{{path: {DEMO / 'goldset.jsonl'}}}",
            retriever="{kind: bm25, backend: fast}"):
    path = tmp / f"{name}.yaml"
    path.write_text(f"name: t\ncorpus: {{path: {corpus}}}\nchunking: {{strategy: sentences, size: 2}}\n"
                    f"goldset: {goldset}\nretriever: {retriever}\ncutoff: {{k: 5}}\n")
    return path


def _run(tmp, name, monkeypatch=None, selected=False, **config):
    """``harness run`` on the demo; ``selected``: laid out as a run over KEEP_ALL_HITS_UP_TO queries is (results.json
    keeps a selection's hits, the rest are in hits.parquet)."""
    if selected:
        from harness.result import selection

        monkeypatch.setattr(selection, "KEEP_ALL_HITS_UP_TO", 10)
        monkeypatch.setattr(selection.select, "__defaults__", (12,))  # its cap (SHOWN_QUERIES), bound at import
        monkeypatch.setattr(selection, "SAMPLE", 3)
    out = tmp / name
    proc = harness("run", _config(tmp, name, **config), "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    return out / "results.json"


# ---- a run whose results.json keeps a selection of hits ----------------------------------------------------------

def test_pool_reads_the_hits_results_json_does_not_keep(tmp_path, monkeypatch):
    whole = _run(tmp_path, "all")
    selected = _run(tmp_path, "sel", monkeypatch, selected=True)
    assert sum(q["hits"] is None for q in json.loads(selected.read_text())["queries"]) > 0
    for results, sheet in ((whole, tmp_path / "all.csv"), (selected, tmp_path / "sel.csv")):
        proc = harness("goldset", "pool", results, "-o", sheet)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sel.csv").read_text() == (tmp_path / "all.csv").read_text()
    assert len((tmp_path / "all.csv").read_text().splitlines()) > 40


def test_report_and_markdown_read_a_shown_querys_hits_from_the_parquet_file(tmp_path):
    results = _run(tmp_path, "run")
    data = json.loads(results.read_text())
    data["hits_kept"], data["hits_file"] = "selected", "hits.parquet"  # as if edited: a shown query without hits
    data["queries"][0]["hits"] = None
    results.write_text(json.dumps(data, indent=2))
    proc = harness("report", results, "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    assert data["queries"][0]["id"] in (tmp_path / "r.html").read_text()


@pytest.mark.charts  # the report's curves read hits.parquet
@pytest.mark.parametrize("damage", ["truncated", "four bytes", "chunks file in its place"])
def test_a_damaged_hits_file_is_named_not_a_traceback(tmp_path, monkeypatch, damage):
    results = _run(tmp_path, "sel", monkeypatch, selected=True)
    hits = results.parent / "hits.parquet"
    if damage == "truncated":
        hits.write_bytes(hits.read_bytes()[:2000])
    elif damage == "four bytes":
        hits.write_bytes(b"PAR1")
    else:
        shutil.copy(results.parent / "chunks.parquet", hits)
    unkept = next(q["id"] for q in json.loads(results.read_text())["queries"] if q["hits"] is None)
    for args in (("explain", results, unkept), ("report", results, "-o", tmp_path / "r.html")):
        proc = harness(*args)
        assert_input_error(proc, str(hits))
        assert ("cannot be read as the Parquet file" in proc.stderr) == (damage != "chunks file in its place")
    assert not (tmp_path / "r.html").exists()


def test_report_compares_two_runs_with_one_name(tmp_path):
    """compare names them name#1 and name#2; the report's side-by-side did not find its baseline (StopIteration)."""
    a = _run(tmp_path, "a")
    b = _run(tmp_path, "b", retriever="{kind: bm25, backend: fast, k1: 0.9}")
    for pair in ((a, b), (a, a)):
        proc = harness("report", *pair, "-o", tmp_path / "cmp.html")
        assert proc.returncode == 0, proc.stderr
        page = (tmp_path / "cmp.html").read_text()
        assert "t#1" in page and "t#2" in page


# ---- inputs as editors and tools write them ---------------------------------------------------------------------

def _same_run(tmp_path, name, **config):
    results = json.loads(_run(tmp_path, name, **config).read_text())
    return [(q["id"], q["metrics"], q["verdict"]["kind"]) for q in results["queries"]]


def test_a_byte_order_mark_is_not_part_of_the_first_line_or_column(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    bom = b"\xef\xbb\xbf"
    (data / "gold.jsonl").write_bytes(bom + (DEMO / "goldset.jsonl").read_bytes())
    (data / "corpus.jsonl").write_bytes(bom + (DEMO / "corpus.jsonl").read_bytes())
    rows = [json.loads(line) for line in (DEMO / "goldset.jsonl").read_text().splitlines() if line.strip()]
    with open(data / "gold.csv", "w", newline="", encoding="utf-8-sig") as fh:  # Excel's "CSV UTF-8"
        writer = csv.writer(fh)
        writer.writerow(["query_id", "query", "doc_id", "grade"])
        for row in rows:
            for rel in row["relevant"]:
                writer.writerow([row["id"], row["query"], rel["doc"], rel.get("grade", 1)])
    plain = _same_run(tmp_path, "plain")
    assert _same_run(tmp_path, "bom", goldset=f"{{path: {data / 'gold.jsonl'}}}") == plain
    assert _same_run(tmp_path, "bomc", corpus=data / "corpus.jsonl") == plain
    proc = harness("validate", _config(tmp_path, "csv", goldset=f"{{path: {data / 'gold.csv'}, format: csv}}"))
    assert proc.returncode == 0, proc.stderr


def test_a_gzipped_corpus_reads_as_the_plain_one(tmp_path):
    gz = tmp_path / "corpus.jsonl.gz"
    gz.write_bytes(gzip.compress((DEMO / "corpus.jsonl").read_bytes()))
    assert _same_run(tmp_path, "gz", corpus=gz) == _same_run(tmp_path, "plain")
    gz.write_bytes(gz.read_bytes()[:300])
    assert_input_error(harness("validate", _config(tmp_path, "cut", corpus=gz)),
                       f"{gz}: not a complete gzip file")


def test_a_tag_value_must_be_text_or_a_number(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q1", "query": "install", "relevant": ["install-desktop"], '
                    '"tags": {"n": 3, "f": 1.5, "s": "x"}}\n'
                    '{"id": "q2", "query": "install", "relevant": ["install-desktop"], '
                    '"tags": {"topic": null, "b": true, "l": [1, 2], "s": "y"}}\n')
    proc = harness("validate", _config(tmp_path, goldset=f"{{path: {gold}}}"))
    assert_input_error(proc, f"{gold}:2: query 'q2': tags 'topic', 'b', 'l'", "None, True, [1, 2]")
    assert f"{gold}:1" not in proc.stderr


def test_a_cache_dir_given_must_be_a_folder_whatever_the_retriever(tmp_path):
    proc = harness("run", _config(tmp_path), "--cache-dir", DEMO / "corpus.jsonl", "--out", tmp_path / "out")
    assert_input_error(proc, "cannot be used as the cache folder: it is a file")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]])
def test_help_into_a_closed_pipe_exits_quietly(args):
    """``harness --help | head -1``: rich meets the closed pipe while click prints the help, before any command."""
    proc = subprocess.run(f"{sys.executable} -m harness.cli.main {' '.join(args)} | head -c 10; exit ${{PIPESTATUS[0]}}",
                          shell=True, executable="/bin/bash", cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "80"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_pool_refuses_a_hits_file_in_another_order_than_the_records(tmp_path, monkeypatch):
    """The hits not kept in results.json are read in one pass, matched to the records in order: a file whose
    queries come in another order (hand-edited records, files of two runs) is an error, not hits read as none."""
    results = _run(tmp_path, "sel", monkeypatch, selected=True)
    data = json.loads(results.read_text())
    data["queries"].reverse()
    results.write_text(json.dumps(data, indent=2))
    proc = harness("goldset", "pool", results, "-o", tmp_path / "pool.csv")
    assert_input_error(proc, "hits.parquet: query", "not where results.json's order puts them")
    assert not (tmp_path / "pool.csv").exists()


def test_corrupt_compressed_data_in_any_gzipped_input_is_named(tmp_path):
    """A .gz whose header is fine but whose data is damaged raises zlib's own error (not an OSError): the golden set
    reader let it through as a traceback. Every reader of .gz files names the file (core.textfile.GZIP_ERRORS)."""
    data = bytearray(gzip.compress((DEMO / "goldset.jsonl").read_bytes()))
    data[30] ^= 0xFF
    data[40] ^= 0xFF
    bad = {name: tmp_path / name for name in ("gold.jsonl.gz", "corpus.jsonl.gz", "qrels.gz", "run.gz")}
    for path in bad.values():
        path.write_bytes(bytes(data))
    cases = [("validate", _config(tmp_path, "g", goldset=f"{{path: {bad['gold.jsonl.gz']}}}"), bad["gold.jsonl.gz"]),
             ("validate", _config(tmp_path, "c", corpus=bad["corpus.jsonl.gz"]), bad["corpus.jsonl.gz"])]
    run = _run(tmp_path, "run").parent / "run.trec"
    cases += [("eval", bad["qrels.gz"], run, bad["qrels.gz"]), ("eval", DEMO / "goldset.jsonl", bad["run.gz"], bad["run.gz"])]
    for *args, path in cases:
        assert_input_error(harness(*args), f"{path}: not a complete gzip file")


def test_a_runs_reports_inside_its_folder_corpus_are_not_read_as_documents(tmp_path):
    """A tester's walk: a folder corpus with the config beside it (output under reports/ by default): the second
    run read the first one's report.md and report.html as documents, and ranked report.html at rank 2."""
    for i in range(1, 6):
        (tmp_path / f"d{i}.txt").write_text(f"Document {i} talks about topic number {i} and cats.\n")
    (tmp_path / "gold.jsonl").write_text('{"id": "q1", "query": "topic number 3", '
                                         '"relevant": [{"doc": "d3.txt", "grade": 1}]}\n')
    cfg = tmp_path / "fc.yaml"
    cfg.write_text("name: fc\ncorpus: {path: ., format: folder}\ngoldset: {path: gold.jsonl}\n"
                   "retriever: {kind: bm25}\nmetrics: [hit@3]\ndepth: 5\n")
    for _ in range(2):
        proc = harness("run", cfg, "-q", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "reports" / "fc" / "results.json").read_text())
    assert result["corpus"]["documents"] == 5
    assert f"{tmp_path / 'reports' / 'fc'}: skipped: a harness output folder" in proc.stderr


def test_a_results_json_given_where_another_file_belongs_is_said_once(tmp_path):
    """A results.json given as a config, a golden set, a corpus, qrels or a run (second walk, 2026-12-04: 398,263
    "not valid JSON" problems with 50 shown, or 30 lines of pydantic's path errors): one line naming what it is."""
    results = _run(tmp_path, "first")
    as_trec = tmp_path / "results.trec"
    shutil.copy(results, as_trec)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q01 0 install-desktop 1\n")
    said = "a harness results.json: harness report, explain, compare and gate read it"
    cases = [(("validate", results), results, "not a config"),
             (("run", results, "--out", tmp_path / "o"), results, "not a config"),
             (("goldset", "stats", results), results, said),
             (("goldset", "check", results, "--corpus", DEMO / "corpus.jsonl"), results, said),
             (("validate", _config(tmp_path, "gold", goldset=f"{{path: {results}}}")), results, said),
             (("validate", _config(tmp_path, "corpus", corpus=results)), results, said),
             (("eval", results, as_trec), results, "not TREC qrels"),
             (("eval", qrels, as_trec), as_trec, "not a TREC run"),
             (("eval", qrels, results), results, said)]
    for args, named, fragment in cases:
        proc = harness(*args)
        assert_input_error(proc, f"{named}: ", fragment)
        assert len(proc.stderr.strip().splitlines()) <= 3, (args, proc.stderr)  # (a config's: heading + the file's)


def test_a_docno_that_is_a_document_and_another_documents_chunk_is_refused(tmp_path):
    """Doc "a#0-23" beside doc "a" cut at 23: run.chunks.trec read back as an external run placed 'a#0-23' as the
    document, silently (nDCG 1.0 became 0.75). Now each such line is named, whatever unplaceable says."""
    (tmp_path / "corpus.jsonl").write_text(
        '{"id": "a", "text": "Rotate the key monthly. Bananas are yellow."}\n'
        '{"id": "a#0-23", "text": "Elephants are large grey animals."}\n'
        '{"id": "b", "text": "Nothing to see here at all."}\n')
    # b relevant: a's chunk [0, 23) is written under its chunk id (a relevant one would be its evidence unit's id)
    (tmp_path / "gold.jsonl").write_text('{"id": "q1", "query": "rotate key monthly", "relevant": [{"doc": "b"}]}\n')
    base = ("corpus: {path: corpus.jsonl}\nchunking: {strategy: sentences, size: 1}\ngoldset: {path: gold.jsonl}\n"
            "cutoff: {k: 2}\n")
    (tmp_path / "c.yaml").write_text("name: c\n" + base + "retriever: {kind: bm25}\n")
    assert harness("run", "c.yaml", "-q", cwd=tmp_path).returncode == 0
    run_file = tmp_path / "reports" / "c" / "run.chunks.trec"
    line = next(i for i, text in enumerate(run_file.read_text().splitlines(), 1) if " a#0-23 " in text)
    for unplaceable in ("fail", "skip"):
        (tmp_path / "e.yaml").write_text(f"name: e\n{base}retriever: {{kind: external, path: {run_file}}}\n"
                                         f"retriever_hits: {{unplaceable: {unplaceable}}}\n")
        for args in (["validate", "e.yaml"], ["run", "e.yaml", "-q"]):
            assert_input_error(harness(*args, cwd=tmp_path), f"{run_file}:{line}: query 'q1': 'a#0-23' is a document "
                               "and also the chunk [0, 23) of document 'a'")
    assert not (tmp_path / "reports" / "e").exists()


def test_a_config_given_for_a_results_json_says_so_and_a_bom_is_read_past(tmp_path):
    """The walk of 2026-12-05: a config where a results.json belongs was "not valid JSON ... a truncated or
    hand-edited results.json?"; a results.json an editor saved with a byte-order mark was refused."""
    results = _run(tmp_path, "r")
    rules = ROOT / "configs" / "gates.yaml"
    config = ROOT / "configs" / "demo-bm25.yaml"
    (tmp_path / "config.json").write_bytes(config.read_bytes())  # the content says it, whatever the name
    for given in (config, tmp_path / "config.json"):
        for args in (["gate", given, "--rules", rules], ["report", given, "-o", tmp_path / "x.html"],
                     ["compare", results, given]):
            assert_input_error(harness(*args, cwd=tmp_path), f"{given}: a YAML file (a config?), not a results.json")
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + results.read_bytes())
    plain, bom = (harness("gate", path, "--rules", rules, cwd=tmp_path)
                  for path in (results, tmp_path / "bom.json"))
    assert bom.returncode == plain.returncode == 0 and bom.stdout == plain.stdout, bom.stderr


def test_a_file_of_blank_lines_given_for_a_results_json_is_refused_at_once(tmp_path):
    """The check for a YAML file backtracked over blank lines (2^n ways): 26 blank lines then a non-JSON line took
    5 s, 40 would never end."""
    import time

    (tmp_path / "blank.json").write_text("\n" * 5000 + "!\n")
    started = time.perf_counter()
    assert_input_error(harness("gate", tmp_path / "blank.json", "--rules", ROOT / "configs" / "gates.yaml"),
                       "blank.json:5001: not valid JSON")
    assert time.perf_counter() - started < 10
