"""Chunk-level numbers before and after evidence units, and what the model receives (evidence recall, precision,
IoU in characters), on real data (docs/evidence.md has the table this prints):
- SciFact test: abstracts in 2-sentence chunks, the rationale sentences as evidence quotes (one unit per judgment);
- SQuAD v1.1 dev: the 48 whole articles in 120-word windows overlapping by 20, answer spans as evidence.

  python bench/evidence.py [--squad-queries 2000] [--kinds bm25 dense] [--sets scifact squad]
"Before" scores the same run with the rule that came before units (each chunk overlapping evidence a relevant item,
all of them counted), from the run's own judgments of its chunks."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from harness.config.schema import parse_config  # noqa: E402
from harness.pipeline.assemble import run_experiment  # noqa: E402
from harness.pipeline.levels import evaluate_levels  # noqa: E402
from verdicts import BM25, DATA, DENSE, scifact_config, squad_config, squad_goldset  # noqa: E402

CHUNK = ["recall@5", "precision@5", "ap", "ndcg@10"]
EVIDENCE = ["evidence_recall@5", "evidence_precision@5", "evidence_iou@5"]


def row(name: str, cfg: dict) -> None:
    started = time.perf_counter()
    result = run_experiment(parse_config(dict(cfg, metrics=CHUNK + EVIDENCE), name, ROOT), progress=False,
                            log=lambda m: None)
    store = result._hits  # the run's hits with the judgments of its chunks (the rule before units)
    errors = set(result.summary.counts.chunk.excluded_goldset_error_query_ids)
    before = evaluate_levels(store.doc_grades, store.chunk_grades, store.lists, store.window_k, CHUNK,
                             "exclude", errors).chunk  # (the configs here keep the default policy)
    after = result.summary.chunk
    means = before.mean()
    cells = [f"{means[m]:.4f} → {after[m]:.4f}" for m in CHUNK] + [f"{after[m]:.4f}" for m in EVIDENCE]
    n = result.summary.counts.chunk.evaluated_queries
    print(f"| {name} | {n} | " + " | ".join(cells) + f" | {time.perf_counter() - started:.0f} s |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--squad-queries", type=int, default=2000)
    ap.add_argument("--kinds", nargs="*", default=["bm25"], choices=["bm25", "dense", "hybrid"])
    ap.add_argument("--sets", nargs="*", default=["scifact", "squad"])
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit("../shared/datasets is not present")
    print("| run | queries | " + " | ".join(f"chunk {m} before → after" for m in CHUNK) + " | "
          + " | ".join(EVIDENCE) + " | time |")
    print("|---" * (3 + len(CHUNK) + len(EVIDENCE)) + "|")
    retrievers = {"bm25": BM25, "dense": DENSE,
                  "hybrid": {"kind": "hybrid", "fusion": "rrf", "rrf_k": 60, "children": [BM25, DENSE]}}
    scifact = scifact_config()
    with tempfile.TemporaryDirectory() as tmp:
        gold = squad_goldset(Path(tmp), args.squad_queries)
        squad = squad_config(gold)
        for kind in args.kinds:
            for name, cfg in (("scifact", scifact), ("squad", squad)):
                if name in args.sets:
                    row(f"{name}-{kind}", dict(cfg, name=f"{name}-{kind}", retriever=retrievers[kind]))


if __name__ == "__main__":
    main()
