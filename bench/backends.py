"""Vector backends side by side on SciFact (BEIR test split, 5,183 abstracts, 300 queries): index build time,
queries/s and nDCG@10 of `dense` (faiss) and `qdrant`, `pgvector`, `lancedb`, `chroma`, `milvus` in build mode,
exact search and one ANN index each (Chroma has only HNSW) (ANN recall@10 against exact from results.json), in one run.

  python bench/backends.py [--data ../shared/datasets/scifact] [--cache DIR (default: harness's cache folder)] [--exact-only]
                           [--only chroma,milvus (rows whose label starts with one of these)]

Embeddings come from the harness cache (encoded once by the first run, about 3 minutes on 2 cores; every other
row reuses them), so "build" is the backend's own work: creating and filling the collection/table and its index.
A backend whose client is not installed is shown as such. pgvector runs on a PostgreSQL started from pip
(pgserver) in a temporary folder; qdrant in local mode, which searches exactly whatever its HNSW settings; chroma
embedded and milvus as Milvus Lite, each in a temporary folder."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from harness.cache import default_cache_dir  # noqa: E402
from harness.config.schema import parse_config  # noqa: E402
from harness.pipeline.assemble import run_experiment  # noqa: E402
from harness.retrievers import BuildContext  # noqa: E402

ROWS = [
    ("dense flat", {"kind": "dense"}, None),
    ("dense hnsw", {"kind": "dense", "index": "hnsw"}, None),
    ("qdrant flat", {"kind": "qdrant"}, "qdrant_client"),
    ("pgvector flat", {"kind": "pgvector"}, "pgserver"),
    ("pgvector hnsw", {"kind": "pgvector", "index": "hnsw"}, "pgserver"),
    ("pgvector ivfflat", {"kind": "pgvector", "index": "ivfflat", "ivfflat": {"lists": 72, "probes": 8}}, "pgserver"),
    ("lancedb flat", {"kind": "lancedb"}, "lancedb"),
    ("lancedb ivf_hnsw_sq", {"kind": "lancedb", "index": "ivf_hnsw_sq"}, "lancedb"),
    ("lancedb fulltext", {"kind": "lancedb", "search": "fulltext"}, "lancedb"),
    ("chroma hnsw", {"kind": "chroma"}, "chromadb"),
    ("milvus flat", {"kind": "milvus"}, "milvus_lite"),
    ("milvus hnsw", {"kind": "milvus", "index": "hnsw"}, "milvus_lite"),
    ("milvus ivf_flat", {"kind": "milvus", "index": "ivf_flat", "nlist": 72, "nprobe": 8}, "milvus_lite"),
]


def config(data: Path, retriever: dict):
    return parse_config({
        "name": "scifact-backends", "corpus": {"path": str(data), "format": "beir"},
        "chunking": {"strategy": "none", "include_title": True},
        "goldset": {"path": str(data), "format": "beir", "split": "test"},
        "retriever": {"model": "bundled:all-MiniLM-L6-v2", **retriever} if retriever.get("search") != "fulltext"
        else retriever,
        "cutoff": {"k": 10}, "depth": 100, "metrics": ["ndcg@10", "recall@100"],
    }, "bench/backends.py", ROOT)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact")
    ap.add_argument("--cache", type=Path, default=default_cache_dir())
    ap.add_argument("--exact-only", action="store_true", help="only the exact rows (and fulltext)")
    ap.add_argument("--only", default="", help="comma-separated label prefixes: only those rows")
    args = ap.parse_args()
    only = tuple(p.strip() for p in args.only.split(",") if p.strip())
    if not args.data.is_dir():
        sys.exit(f"{args.data}: SciFact not found (give --data)")
    context = BuildContext(cache_dir=args.cache, progress=False)
    print(f"{'backend':<22}{'build s':>9}{'queries/s':>11}{'nDCG@10':>9}{'R@100':>8}{'ANN R@10':>10}")
    for label, section, module in ROWS:
        if args.exact_only and section.get("index", "flat") != "flat" or only and not label.startswith(only):
            continue
        if module and importlib.util.find_spec(module) is None:
            print(f"{label:<22}  (not installed: {module})")
            continue
        result = run_experiment(config(args.data, section), progress=False, log=lambda m: None, context=context)
        t, doc = result.timings, result.summary.doc
        info = result.retriever_info or {}
        recall = info.get("ann_recall_at_10")
        print(f"{label:<22}{t.index_s:>9.2f}{t.queries_per_s:>11.1f}{doc['ndcg@10']:>9.4f}{doc['recall@100']:>8.4f}"
              f"{'' if recall is None else f'{recall:.4f}':>10}", flush=True)


if __name__ == "__main__":
    main()
