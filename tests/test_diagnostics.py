"""Verdicts on small corpora where each one is known by construction."""

import json

import pytest

from harness.config.schema import parse_config
from harness.pipeline.assemble import build_result, prepare
from harness.core.types import Hit, RankedList

# Doc "manual" has three sentence chunks; the evidence is in the third sentence.
CORPUS = [
    {"id": "manual", "text": "Keys are listed in settings. Keys have names. Rotate a key with the rotate button."},
    {"id": "other", "text": "Invoices are monthly. Cards can change."},
    {"id": "faq", "text": "Nothing about keys here."},
]


def setup(tmp_path, gold, cutoff="k: 3", extra=""):
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(d) for d in CORPUS))
    (tmp_path / "g.jsonl").write_text("\n".join(json.dumps(g) for g in gold))
    import yaml
    cfg = yaml.safe_load(f"""
name: t
corpus: {{path: c.jsonl}}
chunking: {{strategy: sentences, size: 1}}
goldset: {{path: g.jsonl}}
retriever: {{kind: bm25}}
cutoff: {{{cutoff}}}
depth: 100
{extra}
""")
    return prepare(parse_config(cfg, "t.yaml", tmp_path), log=lambda m: None)


def ids(prepared):
    return {c.doc_id + str(i): c for i, c in enumerate(prepared.chunks)}


def run_with(prepared, order):
    """A run whose ranking we dictate: ``order`` lists chunk ids best first."""
    by_id = {c.chunk_id: c for c in prepared.chunks}
    hits = tuple(Hit(cid, by_id[cid].doc_id, float(len(order) - i), i + 1, by_id[cid].start, by_id[cid].end)
                 for i, cid in enumerate(order))
    return [RankedList(q.query_id, hits) for q in prepared.gold.queries]


def verdict(prepared, order):
    result = build_result(prepared, run_with(prepared, order), {}).to_dict()  # as results.json has it
    return result["queries"][0]["verdict"], result


EVIDENCE = {"doc": "manual", "evidence": [{"quote": "Rotate a key with the rotate button."}]}
M0, M1, M2 = "manual#0-28", "manual#29-45", "manual#46-82"
O0, O1, F0 = "other#0-21", "other#22-39", "faq#0-24"


def test_chunk_ids_as_expected(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}])
    assert [c.chunk_id for c in p.chunks] == [M0, M1, M2, O0, O1, F0]


def test_ok(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}])
    v, r = verdict(p, [M2, O0, O1])
    assert v["kind"] == "ok" and v["detail"]["rank"] == 1
    assert r["queries"][0]["metrics"]["chunk"]["hit@window"] == 1.0


def test_missing_document_beyond_cutoff_near(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}])
    v, r = verdict(p, [O0, O1, F0, M1, M2])
    assert v["kind"] == "missing_document"
    assert v["detail"]["where"] == "beyond_cutoff" and v["detail"]["first_rank"] == 4 and v["detail"]["near"]
    assert v["reason"] == "no relevant document in the window; found at rank 4; the window holds 3"
    assert r["queries"][0]["metrics"]["doc"]["hit@window"] == 0.0


def test_missing_document_not_retrieved(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}])
    v, _ = verdict(p, [O0, O1, F0])
    assert v["kind"] == "missing_document" and v["detail"]["where"] == "not_retrieved"
    assert v["detail"]["best_rank"] == {"manual": None}


def test_wrong_chunk_with_distance_and_evidence_rank(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}])
    v, r = verdict(p, [M0, O0, O1, M2])
    assert v["kind"] == "wrong_chunk"
    d = v["detail"]
    assert d["doc_id"] == "manual" and d["evidence_rank"] == 4 and d["evidence_chunk_id"] == M2
    assert d["retrieved_chunks"] == [{"chunk_id": M0, "start": 0, "end": 28, "rank": 1}]
    assert d["distance_chars"] == 46 - 28
    q = r["queries"][0]["metrics"]
    assert q["doc"]["hit@window"] == 1.0 and q["chunk"]["hit@window"] == 0.0


def test_relevant_document_without_spans_cannot_be_wrong_chunk(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [{"doc": "manual"}]}])
    v, _ = verdict(p, [M0, O0, O1])
    assert v["kind"] == "ok"


def test_buried_after_rank(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}], cutoff="k: 5")
    v, _ = verdict(p, [O0, O1, F0, M2, M0])
    assert v["kind"] == "buried_evidence" and v["detail"]["rank"] == 4 and v["detail"]["position"] == "end"
    assert [a["chunk_id"] for a in v["detail"]["above"]] == [O0, O1, F0]


