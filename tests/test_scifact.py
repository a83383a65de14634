"""BM25 on BEIR SciFact against the published baseline (skips without ../shared/datasets)."""


from conftest import ROOT, shared_dataset


def test_bm25_scifact_meets_the_published_ndcg(tmp_path):
    shared_dataset("scifact")
    from harness.config import load_config
    from harness.experiment import run_experiment

    result = run_experiment(load_config(ROOT / "configs/scifact-bm25.yaml"), progress=False, log=lambda m: None)
    doc = result["summary"]["doc"]
    assert len(result["queries"]) == 300
    assert doc["ndcg@10"] >= 0.665  # BEIR BM25; Anserini flat is 0.679
    assert doc["recall@100"] > 0.9
    for q in result["queries"]:  # the verdict/metric property on real data
        kind = q["verdict"]["kind"]
        assert (kind in ("ok", "buried_evidence")) == (q["metrics"]["chunk"]["hit@window"] == 1.0)
        assert (kind == "missing_document") == (q["metrics"]["doc"]["hit@window"] == 0.0)
