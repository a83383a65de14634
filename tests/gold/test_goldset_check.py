"""harness goldset check: every label classification on a re-chunked and edited copy of the demo corpus (a
paragraph moved, one deleted, a document split into one per paragraph, a sentence changed near an evidence span,
an evidence sentence edited, whitespace and case changed), --fix, --against a results.json, and bad input."""

from __future__ import annotations

import json

import pytest

import goldsetdata as g
from clihelp import Case, harness, run_case
from harness.gold.check import STATUSES, Before, check_goldset
from harness.gold.sources import read_corpus, read_gold


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return g.write_all(tmp_path_factory.mktemp("check"))


@pytest.fixture(scope="module")
def checked(files):
    gold, old, new = files
    proc = harness("goldset", "check", gold, "--corpus", new, "--against", old, "--format", "json")
    assert proc.returncode == 1, proc.stderr  # some labels are not valid: exit 1, for CI
    return json.loads(proc.stdout)


def test_json_shape_is_exactly_the_documented_one(checked):
    assert set(checked) == {"labels", "counts"}
    assert list(checked["counts"]) == list(STATUSES)
    for label in checked["labels"]:
        assert list(label) == ["query_id", "doc_id", "status", "old_span", "new_span", "detail"]
    assert sum(checked["counts"].values()) == len(checked["labels"]) == len(g.EXPECTED)


@pytest.mark.parametrize("query_id, status", sorted(g.EXPECTED.items()))
def test_every_label_is_classified(checked, query_id, status):
    label = next(lab for lab in checked["labels"] if lab["query_id"] == query_id)
    assert label["status"] == status, label


def test_counts_match_the_labels(checked):
    expected = {s: sum(v == s for v in g.EXPECTED.values()) for s in STATUSES}
    assert checked["counts"] == expected


def test_new_spans_point_at_the_same_text(files, checked):
    """A re-anchored span reads, in the new corpus, what the old span read in the old one (up to normalisation)."""
    from harness.gold.locate import normalise

    _, old, new = files
    old_docs, new_docs = read_corpus(old), read_corpus(new)
    by_id = {lab["query_id"]: lab for lab in checked["labels"]}
    for qid in ("moved", "rechunked", "normalised"):
        lab = by_id[qid]
        o, n = lab["old_span"], lab["new_span"]
        before = old_docs[o["doc_id"]].text[o["start"]:o["end"]]
        after = new_docs[n["doc_id"]].text[n["start"]:n["end"]]
        assert normalise(before)[0] == normalise(after)[0], qid
    assert by_id["rechunked"]["new_span"]["doc_id"] == "account-password"
    assert by_id["moved"]["new_span"]["start"] != by_id["moved"]["old_span"]["start"]
    assert by_id["ambiguous"]["new_span"] is None and "faq-1" in by_id["ambiguous"]["detail"]


def test_fix_re_anchors_only_the_unambiguous(files, tmp_path):
    gold, old, new = files
    fixed = tmp_path / "fixed.jsonl"
    proc = harness("goldset", "check", gold, "--corpus", new, "--against", old, "--fix", fixed)
    assert proc.returncode == 1 and "3 label(s) re-anchored" in proc.stderr, proc.stderr
    rows = {json.loads(line)["id"]: json.loads(line) for line in fixed.read_text().splitlines()}
    original = {r["id"]: r for r in g.goldset()}
    changed = {qid for qid in rows if rows[qid] != original[qid]}
    assert changed == {"moved", "rechunked", "normalised"}
    assert [r["doc"] for r in rows["rechunked"]["relevant"]] == ["account-password"]
    # The repaired set, checked against the new corpus alone: its re-anchored labels are valid there.
    again = harness("goldset", "check", fixed, "--corpus", new, "--format", "json")
    statuses = {lab["query_id"]: lab["status"] for lab in json.loads(again.stdout)["labels"]}
    assert all(statuses[q] == "valid" for q in ("moved", "rechunked", "normalised")), statuses


