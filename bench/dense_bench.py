"""Dense encoding throughput: the harness's DenseRetriever vs calling sentence-transformers directly, same model
and batch size, side by side in one process (the harness's cache is off so both really encode).

  python bench/dense_bench.py [--passages 400] [--batch-size 64]
Passages are the bundled demo's chunks, repeated with a counter so no two are equal."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from harness.text.chunking import chunk_documents  # noqa: E402
from harness.config.schema import ChunkingConfig, CorpusConfig  # noqa: E402
from harness.io.documents import load_corpus  # noqa: E402
from harness.retrievers import BuildContext, build_retriever  # noqa: E402
from harness.retrievers.dense import load_sentence_transformer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    docs = load_corpus(CorpusConfig(path=ROOT / "goldsets/demo/corpus.jsonl"))
    base = chunk_documents(docs, ChunkingConfig(strategy="sentences", size=3))
    chunks = [base[i % len(base)] for i in range(args.passages)]
    texts = [f"{c.index_text} ({i})" for i, c in enumerate(chunks)]
    model = load_sentence_transformer("bundled:all-MiniLM-L6-v2")
    model.encode(texts[:32], batch_size=args.batch_size)  # warm-up for both
    t0 = time.perf_counter()
    model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True)
    direct = time.perf_counter() - t0
    retriever = build_retriever({"kind": "dense", "batch_size": args.batch_size, "cache": False},
                                BuildContext(progress=False))
    retriever._model = model  # the same loaded model: the comparison is of the encoding path only
    t0 = time.perf_counter()
    retriever._encode(texts, "")
    ours = time.perf_counter() - t0
    print(f"{args.passages} passages, batch {args.batch_size}: sentence-transformers {args.passages / direct:.1f}/s, "
          f"harness {args.passages / ours:.1f}/s, harness/direct throughput {direct / ours:.3f}")


if __name__ == "__main__":
    main()
