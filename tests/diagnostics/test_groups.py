"""Evidence that must come together (docs/groups.md): groups in the golden set, sufficient@window, the incomplete
verdict, and the advice from evidence geometry. Each case is a tiny corpus whose answer is known by construction."""

import json

import pytest
import yaml

from harness.config.schema import parse_config
from harness.core.errors import GoldSetError
from harness.core.types import Hit, RankedList
from harness.pipeline.assemble import build_result, prepare

# Sentence chunks (strategy sentences, size 1): manual = M0 M1 M2, other = O0 O1, faq = F0.
CORPUS = [
    {"id": "manual", "text": "Keys are listed in settings. Keys have names. Rotate a key with the rotate button."},
    {"id": "other", "text": "Invoices are monthly. Cards can change."},
    {"id": "faq", "text": "Nothing about keys here."},
]
M0, M1, M2 = "manual#0-28", "manual#29-45", "manual#46-82"
O0, O1, F0 = "other#0-21", "other#22-39", "faq#0-24"
HOW = {"doc": "manual", "group": "how", "evidence": [{"quote": "Rotate a key with the rotate button."}]}
COST = {"doc": "other", "group": "cost", "evidence": [{"quote": "Invoices are monthly."}]}


def setup(tmp_path, gold, k=3, chunking="{strategy: sentences, size: 1}", suffix=".jsonl", corpus=CORPUS):
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    path = tmp_path / f"g{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(g) for g in gold))
    elif suffix == ".yaml":
        path.write_text(yaml.safe_dump(gold))
    cfg = yaml.safe_load(f"""
name: t
corpus: {{path: c.jsonl}}
chunking: {chunking}
goldset: {{path: {path.name}{', format: ' + suffix[1:] if suffix in ('.csv', '.parquet') else ''}}}
retriever: {{kind: bm25}}
cutoff: {{k: {k}}}
depth: 100
""")
    return prepare(parse_config(cfg, "t.yaml", tmp_path), log=lambda m: None)


def run(prepared, order):
    """The result of a run whose ranking we dictate (chunk ids best first), as results.json has it."""
    by_id = {c.chunk_id: c for c in prepared.chunks}
    hits = tuple(Hit(cid, by_id[cid].doc_id, float(len(order) - i), i + 1, by_id[cid].start, by_id[cid].end)
                 for i, cid in enumerate(order))
    return build_result(prepared, [RankedList(q.query_id, hits) for q in prepared.gold.queries], {}).to_dict()


def first(result):
    q = result["queries"][0]
    return q["verdict"], q["metrics"]


# ---- the rule ----------------------------------------------------------------------------------------------------

def test_two_groups_one_in_the_window_is_incomplete_and_names_where_the_other_ranked(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, COST]}])
    r = run(p, [M2, M0, F0, O0])  # how at rank 1; cost at rank 4, past the 3-chunk window
    v, m = first(r)
    assert r["summary"]["verdicts"]["advice"][0] == (
        "incomplete evidence in 1 query (missing most: cost (1)); 1 missing group found past the window at rank 4: "
        "a larger window or a reranker would bring it in")
    assert v["kind"] == "incomplete"
    assert v["reason"] == "the window (3) holds evidence of group how but not of cost (ranked 4)"
    assert v["detail"]["missing_groups"] == [{"group": "cost", "first_rank": 4}]
    assert v["detail"]["groups"] == [{"group": "how", "first_rank": 1, "in_window": True},
                                     {"group": "cost", "first_rank": 4, "in_window": False}]
    assert m["chunk"]["sufficient@window"] == 0.0 and m["doc"]["sufficient@window"] == 0.0
    assert m["chunk"]["hit@window"] == 1.0  # some evidence is there: hit says yes, sufficiency says no


def test_a_group_never_retrieved_is_named_as_such(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, COST]}])
    r = run(p, [M2, M0, F0])
    v, _ = first(r)
    assert v["kind"] == "incomplete" and v["detail"]["missing_groups"] == [{"group": "cost", "first_rank": None}]
    assert v["reason"].endswith("but not of cost (not in the top 3)")
    assert r["summary"]["verdicts"]["advice"][0] == (
        "incomplete evidence in 1 query (missing most: cost (1)); 1 not retrieved at all: query decomposition or "
        "multi-query retrieval would look for it")


