"""BM25 ``backend: fast`` side by side with bm25s on synthetic corpora (Zipf vocabulary), in the same run.

  python bench/bm25_bench.py [--chunks 100000 1000000] [--queries 1000] [--reference-chunks 20000]

For each size: index time from chunk texts (tokenising included) and ms/query at depth 10 and 100 for the harness
retriever (``retrieve``, hits made) and for bm25s (its own tokenizer with the same ``\\w+`` pattern, numpy backend,
one thread). Score agreement: on the first ``--reference-chunks`` chunks, the fast backend's top 10 against
rank-bm25's own (identical ids; largest score difference) and bm25s's top-10 overlap with rank-bm25 (bm25s uses
Lucene's idf, so its scores differ by design). Takes ~1.5 min and ~6 GB at 1M chunks: run it once, not in loops.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.core.types import Chunk, Query  # noqa: E402
from harness.retrievers.bm25 import BM25Config, BM25Retriever, RankBM25  # noqa: E402
from harness.retrievers.ranking import top_k  # noqa: E402


def corpus(n_chunks: int, n_queries: int, vocab: int = 50_000, seed: int = 0) -> tuple[list[str], list[str]]:
    """Chunk texts of 20-99 words and queries of 2-7 words, both drawn from a Zipf(1.07) vocabulary."""
    rng = np.random.default_rng(seed)
    probs = 1.0 / np.arange(1, vocab + 1) ** 1.07
    probs /= probs.sum()
    names = np.array([f"t{w}" for w in range(vocab)], dtype=object)
    lengths = rng.integers(20, 100, n_chunks)
    words = rng.choice(vocab, size=int(lengths.sum()), p=probs)
    # One join, then slices: a join per chunk would dominate the set-up at 1M chunks.
    big = " ".join(names[words].tolist())
    word_end = np.cumsum(np.fromiter(map(len, names), dtype=np.int64)[words] + 1)
    ends = word_end[np.cumsum(lengths) - 1] - 1
    starts = np.concatenate([[0], ends[:-1] + 1])
    texts = [big[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
    queries = [" ".join(names[rng.choice(vocab, size=int(rng.integers(2, 8)), p=probs)]) for _ in range(n_queries)]
    return texts, queries


def chunks_of(texts: list[str]) -> list[Chunk]:
    return [Chunk(f"c{i:07d}", f"d{i // 4}", 0, len(t), t, t) for i, t in enumerate(texts)]


class Clock:
    """Wall and CPU seconds: on a shared machine the CPU time is what the code costs, the wall what it took."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def time_harness(texts, queries, cfg) -> dict:
    chunks = chunks_of(texts)
    r = BM25Retriever(cfg)
    with Clock() as index:
        r.index(chunks)
    del chunks
    qs = [Query(f"q{i}", q) for i, q in enumerate(queries)]
    out = {"index": index}
    for depth in (10, 100):
        with Clock() as c:
            r.retrieve(qs, depth)
        out[depth] = c
    return out


def time_bm25s(texts, queries, cfg) -> dict:
    import bm25s

    with Clock() as index:
        tokens = bm25s.tokenize(texts, token_pattern=r"\w+", stopwords=None, show_progress=False)
        retriever = bm25s.BM25(k1=cfg.k1, b=cfg.b)
        retriever.index(tokens, show_progress=False)
    del tokens
    out = {"index": index}
    qtok = bm25s.tokenize(queries, token_pattern=r"\w+", stopwords=None, show_progress=False)
    for depth in (10, 100):
        with Clock() as c:
            retriever.retrieve(qtok, k=depth, show_progress=False, n_threads=1)
        out[depth] = c
    return out


def agreement(texts, queries, cfg) -> str:
    """Top 10 of the fast backend and of bm25s against rank-bm25 on the same (small) corpus."""
    import bm25s

    analyzer = cfg.tokenizer.build()
    ref = RankBM25([analyzer(t) for t in texts], cfg)
    fast = BM25Retriever(cfg)
    fast.index(chunks_of(texts))
    ids = np.arange(len(texts))
    tokens = bm25s.tokenize(texts, token_pattern=r"\w+", stopwords=None, show_progress=False)
    b = bm25s.BM25(k1=cfg.k1, b=cfg.b)
    b.index(tokens, show_progress=False)
    qtok = bm25s.tokenize(queries, token_pattern=r"\w+", stopwords=None, show_progress=False)
    b_docs, _ = b.retrieve(qtok, k=10, show_progress=False, n_threads=1)
    same, worst, overlap = 0, 0.0, 0.0
    for q, b_top in zip(queries, b_docs):
        scores = ref.get_scores(analyzer(q))
        want = top_k(scores, 10, ids)
        (got,) = fast.retrieve([Query("q", q)], 10)
        got_idx = [int(h.chunk_id[1:]) for h in got.hits]
        same += got_idx == want.tolist()
        worst = max(worst, float(np.max(np.abs(np.array([h.score for h in got.hits]) - scores[want]))))
        overlap += len(set(b_top.tolist()) & set(want.tolist())) / len(want)
    n = len(queries)
    return (f"vs rank-bm25 on {len(texts):,} chunks, {n} queries: fast backend identical top-10 ids on {same}/{n}, "
            f"max |score diff| {worst:.1e}; bm25s top-10 overlap {overlap / n:.1%} (Lucene idf)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--reference-chunks", type=int, default=20_000)
    ap.add_argument("--reference-queries", type=int, default=100)
    ap.add_argument("--engines", nargs="+", choices=["harness", "bm25s"], default=["harness", "bm25s"])
    args = ap.parse_args()
    cfg = BM25Config(backend="fast")
    if args.reference_chunks:
        texts, queries = corpus(args.reference_chunks, args.reference_queries, seed=1)
        print(agreement(texts, queries, cfg), flush=True)
    print("wall (CPU) time; ms/q = per query, hits made")
    print(f"{'chunks':>10} {'engine':>8} {'index s':>14} {'ms/q@10':>14} {'ms/q@100':>14} {'peak RSS GB':>12}")
    for n in args.chunks:
        texts, queries = corpus(n, args.queries)
        for name, fn in [(e, {"harness": time_harness, "bm25s": time_bm25s}[e]) for e in args.engines]:
            got = fn(texts, queries, cfg)
            gc.collect()
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
            q = len(queries) / 1000
            cells = [f"{got['index'].wall:.1f} ({got['index'].cpu:.1f})"] + \
                [f"{got[d].wall / q:.2f} ({got[d].cpu / q:.2f})" for d in (10, 100)]
            print(f"{n:>10,} {name:>8} {cells[0]:>14} {cells[1]:>14} {cells[2]:>14} {rss:>12.1f}", flush=True)
        del texts
        gc.collect()


if __name__ == "__main__":
    main()
