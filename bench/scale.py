"""Scale benchmark (issue 14): `harness run` on synthetic corpora and `harness eval` on large TREC files, each in a
fresh subprocess whose wall time and peak RSS (``os.wait4``'s rusage of that child alone) are measured.

  python bench/scale.py                                  # small: 20k chunks x 2k queries
  python bench/scale.py --sizes 100k:10k,300k:10k,1m:10k  # chunks:queries pairs (k and m suffixes)
  python bench/scale.py --sizes 100k:100k --depth 100 --keep /tmp/scale   # keep the data and outputs
  python bench/scale.py --eval 100k:100,1m:10             # harness eval vs a pytrec_eval script: queries:depth
  python bench/scale.py --executor ray                    # hook for the Ray executor (see RAY below)

Runs: one chunk per document (chunking strategy none), ~``--words`` words a chunk drawn from a Zipf vocabulary
(rank r has probability ~ 1/r^1.1 over 50k words), BM25 ``backend: fast`` to ``--depth``. Each query is 5 words of
one document plus one random word, judged relevant to that document. Printed per size: wall, peak RSS, index and
retrieval time (queries/s), the rest (loading, metrics, diagnostics, writing), every output file's size; then a
growth table (each size against the first)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
VOCAB = 50_000
ZIPF_S = 1.1

# RAY: the Ray executor (engineer D, issue 14) plugs in here. ``--executor ray`` passes ``--executor ray`` to
# `harness run` once the command has the option, and should report Ray's start-up cost separately (e.g. from a
# ``timings.executor_start_s`` the run records); until then it stops with a clear message.
EXECUTORS = ("local", "ray")


def _count(text: str) -> int:
    text = text.lower().replace("_", "")
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def _pairs(spec: str) -> list[tuple[int, int]]:
    return [(_count(a), _count(b)) for a, b in (p.split(":") for p in spec.split(",") if p)]


def _words() -> np.ndarray:
    # Distinct, stopword-free, stem-stable tokens: "zq" + base-26 letters.
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out = []
    for i in range(VOCAB):
        s, n = "", i
        while True:
            s, n = letters[n % 26] + s, n // 26
            if n == 0:
                break
        out.append("zq" + s)
    return np.array(out, dtype=object)


def make_corpus(folder: Path, n_chunks: int, n_queries: int, words: int, seed: int = 0) -> None:
    """corpus.jsonl, goldset.jsonl and a config in ``folder``."""
    rng = np.random.default_rng(seed)
    vocab = _words()
    p = 1.0 / np.arange(1, VOCAB + 1) ** ZIPF_S
    p /= p.sum()
    lengths = rng.integers(words // 2, words * 3 // 2 + 1, n_chunks)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    tokens = rng.choice(VOCAB, size=int(offsets[-1]), p=p)
    with (folder / "corpus.jsonl").open("w") as fh:
        for i in range(n_chunks):
            fh.write(f'{{"id": "d{i:07d}", "text": "{" ".join(vocab[tokens[offsets[i]:offsets[i + 1]]])}"}}\n')
    targets = rng.integers(0, n_chunks, n_queries)
    with (folder / "goldset.jsonl").open("w") as fh:
        for q, d in enumerate(targets.tolist()):
            own = tokens[offsets[d]:offsets[d + 1]]
            picked = list(vocab[rng.choice(own, 5)]) + [vocab[rng.integers(0, VOCAB)]]
            fh.write(f'{{"id": "q{q:07d}", "query": "{" ".join(picked)}", '
                     f'"relevant": [{{"doc": "d{d:07d}", "grade": 1}}]}}\n')


def write_config(folder: Path, depth: int) -> Path:
    path = folder / "scale.yaml"
    path.write_text(f"name: scale\ncorpus: {{path: {folder / 'corpus.jsonl'}}}\nchunking: {{strategy: none}}\n"
                    f"goldset: {{path: {folder / 'goldset.jsonl'}}}\n"
                    f"retriever: {{kind: bm25, backend: fast}}\ncutoff: {{k: 10}}\ndepth: {depth}\n"
                    f"metrics: [ap, ndcg@10, rr@10, recall@{depth}]\n")
    return path


def measured(cmd: list[str], **kw) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in GB, exit code, CPU seconds) of one child process. CPU time (user + system) is
    printed too: on a shared machine it moves less than the wall time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, usage.ru_maxrss / 1e6, proc.returncode, usage.ru_utime + usage.ru_stime


def _timings(results: Path) -> dict:
    """The ``timings`` object of a results.json, found without parsing the (possibly huge) rest of it."""
    pattern = re.compile(rb'"timings":\s*(\{(?:[^{}]|\{[^{}]*\})*\})')  # one nested level: "stages"
    tail = b""
    with results.open("rb") as fh:
        while block := fh.read(1 << 20):
            found = pattern.search(tail + block)
            if found:
                return json.loads(found.group(1))
            tail = block[-4096:]
    return {}


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def bench_run(n_chunks: int, n_queries: int, args, work: Path) -> dict:
    folder = work / f"c{n_chunks}-q{n_queries}"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if not (folder / "goldset.jsonl").exists():
        make_corpus(folder, n_chunks, n_queries, args.words)
    made = time.perf_counter() - t0
    config, out = write_config(folder, args.depth), folder / "out"
    cmd = [sys.executable, "-m", "harness.cli.main", "run", str(config), "--out", str(out)]
    if args.executor == "ray":
        cmd += ["--executor", "ray"]
    with (folder / "stderr.txt").open("w") as log:  # a file, not a pipe: nothing blocks on a full pipe
        wall, rss, code, cpu = measured(cmd, stdout=subprocess.DEVNULL, stderr=log)
    if code != 0:
        print(f"  {n_chunks:,} x {n_queries:,}: harness run exited {code} after {wall:.1f} s ({rss:.2f} GB peak); "
              f"see {folder / 'stderr.txt'}")
        return {"chunks": n_chunks, "queries": n_queries, "wall": wall, "rss": rss, "failed": code}
    t = _timings(out / "results.json")
    files = {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.is_file() and p.name[0] != "."}
    index, retrieve = t.get("index_s", 0.0), t.get("retrieve_s", 0.0)
    row = {"chunks": n_chunks, "queries": n_queries, "wall": wall, "cpu": cpu, "rss": rss, "index": index,
           "retrieve": retrieve,
           "rest": wall - index - retrieve, "files": files, "timings": t}
    print(f"{n_chunks:,} chunks x {n_queries:,} queries (data made in {made:.1f} s): wall {wall:.1f} s "
          f"(CPU {cpu:.1f} s), peak RSS {rss:.2f} GB")
    print(f"  index {index:.1f} s ({n_chunks / max(index, 1e-9):,.0f} chunks/s); retrieve {retrieve:.1f} s "
          f"({n_queries / max(retrieve, 1e-9):,.0f} queries/s); load + metrics + diagnostics + outputs "
          f"{row['rest']:.1f} s ({n_queries / max(row['rest'], 1e-9):,.0f} queries/s)")
    extra = {k: v for k, v in t.items() if k not in ("index_s", "retrieve_s", "queries_per_s")}
    if extra:
        print(f"  more timings: {json.dumps(extra)}")
    print("  outputs: " + ", ".join(f"{name} {_mb(size)}" for name, size in files.items()))
    return row


def growth(rows: list[dict]) -> None:
    ok = [r for r in rows if "failed" not in r]
    if len(ok) < 2:
        return
    base = ok[0]
    print("\ngrowth against the first size:")
    print("| chunks x queries | wall | CPU | peak RSS | retrieve | results.json | report.html | x chunks | "
          "x queries | x wall | x RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in ok:
        f = r["files"]
        print(f"| {r['chunks']:,} x {r['queries']:,} | {r['wall']:.1f} s | {r['cpu']:.1f} s | {r['rss']:.2f} GB | {r['retrieve']:.1f} s "
              f"| {_mb(f.get('results.json', 0))} | {_mb(f.get('report.html', 0))} | "
              f"{r['chunks'] / base['chunks']:.1f} | {r['queries'] / base['queries']:.1f} | "
              f"{r['wall'] / base['wall']:.2f} | {r['rss'] / base['rss']:.2f} |")


# ---- harness eval on TREC files ----------------------------------------------------------------------------------

def bench_eval(n_queries: int, depth: int, work: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from metrics_bench import OURS, make  # noqa: E402

    stem = work / f"eval-q{n_queries}-d{depth}"
    run_path, qrels_path = stem.with_suffix(".run"), stem.with_suffix(".qrels")
    if not run_path.exists():
        run, qrels = make(n_queries, depth=depth)
        docs, qids = run.doc_vocab[run.doc_codes], np.repeat(run.query_ids, depth)
        ranks = np.tile(np.arange(1, depth + 1), n_queries)
        with run_path.open("w") as fh:
            for i in range(0, len(docs), 1_000_000):
                sl = slice(i, i + 1_000_000)
                fh.write("".join(f"{q} Q0 {d} {r} {s:.6f} bench\n" for q, d, r, s in
                                 zip(qids[sl], docs[sl], ranks[sl], run.scores[sl].tolist())))
        with qrels_path.open("w") as fh:
            fh.writelines(f"{q} 0 {d} {g}\n" for q, ds in qrels.to_dict().items() for d, g in ds.items())
    measures = [arg for m in OURS for arg in ("-m", m)]
    ours = measured([sys.executable, "-m", "harness.cli.main", "eval", str(qrels_path), str(run_path), *measures,
                     "--format", "tsv"], stdout=subprocess.DEVNULL)
    theirs = measured([sys.executable, str(ROOT / "bench" / "metrics_bench.py"), "--script", str(qrels_path),
                       str(run_path)], stdout=subprocess.DEVNULL)
    print(f"harness eval, {n_queries:,} queries x {depth} ({_mb(run_path.stat().st_size)} run): "
          f"{ours[0]:.1f} s (CPU {ours[3]:.1f} s), peak {ours[1]:.2f} GB | pytrec_eval script: {theirs[0]:.1f} s "
          f"(CPU {theirs[3]:.1f} s), peak {theirs[1]:.2f} GB | ratio {theirs[0] / ours[0]:.1f}x wall, "
          f"{theirs[3] / ours[3]:.1f}x CPU, {theirs[1] / ours[1]:.1f}x memory")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20k:2k", help="chunks:queries pairs, comma-separated (default 20k:2k)")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--words", type=int, default=60, help="mean words per chunk")
    ap.add_argument("--executor", choices=EXECUTORS, default="local")
    ap.add_argument("--eval", metavar="QUERIES:DEPTH", help="time harness eval vs pytrec_eval instead, e.g. 100k:100")
    ap.add_argument("--keep", type=Path, help="folder for the data and outputs (kept; reused when present)")
    args = ap.parse_args()
    if args.executor == "ray" and not args.eval:
        helped = subprocess.run([sys.executable, "-m", "harness.cli.main", "run", "--help"], cwd=ROOT,
                                capture_output=True, text=True).stdout
        if "--executor" not in helped:
            sys.exit("bench/scale.py --executor ray: `harness run` has no --executor option yet (TODO: the Ray "
                     "executor of issue 14 fills this hook; see RAY in this file)")
    with tempfile.TemporaryDirectory(prefix="harness-scale-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.eval:
            for n, depth in _pairs(args.eval):
                bench_eval(n, depth, work)
            return
        print(f"harness run, BM25 backend fast, depth {args.depth}, executor {args.executor}, {os.cpu_count()} CPUs")
        growth([bench_run(c, q, args, work) for c, q in _pairs(args.sizes)])


if __name__ == "__main__":
    main()