def test_every_group_in_the_window_is_sufficient(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, COST]}])
    v, m = first(run(p, [M2, O0, F0]))
    assert v["kind"] == "ok" and m["chunk"]["sufficient@window"] == 1.0


def test_units_of_one_group_are_alternatives(tmp_path):
    both_how = {"doc": "manual", "group": "how", "evidence": [{"quote": "Rotate a key with the rotate button."},
                                                              {"quote": "Keys have names."}]}
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [both_how, COST]}])
    # M1 holds the second unit of "how": either suffices
    assert first(run(p, [M1, O0, F0]))[1]["chunk"]["sufficient@window"] == 1.0
    assert first(run(p, [M2, O0, F0]))[1]["chunk"]["sufficient@window"] == 1.0
    assert first(run(p, [M0, O0, F0]))[1]["chunk"]["sufficient@window"] == 0.0  # M0 holds no unit of how
    assert first(run(p, [M0, O0, F0]))[0]["kind"] == "incomplete"


def test_spans_of_one_document_in_two_groups(tmp_path):
    """An evidence item's own group: the document's spans split between groups (two judgments at resolve)."""
    rel = {"doc": "manual", "evidence": [{"quote": "Keys have names.", "group": "name"},
                                         {"quote": "Rotate a key with the rotate button.", "group": "how"}]}
    p = setup(tmp_path, [{"id": "q", "query": "keys", "relevant": [rel]}])
    assert [(j.doc_id, j.group, [(s.start, s.end) for s in j.evidence]) for j in p.gold.judgments] == \
        [("manual", "name", [(29, 45)]), ("manual", "how", [(46, 82)])]
    v, m = first(run(p, [M2, O0, F0]))
    assert v["kind"] == "incomplete" and v["detail"]["missing_groups"] == [{"group": "name", "first_rank": None}]
    assert m["chunk"]["sufficient@window"] == 0.0 and m["doc"]["sufficient@window"] == 1.0  # one document holds both
    assert first(run(p, [M2, M1, F0]))[1]["chunk"]["sufficient@window"] == 1.0


def test_ungrouped_judgments_are_one_more_group(tmp_path):
    plain = {"doc": "other", "evidence": [{"quote": "Invoices are monthly."}]}
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, plain]}])
    v, _ = first(run(p, [M2, F0, M0]))
    assert v["kind"] == "incomplete" and v["detail"]["missing_groups"] == [{"group": None, "first_rank": None}]
    assert "but not of (ungrouped)" in v["reason"]


def test_a_document_judgment_without_spans_is_a_unit_of_its_group(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, {"doc": "other", "group": "cost"}]}])
    assert first(run(p, [M2, O1, F0]))[1]["chunk"]["sufficient@window"] == 1.0  # any chunk of "other"
    assert first(run(p, [M2, F0, M0]))[0]["kind"] == "incomplete"


def test_precedence_wrong_chunk_before_incomplete_before_buried(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, COST]}], k=6)
    # both documents in the window, but no chunk with evidence: wrong_chunk, whatever the groups
    assert first(run(p, [M0, O1, F0, M1]))[0]["kind"] == "wrong_chunk"
    # first evidence at rank 4 of 6 (buried), and cost missing: incomplete wins
    v, _ = first(run(p, [M0, O1, F0, M2, M1]))
    assert v["kind"] == "incomplete" and v["detail"]["rank"] == 4
    # both groups, first evidence at rank 4 of 6: buried_evidence as before
    assert first(run(p, [M0, O1, F0, M2, O0]))[0]["kind"] == "buried_evidence"


