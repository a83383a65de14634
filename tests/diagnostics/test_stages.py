"""Stage attribution on constructed composites: each child's ranking is fixed by the test (a registered kind that
answers from a table) and the reranker's order too, so the stage that lost the evidence is known beforehand; every
kind of loss is checked in ``detail.lost_at``, with the ranks worked out by hand (RRF with rrf_k 60)."""

from __future__ import annotations

from composites import fake_reranker, fixed, run  # noqa: F401  (fake_reranker: a fixture)
from harness.diagnostics.stages import LOST_AT, lost_at, lost_counts, lost_sentence


def test_fusion_lost_it(tmp_path):
    # child 1: d5 r1, d1 r2 (within k=2); child 2: d2 d3 d4. RRF: d5 = d2 = 1/61, d1 = d3 = 1/62, d4 = 1/63;
    # ties by chunk id descending: d5, d2, d3, d1 -> d1 at 4.
    v, result = run(tmp_path, {"kind": "hybrid", "children": [fixed(["d5", "d1"]), fixed(["d2", "d3", "d4"])]})
    assert v.kind == "missing_document"
    lost = v.detail["lost_at"]
    assert lost["stage"] == "fusion" and lost["path"] == "hybrid/fusion"
    assert lost["from"] == {"path": "hybrid/stagefixed", "rank": 2}
    assert lost["to"] == {"path": "hybrid/fusion", "rank": 4}
    assert lost["ranks"] == {"hybrid/stagefixed": 2, "hybrid/stagefixed#2": None, "hybrid/fusion": 4}
    assert [s["path"] for s in v.detail["stages"]] == ["hybrid/stagefixed", "hybrid/stagefixed#2", "hybrid/fusion"]
    assert v.detail["stages"][2]["inputs"] == ["hybrid/stagefixed", "hybrid/stagefixed#2"]
    assert result.summary.verdicts.lost_at == {"retriever": 0, "fusion": 1, "rerank_candidates": 0, "rerank": 0,
                                               "window": 0}


def test_no_child_found_it(tmp_path):
    v, _ = run(tmp_path, {"kind": "hybrid", "depth": 3,
                          "children": [fixed(["d5", "d6"]), {**fixed(["d2", "d3"]), "depth": 7}]})
    lost = v.detail["lost_at"]
    assert lost["stage"] == "retriever"
    # each child was asked for max(its depth, the run's depth 10)
    assert lost["children"] == [{"path": "hybrid/stagefixed", "depth": 10}, {"path": "hybrid/stagefixed#2", "depth": 10}]
    assert set(lost["ranks"].values()) == {None}


def test_no_stage_had_it_within_k_is_the_window(tmp_path):
    # child 1 has d1 at 3 (k=2): never within the window at any stage; fused: d5=d2 1/61, d6=d3 1/62, d1 1/63 -> 5
    v, _ = run(tmp_path, {"kind": "hybrid", "children": [fixed(["d5", "d6", "d1"]), fixed(["d2", "d3"])]})
    assert v.detail["lost_at"] == {"stage": "window", "window": 2,
                                   "ranks": {"hybrid/stagefixed": 3, "hybrid/stagefixed#2": None, "hybrid/fusion": 5}}


def test_the_reranker_demoted_it(tmp_path, fake_reranker):
    fake_reranker["q1"] = ["d2", "d3", "d4", "d5", "d1"]  # the child's first, put last of the five candidates
    v, _ = run(tmp_path, {"kind": "reranked", "top_n": 5, "child": fixed(["d1", "d2", "d3", "d4", "d5", "d6"])})
    lost = v.detail["lost_at"]
    assert lost["stage"] == "rerank" and lost["path"] == "reranked/rerank"
    assert lost["from"] == {"path": "reranked/stagefixed", "rank": 1}
    assert lost["to"] == {"path": "reranked/rerank", "rank": 5}
    assert lost["ranks"] == {"reranked/stagefixed": 1, "reranked/candidates": 1, "reranked/rerank": 5}


def test_the_candidate_cut_left_it_out(tmp_path, fake_reranker):
    fake_reranker["q1"] = ["d1"]  # the reranker would have put it first, but never sees it: the child has it at 4
    v, result = run(tmp_path, {"kind": "reranked", "top_n": 3, "child": fixed(["d2", "d3", "d4", "d1", "d5"])})
    lost = v.detail["lost_at"]
    assert lost["stage"] == "rerank_candidates" and lost["depth"] == 3
    assert lost["from"] == {"path": "reranked/stagefixed", "rank": 4}
    assert lost["ranks"] == {"reranked/stagefixed": 4, "reranked/candidates": None, "reranked/rerank": 4}
    assert result.summary.verdicts.lost_at["rerank_candidates"] == 1


def test_nested_fusion_inside_a_reranker(tmp_path, fake_reranker):
    # the hybrid of test_fusion_lost_it under a reranker that keeps the fused order
    fake_reranker["q1"] = ["d5", "d2", "d3", "d1", "d4"]
    hybrid = {"kind": "hybrid", "children": [fixed(["d5", "d1"]), fixed(["d2", "d3", "d4"])]}
    v, _ = run(tmp_path, {"kind": "reranked", "top_n": 5, "child": hybrid})
    lost = v.detail["lost_at"]
    assert lost["stage"] == "fusion" and lost["path"] == "reranked/hybrid/fusion"
    assert lost["from"] == {"path": "reranked/hybrid/stagefixed", "rank": 2}
    assert [s["path"] for s in v.detail["stages"]] == [
        "reranked/hybrid/stagefixed", "reranked/hybrid/stagefixed#2", "reranked/hybrid/fusion",
        "reranked/candidates", "reranked/rerank"]


