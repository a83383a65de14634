import json

import numpy as np
import pytest

from harness.cache import ArrayCache, cache_key
from harness.core.errors import RetrieverError, RunFileError
from harness.executors.retrieval import retrieve_all
from harness.retrievers import BuildContext, build_retriever
from harness.retrievers.compose import fuse, normalise
from harness.core.types import Chunk, Document, Hit, Query, RankedList


def rl(qid, *pairs):
    return RankedList(qid, tuple(Hit(c, c.split("#")[0], s, r, 0, 1) for r, (c, s) in enumerate(pairs, 1)))


def test_rrf_sums_reciprocal_ranks_term_by_term():
    a = rl("q", ("x#0-1", 9.0), ("y#0-1", 5.0))
    b = rl("q", ("y#0-1", 0.9), ("z#0-1", 0.2), ("x#0-1", 0.1))
    fused = {h.chunk_id: h.score for h in fuse([a, b], [1.0, 1.0], "rrf", 60)}
    assert fused["x#0-1"] == pytest.approx(1 / 61 + 1 / 63)
    assert fused["y#0-1"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["z#0-1"] == pytest.approx(1 / 62)
    order = [h.chunk_id for h in fuse([a, b], [1.0, 1.0], "rrf", 60)]
    assert order == ["y#0-1", "x#0-1", "z#0-1"]


def test_weighted_minmax_and_zscore():
    a = rl("q", ("x#0-1", 10.0), ("y#0-1", 0.0))
    b = rl("q", ("y#0-1", 3.0), ("x#0-1", 1.0))
    fused = {h.chunk_id: h.score for h in fuse([a, b], [0.3, 0.7], "minmax", 60)}
    assert fused == pytest.approx({"x#0-1": 0.3 * 1 + 0.7 * 0, "y#0-1": 0.3 * 0 + 0.7 * 1})
    z = {h.chunk_id: h.score for h in fuse([a, b], [1, 1], "zscore", 60)}
    assert z == pytest.approx({"x#0-1": 1 + -1, "y#0-1": -1 + 1})


def test_normalisation_edge_cases():
    assert normalise(np.array([2.0, 2.0]), "minmax").tolist() == [1.0, 1.0]
    assert normalise(np.array([2.0, 2.0]), "zscore").tolist() == [0.0, 0.0]
    assert normalise(np.array([]), "minmax").tolist() == []
    empty = RankedList("q", ())
    fused = fuse([empty, rl("q", ("x#0-1", 1.0))], [1, 1], "minmax", 60)
    assert [(h.chunk_id, h.score, h.rank) for h in fused] == [("x#0-1", 1.0, 1)]


def chunks_of(texts):
    return [Chunk(f"d{i}#0-{len(t)}", f"d{i}", 0, len(t), t, t) for i, t in enumerate(texts)]


def test_hybrid_of_two_bm25_children_end_to_end():
    chunks = chunks_of(["rotate the api key", "billing invoices", "key rotation steps"])
    r = build_retriever({"kind": "hybrid", "children": [
        {"kind": "bm25", "weight": 2.0}, {"kind": "bm25", "variant": "plus", "depth": 2}]})
    r.index(chunks)
    (ranked,) = r.retrieve([Query("q", "rotate key")], 3)
    assert ranked.hits[0].chunk_id == "d0#0-18" and [h.rank for h in ranked.hits] == list(range(1, len(ranked.hits) + 1))


def test_cache_round_trip_and_corruption_rebuilds(tmp_path):
    messages = []
    cache = ArrayCache(tmp_path, log=messages.append)
    key = cache_key("model", ["a", "b"])
    calls = []
    build = lambda: calls.append(1) or {"vectors": np.arange(6, dtype=np.float32).reshape(2, 3)}
    first = cache.get_or_build("embeddings", key, build)
    again = cache.get_or_build("embeddings", key, build)
    assert len(calls) == 1 and np.array_equal(first["vectors"], again["vectors"])
    path = tmp_path / "embeddings" / f"{key}.npz"
    path.write_bytes(path.read_bytes()[:-10])  # truncated, as by a crash or a bad copy
    rebuilt = cache.get_or_build("embeddings", key, build)
    assert len(calls) == 2 and np.array_equal(rebuilt["vectors"], first["vectors"])
    assert "corrupt or incomplete" in messages[0]
    assert cache.info()["embeddings"]["entries"] == 1
    assert cache_key("model", ["a", "b"]) != cache_key("model", ["a", "c"])


def documents(**texts):
    return {d: Document(d, t) for d, t in texts.items()}


def test_external_jsonl_places_hits_by_chunk_span_text_or_document(tmp_path):
    docs = documents(d1="Alpha beta. Gamma delta.", d2="Other text.")
    chunks = [Chunk("d1#0-11", "d1", 0, 11, "Alpha beta.", "Alpha beta."),
              Chunk("d1#12-24", "d1", 12, 24, "Gamma delta.", "Gamma delta."),
              Chunk("d2#0-11", "d2", 0, 11, "Other text.", "Other text.")]
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q", "hits": [
        {"doc_id": "d1", "chunk_id": "d1#12-24", "score": 3}, {"doc_id": "d1", "text": "beta. Gamma", "score": 2},
        {"doc_id": "d2", "start": 0, "end": 5, "score": 1}, {"doc_id": "d2", "score": 0.5}]}) + "\n")
    r = build_retriever({"kind": "external", "path": str(run)}, BuildContext(documents=docs))
    r.index(chunks)
    (ranked,) = r.retrieve([Query("q", "x")], 10)
    assert [(h.chunk_id, h.start, h.end) for h in ranked.hits] == [
        ("d1#12-24", 12, 24), ("d1#6-17", 6, 17), ("d2#0-5", 0, 5), ("d2#0-11", 0, 11)]
    # Through the run: the same placement, and the spans that are not our chunks become the run's chunks.
    got = retrieve_all(build_retriever({"kind": "external", "path": str(run)}, BuildContext(documents=docs)),
                       chunks, [Query("q", "x")], 10, progress=False, kind="external", documents=docs)
    assert got.lists == [ranked]
    assert [c.chunk_id for c in got.chunks] == ["d1#0-11", "d1#12-24", "d2#0-11", "d1#6-17", "d2#0-5"]
    assert got.chunks[3].text == "beta. Gamma" and got.hits.skipped == 0


