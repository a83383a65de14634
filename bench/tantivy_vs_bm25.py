"""Our BM25 against tantivy's (``kind: tantivy``) on the same chunks: how far rankings and scores differ.

    python bench/tantivy_vs_bm25.py              # the demo
    python bench/tantivy_vs_bm25.py --scifact /work/shared/datasets/scifact

Prints, per corpus: top-10 overlap (mean share of tantivy's top 10 in ours), how often the first hit is the same,
the Spearman correlation of the two score lists over the union of both top 10s (per query, mean), nDCG@10 of each,
index build time, queries/s and latency p95. Differences are expected: tantivy has its own analyzers and idf
(never negative) and float32 scores; ours follows rank-bm25 with the configured analyzer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.config.schema import parse_config  # noqa: E402
from harness.pipeline.assemble import run_experiment  # noqa: E402


def _spearman(a: dict, b: dict) -> float | None:
    keys = sorted(set(a) & set(b))
    if len(keys) < 3:
        return None
    ra = np.argsort(np.argsort([a[k] for k in keys]))
    rb = np.argsort(np.argsort([b[k] for k in keys]))
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def compare(name: str, base: dict, ours: dict, theirs: dict) -> None:
    runs = {}
    for label, retriever in (("bm25", ours), ("tantivy", theirs)):
        runs[label] = run_experiment(parse_config({**base, "name": f"{name}-{label}", "retriever": retriever},
                                                  "bench", ROOT), progress=False, log=lambda m: None)
    a, b = runs["bm25"], runs["tantivy"]
    overlap, first, rho = [], [], []
    for qa, qb in zip(a.queries, b.queries):
        ta, tb = [h.chunk_id for h in qa.hits[:10]], [h.chunk_id for h in qb.hits[:10]]
        if not tb:
            continue
        overlap.append(len(set(ta) & set(tb)) / len(tb))
        first.append(ta[:1] == tb[:1])
        sa = {h.chunk_id: h.score for h in qa.hits}
        sb = {h.chunk_id: h.score for h in qb.hits}
        r = _spearman(sa, {k: v for k, v in sb.items() if k in set(ta) | set(tb)})
        if r is not None:
            rho.append(r)
    print(f"{name}: {len(a.queries)} queries, {a.corpus.chunks} chunks")
    print(f"  top-10 overlap {np.mean(overlap):.3f}, same first hit {np.mean(first):.3f}, "
          f"score Spearman over shared hits {np.mean(rho) if rho else float('nan'):.3f}")
    for label, r in runs.items():
        print(f"  {label:8s} doc nDCG@10 {r.summary.doc['ndcg@10']:.4f}  index {r.timings.index_s:.2f}s  "
              f"{r.latency.queries_per_s:.0f} queries/s  p95 {r.latency.p95_ms:.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scifact", type=Path, help="a BEIR SciFact folder (with evidence_test.jsonl)")
    args = ap.parse_args()
    demo = ROOT / "goldsets" / "demo"
    compare("demo", {"corpus": {"path": str(demo / "corpus.jsonl")}, "chunking": {"strategy": "sentences", "size": 2},
                     "goldset": {"path": str(demo / "goldset.jsonl")}, "cutoff": {"k": 5}, "depth": 100,
                     "metrics": ["ndcg@10"]},
            {"kind": "bm25", "backend": "fast", "tokenizer": {"stemmer": "english"}}, {"kind": "tantivy"})
    if args.scifact:
        s = args.scifact
        compare("scifact", {"corpus": {"path": str(s), "format": "beir"},
                            "chunking": {"strategy": "none", "include_title": True},
                            "goldset": {"path": str(s), "format": "beir", "split": "test"},
                            "cutoff": {"k": 10}, "depth": 100, "metrics": ["ndcg@10"]},
                {"kind": "bm25", "backend": "fast", "k1": 0.9, "b": 0.4,
                 "tokenizer": {"stopwords": "english", "stemmer": "porter"}}, {"kind": "tantivy"})


if __name__ == "__main__":
    main()
