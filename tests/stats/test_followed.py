"""``compare`` of a composite against its children: per query, the child it followed (``stats.followed``), on
constructed rankings whose reciprocal ranks are worked out by hand."""

from __future__ import annotations

from composites import run
from harness.api import compare

A = {"q1": ["d1", "d3"], "q2": ["d2", "d1"], "q3": ["d2", "d3", "d1"]}  # doc rr@10: 1, 1/2, 1/3
B = {"q1": ["d2", "d1"], "q2": ["d2", "d1"], "q3": ["d1"]}  # 1/2, 1/2, 1
QUERIES = ("q1", "q2", "q3")


def test_compare_says_which_child_each_query_followed(tmp_path):
    children = [{"kind": "stagefixed", "ranking": A}, {"kind": "stagefixed", "ranking": B, "weight": 1.0}]
    # RRF (k 60): q1 d1 = 1/61 + 1/62 > d2 = 1/61 -> rr 1, as A; q2 both lists alike -> d2, d1: rr 1/2, as both;
    # q3 d1 = 1/63 + 1/61 > d2 = 1/61 -> rr 1, as B
    _, hybrid = run(tmp_path / "h", {"kind": "hybrid", "children": children}, name="hybrid", queries=QUERIES)
    _, a = run(tmp_path / "a", {"kind": "stagefixed", "ranking": A}, name="a", queries=QUERIES)
    _, b = run(tmp_path / "b", {"kind": "stagefixed", "ranking": B}, name="b", queries=QUERIES)
    c = compare([hybrid, a, b], metrics=["doc.rr@10"])
    f = c.followed["hybrid"]
    assert f["metric"] == "doc.rr@10"
    assert f["children"] == {"stagefixed": "a", "stagefixed#2": "b"}
    assert f["queries"] == {"q1": "stagefixed", "q2": "all", "q3": "stagefixed#2"}
    assert f["counts"] == {"stagefixed": 1, "stagefixed#2": 1, "all": 1}
    assert c.to_dict()["followed"] == c.followed
    assert [r.value("doc", "rr@10") for r in hybrid.queries] == [1.0, 0.5, 1.0]
    # two runs that are not a composite and its children: nothing said
    assert compare([a, b], metrics=["doc.rr@10"]).followed == {}


def test_the_outputs_say_it(tmp_path):
    from harness.render.compare_view import to_markdown

    _, hybrid = run(tmp_path / "h", {"kind": "hybrid", "children": [{"kind": "stagefixed", "ranking": A},
                                                                     {"kind": "stagefixed", "ranking": B}]},
                    name="hybrid", queries=QUERIES)
    _, a = run(tmp_path / "a", {"kind": "stagefixed", "ranking": A}, name="a", queries=QUERIES)
    text = to_markdown(compare([a, hybrid], metrics=["doc.rr@10"]))
    # b is not compared: q1 (1 = 1) and q2 (1/2 = 1/2) equal a's; q3 (1 > 1/3) is above it
    assert "hybrid on doc.rr@10 followed stagefixed in 2 queries, above every child in 1 query" in text
    assert "- above: 1 (q3)" in text
