"""Constructed composites for the stage-attribution tests: a registered kind (``stagefixed``) answering from a
table of rankings, a fake reranker stage scoring by a fixed order, and a one-query run of them on a tiny corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel, Field

import harness
from harness.config.schema import load_config
from harness.core.types import Hit, RankedList
from harness.pipeline.assemble import run_experiment

DOCS = [f"d{i}" for i in range(1, 9)]


class FixedConfig(BaseModel):
    kind: str = "stagefixed"
    ranking: dict[str, list[str]] = Field(description='query id -> "doc" (its first chunk) or "doc.n" (its n-th), '
                                                      'best first')


class Fixed:
    def __init__(self, cfg: FixedConfig, ctx):
        self.cfg = cfg

    def index(self, chunks):
        self.chunk: dict[str, str] = {}
        for c in sorted(chunks, key=lambda c: c.start):
            n = sum(1 for key in self.chunk if key.split(".")[0] == c.doc_id)
            self.chunk[c.doc_id if n == 0 else f"{c.doc_id}.{n + 1}"] = c.chunk_id

    def retrieve(self, queries, k):
        out = []
        for q in queries:
            names = self.cfg.ranking.get(q.query_id, [])[:k]
            out.append(RankedList(q.query_id, tuple(Hit(self.chunk[d], d.split(".")[0], float(len(names) - i), i + 1)
                                                    for i, d in enumerate(names))))
        return out


harness.register_retriever("stagefixed", FixedConfig, Fixed, "a fixed ranking per query (tests)")

RERANK_ORDER: dict[str, list[str]] = {}  # query id -> document ids in the fake reranker's order, best first


class FakeStage:
    """The reranker's second stage, scoring a candidate by its place in ``RERANK_ORDER`` (absent: last)."""

    def __init__(self, cfg, cache):
        pass

    def index(self, chunks):
        pass

    def score(self, queries, candidates, chunks):
        out = []
        for text, idx in zip(queries, candidates):
            order = RERANK_ORDER[text]
            out.append(np.array([-float(order.index(chunks[i].doc_id)) if chunks[i].doc_id in order else -99.0
                                 for i in idx]))
        return out


@pytest.fixture
def fake_reranker(monkeypatch):
    monkeypatch.setattr("harness.retrievers.compose.LateInteraction", FakeStage)
    RERANK_ORDER.clear()
    yield RERANK_ORDER


def fixed(ranking: list[str]) -> dict:
    return {"kind": "stagefixed", "ranking": {"q1": ranking}}


def run(tmp_path: Path, retriever: dict, k: int = 2, evidence: bool = False, name: str = "stages",
        queries: tuple[str, ...] = ("q1",)):
    """The first query's verdict and the Result of a run of ``retriever``; every query's one relevant document is d1."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "text": f"Document {d} says one thing. And then another."}) + "\n"
                              for d in DOCS))
    relevant = {"doc": "d1", "grade": 1}
    if evidence:
        relevant["evidence"] = [{"quote": "And then another."}]
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps({"id": q, "query": q, "relevant": [relevant]}) + "\n"
                                                 for q in queries))
    (tmp_path / "c.yaml").write_text(json.dumps({
        "name": name, "corpus": {"path": "corpus.jsonl"},
        "chunking": {"strategy": "sentences" if evidence else "none", "size": 1},
        "goldset": {"path": "gold.jsonl"}, "retriever": retriever, "cutoff": {"k": k}, "depth": 10}))
    result = run_experiment(load_config(tmp_path / "c.yaml"), progress=False, log=lambda m: None)
    return result.queries[0].verdict, result