def test_without_groups_sufficient_is_hit_at_window_and_verdicts_are_unchanged(tmp_path):
    gold = [{"id": "a", "query": "rotate", "relevant": [{"doc": "manual", "evidence": [{"quote": "Keys have names."}]}]},
            {"id": "b", "query": "invoices", "relevant": [{"doc": "other"}]},
            {"id": "c", "query": "faq", "relevant": [{"doc": "faq", "evidence": [{"quote": "Nothing about"}]},
                                                     {"doc": "other", "evidence": [{"quote": "Cards can change."}]}]}]
    p = setup(tmp_path, gold)
    assert not p.gold.has_groups
    for order in ([M1, O0, F0], [M2, O1, M0], [F0, M0, M1], [M0, M2, O0, M1]):
        r = run(p, order)
        for q in r["queries"]:
            for level in ("doc", "chunk"):
                assert q["metrics"][level]["sufficient@window"] == q["metrics"][level]["hit@window"]
            assert q["verdict"]["kind"] != "incomplete"
        assert r["summary"]["verdicts"]["counts"]["incomplete"] == 0


def test_the_mean_is_over_the_counted_queries(tmp_path):
    gold = [{"id": "q1", "query": "x", "relevant": [HOW, COST]},
            {"id": "q2", "query": "y", "relevant": [HOW, {**COST, "group": "how"}]},  # one group: any of the two
            {"id": "q3", "query": "z", "relevant": []}]  # no relevant item: not counted
    p = setup(tmp_path, gold)
    r = run(p, [M2, F0, M0])  # every query gets this ranking
    values = [q["metrics"]["chunk"]["sufficient@window"] for q in r["queries"]]
    assert values == [0.0, 1.0, 0.0]
    assert r["summary"]["chunk"]["sufficient@window"] == (0.0 + 1.0) / 2


# ---- the formats and the bad input -------------------------------------------------------------------------------

def test_yaml_carries_groups(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, COST]}], suffix=".yaml")
    assert [j.group for j in p.gold.judgments] == ["how", "cost"]


def test_csv_group_column(tmp_path):
    (tmp_path / "g.csv").write_text("query_id,query,doc_id,quote,group\n"
                                    "q,rotate invoices,manual,Rotate a key with the rotate button.,how\n"
                                    "q,rotate invoices,manual,Keys have names.,how\n"
                                    "q,rotate invoices,other,Invoices are monthly.,cost\n"
                                    "q,rotate invoices,faq,,\n")
    p = setup(tmp_path, None, suffix=".csv")
    assert [(j.doc_id, j.group, len(j.evidence)) for j in p.gold.judgments] == \
        [("manual", "how", 2), ("other", "cost", 1), ("faq", None, 0)]


