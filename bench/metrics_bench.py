"""Metric engine throughput vs pytrec_eval (and ranx, if installed), side by side in one process.

Workload (issue 4): Q queries x 100 hits, ~5 graded relevant each; ap, rr@10, ndcg@10, precision@10, recall@100.
  python bench/metrics_bench.py [--queries 100000] [--files]   (--files also times harness eval on TREC files)
Prints queries/s and ratios; checks the engines agree on the means."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.metrics.engine import evaluate  # noqa: E402
from harness.core.runtable import Run, Qrels, offsets_of  # noqa: E402

OURS = ["ap", "rr@10", "ndcg@10", "precision@10", "recall@100"]
TREC = {"map": "ap", "recip_rank": "rr@10", "ndcg_cut_10": "ndcg@10", "P_10": "precision@10", "recall_100": "recall@100"}


def make(n_queries: int, depth: int = 100, n_docs: int = 1_000_000, seed: int = 0):
    rng = np.random.default_rng(seed)
    doc_vocab = np.array([f"d{i:07d}" for i in range(n_docs)], dtype=object)  # sorted by construction
    codes = np.sort(rng.integers(0, n_docs, size=(n_queries, depth)), axis=1)
    # de-duplicate within a row by nudging repeats (rare at this density)
    codes = np.where(np.diff(codes, axis=1, prepend=-1) == 0, (codes + 1) % n_docs, codes)
    # float32-exact scores: trec_eval compares in single precision, so float64-only differences would tie there
    scores = np.sort(rng.random((n_queries, depth)).astype(np.float32).astype(np.float64), axis=1)[:, ::-1]
    query_ids = np.array([f"q{i}" for i in range(n_queries)], dtype=object)
    run = Run(query_ids, offsets_of(np.full(n_queries, depth)), doc_vocab, codes.ravel().astype(np.int64),
                      scores.ravel().copy())
    n_rel = 5
    # ~3 of 5 relevant are retrieved (random ranks), 2 are elsewhere in the collection
    picked = np.stack([rng.choice(depth, 3, replace=False) for _ in range(n_queries)])
    rel_codes = np.concatenate([np.take_along_axis(codes, picked, 1), rng.integers(0, n_docs, (n_queries, 2))], 1)
    grades = rng.integers(1, 4, size=(n_queries, n_rel))
    qrels = Qrels(query_ids, offsets_of(np.full(n_queries, n_rel)), doc_vocab[rel_codes.ravel()], grades.ravel(),
                  doc_vocab, rel_codes.ravel().astype(np.int64))  # encoded against the corpus, as in a harness run
    return run, qrels


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    if sys.argv[1:2] == ["--script"]:
        res = pytrec_script(Path(sys.argv[2]), Path(sys.argv[3]))
        for name in TREC:
            print(f"{name}\tall\t{sum(v[name] for v in res.values()) / len(res):.6f}")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--files", action="store_true", help="also compare file-to-numbers: harness eval vs a script")
    args = ap.parse_args()
    n = args.queries
    run, qrels = make(n)
    print(f"workload: {n} queries x 100 hits, 5 graded relevant each; metrics {', '.join(OURS)}")

    table, t_ours = timed(lambda: evaluate(qrels, run, OURS))
    print(f"harness engine (in-memory columnar run): {t_ours:.2f} s, {n / t_ours:,.0f} queries/s")

    import pytrec_eval
    run_dict, t_conv = timed(lambda: {str(q): {str(run.doc_vocab[c]): float(s) for c, s in zip(
        run.doc_codes[run.offsets[i]:run.offsets[i + 1]], run.scores[run.offsets[i]:run.offsets[i + 1]])}
        for i, q in enumerate(run.query_ids)})
    qrels_dict = qrels.to_dict()
    ref, t_ref = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels_dict, set(TREC)).evaluate(run_dict))
    print(f"pytrec_eval (from its dict-of-dicts; building the dicts took {t_conv:.1f} s more): {t_ref:.2f} s, "
          f"{n / t_ref:,.0f} queries/s")
    print(f"ratio harness / pytrec_eval: {t_ref / t_ours:.1f}x")
    means = table.mean()
    for trec_name, name in TREC.items():
        if trec_name == "recip_rank":
            continue  # trec_eval's recip_rank has no cutoff; rr@10 is timed on both sides, not compared
        theirs = sum(v[trec_name] for v in ref.values()) / len(ref)
        assert abs(theirs - means[name]) < 1e-9, (name, theirs, means[name])
    print("means of ap, ndcg@10, precision@10, recall@100 agree with pytrec_eval to 1e-9")

    try:
        import ranx  # noqa: F401
    except ImportError:
        print("ranx: not installed (pip install ranx to add it to this table)")
    else:
        from ranx import Qrels as RQ, Run as RR, evaluate as revaluate
        rq, rr = RQ(qrels_dict), RR(run_dict)
        revaluate(rq, rr, ["ndcg@10"])  # numba compiles on first call; not timed
        _, t_ranx = timed(lambda: revaluate(rq, rr, ["map", "mrr@10", "ndcg@10", "precision@10", "recall@100"]))
        print(f"ranx: {t_ranx:.2f} s, {n / t_ranx:,.0f} queries/s; ratio harness / ranx: {t_ranx / t_ours:.1f}x")

    if args.files:
        with tempfile.TemporaryDirectory() as tmp:
            run_path, qrels_path = Path(tmp) / "run.trec", Path(tmp) / "qrels.txt"
            with run_path.open("w") as fh:
                for q, docs in run_dict.items():
                    fh.writelines(f"{q} Q0 {d} {r} {s:.6f} bench\n" for r, (d, s) in enumerate(docs.items(), 1))
            with qrels_path.open("w") as fh:
                for q, docs in qrels_dict.items():
                    fh.writelines(f"{q} 0 {d} {g}\n" for d, g in docs.items())

            def harness_eval():
                from harness.io import fast_trec
                return evaluate(*fast_trec.read_qrels_and_run(qrels_path, run_path), OURS)

            _, t_he = timed(harness_eval)
            _, t_sc = timed(lambda: pytrec_script(qrels_path, run_path))
            print(f"files ({run_path.stat().st_size / 1e6:.0f} MB run), in this process: harness's readers + engine "
                  f"{t_he:.2f} s, pytrec_eval script {t_sc:.2f} s, ratio {t_sc / t_he:.1f}x")
            # The commands a user runs, each in a fresh interpreter (imports and output included); median of 3.
            measures = [arg for m in OURS for arg in ("-m", m)]
            cli = [sys.executable, "-m", "harness.cli.main", "eval", str(qrels_path), str(run_path), *measures,
                   "--format", "tsv"]
            script = [sys.executable, __file__, "--script", str(qrels_path), str(run_path)]
            t_cli = median_time(lambda: subprocess.run(cli, check=True, stdout=subprocess.DEVNULL))
            t_scr = median_time(lambda: subprocess.run(script, check=True, stdout=subprocess.DEVNULL))
            print(f"as commands (median of 3): harness eval {t_cli:.2f} s, python pytrec_eval script {t_scr:.2f} s, "
                  f"ratio {t_scr / t_cli:.1f}x")


def median_time(fn, repeats: int = 3) -> float:
    return sorted(timed(fn)[1] for _ in range(repeats))[repeats // 2]


def pytrec_script(qrels_path: Path, run_path: Path):
    """What a user would write: parse both files into dicts, evaluate with pytrec_eval."""
    import pytrec_eval

    qd, rd = {}, {}
    with qrels_path.open() as fh:
        for line in fh:
            q, _, d, g = line.split()
            qd.setdefault(q, {})[d] = int(g)
    with run_path.open() as fh:
        for line in fh:
            q, _, d, _, s, _ = line.split()
            rd.setdefault(q, {})[d] = float(s)
    return pytrec_eval.RelevanceEvaluator(qd, set(TREC)).evaluate(rd)


if __name__ == "__main__":
    main()
