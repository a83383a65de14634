"""harness goldset build: answers located exact, normalised, fuzzy (score recorded); ambiguous and missing answers
listed, never guessed; and on SQuAD dev, spans compared with the answer offsets the data ships."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clihelp import ROOT, Case, harness, run_case
from harness.config.schema import GoldsetConfig
from harness.gold.load import read_goldset
from harness.gold.resolve import resolve_goldset
from harness.gold.build import build_goldset, read_answers, tally
from harness.gold.locate import locate, normalise
from harness.gold.sources import read_corpus

DOCS = {
    "a": "Orbit Drive runs on Windows 10 or later.\nThe installer needs 400 MB of free disk space.",
    "b": "Passwords must be at least 12 characters long. Passwords must be at least 12 characters long.",
    "c": "Caf\u00e9 hours: the support desk answers within ONE business day.",
}


def _write(tmp: Path, answers: list[dict]) -> tuple[Path, Path]:
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    src = tmp / "answers.jsonl"
    src.write_text("".join(json.dumps(a) + "\n" for a in answers))
    return src, corpus


def test_normalise_keeps_offsets():
    text = "Caf\ufb01  X\u00a0Y"  # a ligature (NFKC: fi) and a no-break space
    norm, where = normalise(text)
    assert norm == "caffi x y"
    assert [text[where[i]] for i in range(len(norm))][3:5] == ["\ufb01", "\ufb01"]
    m = locate(text, "CAFFI X Y")
    assert [(x.start, x.end, x.how) for x in m] == [(0, len(text), "normalised")]


def test_build_locates_lists_and_never_guesses(tmp_path):
    src, corpus = _write(tmp_path, [
        {"id": "exact", "query": "disk?", "answers": ["400 MB of free disk space", "400 MB of free disk space"]},
        {"id": "norm", "query": "os?", "answers": ["orbit drive runs on  windows 10"], "doc": "a", "grade": 2},
        {"id": "fuzzy", "query": "hours?", "answers": ["the support desk answers within one busines day"]},
        {"id": "ambig", "query": "pw?", "answers": ["at least 12 characters"], "tags": {"topic": "account"}},
        {"id": "missing", "query": "price?", "answers": ["6 dollars per user"]},
    ])
    out = tmp_path / "gold.jsonl"
    proc = harness("goldset", "build", "--from", src, "--corpus", corpus, "-o", out, "--unresolved",
                   tmp_path / "left.jsonl")
    assert proc.returncode == 1, proc.stderr  # answers left for a person
    assert (f"{src}:4: query 'ambig': answer 'at least 12 characters' ambiguous (its passages: margin 0.00, below "
            f"0.25): b@") in proc.stderr  # the same sentence twice: its passages tie
    assert f"{src}:5: query 'missing': answer '6 dollars per user' missing" in proc.stderr
    rows = {json.loads(line)["id"]: json.loads(line) for line in out.read_text().splitlines()}
    ev = rows["exact"]["relevant"][0]
    at = DOCS["a"].index("400 MB")
    assert ev["doc"] == "a" and ev["evidence"] == [
        {"start": at, "end": at + 25, "text": "400 MB of free disk space", "how": "exact"}]
    norm = rows["norm"]["relevant"][0]
    assert norm["grade"] == 2 and norm["evidence"][0]["how"] == "normalised"
    assert norm["evidence"][0]["text"] == "Orbit Drive runs on Windows 10"
    fuzzy = rows["fuzzy"]["relevant"][0]["evidence"][0]
    assert fuzzy["how"] == "fuzzy" and 0.9 <= fuzzy["score"] < 1
    assert DOCS["c"][fuzzy["start"]:fuzzy["end"]].lower().startswith("the support desk answers within one business")
    assert "ambig" not in rows and "missing" not in rows  # unresolved: out of the golden set, listed beside it
    assert "2 queries left out (none of their answers placed)" in proc.stderr
    left = [json.loads(line) for line in (tmp_path / "left.jsonl").read_text().splitlines()]
    assert [(x["query_id"], x["status"], len(x["places"])) for x in left] == [("ambig", "ambiguous", 2),
                                                                            ("missing", "missing", 0)]
    assert left[0]["margin"] == 0 and left[0]["places"][0]["bm25"] == left[0]["places"][1]["bm25"]
    # The golden set written loads and resolves against the corpus with no problem.
    raw = read_goldset(GoldsetConfig(path=out))
    gold, problems = resolve_goldset(raw, read_corpus(corpus), "g")
    assert not problems and len(gold.queries) == 3


def test_all_located_exits_0(tmp_path):
    src, corpus = _write(tmp_path, [{"id": "q", "query": "x", "answers": ["Windows 10"]}])
    proc = harness("goldset", "build", "--from", src, "--corpus", corpus, "-o", tmp_path / "g.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "answers: exact 1, normalised 0, fuzzy 0, chosen 0, ambiguous 0, missing 0" in proc.stderr


def _answers(t: Path, text: str):
    _write(t, [])
    (t / "answers.jsonl").write_text(text)
    return ["goldset", "build", "--from", "answers.jsonl", "--corpus", "corpus.jsonl", "-o", "g.jsonl"]


CASES = [
    Case("not-json", lambda t: _answers(t, "{oops\n"), ("answers.jsonl:1", "not valid JSON")),
    Case("all-problems-together", lambda t: _answers(t, '{"id": "q", "query": "x", "answers": []}\n'
                                                        '{"id": "r", "query": "x", "answers": ["a"], "doc": "zz"}\n'
                                                        '{"id": "s", "query": "x", "answers": ["a"], "grade": "hi"}\n'),
         ("answers.jsonl:1", "'answers' must be a non-empty list", "answers.jsonl:2", "'zz' is not in the corpus",
          "answers.jsonl:3")),
    Case("unknown-key", lambda t: _answers(t, '{"id": "q", "query": "x", "answers": ["a"], "doc_id": "a"}\n'),
         ("answers.jsonl:1", "unknown key(s) doc_id")),
    Case("out-exists", lambda t: (t / "g.jsonl").write_text("keep") and _answers(t, ""), ("-o g.jsonl", "exists"),
         keep=(".",)),
    Case("bad-corpus-format", lambda t: _answers(t, "") + ["--format", "pdf"], ("'pdf'",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2(case, tmp_path):
    run_case(case, tmp_path)


def _squad() -> Path:
    for base in (ROOT.parent / "shared" / "datasets", ROOT.parent.parent / "shared" / "datasets"):
        if (base / "squad-v1.1-dev" / "answers.jsonl").is_file():
            return base / "squad-v1.1-dev"
    pytest.skip("shared/datasets/squad-v1.1-dev is not present")


def test_squad_spans_agree_with_the_shipped_offsets(tmp_path):
    """Build from SQuAD dev answers (each question's paragraph given) and compare every located span with the
    answer_start the data ships. Unique strings must agree exactly; strings occurring several times must be
    listed as ambiguous, never placed."""
    data = _squad()
    queries = {json.loads(line)["_id"]: json.loads(line)["text"]
               for line in (data / "queries.jsonl").read_text().splitlines()}
    shipped = [json.loads(line) for line in (data / "answers.jsonl").read_text().splitlines()]
    src = tmp_path / "answers.jsonl"
    src.write_text("".join(json.dumps({"id": a["query-id"], "query": queries[a["query-id"]], "doc": a["corpus-id"],
                                       "answers": [x["text"] for x in a["answers"]]}) + "\n" for a in shipped))
    docs = read_corpus(data / "corpus.jsonl")
    started = time.perf_counter()
    rows, outcomes = build_goldset(read_answers(src, docs), docs)
    seconds = time.perf_counter() - started
    offsets = {(a["query-id"], x["text"]): x for a in shipped for x in a["answers"]}
    agree = disagree = 0
    by_source = {}
    for o in outcomes:
        ref = offsets[(o.query_id, o.answer)]
        counts = by_source.setdefault(ref["offset_source"], {"located": 0, "agree": 0, "listed": 0})
        if o.how in ("exact", "normalised", "fuzzy"):
            counts["located"] += 1
            ok = o.places[0][1].start == ref["answer_start"]
            counts["agree"] += ok
            agree += ok
            disagree += not ok
        elif o.how == "chosen":  # found several times, placed by its passage: how often where the data says
            chosen = o.places[max(range(len(o.bm25)), key=o.bm25.__getitem__)][1]
            counts["chosen"] = counts.get("chosen", 0) + 1
            counts["chosen_agree"] = counts.get("chosen_agree", 0) + (chosen.start == ref["answer_start"])
            assert o.margin >= 0.25 and ref["n_occurrences"] > 1
        else:
            counts["listed"] += 1
            assert o.how == "ambiguous" and ref["n_occurrences"] > 1, (o, ref)
    total = tally(outcomes)
    chosen = sum(c.get("chosen", 0) for c in by_source.values())
    chosen_agree = sum(c.get("chosen_agree", 0) for c in by_source.values())
    print(f"\nSQuAD dev: {len(rows)} queries, {len(outcomes)} distinct answers in {seconds:.1f}s: {total}; "
          f"agreement on located spans {agree}/{agree + disagree} = {agree / (agree + disagree):.2%}; chosen by "
          f"passage where the data says {chosen_agree}/{chosen}; {by_source}")
    assert total["chosen"] == chosen > 0 and chosen_agree >= 0.8 * chosen
    # a query is left out only when none of its answers was placed
    placed = {o.query_id for o in outcomes if o.how not in ("ambiguous", "missing")}
    assert len(rows) == len(placed) and 10570 - 300 < len(rows) <= 10570
    assert total["missing"] == 0 and total["fuzzy"] == 0
    assert by_source["unique_match"]["agree"] == by_source["unique_match"]["located"] > 0
    assert disagree == 0