def test_an_unchanged_corpus_is_all_valid_and_exits_0(files):
    gold, old, _ = files
    proc = harness("goldset", "check", gold, "--corpus", old, "--against", old)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"valid: {len(g.EXPECTED)}, re_anchorable: 0" in proc.stdout


def test_against_a_results_json_uses_the_run_fingerprints(files, tmp_path):
    """run records a fingerprint per judged document; check --against results.json marks the changed ones."""
    gold, old, new = files
    cfg = tmp_path / "old.yaml"
    cfg.write_text(f"name: old\ncorpus: {{path: {old}}}\ngoldset: {{path: {gold}}}\n"
                   "retriever: {kind: bm25, backend: fast}\ncutoff: {k: 5}\n")
    run = harness("run", cfg, "--out", tmp_path / "run", "-q")
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    judged = results["goldset"]["judged_documents"]
    assert set(judged) == {r["relevant"][0]["doc"] for r in g.goldset()}
    labels = check_goldset(read_gold(gold), read_corpus(new),
                           Before(fingerprints=judged))
    status = {lab.query_id: lab.status for lab in labels}
    assert status["valid_span"] == "valid"  # sharing-links did not change
    assert status["valid_quote"] == "stale"  # guide-billing changed: the quote is still there, its context unknown
    assert status["moved"] == "stale"  # a span in a changed document, its old text unknown
    assert status["rechunked"] == "orphaned" and status["doc_gone"] == "orphaned"
    for against in (tmp_path / "run" / "results.json", tmp_path / "run"):  # the run's folder stands for it
        proc = harness("goldset", "check", gold, "--corpus", new, "--against", against, "--format", "json")
        assert proc.returncode == 1, proc.stderr  # (the folder was read as an old corpus of HTML and TREC files)
        assert {lab["query_id"]: lab["status"] for lab in json.loads(proc.stdout)["labels"]} == status


def _bad(tmp, text="{not json\n"):
    (tmp / "gold.jsonl").write_text(text)
    g.write_corpus(tmp / "c.jsonl", g.old_corpus())
    return ["goldset", "check", "gold.jsonl", "--corpus", "c.jsonl"]


