"""The search behind configs/scifact-tuned.yaml, on SciFact's train queries only (docs/tuning.md).

  python bench/scifact_grid.py [--windows SIZE] [--split train] [--kfold 5]

Three rankings, each made once by the retrievers the config names: BM25 (k1 0.9, b 0.4 or 0.75), the bundled MiniLM,
and late interaction re-scoring the top 100 of a min-max hybrid of the same two (with ``--windows SIZE``, the stage
reads each abstract as windows of SIZE words). Every grid point fuses them as the config's hybrid does
(``harness.fuse``: fusion minmax or zscore, BM25 and MiniLM lists at depth 100 or 200, the three weights on a 0.1
grid summing to 1), scored with ``harness.evaluate``. Prints the best points, and the k-fold estimate of the choice
by the rule of ``select_on.kfold`` (harness.pipeline.kfold.assign_folds; each fold's point chosen on the others)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import harness  # noqa: E402
from harness.config.schema import load_config  # noqa: E402
from harness.pipeline.kfold import assign_folds  # noqa: E402
from harness.pipeline.prepare import prepare  # noqa: E402
from harness.retrievers import BuildContext, build_retriever  # noqa: E402

BM25 = {"kind": "bm25", "backend": "fast", "k1": 0.9, "tokenizer": {"stopwords": "english", "stemmer": "porter"}}
DENSE = {"kind": "dense", "model": "bundled:all-MiniLM-L6-v2"}
METRIC = "ndcg@10"


def ranked(retriever, chunks, queries, depth: int) -> dict:
    retriever.index(chunks)
    return {r.query_id: {h.doc_id: h.score for h in r.hits} for r in retriever.retrieve(queries, depth)}


def cut(run: dict, depth: int) -> dict:
    """Each query's first ``depth`` hits (the lists are best first, as retrievers return them)."""
    return {q: dict(list(hits.items())[:depth]) for q, hits in run.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", type=int, default=None, help="the late-interaction stage's windows.size (words)")
    ap.add_argument("--split", default="train")
    ap.add_argument("--kfold", type=int, default=5)
    ap.add_argument("--top", type=int, default=5, help="best points printed")
    args = ap.parse_args()
    started = time.time()
    config = load_config(ROOT / "configs" / "scifact-tuned.yaml", [f"goldset.split={args.split}",
                                                                   "goldset.evidence=null"])
    prepared = prepare(config, log=lambda msg: None)
    chunks, queries = prepared.chunks, prepared.gold.queries
    qrels: dict = {}
    for j in prepared.gold.judgments:
        qrels.setdefault(j.query_id, {})[j.doc_id] = j.relevance
    context = BuildContext(progress=False)
    stage = {"type": "late-interaction", **({"windows": {"size": args.windows}} if args.windows else {})}
    dense = ranked(build_retriever(DENSE, context), chunks, queries, 200)
    bm25, late = {}, {}
    for b in (0.4, 0.75):
        bm25[b] = ranked(build_retriever({**BM25, "b": b}, context), chunks, queries, 200)
        inner = {"kind": "hybrid", "fusion": "minmax", "children": [{**BM25, "b": b}, DENSE]}
        late[b] = ranked(build_retriever({"kind": "reranked", "top_n": 100, "stage": stage, "child": inner}, context),
                         chunks, queries, 100)
        print(f"b {b}: BM25 {harness.evaluate(qrels, bm25[b], [METRIC]).mean()[METRIC]:.4f}, late interaction "
              f"{harness.evaluate(qrels, late[b], [METRIC]).mean()[METRIC]:.4f}", flush=True)
    print(f"MiniLM {harness.evaluate(qrels, dense, [METRIC]).mean()[METRIC]:.4f} "
          f"({time.time() - started:.0f}s)", flush=True)
    weights = [(a / 10, c / 10, round(1 - a / 10 - c / 10, 1)) for a in range(11) for c in range(11 - a)]
    points, values = [], []
    for b in (0.4, 0.75):
        for fusion in ("minmax", "zscore"):
            for depth in (100, 200):
                lists = [cut(bm25[b], depth), cut(dense, depth), late[b]]
                for w in weights:
                    runs = [run for run, x in zip(lists, w) if x > 0]  # a weight of 0: the config without that child
                    fused = (runs[0] if len(runs) == 1 else  # one list: that retriever alone
                             harness.fuse(runs, fusion, weights=[x for x in w if x > 0]))
                    per_query = harness.evaluate(qrels, fused, [METRIC]).per_query()
                    points.append({"b": b, "fusion": fusion, "depth": depth, "weights": w})
                    values.append([per_query.get(q.query_id, {}).get(METRIC, 0.0) for q in queries])
    values = np.asarray(values)
    means = [math.fsum(v) / len(v) for v in values]
    order = np.argsort(-np.asarray(means), kind="stable")
    print(f"{len(points)} points ({time.time() - started:.0f}s); best on {args.split}:")
    for i in order[: args.top]:
        print(f"  {means[i]:.4f}  {points[i]}")
    folds = assign_folds([q.query_id for q in queries], args.kfold, 0)
    train_means, held_means = [], []
    for f in range(args.kfold):
        held = folds == f
        fold_train = [math.fsum(v[~held]) / (~held).sum() for v in values]
        chosen = int(np.argmax(fold_train))  # the first in grid order on equal means
        train_means.append(fold_train[chosen])
        held_means.append(math.fsum(values[chosen][held]) / held.sum())
        print(f"  fold {f + 1}: {points[chosen]} train {fold_train[chosen]:.4f} held-out {held_means[-1]:.4f}")
    print(f"{args.kfold}-fold: mean train {np.mean(train_means):.4f}, held-out {np.mean(held_means):.4f}, "
          f"optimism gap {np.mean(train_means) - np.mean(held_means):+.4f}")


if __name__ == "__main__":
    main()
