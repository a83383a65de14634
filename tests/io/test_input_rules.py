"""Golden sets, corpora and runs are read as written or rejected with the line named: never guessed, never changed.

Table rows run the CLI as a user does (`harness run` on a config pointing at a bad file, `harness eval`) and check
exit 2, no traceback, file:line in the message, and the input files untouched. Fuzz tests feed the loaders random
bytes and random edits of valid files: each gives a result or a HarnessError, nothing else. Eval tests compare with
pytrec_eval."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from clihelp import DEMO, Case, assert_input_error, harness, run_case

DEMO_CORPUS = DEMO / "corpus.jsonl"
DEMO_GOLD = DEMO / "goldset.jsonl"
GOLD_ROWS = [json.loads(line) for line in DEMO_GOLD.read_text().splitlines() if line.strip()]
CORPUS_ROWS = [json.loads(line) for line in DEMO_CORPUS.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------------------------
# Setup helpers: every bad file lives in tmp/data (kept byte for byte), the config in tmp.

def write_config(tmp: Path, corpus: str, goldset: str, retriever: str = "{kind: bm25, backend: fast}") -> Path:
    path = tmp / "cfg.yaml"
    path.write_text(f"name: t\ncorpus: {corpus}\nchunking: {{strategy: sentences, size: 2}}\ngoldset: {goldset}\n"
                    f"retriever: {retriever}\n")
    return path


def data(tmp: Path) -> Path:
    folder = tmp / "data"
    folder.mkdir(exist_ok=True)
    return folder


def gold_with(edit, suffix: str = ".jsonl"):
    """A setup writing the demo golden set with its first query edited by ``edit(row)``, then `harness run`."""
    def setup(tmp: Path):
        rows = json.loads(json.dumps(GOLD_ROWS))
        edit(rows[0])
        path = data(tmp) / f"gold{suffix}"
        if suffix == ".jsonl":
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        else:
            path.write_text(yaml.safe_dump(rows, allow_unicode=True, sort_keys=False), encoding="utf-8")
        return ["run", write_config(tmp, f"{{path: {DEMO_CORPUS}}}", f"{{path: {path}}}"), "--out", tmp / "out"]
    return setup


def corpus_with(edit):
    """The demo corpus with its third document edited by ``edit(row)`` (line 3)."""
    def setup(tmp: Path):
        rows = json.loads(json.dumps(CORPUS_ROWS))
        edit(rows[2])
        path = data(tmp) / "corpus.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return ["run", write_config(tmp, f"{{path: {path}}}", f"{{path: {DEMO_GOLD}}}"), "--out", tmp / "out"]
    return setup


def folder_corpus(names: dict[str, str]):
    def setup(tmp: Path):
        folder = data(tmp) / "docs"
        for name, text in names.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        gold = data(tmp) / "gold.jsonl"
        gold.write_text(json.dumps({"id": "q1", "query": "hello", "relevant": ["a.txt"]}) + "\n")
        return ["run", write_config(tmp, f"{{path: {folder}, format: folder}}", f"{{path: {gold}}}"),
                "--out", tmp / "out"]
    return setup


def beir(qrels: str, queries: list[dict] | None = None):
    def setup(tmp: Path):
        folder = data(tmp) / "beir"
        (folder / "qrels").mkdir(parents=True)
        (folder / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
        rows = queries or [{"_id": "q1", "text": "how do I install Orbit on macOS"}]
        (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return ["run", write_config(tmp, f"{{path: {DEMO_CORPUS}}}", f"{{path: {folder}, format: beir}}"),
                "--out", tmp / "out"]
    return setup


def trec_gold(qrels: str, queries: str = "q1\thow do I install Orbit on macOS\n"):
    def setup(tmp: Path):
        (data(tmp) / "qrels.txt").write_text(qrels, encoding="utf-8")
        (data(tmp) / "queries.tsv").write_text(queries, encoding="utf-8")
        gold = f"{{path: {data(tmp) / 'qrels.txt'}, format: trec, queries: {data(tmp) / 'queries.tsv'}}}"
        return ["run", write_config(tmp, f"{{path: {DEMO_CORPUS}}}", gold), "--out", tmp / "out"]
    return setup


def external_run(text: str):
    def setup(tmp: Path):
        (data(tmp) / "ext.trec").write_text(text, encoding="utf-8")
        return ["run", write_config(tmp, f"{{path: {DEMO_CORPUS}}}", f"{{path: {DEMO_GOLD}}}",
                                    f"{{kind: external, path: {data(tmp) / 'ext.trec'}}}"), "--out", tmp / "out"]
    return setup


def eval_files(qrels: str, run: str, qrels_name: str = "qrels.txt", run_name: str = "run.trec"):
    def setup(tmp: Path):
        (data(tmp) / qrels_name).write_text(qrels, encoding="utf-8")
        (data(tmp) / run_name).write_text(run, encoding="utf-8")
        return ["eval", data(tmp) / qrels_name, data(tmp) / run_name, "-m", "ndcg"]
    return setup


def setitem(key, value):
    def edit(row):
        row[key] = value
    return edit


GOLD = "{tmp}/data/gold.jsonl"
RUN_OK = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"

CASES = [
    # Golden set (native JSONL): the three silent misreadings, then ids and grades.
    Case("gold-relevant-string", gold_with(setitem("relevant", "install-desktop")),
         (f"{GOLD}:1: query 'q01': 'relevant' must be a list",), keep=("data",)),
    Case("gold-relevant-mapping", gold_with(setitem("relevant", {"doc": "install-desktop"})),
         (f"{GOLD}:1: query 'q01': 'relevant' must be a list", "got dict"), keep=("data",)),
    Case("gold-same-doc-twice", gold_with(setitem("relevant", [{"doc": "install-desktop", "grade": 2},
                                                               {"doc": "install-desktop", "grade": 0}])),
         (f"{GOLD}:1: query 'q01' relevant[1]: document 'install-desktop' is judged twice in query 'q01' "
          f"(first at relevant[0])",), keep=("data",)),
    Case("gold-grade-huge", gold_with(setitem("relevant", [{"doc": "install-desktop", "grade": 10**30}])),
         (f"{GOLD}:1: query 'q01' relevant[0]: grade {10**30} is out of range",), keep=("data",)),
    Case("gold-query-id-space", gold_with(setitem("id", "q 01")),
         (f"{GOLD}:1: query id 'q 01' contains whitespace",), keep=("data",)),
    Case("gold-query-id-nbsp", gold_with(setitem("id", "q\u00a001")),
         (f"{GOLD}:1: query id 'q\\xa001' contains whitespace",), keep=("data",)),
    Case("gold-doc-id-tab", gold_with(setitem("relevant", ["install\tdesktop"])),
         (f"{GOLD}:1: query 'q01' relevant[0]: document id 'install\\tdesktop' contains whitespace",), keep=("data",)),
    Case("gold-doc-id-empty", gold_with(setitem("relevant", [{"doc": ""}])),
         (f"{GOLD}:1: query 'q01' relevant[0]: document id is empty",), keep=("data",)),
    Case("gold-doc-id-list", gold_with(setitem("relevant", [{"doc": ["a"]}])),
         (f"{GOLD}:1: query 'q01' relevant[0]: document id must be a string, got list",), keep=("data",)),
    Case("gold-judgment-typo", gold_with(setitem("relevant", [{"doc": "install-desktop", "grdae": 2}])),
         (f"{GOLD}:1: query 'q01' relevant[0]: unknown key(s) grdae",), keep=("data",)),
    # Golden set (YAML): the same rules, located by the line where the query starts.
    Case("gold-yaml-relevant-string", gold_with(setitem("relevant", "install-desktop"), ".yaml"),
         ("{tmp}/data/gold.yaml:1: query 'q01': 'relevant' must be a list",), keep=("data",)),
    Case("gold-yaml-query-id-space", gold_with(setitem("id", "q 01"), ".yaml"),
         ("{tmp}/data/gold.yaml:1: query id 'q 01' contains whitespace",), keep=("data",)),
    # Corpus (JSONL).
    Case("corpus-metadata-list", corpus_with(setitem("metadata", [1])),
         ("{tmp}/data/corpus.jsonl:3: document 'install-mobile': 'metadata' must be a mapping, got list",),
         keep=("data",)),
    Case("corpus-title-number", corpus_with(setitem("title", 7)),
         ("{tmp}/data/corpus.jsonl:3: document 'install-mobile': 'title' must be text, got int",), keep=("data",)),
    Case("corpus-id-space", corpus_with(setitem("id", "install mobile")),
         ("{tmp}/data/corpus.jsonl:3: document id 'install mobile' contains whitespace",), keep=("data",)),
    Case("corpus-id-control", corpus_with(setitem("id", "install\x00mobile")),
         ("{tmp}/data/corpus.jsonl:3: document id 'install\\x00mobile' contains whitespace or a control character",),
         keep=("data",)),
    Case("corpus-id-float", corpus_with(setitem("id", 1.5)),
         ("{tmp}/data/corpus.jsonl:3: document id must be a string, got float 1.5",), keep=("data",)),
    # Corpus (folder): the file name is the id.
    Case("folder-name-space", folder_corpus({"a.txt": "hello world", "sub/my notes.md": "notes"}),
         ("{tmp}/data/docs/sub/my notes.md: document id (the file's path in the folder) 'sub/my notes.md' contains "
          "whitespace", "rename the file"), keep=("data",)),
    # BEIR: queries.jsonl and the qrels TSV.
    Case("beir-query-id-space", beir("query-id\tcorpus-id\tscore\nq1\tinstall-desktop\t1\n",
                                     [{"_id": "q 1", "text": "x"}, {"_id": "q1", "text": "y"}]),
         ("{tmp}/data/beir/queries.jsonl:1: query id 'q 1' contains whitespace",), keep=("data",)),
    Case("beir-query-missing-id", beir("query-id\tcorpus-id\tscore\nq1\tinstall-desktop\t1\n",
                                       [{"text": "x"}, {"_id": "q1", "text": "y"}]),
         ("{tmp}/data/beir/queries.jsonl:1: missing '_id'",), keep=("data",)),
    Case("beir-qrels-doc-with-space", beir("query-id\tcorpus-id\tscore\nq1\tinstall desktop\t1\n"),
         ("{tmp}/data/beir/qrels/test.tsv:2: tab-separated column 2 is 'install desktop': ids cannot contain "
          "whitespace",), keep=("data",)),
    Case("beir-qrels-grade-float-exponent", beir("query-id\tcorpus-id\tscore\nq1\tinstall-desktop\t1e20\n"),
         ("{tmp}/data/beir/qrels/test.tsv:2: relevance '1e20' is not a whole number (trec_eval would read it as 1",),
         keep=("data",)),
    # TREC golden set: qrels and the queries TSV.
    Case("trec-gold-grade-fraction", trec_gold("q1 0 install-desktop 1.5\n"),
         ("{tmp}/data/qrels.txt:1: relevance '1.5' is not a whole number (trec_eval would read it as 1",),
         keep=("data",)),
    Case("trec-gold-grade-huge", trec_gold("# judged by hand\nq1 0 install-desktop 99999999999\n"),
         ("{tmp}/data/qrels.txt:2: relevance 99999999999 is out of range",), keep=("data",)),
    Case("trec-gold-query-id-space", trec_gold("q1 0 install-desktop 1\n", "q 1\tfirst\nq1\tsecond\n"),
         ("{tmp}/data/queries.tsv:1: query id 'q 1' contains whitespace",), keep=("data",)),
    Case("trec-gold-doc-id-nbsp", trec_gold("q1 0 install\u00a0desktop 1\n"),
         ("{tmp}/data/qrels.txt:1: document id 'install\\xa0desktop' contains whitespace",), keep=("data",)),
    # The external retriever reads TREC lines as `harness eval` does.
    Case("external-doc-id-nbsp", external_run("q01 Q0 install-desktop 1 2.0 t\nq01 Q0 install\u00a0linux 2 1 t\n"),
         ("{tmp}/data/ext.trec:2: document id 'install\\xa0linux' contains whitespace",), keep=("data",)),
    Case("external-nan-score", external_run("# exported\nq01 Q0 install-desktop 1 nan t extra\n"),
         ("{tmp}/data/ext.trec:2: score 'nan' is not a number",), keep=("data",)),
    # harness eval.
    Case("eval-qrels-grade-huge", eval_files("q1 0 d1 1e20\nq1 0 d2 1\n", RUN_OK),
         ("{tmp}/data/qrels.txt:1: relevance '1e20' is not a whole number",), keep=("data",)),
    Case("eval-qrels-grade-out-of-range", eval_files("q1 0 d1 2147483648\n", RUN_OK),
         ("{tmp}/data/qrels.txt:1: relevance 2147483648 is out of range",), keep=("data",)),
    Case("eval-qrels-extra-column", eval_files("q1 0 d1 1 x\n", RUN_OK),
         ("{tmp}/data/qrels.txt:1: expected 4 columns",), keep=("data",)),
    Case("eval-run-doc-id-nbsp", eval_files("q1 0 d1 1\n", "q1 Q0 d1 1 2.0 t\nq1 Q0 d\u00a02 2 1.0 t\n"),
         ("{tmp}/data/run.trec:2: document id 'd\\xa02' contains whitespace",), keep=("data",)),
    Case("eval-run-empty-column", eval_files("q1 0 d1 1\n", "q1 Q0 d1 1 2.0 t\nq1 Q0  2 1.0 t\n"),
         ("{tmp}/data/run.trec:2: expected 6 columns (qid Q0 docno rank score tag), got 5",), keep=("data",)),
    Case("eval-run-nan-score", eval_files("q1 0 d1 1\n", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 NaN t\n"),
         ("{tmp}/data/run.trec:2: score 'NaN' is not a number",), keep=("data",)),
    Case("eval-run-tsv-doc-with-space", eval_files("q1 0 d1 1\n", "q1\tQ0\td1\t1\t2.0\tt\nq1\tQ0\td 2\t2\t1\tt\n"),
         ("{tmp}/data/run.trec:2: tab-separated column 3 is 'd 2': ids cannot contain whitespace",), keep=("data",)),
    Case("eval-native-gold-same-doc-twice",
         eval_files(json.dumps({"id": "q1", "query": "x", "relevant": [{"doc": "d1", "grade": 2}, "d1"]}) + "\n",
                    RUN_OK, qrels_name="gold.jsonl"),
         ("{tmp}/data/gold.jsonl:1: query 'q1' relevant[1]: document 'd1' is judged twice",), keep=("data",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_located_and_nothing_is_touched(case, tmp_path):
    run_case(case, tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# What is accepted is read exactly as written.

def test_yaml_ids_keep_their_text(tmp_path):
    """YAML 1.1 would read 010 as 8, 1.10 as 1.1 and `on` as True; the ids stay as typed, grades stay numbers."""
    from harness.config.schema import GoldsetConfig
    from harness.gold.load import read_goldset

    path = tmp_path / "gold.yaml"
    path.write_text("queries:\n"
                    "  - id: 010\n    query: first\n    relevant: [{doc: 1.10, grade: 2}, on, 7]\n"
                    "    tags: {level: yes}\n"
                    "  - id: 2024-01-02\n    query: second\n")
    raw = read_goldset(GoldsetConfig(path=path))
    assert [q.query_id for q in raw] == ["010", "2024-01-02"]
    assert [(j.doc_id, j.grade) for j in raw[0].relevant] == [("1.10", 2), ("on", 1), ("7", 1)]
    assert raw[0].tags == {"level": "yes"}
    assert [q.where for q in raw] == [f"{path}:2", f"{path}:6"]


def test_folder_corpus_skips_links_that_leave_the_folder(tmp_path):
    from harness.config.schema import CorpusConfig
    from harness.io.documents import load_corpus

    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:the secret line")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("Orbit syncs files across devices.")
    (docs / "sub" / "b.md").write_text("Orbit keeps old versions for thirty days.")
    os.symlink(outside, docs / "leak.txt")
    os.symlink(tmp_path, docs / "up")  # a folder outside (it holds the corpus itself)
    os.symlink(docs / "a.txt", docs / "alias.txt")  # inside: fine
    os.symlink(tmp_path / "gone.txt", docs / "broken.txt")
    warned: list[str] = []
    loaded = load_corpus(CorpusConfig(path=docs, format="folder"), warned.append)
    assert [d.doc_id for d in loaded] == ["a.txt", "alias.txt", "sub/b.md"]  # a link inside the folder is fine
    expected = [f"{docs}/up: skipped: a link to {tmp_path}, outside the corpus folder {docs}",
                f"{docs}/broken.txt: skipped: a link to {tmp_path / 'gone.txt'}, which does not exist",
                f"{docs}/leak.txt: skipped: a link to {outside}, outside the corpus folder {docs}"]
    assert warned == expected
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q1", "query": "old versions", "relevant": ["sub/b.md"]}) + "\n")
    cfg = write_config(tmp_path, f"{{path: {docs}, format: folder}}", f"{{path: {gold}}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {w}" for w in expected]  # said even with --quiet
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written and "the secret line" not in written and "leak.txt" not in written
    assert outside.read_text() == "root:x:0:0:the secret line"


def test_run_trec_written_for_accepted_ids_is_read_back_by_eval(tmp_path):
    """Ids that pass the loaders survive the round trip through run.trec (the bug: 3, 4 or 8 columns)."""
    rows = json.loads(json.dumps(CORPUS_ROWS))
    rows[0]["id"] = "Ünïcode-doc_ü#1"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q-é", "query": "install Orbit on macOS", "relevant": ["Ünïcode-doc_ü#1"]},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    proc = harness("run", write_config(tmp_path, f"{{path: {corpus}}}", f"{{path: {gold}}}"), "--out",
                   tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_lines = (tmp_path / "out" / "run.trec").read_text(encoding="utf-8").splitlines()
    assert run_lines and all(len(line.split()) == 6 for line in run_lines)
    assert any(line.split()[:3] == ["q-é", "Q0", "Ünïcode-doc_ü#1"] for line in run_lines)
    ev = harness("eval", gold, tmp_path / "out" / "run.trec", "-m", "hit@1000", "--per-query", cwd=tmp_path)
    assert (ev.returncode, ev.stderr) == (0, "")
    assert json.loads(ev.stdout)["per_query"] == {"q-é": {"hit@1000": 1.0}}


# ---------------------------------------------------------------------------------------------------------------
# harness eval: what trec_eval 10 accepts, warnings on coverage, numbers from pytrec_eval.

QRELS = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 0, "d5": 1}, "q3": {"d6": 1}}
# q3 is judged and absent; q9 is in the run only; in q2, d4 beats d5 as doubles and ties it as float32 (where the
# larger doc id, d5, goes first).
RUN = {"q1": {"d3": 0.5, "d1": 0.9, "d7": 0.7, "d2": 0.1}, "q2": {"d4": 1.00000001, "d5": 1.0, "d8": 0.5},
       "q9": {"d1": 1.0}}


def _run_text(run: dict, extra: str = "", comments: bool = False) -> str:
    lines = ["# produced by a test\n"] if comments else []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1):
            lines.append(f"{q} Q0 {d} {rank} {s!r} tag{extra}\n")
            if comments and rank == 1:
                lines.append("   # an indented comment\n")
    return "".join(lines)


def _qrels_text(qrels: dict, comments: bool = False) -> str:
    head = "# qid iter docno rel\n" if comments else ""
    return head + "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())


def pytrec_means(qrels, run, measures):
    from pytrec_worker import reference

    per_query = reference(qrels, {q: v for q, v in run.items() if q in qrels}, measures)
    assert per_query is not None, "pytrec_eval did not answer"
    # -c: every judged query in the means, an absent one scoring 0.
    return {m: sum(per_query.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels) for m in measures}, per_query


@pytest.mark.parametrize("comments, extra", [(False, ""), (True, ""), (False, " 17 more columns"),
                                             (True, "\tx")])
def test_eval_accepts_comments_and_extra_columns_and_matches_pytrec_eval(tmp_path, comments, extra):
    (tmp_path / "qrels.txt").write_text(_qrels_text(QRELS, comments))
    (tmp_path / "run.trec").write_text(_run_text(RUN, extra, comments))
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "ap", "-m", "ndcg", "-m", "rr", "-m", "precision@2",
                   "--trec-compat", "--per-query", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    means, per_query = pytrec_means(QRELS, RUN, ["map", "ndcg", "recip_rank", "P_2"])
    ours = {"map": "ap", "ndcg": "ndcg", "recip_rank": "rr", "P_2": "precision@2"}
    for m, name in ours.items():
        assert out["mean"][name] == pytest.approx(means[m], abs=1e-12)
        for q in per_query:
            assert out["per_query"][q][name] == pytest.approx(per_query[q][m], abs=1e-12)
    assert per_query["q2"]["recip_rank"] == out["per_query"]["q2"]["rr"] == 1.0  # the float32 tie decided
    assert proc.stderr.strip() == "warning: 1 of 3 judged queries is absent from the run and scores 0: q3"


def test_eval_float32_ties_only_with_trec_compat(tmp_path):
    """pytrec_eval (trec_eval 9.0.8) compares scores as float32: 1.00000001 ties 1.0 and the tie goes to the
    larger doc id. trec_eval 10 compares doubles: that is --query-policy zero without --trec-compat."""
    qrels, run = {"q": {"a": 1, "b": 0}}, {"q": {"a": 1.00000001, "b": 1.0}}
    (tmp_path / "qrels.txt").write_text(_qrels_text(qrels))
    (tmp_path / "run.trec").write_text(_run_text(run))
    means, _ = pytrec_means(qrels, run, ["recip_rank"])
    assert means["recip_rank"] == 0.5
    compat = harness("eval", "qrels.txt", "run.trec", "-m", "rr", "--trec-compat", cwd=tmp_path)
    doubles = harness("eval", "qrels.txt", "run.trec", "-m", "rr", "--query-policy", "zero", cwd=tmp_path)
    assert json.loads(compat.stdout)["mean"]["rr"] == 0.5
    assert json.loads(doubles.stdout)["mean"]["rr"] == 1.0


def test_eval_warns_when_run_and_qrels_share_no_query(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "run.trec").write_text("Q1 Q0 d1 1 2.0 t\nQ2 Q0 d2 1 2.0 t\nQ3 Q0 d2 1 2.0 t\n")
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "ndcg", "--format", "tsv", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == "ndcg\tall\t0.000000\n"
    assert proc.stderr == ("warning: the run and the qrels have no query in common (2 judged queries, 3 run queries "
                           "with no judgments): every judged query scores 0\n")


def test_eval_is_quiet_when_the_run_covers_the_qrels(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 2.0 t\nq7 Q0 d1 1 2.0 t\n")
    proc = harness("eval", "qrels.txt", "run.trec", "-m", "ndcg", "--format", "tsv", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "ndcg\tall\t1.000000\n", "")


def test_a_comment_shaped_like_a_run_line_is_not_read_on_either_path(tmp_path):
    from harness.io import fast_trec
    from harness.gold.load import read_qrels_file
    from harness.io.runfiles import read_trec_run

    run = tmp_path / "run.trec"
    run.write_text("# a b 1 2 c\nq1 Q0 d1 1 2.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# q 0 d 1\nq1 0 d1 1\n")
    assert fast_trec.read_run(run) is None and fast_trec.read_qrels(qrels) is None
    assert read_trec_run(run).query_ids.tolist() == ["q1"]
    assert read_qrels_file(qrels) == {"q1": {"d1": 1}}


def test_whole_number_grades_read_as_trec_eval_reads_them(tmp_path):
    from harness.gold.load import read_qrels_file

    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 a 1.0\nq1 0 b -1\nq1 0 c +2\nq1 0 d 007\nq1 0 e 2.\nq1 0 f 2147483647\n")
    assert read_qrels_file(path) == {"q1": {"a": 1, "b": -1, "c": 2, "d": 7, "e": 2, "f": 2147483647}}


# ---------------------------------------------------------------------------------------------------------------
# Fuzzing: random bytes and random edits of valid files give a result or a HarnessError, nothing else.

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

NASTY = ["", " ", "\t", "\u00a0", "\u2028", "\x00", "\x1c", "#", "\r", "\n", "é", "中", "1e20", "nan", "-1", "1.5",
         "99999999999999999999999", "0", "2", "q1", "d1", "Q0", "\"", "{", "}", "[", "]", ":", ",", "\\", "null",
         "true", "- ", "&a", "*a", "!!python/object:os.system", "<<"]
nasty_text = st.lists(st.sampled_from(NASTY) | st.text(max_size=4), max_size=6).map("".join)
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
                           | nasty_text, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(nasty_text, inner, max_size=3), max_leaves=6)


def _edit_json_rows(rows: list[dict], edits) -> list:
    rows = json.loads(json.dumps(rows))
    for index, path, value, op in edits:
        target = rows[index % len(rows)]
        for key in path[:-1]:  # walk into nested lists/dicts where possible
            nxt = target.get(key) if isinstance(target, dict) else None
            if isinstance(nxt, list) and nxt:
                nxt = nxt[0]
            if not isinstance(nxt, dict):
                break
            target = nxt
        key = path[-1]
        if op == "delete" and isinstance(target, dict):
            target.pop(key, None)
        elif isinstance(target, dict):
            target[key] = value
    return rows


json_edits = st.lists(st.tuples(st.integers(0, 20),
                                st.lists(st.sampled_from(["id", "_id", "query", "relevant", "doc", "grade", "evidence",
                                                          "quote", "start", "end", "tags", "text", "title",
                                                          "metadata"]), min_size=1, max_size=3),
                                json_values, st.sampled_from(["set", "delete"])), min_size=1, max_size=4)
line_edits = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), nasty_text,
                                st.sampled_from(["insert", "replace", "delete-line", "dup-line"])), min_size=1,
                      max_size=5)


def _edit_text(text: str, edits) -> str:
    for at, length, piece, op in edits:
        lines = text.split("\n")
        if op == "delete-line" and lines:
            del lines[at % len(lines)]
        elif op == "dup-line" and lines:
            lines.insert(at % len(lines), lines[at % len(lines)])
        else:
            pos = at % (len(text) + 1)
            end = pos + (length % 8 if op == "replace" else 0)
            text = text[:pos] + piece + text[end:]
            continue
        text = "\n".join(lines)
    return text


def _loads_or_harness_error(fn, *args):
    from harness.core.errors import HarnessError

    try:
        return fn(*args)
    except HarnessError as exc:
        assert str(exc).strip(), "an error with no message"
        return None


def _native_end_to_end(path: Path):
    from harness.config.schema import GoldsetConfig
    from harness.gold.load import read_goldset
    from harness.gold.resolve import doc_qrels, resolve_goldset
    from harness.core.runtable import Qrels
    from harness.core.types import Document

    raw = read_goldset(GoldsetConfig(path=path))
    gold, _ = resolve_goldset(raw, {"install-desktop": Document("install-desktop", "On macOS, open it.")}, "g")
    return Qrels.from_dict(doc_qrels(gold))


def _qrels_end_to_end(path: Path):
    from harness.io import fast_trec
    from harness.gold.load import read_qrels_file
    from harness.core.runtable import Qrels

    exact = Qrels.from_dict(read_qrels_file(path))
    fast = fast_trec.read_qrels(path)
    if fast is not None:  # the fast path may decline, never disagree
        assert fast.to_dict() == exact.to_dict()
    return exact


def _run_end_to_end(path: Path):
    from harness.io import fast_trec
    from harness.retrievers.external import ExternalConfig, ExternalRetriever
    from harness.io.runfiles import read_trec_run

    with pytest.MonkeyPatch.context() as m:
        m.setattr(fast_trec, "read_run", lambda p: None)
        exact = _loads_or_harness_error(read_trec_run, path)
    fast = fast_trec.read_run(path)
    if fast is not None:
        assert exact is not None, "the fast path accepted a file the line reader rejects"
        assert fast.query_ids.tolist() == exact.query_ids.tolist()
        assert [fast.doc_vocab[c] for c in fast.doc_codes] == [exact.doc_vocab[c] for c in exact.doc_codes]
        assert fast.scores.tolist() == exact.scores.tolist() and fast.ranks.tolist() == exact.ranks.tolist()
    external = ExternalRetriever(ExternalConfig(path=path, format="trec"))
    read = _loads_or_harness_error(lambda: external._read() or True)
    if exact is not None:  # the external retriever reads every line `harness eval` reads (ranks aside: it ignores them)
        assert read, "the external retriever rejected a run the run reader accepts"
        assert sum(len(h) for h in external.raw.values()) == len(exact.scores)
    return exact


VALID_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"
VALID_RUN = "q1 Q0 d1 1 2.5 run\nq1 Q0 d2 2 1.5 run\nq2 Q0 d3 1 0.5 run\n"


@FUZZ
@given(st.binary(max_size=200), st.sampled_from(["gold.jsonl", "gold.yaml", "qrels.txt", "run.trec", "corpus.jsonl"]))
def test_fuzz_random_bytes(tmp_path_factory, blob, name):
    from harness.config.schema import CorpusConfig
    from harness.io.documents import load_corpus

    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(blob)
    loader = {"gold.jsonl": _native_end_to_end, "gold.yaml": _native_end_to_end, "qrels.txt": _qrels_end_to_end,
              "run.trec": _run_end_to_end, "corpus.jsonl": lambda p: load_corpus(CorpusConfig(path=p))}[name]
    _loads_or_harness_error(loader, path)


@FUZZ
@given(json_edits, st.sampled_from([".jsonl", ".yaml"]))
def test_fuzz_structured_golden_set_edits(tmp_path_factory, edits, suffix):
    rows = _edit_json_rows(GOLD_ROWS[:4], edits)
    path = tmp_path_factory.mktemp("gold") / f"gold{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(rows, allow_unicode=True), encoding="utf-8")
    _loads_or_harness_error(_native_end_to_end, path)


@FUZZ
@given(line_edits, st.sampled_from(["gold.jsonl", "gold.yaml"]))
def test_fuzz_golden_set_text_edits(tmp_path_factory, edits, name):
    rows = GOLD_ROWS[:3]
    text = ("".join(json.dumps(r) + "\n" for r in rows) if name.endswith(".jsonl")
            else yaml.safe_dump(rows, allow_unicode=True))
    path = tmp_path_factory.mktemp("gold") / name
    path.write_text(_edit_text(text, edits), encoding="utf-8")
    _loads_or_harness_error(_native_end_to_end, path)


@FUZZ
@given(line_edits, st.sampled_from(["trec", "beir"]))
def test_fuzz_qrels_edits(tmp_path_factory, edits, kind):
    from harness.config.schema import GoldsetConfig
    from harness.gold.load import read_goldset

    folder = tmp_path_factory.mktemp("qrels")
    if kind == "trec":
        (folder / "qrels.txt").write_text(_edit_text(VALID_QRELS, edits), encoding="utf-8")
        (folder / "queries.tsv").write_text("q1\tfirst\nq2\tsecond\n")
        _loads_or_harness_error(_qrels_end_to_end, folder / "qrels.txt")
        _loads_or_harness_error(read_goldset, GoldsetConfig(path=folder / "qrels.txt", format="trec",
                                                            queries=folder / "queries.tsv"))
    else:
        (folder / "qrels").mkdir()
        tsv = "query-id\tcorpus-id\tscore\n" + VALID_QRELS.replace(" 0 ", "\t").replace(" ", "\t")
        (folder / "qrels" / "test.tsv").write_text(_edit_text(tsv, edits), encoding="utf-8")
        queries = '{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "second"}\n'
        (folder / "queries.jsonl").write_text(_edit_text(queries, edits[::-1]), encoding="utf-8")
        _loads_or_harness_error(read_goldset, GoldsetConfig(path=folder, format="beir"))


@FUZZ
@given(line_edits)
def test_fuzz_run_edits(tmp_path_factory, edits):
    path = tmp_path_factory.mktemp("run") / "run.trec"
    path.write_text(_edit_text(VALID_RUN, edits), encoding="utf-8")
    _run_end_to_end(path)


@FUZZ
@given(json_edits, line_edits)
def test_fuzz_corpus_jsonl(tmp_path_factory, edits, text_edits):
    from harness.config.schema import CorpusConfig
    from harness.io.documents import load_corpus

    rows = _edit_json_rows(CORPUS_ROWS[:4], edits)
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_text(_edit_text(text, text_edits[:1]), encoding="utf-8")
    _loads_or_harness_error(load_corpus, CorpusConfig(path=path))


file_names = st.text(alphabet=st.sampled_from(list("ab .é\t\u00a0_-#") + ["中"]), min_size=1, max_size=6)


@FUZZ
@given(st.dictionaries(file_names.map(lambda n: n + ".txt"), st.binary(max_size=30), min_size=1, max_size=4),
       st.booleans())
def test_fuzz_folder_corpus(tmp_path_factory, files, link_out):
    from harness.config.schema import CorpusConfig
    from harness.io.documents import load_corpus

    root = tmp_path_factory.mktemp("folder")
    folder = root / "docs"
    (folder / "sub").mkdir(parents=True)
    for i, (name, blob) in enumerate(files.items()):
        if name.strip(".") in ("", "txt"):
            continue
        ((folder / "sub") if i % 2 else folder).joinpath(name).write_bytes(blob)
    if link_out:
        (root / "out.txt").write_text("outside")
        os.symlink(root / "out.txt", folder / "link.txt")
    warned: list[str] = []
    docs = _loads_or_harness_error(load_corpus, CorpusConfig(path=folder, format="folder"), warned.append)
    # (a file that is not UTF-8 is skipped with a warning too, issue 36: only the link's is counted here)
    assert sum(" a link to " in w for w in warned) == link_out
    assert all(" a link to " in w or "not UTF-8 text" in w or "unreadable file(s) skipped" in w for w in warned)
    if docs is not None:
        assert all("outside" != d.text for d in docs)


def test_a_long_line_and_a_blank_one_are_not_two_lines(tmp_path):
    """Found by the fuzzer: 12 columns on one line plus a blank line add up to two 6-column lines."""
    from harness.io.runfiles import read_trec_run

    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.5 run q1 Q0 d2 2 1.5 run\n\nq2 Q0 d3 1 0.5 run\n")
    run = read_trec_run(path)
    assert [run.doc_vocab[c] for c in run.doc_codes] == ["d1", "d3"]  # columns after the tag are ignored


def test_eval_on_empty_qrels_is_bad_input(tmp_path):
    """Every mean would be n/a with exit 0: a truncated download would pass a CI step unnoticed."""
    (tmp_path / "empty.qrels").write_text("")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 1.0 t\n")
    proc = harness("eval", "empty.qrels", "run.trec", cwd=tmp_path)
    assert_input_error(proc, "empty.qrels: no judgments in the file")