CASES = [
    Case("gold-missing", lambda t: ["goldset", "check", "nope.jsonl", "--corpus", g.write_corpus(t / "c.jsonl", {"a": "x"})],
         ("nope.jsonl", "not found")),
    Case("gold-bad-json", _bad, ("gold.jsonl:1", "not valid JSON")),
    Case("corpus-missing", lambda t: _bad(t, '{"id": "q", "query": "x"}\n')[:3] + ["--corpus", "none.jsonl"],
         ("none.jsonl", "not found")),
    Case("fix-over-input", lambda t: _bad(t, '{"id": "q", "query": "x"}\n') + ["--fix", "gold.jsonl"],
         ("--fix gold.jsonl", "is one of the inputs"), keep=(".",)),
    Case("fix-over-existing", lambda t: (t / "out.jsonl").write_text("mine\n") and
         _bad(t, '{"id": "q", "query": "x"}\n') + ["--fix", "out.jsonl"], ("--fix out.jsonl", "exists"), keep=(".",)),
    Case("against-missing", lambda t: _bad(t, '{"id": "q", "query": "x"}\n') + ["--against", "old.jsonl"],
         ("--against old.jsonl", "not found")),
    Case("against-not-results", lambda t: (t / "r.json").write_text("{}") and
         _bad(t, '{"id": "q", "query": "x"}\n') + ["--against", "r.json"], ("r.json", "not a valid results.json")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2_with_a_located_line(case, tmp_path):
    run_case(case, tmp_path)


def test_fix_keeps_how_a_span_was_found(files, tmp_path):
    """docs/goldsets.md: check --fix writes a re-anchored span back with its how and score (a newcomer found them dropped)."""
    gold, old, new = files
    rows = [json.loads(line) for line in gold.read_text().splitlines()]
    for row in rows:
        if row["id"] == "moved":
            for ev in row["relevant"][0]["evidence"]:
                if "start" in ev:
                    ev.update(how="fuzzy", score=0.9744)
    marked = tmp_path / "marked.jsonl"
    marked.write_text("".join(json.dumps(r) + "\n" for r in rows))
    fixed = tmp_path / "fixed.jsonl"
    harness("goldset", "check", marked, "--corpus", new, "--against", old, "--fix", fixed)
    moved = next(json.loads(line) for line in fixed.read_text().splitlines() if json.loads(line)["id"] == "moved")
    spans = [ev for ev in moved["relevant"][0]["evidence"] if "start" in ev]
    original = next(r for r in rows if r["id"] == "moved")["relevant"][0]["evidence"]
    assert spans and all(ev["how"] == "fuzzy" and ev["score"] == 0.9744 for ev in spans), spans
    assert [ev["start"] for ev in spans] != [ev["start"] for ev in original if "start" in ev]  # it did move


def _moved_into_judged(tmp_path, other_grade):
    """Document a's evidence moved to document b, which the query already judges with ``other_grade``."""
    quote = "Refunds reach your card within seven days"
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"id": "a", "text": quote + "."}) + "\n"
                   + json.dumps({"id": "b", "text": "Our store opens at nine."}) + "\n")
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "b", "text": "Our store opens at nine.\n\n" + quote + "."}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q1", "query": "How long do refunds take?", "relevant": [
        {"doc": "a", "grade": 2, "evidence": [{"start": 0, "end": len(quote), "text": quote}]},
        {"doc": "b", "grade": other_grade}]}) + "\n")
    fixed = tmp_path / "fixed.jsonl"
    proc = harness("goldset", "check", gold, "--corpus", new, "--against", old, "--fix", fixed)
    assert proc.returncode == 1, proc.stderr
    return proc, json.loads(fixed.read_text())["relevant"]


def test_fix_never_moves_evidence_into_a_judgment_of_another_grade(tmp_path):
    """A fix that would merge a grade-2 judgment's evidence into a grade-0 judgment (losing the only relevant
    document) is left undone and listed as a conflict."""
    proc, relevant = _moved_into_judged(tmp_path, 0)
    grades = {j["doc"]: j["grade"] for j in relevant}
    assert grades == {"a": 2, "b": 0}, relevant
    assert next(j for j in relevant if j["doc"] == "a")["evidence"][0]["start"] == 0  # left as it was
    assert "conflict: query 'q1', document 'a' (grade 2)" in proc.stderr and "grade 0" in proc.stderr, proc.stderr
    assert "0 label(s) re-anchored" in proc.stderr


def test_fix_moves_evidence_into_a_judgment_of_the_same_grade(tmp_path):
    proc, relevant = _moved_into_judged(tmp_path, 2)
    assert [(j["doc"], j["grade"]) for j in relevant] == [("b", 2)], relevant
    assert relevant[0]["evidence"][0]["start"] == len("Our store opens at nine.\n\n")
    assert "conflict" not in proc.stderr


def test_fix_never_merges_evidence_of_two_grades_into_one_new_judgment(tmp_path):
    x, y = "Refunds reach your card within seven days", "Shipping is free above fifty euros"
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"id": "a", "text": x + "."}) + "\n" + json.dumps({"id": "c", "text": y + "."}) + "\n")
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "d", "text": x + ".\n\n" + y + "."}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q1", "query": "refunds?", "relevant": [
        {"doc": "a", "grade": 2, "evidence": [{"start": 0, "end": len(x), "text": x}]},
        {"doc": "c", "grade": 1, "evidence": [{"start": 0, "end": len(y), "text": y}]}]}) + "\n")
    fixed = tmp_path / "fixed.jsonl"
    proc = harness("goldset", "check", gold, "--corpus", new, "--against", old, "--fix", fixed)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(fixed.read_text()) == json.loads(gold.read_text())  # both left as they were
    assert proc.stderr.count("conflict: ") == 2, proc.stderr