def test_parquet_group_column_and_a_group_that_is_not_text(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    rows = {"query_id": ["q", "q"], "query": ["x", "x"], "doc_id": ["manual", "other"],
            "quote": ["Keys have names.", "Invoices are monthly."], "group": ["a", "b"]}
    pq.write_table(pa.table(rows), tmp_path / "g.parquet")
    p = setup(tmp_path, None, suffix=".parquet")
    assert [j.group for j in p.gold.judgments] == ["a", "b"]
    pq.write_table(pa.table({**rows, "group": [1, 2]}), tmp_path / "g.parquet")
    with pytest.raises(Exception) as exc:
        setup(tmp_path, None, suffix=".parquet")
    lines = exc.value.problems if hasattr(exc.value, "lines") else []
    text = str(exc.value) + "\n".join(map(str, lines))
    assert "row 1: query 'q' relevant[0].evidence[0]: 'group' must be non-empty text" in text
    assert "row 1: query 'q' relevant[1].evidence[0]: 'group' must be non-empty text" in text


@pytest.mark.parametrize("bad", [3, True, ["a"], "", None])
def test_a_group_that_is_not_text_is_one_located_line(tmp_path, bad):
    from harness.gold.load import _read_judgments, evidence_of
    problems = []
    _read_judgments("g.jsonl:1", "q", [{"doc": "manual", "group": bad}], problems)
    if bad is None:  # no group: the unnamed one
        assert problems == []
        return
    assert problems == [f"g.jsonl:1: query 'q' relevant[0]: 'group' must be non-empty text (units with the same "
                        f"group are alternatives), got {bad!r}"]
    assert evidence_of({"quote": "x", "group": bad}).startswith("'group' must be non-empty text")


def test_a_group_whose_units_all_fail_to_resolve_is_an_error_naming_it(tmp_path):
    bad = {"doc": "other", "group": "cost", "evidence": [{"quote": "Not in the text."}]}
    gone = {"doc": "nowhere", "group": "where"}
    with pytest.raises(GoldSetError) as exc:
        setup(tmp_path, [{"id": "q", "query": "x", "relevant": [HOW, bad, gone]}])
    lines = [str(x) for x in exc.value.problems]
    assert len(lines) == 2
    assert lines[0].startswith(f"{tmp_path / 'g.jsonl'}:1: query 'q': group 'cost': none of its 1 evidence unit "
                               f"resolves against the corpus (query 'q': evidence quote 'Not in the text.' not found")
    assert lines[1].startswith(f"{tmp_path / 'g.jsonl'}:1: query 'q': group 'where': none of its 1 evidence unit")


def test_a_group_with_one_unit_left_runs_and_flags_the_query(tmp_path):
    half = {"doc": "other", "group": "cost", "evidence": [{"quote": "Not in the text."},
                                                          {"quote": "Invoices are monthly."}]}
    p = setup(tmp_path, [{"id": "q", "query": "x", "relevant": [HOW, half]}])
    assert first(run(p, [M2, O0, F0]))[0]["kind"] == "goldset_error"  # as any evidence that does not resolve


def test_cli_exits_2_and_writes_nothing_for_an_unresolved_group(tmp_path):
    from clihelp import harness
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(d) for d in CORPUS))
    (tmp_path / "g.jsonl").write_text(json.dumps({"id": "q", "query": "x", "relevant": [
        HOW, {"doc": "other", "group": "cost", "evidence": [{"quote": "Nope."}]}]}))
    (tmp_path / "t.yaml").write_text("name: t\ncorpus: {path: c.jsonl}\ngoldset: {path: g.jsonl}\n"
                                     "chunking: {strategy: sentences, size: 1}\nretriever: {kind: bm25}\n")
    out = tmp_path / "out"
    proc = harness("run", tmp_path / "t.yaml", "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    assert f"{tmp_path / 'g.jsonl'}:1: query 'q': group 'cost': none of its 1 evidence unit resolves" in proc.stderr


# ---- goldset build and check ---------------------------------------------------------------------------------------

def docs():
    from harness.core.types import Document
    return {d["id"]: Document(d["id"], d["text"]) for d in CORPUS}


def test_build_an_answer_in_several_spans_makes_one_group_per_part(tmp_path):
    from harness.gold.build import build_goldset, read_answers
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "q", "query": "x", "answers": [
        ["Rotate a key", "Invoices are monthly"], ["rotate button", "Invoices are monthly"]]}) + "\n")
    rows, outcomes = build_goldset(read_answers(tmp_path / "a.jsonl", docs()), docs())
    assert rows[0]["relevant"] == [
        {"doc": "manual", "grade": 1, "evidence": [
            {"start": 46, "end": 58, "text": "Rotate a key", "how": "exact", "group": "part 1"},
            {"start": 68, "end": 81, "text": "rotate button", "how": "exact", "group": "part 1"}]},
        {"doc": "other", "grade": 1, "evidence": [
            {"start": 0, "end": 20, "text": "Invoices are monthly", "how": "exact", "group": "part 2"}]}]
    assert len(outcomes) == 3  # the repeated part counts once
    # and the rows load back with their groups
    (tmp_path / "g.jsonl").write_text(json.dumps(rows[0]))
    from harness.gold.load import native_queries
    [q] = list(native_queries(tmp_path / "g.jsonl"))
    assert [j.unit_groups() for j in q.relevant] == [["part 1", "part 1"], ["part 2"]]


