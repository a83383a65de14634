"""The public Python API against what a notebook user would call instead: pytrec_eval and ranx, side by side.

  python bench/api_bench.py [--queries 30000,100000] [--depth 100] [--repeats 3]

Per size, one workload (Q queries x depth hits, 5 graded relevant each, 3 of them retrieved; scores distinct within
a query, so no tie rule can make engines differ) is timed through each path, the paths interleaved in every
repetition and the best of the repetitions kept (the machine may be shared: ratios measured side by side are what
count). Measures: ap, rr, ndcg@10, precision@10, recall@100 (trec_eval's map, recip_rank, ndcg_cut_10, P_10,
recall_100); every engine's means are asserted equal to harness's to 1e-9.

Paths (what the time covers):
  dicts      harness.evaluate(qrels_dict, run_dict)      vs pytrec_eval RelevanceEvaluator(qrels).evaluate(run)
                                                            and ranx evaluate(Qrels(qrels), Run(run))
  DataFrame  harness.evaluate(qrels_df, run_df)          vs the same pytrec_eval call on its dicts, ranx from_df
  Arrow      harness.evaluate(qrels_table, run_table)    vs the same pytrec_eval call on its dicts
  prebuilt   harness.evaluate(Qrels, Run) built before   vs pytrec_eval from dicts, and pytrec_eval's evaluate() with
                                                            its evaluator built before; ranx on prebuilt Qrels/Run
Peak memory: the highest resident memory above the process's level before the call, sampled every 2 ms.
CPU seconds: the process's CPU time during the call (every thread's: ranx's numba kernels run on several). On a
machine shared with other jobs, wall time swings with their load while CPU time of a one-thread call barely moves,
so both ratios are printed: to pytrec_eval's wall time and to its CPU time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import harness  # noqa: E402

OURS = ["ap", "rr", "ndcg@10", "precision@10", "recall@100"]
TREC = {"map": "ap", "recip_rank": "rr", "ndcg_cut_10": "ndcg@10", "P_10": "precision@10", "recall_100": "recall@100"}
RANX = {"map": "ap", "mrr": "rr", "ndcg@10": "ndcg@10", "precision@10": "precision@10", "recall@100": "recall@100"}


def make(n_queries: int, depth: int = 100, n_docs: int = 1_000_000, seed: int = 0):
    """(qrels dict, run dict) with fresh str objects everywhere, as json.load would give them."""
    rng = np.random.default_rng(seed)
    codes = np.sort(rng.integers(0, n_docs, size=(n_queries, depth)), axis=1)
    codes = np.where(np.diff(codes, axis=1, prepend=-1) == 0, -1, codes)  # a repeat in a row is dropped below
    scores = 1.0 - np.arange(depth) / depth - rng.random((n_queries, 1)) * 1e-3  # distinct within each query
    picked = np.stack([rng.choice(depth, 3, replace=False) for _ in range(n_queries)])
    run, qrels = {}, {}
    for i in range(n_queries):
        row = codes[i]
        run[f"q{i}"] = {f"d{c:07d}": float(s) for c, s in zip(row.tolist(), scores[i].tolist()) if c >= 0}
        judged = [row[j] for j in picked[i] if row[j] >= 0] + rng.integers(0, n_docs, 2).tolist()
        qrels[f"q{i}"] = {f"d{c:07d}": int(g) for c, g in zip(judged, rng.integers(1, 4, len(judged)))}
    return json.loads(json.dumps(qrels)), json.loads(json.dumps(run))


def frames(qrels: dict, run: dict):
    import pandas as pd

    qrels_df = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                            columns=["query_id", "doc_id", "relevance"])
    run_df = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                          columns=["query_id", "doc_id", "score"])
    return qrels_df, run_df


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measured(fn):
    """(result, seconds, peak resident bytes above the start, CPU seconds)."""
    gc.collect()
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except ImportError:
        pass
    base, peak, done = rss(), [0], threading.Event()

    def sample():
        while not done.wait(0.002):
            peak[0] = max(peak[0], rss())

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    done.set()
    watcher.join()
    return out, elapsed, max(peak[0], rss()) - base, cpu


def pytrec_means(qrels: dict, run: dict, evaluator=None) -> dict:
    import pytrec_eval

    evaluator = evaluator or pytrec_eval.RelevanceEvaluator(qrels, set(TREC))
    per_query = evaluator.evaluate(run)
    return {TREC[m]: sum(v[m] for v in per_query.values()) / len(per_query) for m in TREC}


def ranx_means(qrels, run) -> dict:
    from ranx import evaluate

    return {RANX[m]: float(v) for m, v in evaluate(qrels, run, list(RANX), make_comparable=False).items()}


def harness_means(qrels, run) -> dict:
    return harness.evaluate(qrels, run, OURS).mean()


def paths(qrels: dict, run: dict, with_ranx: bool):
    """(path, engine, what is timed, function) for every line of the table; built inputs are built here, once."""
    import pyarrow as pa
    import pytrec_eval

    qrels_df, run_df = frames(qrels, run)
    qrels_table, run_table = pa.Table.from_pandas(qrels_df), pa.Table.from_pandas(run_df)
    built_qrels, built_run = harness.Qrels.from_dict(qrels), harness.Run.from_dict(run)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC))
    out = [
        ("dicts", "pytrec_eval", "RelevanceEvaluator(qrels).evaluate(run)", lambda: pytrec_means(qrels, run)),
        ("dicts", "harness", "evaluate(qrels_dict, run_dict)", lambda: harness_means(qrels, run)),
        ("DataFrame", "harness", "evaluate(qrels_df, run_df)", lambda: harness_means(qrels_df, run_df)),
        ("Arrow", "harness", "evaluate(qrels_table, run_table)", lambda: harness_means(qrels_table, run_table)),
        ("prebuilt", "pytrec_eval", "evaluator.evaluate(run) (evaluator built before)",
         lambda: pytrec_means(qrels, run, evaluator)),
        ("prebuilt", "harness", "evaluate(Qrels, Run) (built before)", lambda: harness_means(built_qrels, built_run)),
    ]
    if with_ranx:
        import ranx

        r_qrels, r_run = ranx.Qrels(qrels), ranx.Run(run)
        ids = {"query_id": object, "doc_id": object}  # ranx asserts object columns (pandas 3 makes them str)
        qrels_odf, run_odf = qrels_df.astype(ids), run_df.astype(ids)
        out += [
            ("dicts", "ranx", "evaluate(Qrels(qrels), Run(run))", lambda: ranx_means(ranx.Qrels(qrels), ranx.Run(run))),
            ("DataFrame", "ranx", "evaluate(Qrels.from_df, Run.from_df)", lambda: ranx_means(
                ranx.Qrels.from_df(qrels_odf, "query_id", "doc_id", "relevance"),
                ranx.Run.from_df(run_odf, "query_id", "doc_id", "score"))),
            ("prebuilt", "ranx", "evaluate(qrels, run) (built before)", lambda: ranx_means(r_qrels, r_run)),
        ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", default="30000,100000", help="sizes, comma-separated")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-ranx", action="store_true")
    args = ap.parse_args()
    with_ranx = not args.no_ranx
    if with_ranx:
        try:
            import ranx  # noqa: F401
        except ImportError:
            print("ranx is not installed (pip install 'rag-harness[bench]'): its columns are left out")
            with_ranx = False
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{started}; {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"measures {', '.join(OURS)}; best of {args.repeats}, paths interleaved")
    for n in (int(x) for x in args.queries.split(",")):
        qrels, run = make(n, args.depth)
        lines = paths(qrels, run, with_ranx)
        best = {i: (float("inf"), 0, float("inf")) for i in range(len(lines))}
        reference = harness_means(qrels, run)
        for rep in range(args.repeats + 1):  # the first round warms up (imports, ranx's JIT) and is not counted
            for i, (path, engine, _, fn) in enumerate(lines):
                means, seconds, peak, cpu = measured(fn)
                for m in OURS:
                    assert abs(means[m] - reference[m]) <= 1e-9, (path, engine, m, means[m], reference[m])
                if rep:
                    best[i] = (min(best[i][0], seconds), max(best[i][1], peak), min(best[i][2], cpu))
        trec, trec_cpu = next(best[i][::2] for i, line in enumerate(lines) if line[:2] == ("dicts", "pytrec_eval"))
        print(f"\n{n:,} queries x {args.depth} hits ({sum(map(len, run.values())):,} hits, "
              f"{sum(map(len, qrels.values())):,} judgments); means equal to 1e-9 across engines")
        print(f"{'path':<10} {'engine':<12} {'seconds':>8} {'vs pytrec_eval':>15} {'CPU s':>7} {'CPU vs':>7} "
              f"{'peak MB':>8}  what is timed")
        for i, (path, engine, what, _) in enumerate(lines):
            seconds, peak, cpu = best[i]
            print(f"{path:<10} {engine:<12} {seconds:>8.3f} {trec / seconds:>14.2f}x {cpu:>7.3f} "
                  f"{trec_cpu / cpu:>6.2f}x {peak / 2**20:>8.0f}  {what}")
        print("(vs pytrec_eval: pytrec_eval's time from its dicts, RelevanceEvaluator(qrels).evaluate(run), divided "
              "by this line's time; CPU vs: the same with CPU seconds; best of the repetitions each)")


if __name__ == "__main__":
    main()
