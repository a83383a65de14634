"""The local executor against the Ray executor on the same machine: BM25 (``backend: fast``) over a synthetic Zipf
corpus, the same queries, the placed lists compared hit for hit. Ray's start-up is timed on its own.

  python bench/ray_bench.py [--chunks 20000] [--queries 2000] [--workers 1 2] [--shards 1]
A sharded run needs a retriever with shards(n) (dense flat; BM25 once it has it)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.bm25_bench import corpus  # noqa: E402
from harness.config.schema import parse_config  # noqa: E402
from harness.core.types import Chunk, Query  # noqa: E402
from harness.executors import execute  # noqa: E402
from harness.retrievers import BuildContext, build_retriever  # noqa: E402


def _config(executor: dict, batch: int):
    return parse_config({"name": "bench", "corpus": {"path": "unused"}, "goldset": {"path": "unused"},
                         "retriever": {"kind": "bm25", "backend": "fast"}, "batch_size": batch,
                         "executor": executor})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=2_000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shards", type=int, default=1)
    args = ap.parse_args()
    docs, queries = corpus(args.chunks, args.queries)
    chunks = [Chunk(f"c{i}", f"d{i}", 0, len(t), t, t) for i, t in enumerate(" ".join(d) for d in docs)]
    qs = [Query(f"q{i}", " ".join(q)) for i, q in enumerate(queries)]
    context = BuildContext(progress=False)
    print(f"{args.chunks:,} chunks x {args.queries:,} queries, BM25 fast, batches of {args.batch}")

    def run(executor: dict):
        config = _config(executor, args.batch)
        t0 = time.perf_counter()
        done = execute(config, build_retriever(config.retriever, context), chunks, qs, context=context,
                       progress=False)
        return done, time.perf_counter() - t0

    local, wall = run({"kind": "local"})
    print(f"{'local':<24} wall {wall:6.2f} s  index {local.stages['index_s']:6.2f} s  retrieve "
          f"{local.stages['retrieve_s']:6.2f} s  {args.queries / local.stages['retrieve_s']:8.0f} q/s")
    import ray

    from harness.executors.ray_session import local_init_args

    t0 = time.perf_counter()
    ray.init(**local_init_args())
    print(f"{'ray start-up':<24} {time.perf_counter() - t0:6.2f} s (once; not in the rows below)")
    try:
        for workers in args.workers:
            remote, wall = run({"kind": "ray", "num_workers": workers, "shards": args.shards})
            same = remote.retrieved.lists == local.retrieved.lists
            s = remote.stages
            print(f"{f'ray, {workers} worker(s)':<24} wall {wall:6.2f} s  index {s['index_s']:6.2f} s  retrieve "
                  f"{s['retrieve_s']:6.2f} s  {args.queries / s['retrieve_s']:8.0f} q/s  "
                  f"({remote.record.placement}; lists identical: {same})")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