@pytest.mark.parametrize("answers,fragment", [
    (["Rotate a key", ["Invoices are monthly", "Cards"]], "give every answer in parts, or none"),
    ([["Rotate a key"], ["Invoices are monthly", "Cards"]], "one number of parts (part i of each is one evidence "
                                                              "group), got 1, 2"),
    ([["Rotate a key", ""]], "'answers' must be a non-empty list of texts"),
])
def test_build_refuses_answers_in_parts_it_cannot_group(tmp_path, answers, fragment):
    from harness.gold.build import read_answers
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "q", "query": "x", "answers": answers}) + "\n")
    with pytest.raises(GoldSetError) as exc:
        read_answers(tmp_path / "a.jsonl", docs())
    assert fragment in str(exc.value.problems[0]) and str(exc.value.problems[0]).startswith(f"{tmp_path / 'a.jsonl'}:1:")


def test_cli_build_and_check_fix_carry_groups(tmp_path):
    from clihelp import harness
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(d) for d in CORPUS))
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "q", "query": "x", "answers": [
        ["Rotate a key", "Invoices are monthly"]]}) + "\n")
    proc = harness("goldset", "build", "--from", tmp_path / "a.jsonl", "--corpus", tmp_path / "c.jsonl",
                   "-o", tmp_path / "g.jsonl")
    assert proc.returncode == 0, proc.stderr
    built = json.loads((tmp_path / "g.jsonl").read_text())
    assert [(r["doc"], [e["group"] for e in r["evidence"]]) for r in built["relevant"]] == \
        [("manual", ["part 1"]), ("other", ["part 2"])]
    # the corpus changes around the evidence; --fix re-anchors it, groups kept
    moved = [{"id": "manual", "text": "New intro.\n\n" + CORPUS[0]["text"]}, CORPUS[1], CORPUS[2]]
    (tmp_path / "c2.jsonl").write_text("\n".join(json.dumps(d) for d in moved))
    proc = harness("goldset", "check", tmp_path / "g.jsonl", "--corpus", tmp_path / "c2.jsonl", "--against",
                   tmp_path / "c.jsonl", "--fix", tmp_path / "fixed.jsonl")
    assert proc.returncode == 1 and "1 label(s) re-anchored" in proc.stderr, proc.stderr
    fixed = json.loads((tmp_path / "fixed.jsonl").read_text())
    assert fixed["relevant"][0]["evidence"] == [{"start": 46 + 12, "end": 58 + 12, "text": "Rotate a key",
                                                 "how": "exact", "group": "part 1"}]
    assert fixed["relevant"][1] == built["relevant"][1]


def test_check_fix_keeps_groups_when_re_anchoring(tmp_path):
    from harness.core.types import Document
    from harness.gold.check import Before, check_goldset
    from harness.gold.load import native_queries
    from harness.gold.repair import repaired_rows
    old = {"manual": Document("manual", "Rotate a key with the rotate button."),
           "other": Document("other", "Invoices are monthly.")}
    new = {"manual": Document("manual", "Intro.\n\nRotate a key with the rotate button."),  # moved by 8
           "other": Document("other", "Cards first.\n\nInvoices are monthly.")}  # by 14
    (tmp_path / "g.jsonl").write_text(json.dumps({"id": "q", "query": "x", "relevant": [
        {"doc": "manual", "group": "how", "evidence": [{"start": 0, "end": 36}]},
        {"doc": "other", "evidence": [{"start": 0, "end": 21, "group": "cost"}]}]}))
    raw = list(native_queries(tmp_path / "g.jsonl"))
    labels = check_goldset(raw, new, Before(docs=old))
    rows, fixed, conflicts = repaired_rows(raw, labels, new)
    assert len(fixed) == 2 and not conflicts
    assert rows[0]["relevant"] == [{"doc": "manual", "grade": 1, "group": "how", "evidence": [{"start": 8, "end": 44}]},
                                   {"doc": "other", "grade": 1, "evidence": [{"start": 14, "end": 35,
                                                                              "group": "cost"}]}]


