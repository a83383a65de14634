"""Run the SciFact configs and print them next to the published numbers (see ../shared/datasets/scifact/SOURCE.md).

  python bench/scifact.py [bm25 dense hybrid reranked]
Timings include index building; whether the embedding cache was warm is printed per run."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.cache import ArrayCache  # noqa: E402
from harness.config import load_config  # noqa: E402
from harness.experiment import run_experiment  # noqa: E402
from harness.report import write_outputs  # noqa: E402

PUBLISHED = {"bm25": "0.665 (BEIR) / 0.679 (Anserini flat)", "dense": "0.674 (MTEB all-MiniLM-L6-v2)",
             "hybrid": "above both children", "reranked": "-"}


def main() -> None:
    kinds = sys.argv[1:] or ["bm25", "dense", "hybrid", "reranked"]
    if not (ROOT.parent / "shared" / "datasets" / "scifact").is_dir():
        sys.exit("../shared/datasets/scifact is not present")
    rows = []
    for kind in kinds:
        cfg = load_config(ROOT / "configs" / f"scifact-{kind}.yaml")
        warm = bool(ArrayCache(Path(".harness-cache")).info())
        t0 = time.perf_counter()
        result = run_experiment(cfg, progress=True)
        wall = time.perf_counter() - t0
        write_outputs(result, cfg.output_dir())
        s = result["summary"]["doc"]
        rows.append((kind, s["ndcg@10"], s["recall@100"], s["rr@10"], PUBLISHED[kind], wall, warm))
    print(f"{'config':<10} {'nDCG@10':>8} {'R@100':>7} {'MRR@10':>7}  {'published nDCG@10':<38} {'wall s':>7}  cache")
    for kind, ndcg, rec, rr, pub, wall, warm in rows:
        print(f"{kind:<10} {ndcg:8.4f} {rec:7.4f} {rr:7.4f}  {pub:<38} {wall:7.1f}  {'warm' if warm else 'cold'}")


if __name__ == "__main__":
    main()
