"""Formats teams have (#16): folder corpora of HTML, Markdown, PDF and DOCX with offsets into the extracted text;
golden sets from CSV, TSV and Parquet; JSONL runs in grouped or flat form; hit texts placed by normalised matching;
``placement: lenient``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from clihelp import ROOT, assert_input_error, harness

DEMO = ROOT / "goldsets" / "demo"

QUOTES = {
    "warranty.pdf": "The warranty does not cover water damage or a cracked screen.",
    "shipping.docx": "Express shipping arrives the next business day.",
    "returns.html": "You can return most items within 30 days of delivery.",
    "account.md": "Two-factor authentication is available.",
}
QUERIES = {
    "warranty.pdf": "Is a cracked screen covered by the warranty?",
    "shipping.docx": "When does express shipping arrive?",
    "returns.html": "How long do I have to return an item?",
    "account.md": "Is two-factor authentication available?",
}


@pytest.fixture
def mixed_folder(tmp_path: Path) -> Path:
    pytest.importorskip("fpdf")
    import docx
    from fpdf import FPDF

    folder = tmp_path / "docs"
    folder.mkdir()
    pdf = FPDF()
    pdf.set_title("Warranty terms")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Every device carries a two-year warranty against manufacturing defects.")
    pdf.add_page()
    pdf.multi_cell(0, 8, QUOTES["warranty.pdf"])
    pdf.output(str(folder / "warranty.pdf"))
    document = docx.Document()
    document.add_heading("Shipping options", 1)
    document.add_paragraph("Standard shipping takes three to five business days.")
    document.add_heading("Express", 2)
    document.add_paragraph(QUOTES["shipping.docx"])
    document.save(str(folder / "shipping.docx"))
    (folder / "returns.html").write_text(
        "<html><head><title>Returns</title><style>p {color: red}</style><script>var hidden = 1</script></head>"
        "<body><h1>Returning an order</h1><p>You can return most items within <b>30 days</b>\n   of delivery.</p>"
        "<ul><li>Print the label.</li><li>Drop it off.</li></ul></body></html>")
    (folder / "account.md").write_text("# Your account\n\nYou can change your email address under Settings.\n\n"
                                       "## Security\n\nTwo-factor authentication is available.\n")
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4 truncated")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n")
    return folder


def test_a_mixed_folder_keeps_offsets_pages_and_sections(mixed_folder):
    from harness.config.schema import CorpusConfig
    from harness.io.documents import load_corpus

    warnings: list[str] = []
    docs = {d.doc_id: d for d in load_corpus(CorpusConfig(path=mixed_folder, format="folder"), warnings.append)}
    assert sorted(docs) == sorted(QUOTES)
    for doc_id, quote in QUOTES.items():
        assert docs[doc_id].text.count(quote) == 1, (doc_id, docs[doc_id].text)
    assert "hidden" not in docs["returns.html"].text and "color" not in docs["returns.html"].text
    assert (docs["returns.html"].title, docs["warranty.pdf"].title, docs["shipping.docx"].title,
            docs["account.md"].title) == ("Returns", "Warranty terms", "Shipping options", "Your account")
    pdf = docs["warranty.pdf"]
    page2 = pdf.metadata["pages"][1]
    assert page2["page"] == 2 and pdf.text[page2["start"]:page2["end"]] == QUOTES["warranty.pdf"]
    express = docs["shipping.docx"].metadata["sections"][1]
    assert express["title"] == "Express"
    assert QUOTES["shipping.docx"] in docs["shipping.docx"].text[express["start"]:express["end"]]
    md = docs["account.md"]
    assert [s["title"] for s in md.metadata["sections"]] == ["Your account", "Security"]
    # nothing dropped without a line: the broken PDF by name and why, the image counted
    assert any("scan.pdf: not a readable PDF" in w for w in warnings), warnings
    assert any("skipped 1 file(s) of other kinds (1 .png)" in w for w in warnings), warnings


def _gold_csv(path: Path, delimiter: str = ",") -> None:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh, delimiter=delimiter)
        out.writerow(["qid", "question", "doc", "label", "evidence", "area"])
        for i, (doc, quote) in enumerate(QUOTES.items(), start=1):
            out.writerow([f"q{i}", QUERIES[doc], doc, "2", quote, "docs"])
        out.writerow(["q9", "A question\nover two lines, with a comma", "", "", "", "misc"])


COLUMNS = "{query_id: qid, query: question, doc: doc, grade: label, quote: evidence, tags: [area]}"


def test_a_run_on_a_folder_corpus_judged_by_a_csv_golden_set(mixed_folder, tmp_path):
    _gold_csv(tmp_path / "gold.csv")
    (tmp_path / "c.yaml").write_text(
        f"name: mixed\ncorpus: {{path: docs, format: folder}}\nchunking: {{strategy: none}}\n"
        f"goldset: {{path: gold.csv, format: csv, columns: {COLUMNS}}}\nretriever: {{kind: bm25}}\n"
        f"cutoff: {{k: 1}}\nmetrics: [hit@1]\n")
    proc = harness("run", "c.yaml", "--out", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    by_id = {q["id"]: q for q in result["queries"]}
    assert by_id["q9"]["text"] == "A question\nover two lines, with a comma"
    assert by_id["q9"]["tags"] == {"area": "misc"}
    from harness.config.schema import CorpusConfig
    from harness.io.documents import load_corpus
    docs = {d.doc_id: d for d in load_corpus(CorpusConfig(path=mixed_folder, format="folder"), lambda m: None)}
    for i, (doc, quote) in enumerate(QUOTES.items(), start=1):
        gold = by_id[f"q{i}"]["gold"][0]
        start = docs[doc].text.index(quote)
        assert gold["doc_id"] == doc
        assert [tuple(e) for e in gold["evidence"]] == [(start, start + len(quote))]
        assert by_id[f"q{i}"]["verdict"]["kind"] != "goldset_error"


def test_tsv_and_parquet_golden_sets_read_as_the_csv(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.config.schema import GoldsetConfig
    from harness.gold.load import read_goldset

    _gold_csv(tmp_path / "g.csv")
    _gold_csv(tmp_path / "g.tsv", "\t")
    with (tmp_path / "g.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "g.parquet")
    columns = {"query_id": "qid", "query": "question", "doc": "doc", "grade": "label", "quote": "evidence",
               "tags": ["area"]}
    read = {fmt: read_goldset(GoldsetConfig(path=tmp_path / f"g.{fmt}", format=fmt, columns=columns))
            for fmt in ("csv", "tsv", "parquet")}
    strip = [(q.query_id, q.text, q.tags, [(j.doc_id, j.grade, [e.quote for e in j.evidence]) for j in q.relevant])
             for q in read["csv"]]
    assert len(strip) == 5 and strip[1][3] == [("shipping.docx", 2, [QUOTES["shipping.docx"]])]
    for fmt in ("tsv", "parquet"):
        assert [(q.query_id, q.text, q.tags, [(j.doc_id, j.grade, [e.quote for e in j.evidence])
                                              for j in q.relevant]) for q in read[fmt]] == strip


def test_a_csv_read_as_jsonl_is_named_in_one_line(tmp_path):
    _gold_csv(tmp_path / "gold.jsonl")
    (tmp_path / "c.yaml").write_text(f"name: t\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\n"
                                     "goldset: {path: gold.jsonl}\nretriever: {kind: bm25}\n")
    proc = harness("validate", "c.yaml", cwd=tmp_path)
    assert_input_error(proc, "gold.jsonl: this looks like a CSV file", "set goldset.format: csv")
    assert "not valid JSON" not in proc.stderr and proc.stderr.count("\n") <= 2


def test_table_problems_are_located(tmp_path):
    (tmp_path / "g.csv").write_text("query_id,query,doc_id,grade\nq1,first,d1,2\nq1,other text,d2,1\n"
                                    "q2,two,d1,1\nq2,two,d1,2\n")
    (tmp_path / "c.yaml").write_text(f"name: t\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\n"
                                     "goldset: {path: g.csv, format: csv}\nretriever: {kind: bm25}\n")
    proc = harness("validate", "c.yaml", cwd=tmp_path)
    assert_input_error(proc, "g.csv:3: query 'q1' has another text than on its first row",
                       "g.csv:5: query 'q2' document 'd1': grade 2 here, 1 on an earlier row")
    (tmp_path / "g.csv").write_text("id,text\nq1,x\n")
    assert_input_error(harness("validate", "c.yaml", cwd=tmp_path),
                       "g.csv:2: no column for goldset.columns query_id ('query_id'), query ('query'), doc ('doc_id')")


# ---- JSONL runs ------------------------------------------------------------------------------------------------

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d1 1\n"


def _eval(tmp_path: Path, run_name: str) -> dict:
    (tmp_path / "qrels.txt").write_text(QRELS)
    proc = harness("eval", "qrels.txt", run_name, "-m", "ndcg@10", "-m", "rr@10", "--per-query", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_flat_and_grouped_jsonl_runs_give_the_trec_numbers(tmp_path):
    hits = {"q1": [("d2", 3.0), ("d1", 2.0)], "q2": [("d1", 5.0), ("d9", 4.0), ("d3", 1.0)]}
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} {r} {s} t\n" for q, hs in hits.items()
                                               for r, (d, s) in enumerate(hs, 1)))
    (tmp_path / "grouped.jsonl").write_text("".join(json.dumps({"query_id": q, "hits": [{"doc_id": d, "score": s}
                                                                                        for d, s in hs]}) + "\n"
                                                    for q, hs in hits.items()))
    (tmp_path / "flat.jsonl").write_text("".join(json.dumps({"query_id": q, "doc_id": d, "score": s}) + "\n"
                                                 for q, hs in hits.items() for d, s in hs))
    trec = _eval(tmp_path, "run.trec")
    assert _eval(tmp_path, "grouped.jsonl")["per_query"] == trec["per_query"]
    assert _eval(tmp_path, "flat.jsonl")["per_query"] == trec["per_query"]
    # q1: d1 relevant at rank 2 -> rr 0.5; q2: d1 (1) at 1, d3 (2) at 3
    assert trec["per_query"]["q1"]["rr@10"] == 0.5


def test_a_jsonl_run_mixing_forms_is_an_error_naming_the_line(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "mixed.jsonl").write_text(json.dumps({"query_id": "q1", "hits": [{"doc_id": "d1", "score": 1}]})
                                          + "\n" + json.dumps({"query_id": "q2", "doc_id": "d3", "score": 1}) + "\n")
    proc = harness("eval", "qrels.txt", "mixed.jsonl", cwd=tmp_path)
    assert_input_error(proc, "mixed.jsonl:2: a flat line (one hit) in a file of grouped lines (line 1 is one)")


# ---- hit texts placed loosely; placement: lenient --------------------------------------------------------------

def _external_config(tmp_path: Path, hits: list[dict], placement: str = "") -> Path:
    (tmp_path / "run.jsonl").write_text(json.dumps({"query_id": "q16", "hits": hits}) + "\n")
    (tmp_path / "c.yaml").write_text(
        f"name: ext\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\nchunking: {{strategy: sentences, size: 2}}\n"
        f"goldset: {{path: {DEMO / 'goldset.jsonl'}}}\n"
        f"retriever: {{kind: external, path: run.jsonl{', placement: ' + placement if placement else ''}}}\n")
    return tmp_path / "c.yaml"


def _a_sentence() -> tuple[str, str]:
    doc = json.loads((DEMO / "corpus.jsonl").read_text().splitlines()[0])
    sentence = doc["text"].split(". ")[2] + "."
    return doc["id"], sentence


def test_hit_text_differing_in_case_and_whitespace_is_placed_and_recorded(tmp_path):
    doc, sentence = _a_sentence()
    exact = _external_config(tmp_path, [{"doc_id": doc, "text": sentence, "score": 1.0}])
    assert harness("run", exact, "--out", "a", "-q", cwd=tmp_path).returncode == 0
    messy = "  " + sentence.upper().replace(" ", "\n  ") + " "
    _external_config(tmp_path, [{"doc_id": doc, "text": messy, "score": 1.0}])
    proc = harness("run", exact, "--out", "b", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 hit text(s) matched their document only after normalising" in proc.stderr
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in "ab")
    hit_a = next(q for q in a["queries"] if q["id"] == "q16")["hits"]
    hit_b = next(q for q in b["queries"] if q["id"] == "q16")["hits"]
    assert [(h["doc_id"], h["start"], h["end"]) for h in hit_a] == [(h["doc_id"], h["start"], h["end"]) for h in hit_b]
    assert b["hit_problems"]["placed_by_normalised_text"] == 1 and a["hit_problems"]["placed_by_normalised_text"] == 0
    assert b["hit_problems"]["normalised_examples"][0]["doc_id"] == doc


def test_placement_lenient_skips_and_reports_what_strict_refuses(tmp_path):
    doc, sentence = _a_sentence()
    hits = [{"doc_id": doc, "text": sentence, "score": 2.0}, {"doc_id": "no-such-doc", "text": "x", "score": 1.0}]
    strict = _external_config(tmp_path, hits)
    assert_input_error(harness("run", strict, "--out", "s", cwd=tmp_path), "document 'no-such-doc' is not in the corpus")
    lenient = _external_config(tmp_path, hits, "lenient")
    proc = harness("run", lenient, "--out", "l", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((tmp_path / "l" / "results.json").read_text())
    assert (saved["hit_problems"]["unplaceable"], saved["hit_problems"]["skipped"]) == ("skip", 1)
    assert saved["hit_problems"]["by_reason"] == {"unknown_document": 1}