def test_check_fix_moving_evidence_to_another_document_keeps_its_judgments_group():
    from harness.core.types import Document
    from harness.gold.check import check_goldset
    from harness.gold.raw import RawEvidence, RawJudgment, RawQuery
    from harness.gold.repair import repaired_rows
    raw = [RawQuery("q", "x", {}, [RawJudgment("gone", 1, [RawEvidence(quote="Invoices are monthly.")], "cost")],
                    "g.jsonl:1")]
    new = {"other": Document("other", "Invoices are monthly.")}
    rows, fixed, _ = repaired_rows(raw, check_goldset(raw, new), new)
    assert len(fixed) == 1
    assert rows[0]["relevant"] == [{"doc": "other", "grade": 1, "evidence": [{"start": 0, "end": 21,
                                                                              "group": "cost"}]}]


# ---- geometry ----------------------------------------------------------------------------------------------------

def test_geometry_counts_split_evidence_thin_first_chunks_and_noisy_windows(tmp_path):
    corpus = [{"id": "d", "text": "Setup. Keys are listed in settings. Rotate a key with the rotate button."},
              {"id": "e", "text": "Invoices are monthly and cards can change at any time of the year."}]
    across = {"doc": "d", "evidence": [{"quote": "settings. Rotate"}]}  # crosses the sentence boundary
    inside = {"doc": "e", "evidence": [{"quote": "Invoices"}]}
    p = setup(tmp_path, [{"id": "a", "query": "x", "relevant": [across]},
                         {"id": "b", "query": "y", "relevant": [inside]}], k=2, corpus=corpus)
    chunks = {c.text: c.chunk_id for c in p.chunks}
    heading, e0 = chunks["Setup."], chunks[corpus[1]["text"]]
    r = run(p, [heading, e0])
    g = r["summary"]["verdicts"]["geometry"]
    assert g["split_evidence_units"] == 1 and g["split_evidence_query_ids"] == ["a"]
    assert g["thin_first_queries"] == 2 and g["thin_first_query_ids"] == ["a", "b"]  # "Setup.": 1 word, ranked first
    # b's window: "Setup." (6 chars) + e (66 chars), evidence "Invoices" 8 chars: 8 / 72 < 0.5; a's holds none
    assert g["mostly_noise_queries"] == 1 and g["mostly_noise_query_ids"] == ["b"]
    advice = r["summary"]["verdicts"]["advice"]
    assert any(a.startswith("1 evidence unit in 1 query (a) crosses a chunk boundary") for a in advice)
    assert any(a.startswith("2 queries (a, b) rank first a chunk of fewer than 5 words (e.g. 'Setup.')") for a in advice)
    assert any(a.startswith("1 query of the 1 whose window holds evidence (b) has a window under 50% evidence by "
                            "characters (mean evidence share 11%)") for a in advice)


def test_evidence_share_counts_overlapping_hits_once():
    from harness.core.types import Judgment, Span
    from harness.hits.geometry import evidence_share
    j = [Judgment("q", "d", 1, (Span(10, 20),))]
    hits = [Hit("d#0-15", "d", 2.0, 1, 0, 15), Hit("d#5-30", "d", 1.0, 2, 5, 30)]  # union 0..30: 30 characters
    assert evidence_share(hits, j) == 10 / 30
    assert evidence_share([], j) is None and evidence_share(hits, []) is None


# ---- report, compare, gate -------------------------------------------------------------------------------------------