def test_buried_in_the_middle_of_a_large_window(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}], cutoff="k: 6",
              extra="diagnostics: {buried_after: 5}")
    v, _ = verdict(p, [O0, O1, M2, F0, M0, M1])
    assert v["kind"] == "buried_evidence" and v["detail"]["position"] == "middle" and v["detail"]["rank"] == 3


def test_token_budget_window(tmp_path):
    # "Invoices are monthly." (3 words) + "Cards can change." (3) fit in 7; the evidence (7 words) does not.
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}],
              cutoff="token_budget: 7, tokenizer: words")
    v, r = verdict(p, [O0, O1, M2])
    assert r["queries"][0]["effective_k"] == 2
    assert v["kind"] == "missing_document" and v["detail"]["first_rank"] == 3


def test_multi_evidence_partial_flag_and_evidence_across_two_chunks(tmp_path):
    # One quote spans chunks M1 and M2 (both overlap it); a second relevant document is missing.
    gold = [{"id": "q", "query": "rotate", "relevant": [
        {"doc": "manual", "evidence": [{"quote": "names. Rotate"}]}, {"doc": "other"}]}]
    p = setup(tmp_path, gold)
    v, r = verdict(p, [M1, F0, M0])
    assert v["kind"] == "ok" and "partial" in v["flags"]
    assert v["detail"]["partial"]["missing_documents"] == ["other"]
    assert r["queries"][0]["n_relevant"]["chunk"] == 4  # M1, M2 and both chunks of "other"


def test_noise_is_judged_against_what_the_query_allows(tmp_path):
    """One relevant chunk caps a 6-chunk window's precision at 1/6: finding it first is not noise, and the unjudged
    chunks after it do not raise the flag (their share is still a number in the detail)."""
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}], cutoff="k: 6")
    v, _ = verdict(p, [M2, O0, O1, F0, M0, M1])
    assert v["flags"] == [] and v["detail"]["unjudged_share"] == pytest.approx(3 / 6)


def test_unjudged_flag_when_an_unjudged_chunk_outranks_the_evidence(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}], cutoff="k: 6")
    v, r = verdict(p, [O0, F0, M2, O1, M0, M1])
    ids = {h["rank"]: h["chunk_id"] for h in r["queries"][0]["hits"]}
    assert v["flags"] == ["unjudged_in_window"]
    assert v["detail"]["unjudged_in_window"] == {"share": pytest.approx(3 / 6), "above_first_relevant": [ids[1], ids[2]]}


def test_noisy_context_relative_to_min_k_r(tmp_path):
    # R = 3 relevant chunks (M2 by its quote, both chunks of "other"); a 4-chunk window could hold all 3 but holds 1.
    gold = [{"id": "q", "query": "rotate", "relevant": [EVIDENCE, {"doc": "other"}]}]
    p = setup(tmp_path, gold, cutoff="k: 4", extra="diagnostics: {noisy_below: 0.5}")
    v, _ = verdict(p, [M2, F0, M0, M1])
    assert "noisy_context" in v["flags"]
    assert v["detail"]["noisy_context"] == {"chunk_precision": 0.25, "possible_precision": 0.75,
                                            "relative_precision": pytest.approx(1 / 3), "threshold": 0.5}
    v, _ = verdict(p, [M2, O0, M0, M1])  # 2 of a possible 3
    assert "noisy_context" not in v["flags"]


def test_near_cutoff_is_relative_to_the_window(tmp_path):
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}], cutoff="k: 1",
              extra="diagnostics: {near_cutoff: 2}")
    v, _ = verdict(p, [O0, O1, M2])  # rank 3 = k + 2: just past
    assert v["detail"]["first_rank"] == 3 and v["detail"]["near"]
    v, _ = verdict(p, [O0, O1, F0, M2])  # rank 4 = k + 3: not
    assert v["detail"]["first_rank"] == 4 and not v["detail"]["near"]


def test_goldset_error_and_no_gold_come_first(tmp_path):
    gold = [{"id": "q", "query": "rotate", "relevant": [{"doc": "ghost"}]},
            {"id": "n", "query": "anything", "relevant": []}]
    p = setup(tmp_path, gold)
    result = build_result(p, run_with(p, [M2, O0, O1]), {}).to_dict()
    kinds = [q["verdict"]["kind"] for q in result["queries"]]
    assert kinds == ["goldset_error", "no_gold"]
    assert result["summary"]["verdicts"]["counts"]["goldset_error"] == 1
    assert any("cannot be checked" in a for a in result["summary"]["verdicts"]["advice"])