def test_nested_reranker_inside_a_hybrid(tmp_path, fake_reranker):
    # reranked child: d1 r1 demoted to 3; fused with a child holding d2 d3: reranked d4=1/61 d5=1/62 d1=1/63,
    # other d2=1/61 d3=1/62 -> d4, d2, d5, d3, d1: the rerank (first to move it past k=2) is named, not fusion
    fake_reranker["q1"] = ["d4", "d5", "d1"]
    v, _ = run(tmp_path, {"kind": "hybrid", "children": [
        {"kind": "reranked", "top_n": 3, "child": fixed(["d1", "d4", "d5"])}, fixed(["d2", "d3"])]})
    lost = v.detail["lost_at"]
    assert lost["stage"] == "rerank" and lost["path"] == "hybrid/reranked/rerank"
    assert lost["from"]["rank"] == 1 and lost["to"]["rank"] == 3
    assert lost["ranks"]["hybrid/fusion"] == 5


def test_wrong_chunk_follows_the_evidence_unit(tmp_path):
    # sentence chunks: d1's first sentence (no evidence) and its second (the evidence, d1.2). Child 1: d1 r1,
    # d1.2 r2 (within k=2); child 2: d3, d2. RRF: d1 = d3 = 1/61, d1.2 = d2 = 1/62; ties by chunk id descending
    # (d3 > d1, d2 > d1): d3, d1, d2, d1.2 -> the document stays in the window, its evidence drops to 4.
    v, _ = run(tmp_path, {"kind": "hybrid", "children": [fixed(["d1", "d1.2"]), fixed(["d3", "d2"])]},
               evidence=True)
    assert v.kind == "wrong_chunk"
    lost = v.detail["lost_at"]
    assert lost["stage"] == "fusion" and lost["from"]["rank"] == 2 and lost["to"]["rank"] == 4
    assert v.detail["stages"][0]["docs"] == {"d1": 1} and list(v.detail["stages"][0]["units"].values()) == [2]


def test_a_plain_retriever_records_no_stages(tmp_path):
    v, result = run(tmp_path, fixed(["d2", "d1"]), k=1)
    assert "stages" not in v.detail and "lost_at" not in v.detail
    assert result.summary.verdicts.lost_at is None


def test_lost_at_on_units_of_an_incomplete_query():
    stages = [{"path": "hybrid/a", "role": "retriever", "inputs": [], "depth": 9, "length": 9,
               "docs": {"x": 1}, "units": {"x#unit:0-5": 1, "x#unit:9-12": 2}},
              {"path": "hybrid/fusion", "role": "fusion", "inputs": ["hybrid/a"], "depth": 9, "length": 9,
               "docs": {"x": 1}, "units": {"x#unit:0-5": 1, "x#unit:9-12": 6}}]
    # only the missing group's unit is followed: it was at 2 in the child, 6 fused
    lost = lost_at(stages, 3, "units", {"x#unit:9-12"})
    assert lost["stage"] == "fusion" and lost["from"]["rank"] == 2 and lost["to"]["rank"] == 6


def test_the_sentence_counts_each_stage_once_in_pipeline_order():
    counts = lost_counts(["rerank_candidates", "fusion", "fusion", "window"] + ["fusion"] * 10
                         + ["rerank_candidates"] * 4)
    assert list(counts) == list(LOST_AT)
    assert lost_sentence(counts) == ("fusion lost 12 queries, the rerank cut lost 5 queries, the window cut 1 query "
                                     "(no stage had the evidence within k)")


def test_hits_parquet_carries_each_relevant_hits_stage_ranks(tmp_path):
    import pyarrow.parquet as pq

    from harness.hits.parquet import write_hits

    _, result = run(tmp_path, {"kind": "hybrid", "children": [fixed(["d5", "d1"]), fixed(["d2", "d3", "d4"])]})
    write_hits(tmp_path / "hits.parquet", result.hit_source, result.run_id)
    rows = pq.read_table(tmp_path / "hits.parquet").to_pylist()
    assert [r["doc_id"] for r in rows] == ["d5", "d2", "d3", "d1", "d4"]  # the fused order worked out above
    assert dict(rows[3]["stage_ranks"]) == {"hybrid/stagefixed": 2, "hybrid/fusion": 4}
    assert [r["stage_ranks"] for r in rows if r["doc_id"] != "d1"] == [None] * 4
    # a reader of the hits (report, explain) reads its columns and ignores this one
    assert [h.rank for h in result.hits_of(result.queries[0])] == [1, 2, 3, 4, 5]


def test_reports_and_explain_show_the_ladder(tmp_path):
    from harness.render.explain import explain_result, to_markdown as explain_md
    from harness.render.outputs import markdown

    _, result = run(tmp_path, {"kind": "hybrid", "children": [fixed(["d5", "d1"]), fixed(["d2", "d3", "d4"])]})
    said = "lost at fusion: hybrid/stagefixed had it at rank 2, hybrid/fusion at 4 (window 2)"
    report = markdown(result)
    assert "Where the evidence was lost (stage attribution): fusion lost 1 query." in report
    assert said in report and "`hybrid/fusion` (fusion, depth 10): d1 4; d1#unit:doc 4 ← lost here" in report
    text = explain_md(explain_result(result, "q1"))
    assert f"- {said}" in text and "- hybrid/fusion (fusion, depth 10): d1 4; d1#unit:doc 4 (lost here)" in text