def test_report_lists_incomplete_queries_and_the_advice(tmp_path):
    from harness.render.outputs import write_outputs
    p = setup(tmp_path, [{"id": "q", "query": "rotate invoices", "relevant": [HOW, COST]}])
    by_id = {c.chunk_id: c for c in p.chunks}
    hits = tuple(Hit(cid, by_id[cid].doc_id, 3.0 - i, i + 1, by_id[cid].start, by_id[cid].end)
                 for i, cid in enumerate([M2, M0, F0, O0]))
    result = build_result(p, [RankedList("q", hits)], {})
    write_outputs(result, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### incomplete (1, worst first)" in md and "incomplete evidence in 1 query (missing most: cost (1))" in md
    assert "sufficient@window" in md
    assert 'class="k-incomplete"' in __import__("harness.render.html", fromlist=["render"]).render(
        [result], [result.chunk_text])


def test_gate_and_compare_read_incomplete():
    from resultfactory import fake_result
    from harness.stats.compare import compare_runs
    from harness.stats.gates import evaluate_gates, parse_rule
    a = fake_result("a", [0.5, 0.2, 1.0, 0.0], ["ok", "incomplete", "ok", "incomplete"])
    b = fake_result("b", [0.5, 0.9, 1.0, 0.0], ["ok", "ok", "ok", "incomplete"])
    rule = parse_rule("incomplete <= 0.25")
    assert rule.name == "incomplete share <= 0.25"
    assert [r.passed for r in evaluate_gates(b, [rule])] == [True]
    [outcome] = evaluate_gates(a, [rule])
    assert not outcome.passed and outcome.message == "incomplete share is 0.500 (2 queries)"
    c = compare_runs([a, b], ["ndcg@10"])
    assert c.transitions["b"] == {"incomplete -> ok": ["q1"]}


# ---- the columns paths: a HitTable's lazy hits, a spilled metric table, the fingerprint ---------------------------

def test_sufficient_values_read_a_hit_tables_lists_as_ranked_lists(tmp_path):
    import numpy as np
    from harness.hits.groups import sufficient_values
    from harness.hits.table import HitTable
    p = setup(tmp_path, [{"id": "q1", "query": "x", "relevant": [HOW, COST]},
                         {"id": "q2", "query": "y", "relevant": [HOW, COST]}])
    chunks = list(p.chunks)
    code = {c.chunk_id: i for i, c in enumerate(chunks)}
    order = [[M2, O0, F0], [M2, F0, M0, O0]]  # q1 holds both groups in 3; q2 only how
    table = HitTable(np.array(["q1", "q2"], dtype=object), np.array([0, 3, 7]),
                     np.array([code[c] for o in order for c in o], dtype=np.int32),
                     np.arange(7, 0, -1, dtype=np.float64), tuple(chunks))
    lists = [RankedList(q, tuple(Hit(c, c.split("#")[0], 1.0, r + 1, *map(int, c.split("#")[1].split("-")))
                                 for r, c in enumerate(o))) for q, o in zip(("q1", "q2"), order)]
    grades = lambda i: {M2: 1, O0: 1, M0: 0, M1: 0, O1: 0}
    for given in (table, lists):
        got = sufficient_values(p.gold.judgments_per_query(), given, [3, 3], grades, np.zeros(2), True)
        assert got.tolist() == [1.0, 0.0]


def test_with_column_on_a_spilled_table_matches_the_in_memory_one():
    import numpy as np
    from harness.io.spilled import SpilledRows
    from harness.metrics.spec import parse_metric
    from harness.metrics.table import build_table, with_column
    values = np.arange(12, dtype=np.float64).reshape(6, 2)
    spilled = SpilledRows(6, 2)
    spilled[np.arange(6)] = values
    spec = parse_metric("sufficient@window")
    column = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    made = [with_column(build_table([f"q{i}" for i in range(6)], [parse_metric("hit@window"),
                                                                 parse_metric("rr@window")], v,
                                    np.array([1, 1, 1, 1, 1, 0]), np.ones(6, bool), query_policy="exclude",
                                    conventions={}), spec, column) for v in (values, spilled)]
    for table in made:
        assert table.names == ["hit@window", "rr@window", "sufficient@window"]
        assert np.asarray(table.values).tolist() == np.column_stack([values, column]).tolist()
        assert table.mean()["sufficient@window"] == 3 / 5  # q5 has no relevant item: not counted


def test_a_golden_set_without_groups_keeps_its_fingerprint(tmp_path):
    from harness.core.fingerprint import fingerprint_of_items
    from harness.pipeline.prepare import goldset_fingerprint
    plain = {"doc": "manual", "evidence": [{"quote": "Keys have names."}]}
    p = setup(tmp_path, [{"id": "q", "query": "x", "relevant": [plain]}])
    assert goldset_fingerprint(p.gold) == fingerprint_of_items([["q", "x"], ["q", "manual", 1, [[29, 45]]]])
    grouped = setup(tmp_path, [{"id": "q", "query": "x", "relevant": [{**plain, "group": "a"}]}])
    assert goldset_fingerprint(grouped.gold) != goldset_fingerprint(p.gold)
