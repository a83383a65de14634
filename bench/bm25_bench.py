"""BM25 ``backend: fast`` vs rank-bm25 (and bm25s, if installed) on a synthetic corpus, side by side.

  python bench/bm25_bench.py [--chunks 100000] [--queries 1000] [--reference-queries 50]
rank-bm25 takes ~0.3 s a query at 100k chunks, so it answers a sample of the queries; its throughput comes
from that sample. Top-10 agreement is checked on the sample."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.retrievers.bm25 import BM25Config, FastBM25, RankBM25  # noqa: E402
from harness.retrievers.ranking import top_k  # noqa: E402


def corpus(n_chunks: int, n_queries: int, vocab: int = 50_000, seed: int = 0):
    rng = np.random.default_rng(seed)
    # Zipf-like term frequencies, chunk lengths ~ 60 words: closer to text than uniform draws
    probs = 1.0 / np.arange(1, vocab + 1) ** 1.07
    probs /= probs.sum()
    lengths = rng.integers(20, 100, n_chunks)
    words = rng.choice(vocab, size=int(lengths.sum()), p=probs)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    docs = [[f"t{w}" for w in words[bounds[i]:bounds[i + 1]]] for i in range(n_chunks)]
    queries = [[f"t{w}" for w in rng.choice(vocab, size=int(rng.integers(2, 8)), p=probs)] for _ in range(n_queries)]
    return docs, queries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--reference-queries", type=int, default=50)
    args = ap.parse_args()
    docs, queries = corpus(args.chunks, args.queries)
    cfg = BM25Config()
    t0 = time.perf_counter(); fast = FastBM25(docs, cfg); t_fast_index = time.perf_counter() - t0
    t0 = time.perf_counter(); fast_top = [top_k(fast.get_scores(q), 10) for q in queries]
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter(); ref = RankBM25(docs, cfg); t_ref_index = time.perf_counter() - t0
    sample = queries[: args.reference_queries]
    t0 = time.perf_counter(); ref_top = [top_k(ref.get_scores(q), 10) for q in sample]
    t_ref = time.perf_counter() - t0
    same = sum(np.array_equal(a, b) for a, b in zip(ref_top, fast_top))
    qps_fast, qps_ref = len(queries) / t_fast, len(sample) / t_ref
    print(f"{args.chunks} chunks, {len(queries)} queries (rank-bm25 on the first {len(sample)})")
    print(f"index: fast {t_fast_index:.1f} s, rank-bm25 {t_ref_index:.1f} s")
    print(f"fast backend: {qps_fast:,.0f} queries/s; rank-bm25: {qps_ref:,.1f} queries/s; ratio {qps_fast / qps_ref:.0f}x")
    print(f"identical top-10 on {same} of {len(sample)} sampled queries")
    try:
        import bm25s
    except ImportError:
        print("bm25s: not installed (pip install bm25s to add it)")
        return
    retriever = bm25s.BM25(k1=cfg.k1, b=cfg.b)
    corpus_tokens = bm25s.tokenize([" ".join(d) for d in docs], stopwords=None, show_progress=False)
    retriever.index(corpus_tokens, show_progress=False)
    qtok = bm25s.tokenize([" ".join(q) for q in queries], stopwords=None, show_progress=False)
    t0 = time.perf_counter(); retriever.retrieve(qtok, k=10, show_progress=False, n_threads=1)
    t_b = time.perf_counter() - t0
    print(f"bm25s (its own idf; scores differ): {len(queries) / t_b:,.0f} queries/s; "
          f"ratio fast / bm25s {(len(queries) / t_fast) / (len(queries) / t_b):.2f}x")


if __name__ == "__main__":
    main()