def test_ties_at_the_cutoff_resolve_by_chunk_id(tmp_path):
    # Equal scores at the cutoff: the tie rule every retriever applies puts the larger chunk id first.
    from harness.retrievers.ranking import rank_hits
    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]}], cutoff="k: 1")
    by_id = {c.chunk_id: c for c in p.chunks}
    tied = RankedList("q", tuple(Hit(c, by_id[c].doc_id, 1.0, i + 1, by_id[c].start, by_id[c].end)
                                 for i, c in enumerate([F0, M2])))
    result = build_result(p, [rank_hits("q", tied.hits)], {}).to_dict()
    assert result["queries"][0]["hits"][0]["chunk_id"] == M2  # "manual#..." > "faq#..."
    assert result["queries"][0]["verdict"]["kind"] == "ok"


def test_diagnose_reads_plain_data_and_names_a_query_absent_from_the_run(tmp_path):
    """No pipeline object: the golden set, its problems, the settings, ranked lists and judgments are all it needs.
    A query the run has no ranking for says so, instead of 'nor in the top 0 retrieved'."""
    from harness.diagnostics.verdicts import diagnose
    from harness.gold.resolve import chunk_qrels, doc_qrels

    p = setup(tmp_path, [{"id": "q", "query": "rotate", "relevant": [EVIDENCE]},
                         {"id": "r", "query": "rotate", "relevant": [EVIDENCE]}])
    lists = [RankedList("q", ()), RankedList("r", ())]
    dq, cq = doc_qrels(p.gold), chunk_qrels(p.gold, p.chunks)
    out = diagnose(p.gold, p.problems, p.config.diagnostics, lists, [0, 0], dq, cq, absent={"q"})
    assert out["q"].kind == "missing_document" and out["q"].detail["where"] == "absent_from_run"
    assert out["q"].reason == "the run has no ranking for this query (absent from the run): it scores 0"
    assert out["r"].detail["where"] == "not_retrieved"
    assert out["r"].reason == "no relevant document in the window, nor in the top 0 retrieved"


class _Gold:
    has_evidence = True

    def tags_by_query(self):
        return {}


def _advice(verdicts):
    from harness.diagnostics.verdicts import _Tally, advice

    return advice(_Tally(dict(enumerate(verdicts)), _Gold()), _Gold())


def test_advice_suggests_a_smaller_window_only_where_it_keeps_the_evidence():
    from harness.diagnostics.verdicts import _v

    at_end = [_v("buried_evidence", "", {"rank": r, "position": "end"}) for r in (4, 5, 5)]
    (line,) = [a for a in _advice(at_end + [_v("ok", "")]) if a.startswith("evidence buried")]
    assert "ranks 4–5" in line and "a reranker" in line and "a smaller window would drop it" in line
    assert "at least" not in line
    middle = [_v("buried_evidence", "", {"rank": r, "position": "middle"}) for r in (4, 6)]
    (line,) = [a for a in _advice(middle + at_end[:1]) if a.startswith("evidence buried")]
    assert "a smaller window of at least 6 chunks would keep the evidence of the 2 not at its end" in line
    assert "the 1 with the evidence at the window's end would lose it" in line


def test_noise_advice_leaves_out_queries_with_nothing_relevant_in_the_window():
    from harness.diagnostics.verdicts import _v

    noise = lambda p: {"noisy_context": {"chunk_precision": p}}
    misses = [_v("missing_document", "", {"where": "not_retrieved", **noise(0.0)}, ["noisy_context"])] * 3
    assert not any("noisy context" in a for a in _advice(misses + [_v("ok", "")]))
    noisy = [_v("ok", "", noise(0.2), ["noisy_context"])] * 2
    (line,) = [a for a in _advice(misses + noisy + [_v("ok", "")] * 3) if "noisy context" in a]
    assert line.startswith("25% of queries have noisy context") and "3 more queries are flagged" in line


def test_near_cutoff_advice_names_one_rank_once():
    from harness.diagnostics.verdicts import _v

    one = [_v("missing_document", "", {"where": "beyond_cutoff", "near": True, "first_rank": 15})]
    (line,) = [a for a in _advice(one) if "just past" in a]
    assert "(1 of 1) was found just past the cutoff (rank 15): a reranker or a larger window would bring it in" in line
    two = one + [_v("missing_document", "", {"where": "beyond_cutoff", "near": True, "first_rank": 7})]
    (line,) = [a for a in _advice(two) if "just past" in a]
    assert "(2 of 2) were found just past the cutoff (ranks 7–15)" in line and "bring them in" in line
