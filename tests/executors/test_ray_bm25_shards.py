"""BM25 ``backend: fast`` cut into 3 shards on a local Ray gives one process's top 1000, ids and scores (issue 37's
recipe for MS MARCO passage on a cluster, at a size a test can run)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from clihelp import ROOT
from conftest import require_installed

from harness.config.schema import load_config
from harness.core.types import Chunk, Query
from harness.retrievers import BuildContext
from harness.retrievers.bm25 import BM25Config, BM25Retriever

require_installed("ray")

N_CHUNKS, N_QUERIES, DEPTH = 3_000, 24, 1_000


@pytest.fixture(scope="module")
def local_ray():
    import ray

    from harness.executors.ray_session import local_init_args

    before = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = "127.0.0.1:9"  # a private Ray, not a cluster this machine may belong to
    try:
        ray.init(**dict(local_init_args(), num_cpus=2))
    finally:
        if before is None:
            del os.environ["RAY_ADDRESS"]
        else:
            os.environ["RAY_ADDRESS"] = before
    yield ray
    ray.shutdown()


def _corpus() -> tuple[list[Chunk], list[Query]]:
    """Zipf-distributed words, ~56 a passage; each query 4 words of one passage and one of the vocabulary."""
    rng = np.random.default_rng(37)
    vocab = np.array([f"w{i}" for i in range(2_000)])
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()
    texts = [" ".join(rng.choice(vocab, max(1, int(rng.gamma(5.0, 56 / 5))), p=p)) for _ in range(N_CHUNKS)]
    chunks = [Chunk(f"p{i:05d}", f"p{i:05d}", 0, len(t), t, t) for i, t in enumerate(texts)]
    queries = [Query(f"q{j}", " ".join(list(rng.choice(texts[rng.integers(N_CHUNKS)].split(), 4))
                                        + [str(rng.choice(vocab))])) for j in range(N_QUERIES)]
    return chunks, queries


def test_three_shards_on_ray_give_one_process_top_1000(local_ray, tmp_path):
    from rank_bm25 import BM25Okapi

    from harness.executors.ray_actors import RayRetriever

    chunks, queries = _corpus()
    one = BM25Retriever(BM25Config(backend="fast"))
    one.index(chunks)
    expected = one.retrieve(queries, DEPTH)

    config = load_config(ROOT / "configs" / "demo-bm25.yaml", ["retriever.backend=fast"])
    config = config.model_copy(update={"executor": config.executor.model_copy(
        update={"kind": "ray", "shards": 3, "num_workers": 1})})
    remote = RayRetriever(local_ray, BM25Retriever(BM25Config(backend="fast")), config,
                          BuildContext(cache_dir=tmp_path / "cache", progress=False), batch_size=8)
    try:
        remote.index(chunks)
        got = remote.retrieve(queries, DEPTH)
    finally:
        remote.close()
    assert remote.placement == "sharded" and len(remote.groups) == 0  # closed: 3 actors, one slice each

    assert [r.query_id for r in got] == [q.query_id for q in queries]
    for a, b in zip(expected, got):
        assert len(a.hits) == len(b.hits) == DEPTH, a.query_id
        assert [h.chunk_id for h in b.hits] == [h.chunk_id for h in a.hits], a.query_id
        np.testing.assert_allclose([h.score for h in b.hits], [h.score for h in a.hits], rtol=0, atol=1e-6)
        assert [h.rank for h in b.hits] == list(range(1, DEPTH + 1))

    # The scores themselves, from the reference library: rank-bm25's BM25Okapi over the same tokens.
    reference = BM25Okapi([re.findall(r"\w+", c.text.lower()) for c in chunks])
    for q, lst in zip(queries[:3], got):
        scores = np.sort(reference.get_scores(re.findall(r"\w+", q.text.lower())))[::-1][:DEPTH]
        np.testing.assert_allclose([h.score for h in lst.hits], scores, rtol=0, atol=1e-6)
