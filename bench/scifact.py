"""Run the SciFact configs and print them next to the published numbers (see ../shared/datasets/scifact/SOURCE.md).

  python bench/scifact.py [bm25 dense hybrid reranked]
Timings include index building; a run that had to build cache files (embeddings, token embeddings) is marked cold."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.cache import ArrayCache, default_cache_dir  # noqa: E402
from harness.config.schema import load_config  # noqa: E402
from harness.pipeline.assemble import run_experiment  # noqa: E402
from harness.render.outputs import write_outputs  # noqa: E402

PUBLISHED = {"bm25": "0.665 (BEIR) / 0.679 (Anserini flat)",
             "dense": "0.6451 (MTEB paper) / 0.674 (MAIR file)",
             "hybrid": "above both children", "reranked": "-"}
# all-MiniLM-L6-v2 on SciFact test as the MTEB paper evaluated it (embeddings-benchmark/mtebpaper,
# results/all-MiniLM-L6-v2/SciFact.json, mteb 0.0.2). The 0.67393 in the results repo's 1b0428f5.../SciFact.json
# (languages eng + fra) is also in no_revision_available/SciFact.json, marked "mteb_mair_domain": "Academic": a
# task converted from MAIR, not the MTEB paper's SciFact. Keys: the harness's metric names.
MTEB_PAPER_DENSE = {"ndcg@10": 0.64508, "recall@100": 0.925, "precision@10": 0.08833, "recall@10": 0.78333,
                    "ap@10": 0.59593, "ndcg@1": 0.50333}


def _cache_entries() -> int:
    return sum(int(kind["entries"]) for kind in ArrayCache(default_cache_dir()).info().values())


KINDS = ("bm25", "dense", "hybrid", "reranked")


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("kinds", nargs="*", metavar="KIND",
                    help=f"configs/scifact-KIND.yaml to run: {', '.join(KINDS)} (default: all)")
    kinds = ap.parse_args().kinds or list(KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        ap.error(f"unknown KIND {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    if not (ROOT.parent / "shared" / "datasets" / "scifact").is_dir():
        sys.exit("../shared/datasets/scifact is not present")
    rows, results = [], {}
    for kind in kinds:
        cfg = load_config(ROOT / "configs" / f"scifact-{kind}.yaml")
        before = _cache_entries()
        t0 = time.perf_counter()
        result = run_experiment(cfg, progress=True)
        wall = time.perf_counter() - t0
        built = _cache_entries() - before
        warm = "warm" if built == 0 else f"cold ({built} cache files built)"
        write_outputs(result, cfg.output_dir(), force=True)  # reports/scifact-*/: this script's own outputs
        s = results[kind] = result.summary.doc
        rows.append((kind, s["ndcg@10"], s["recall@100"], s["rr@10"], PUBLISHED[kind], wall, warm))
    if "dense" in results:
        print("dense against the MTEB paper's all-MiniLM-L6-v2 SciFact numbers (5 decimals published):")
        for name, published in MTEB_PAPER_DENSE.items():
            ours = results["dense"][name]
            print(f"  {name:<13} harness {ours:.5f}  MTEB paper {published:.5f}  "
                  f"{'same' if round(ours, 5) == published else f'differs by {ours - published:+.5f}'}")
    print(f"{'config':<10} {'nDCG@10':>8} {'R@100':>7} {'MRR@10':>7}  {'published nDCG@10':<38} {'wall s':>7}  cache")
    for kind, ndcg, rec, rr, pub, wall, warm in rows:
        print(f"{kind:<10} {ndcg:8.4f} {rec:7.4f} {rr:7.4f}  {pub:<38} {wall:7.1f}  {warm}")


if __name__ == "__main__":
    main()