def test_external_reports_every_hit_it_cannot_place(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q", "hits": [{"doc_id": "ghost", "score": 1},
                                                         {"doc_id": "d1", "text": "not in it", "score": 1}]}) + "\n"
                   + "{broken\n")
    docs = documents(d1="hello")
    r = build_retriever({"kind": "external", "path": str(run)}, BuildContext(documents=docs))
    with pytest.raises(RunFileError, match=r"run.jsonl:2: not valid JSON"):
        r.index([])
    run.write_text(run.read_text().splitlines()[0] + "\n")
    with pytest.raises(RunFileError) as exc:  # unplaceable: fail (the default): every line, before any query
        build_retriever({"kind": "external", "path": str(run)}, BuildContext(documents=docs)).index([])
    assert exc.value.problems == [f"{run}:1: query 'q': document 'ghost' is not in the corpus",
                                  f"{run}:1: query 'q': hit text 'not in it' not found in document 'd1'"]
    # skip: the hits are kept as read, and the run drops and counts those of the queries it asks for
    r = build_retriever({"kind": "external", "path": str(run)}, BuildContext(documents=docs, unplaceable="skip"))
    got = retrieve_all(r, [], [Query("q", "x")], 10, progress=False, kind="external", documents=docs,
                       unplaceable="skip")
    assert got.lists == [RankedList("q", ())] and got.hits.skipped == 2
    assert dict(got.hits.by_reason) == {"unknown_document": 1, "text_not_found": 1}
    r = build_retriever({"kind": "external", "path": str(run)}, BuildContext(documents=docs, unplaceable="skip"))
    with pytest.raises(RetrieverError, match="2 hit\\(s\\) in 1 of 1 queries name no chunk of the corpus"):
        retrieve_all(r, [], [Query("q", "x")], 10, progress=False, kind="external", documents=docs)


def test_external_trec_run_through_the_pipeline(tmp_path):
    from harness.config.schema import parse_config
    from harness.pipeline.assemble import run_experiment

    (tmp_path / "c.jsonl").write_text('{"id": "a", "text": "one. two."}\n{"id": "b", "text": "three."}\n')
    (tmp_path / "g.jsonl").write_text('{"id": "q", "query": "x", "relevant": [{"doc": "a", "evidence": '
                                      '[{"quote": "two."}]}]}\n')
    (tmp_path / "run.trec").write_text("q Q0 b 1 2.0 sys\nq Q0 a 2 1.0 sys\n")
    cfg = parse_config({"name": "ext", "corpus": {"path": "c.jsonl"}, "goldset": {"path": "g.jsonl"},
                        "retriever": {"kind": "external", "path": "run.trec"}, "cutoff": {"k": 2}}, "t", tmp_path)
    result = run_experiment(cfg, progress=False, log=lambda m: None)
    assert result.summary.doc["rr@10"] == 0.5
    assert result.queries[0].verdict.kind == "ok"  # whole document "a" overlaps the evidence
