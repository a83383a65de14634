"""Scale benchmark (issues 14 and 37): BM25 ``backend: fast`` at MS MARCO passage scale, and `harness run` / `harness
eval` on large inputs, each in a fresh subprocess whose wall time and peak RSS (``os.wait4``'s rusage of that child
alone) are measured; a child past ``--max-rss`` is stopped (the machine is shared).

  python bench/scale.py --sizes 8.8m:7k                  # MS MARCO passage's size: 8.8M passages x 7k queries
  python bench/scale.py --sizes 100k:7k,1m:7k --phases index   # the retriever alone, two sizes
  python bench/scale.py --sizes 100k:10k,1m:10k --phases run --lengths uniform --words 60 --depth 100
  python bench/scale.py --sizes 100k:100k --keep /tmp/scale   # keep the data and outputs (reused when present)
  python bench/scale.py --eval 100k:100,1m:10             # harness eval vs a pytrec_eval script: queries:depth
  python bench/scale.py --executor ray --phases run       # harness run with the Ray executor

Data: one chunk per document, words drawn from a Zipf vocabulary (rank r has probability ~ 1/r^1.1 over 50k words);
``--lengths msmarco`` (default): words per passage from a gamma distribution of shape 5 and mean ``--words`` (56,
MS MARCO passage's mean; sd 25), at least 1; ``--lengths uniform``: uniform in [words/2, 3 words/2]. Each query
is 5 words of one document plus one random word, judged relevant to that document.

Phases (``--phases``, default both): ``index`` builds the retriever over the chunks (their texts in one Arrow buffer,
the ``Chunk`` objects made as the retriever reads them) and times retrieval at depth 100 and ``--depth``
(``--timed`` queries each): printed are the index time, the peak RSS while indexing, the index's bytes per posting
and ms per query. ``run`` is `harness run` end to end at ``--depth``: wall, peak RSS, index and retrieval time,
the rest (loading, metrics, diagnostics, writing), every output file's size; then a growth table."""

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


def passage_lengths(rng: np.random.Generator, n: int, words: int, lengths: str) -> np.ndarray:
    if lengths == "uniform":
        return rng.integers(words // 2, words * 3 // 2 + 1, n)
    # MS MARCO passage: ~56 words on average, right-skewed (a few long passages).
    return np.maximum(np.rint(rng.gamma(5.0, words / 5.0, n)), 1).astype(np.int64)


def _lines(vocab: np.ndarray, tokens: np.ndarray, offsets: np.ndarray, first: int) -> str:
    """JSON lines ``{"id": "d0000001", "text": "w w ..."}`` of documents ``first``.., joined in Arrow (the words need
    no escaping)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    words = pa.array(vocab).take(pa.array(tokens))
    texts = pc.binary_join(pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), words), " ")
    ids = pa.array([f"d{i:07d}" for i in range(first, first + len(offsets) - 1)])
    return "".join(pc.binary_join_element_wise('{"id": "', ids, '", "text": "', texts, '"}\n', "").to_pylist())


def make_corpus(folder: Path, n_chunks: int, n_queries: int, words: int, lengths: str = "msmarco",
                seed: int = 0, block: int = 500_000) -> None:
    """corpus.jsonl, goldset.jsonl and a config in ``folder``, ``block`` documents at a time (bounded memory)."""
    rng = np.random.default_rng(seed)
    vocab = _words()
    cdf = np.cumsum(1.0 / np.arange(1, VOCAB + 1) ** ZIPF_S)
    cdf /= cdf[-1]
    targets = rng.integers(0, n_chunks, n_queries)
    order = np.argsort(targets, kind="stable")
    queries: dict[int, str] = {}
    with (folder / "corpus.jsonl").open("w") as fh:
        for lo in range(0, n_chunks, block):
            hi = min(lo + block, n_chunks)
            offsets = np.concatenate([[0], np.cumsum(passage_lengths(rng, hi - lo, words, lengths))])
            tokens = np.minimum(np.searchsorted(cdf, rng.random(int(offsets[-1]))), VOCAB - 1)
            fh.write(_lines(vocab, tokens, offsets, lo))
            for q in order[np.searchsorted(targets[order], lo):np.searchsorted(targets[order], hi)].tolist():
                own = tokens[offsets[targets[q] - lo]:offsets[targets[q] - lo + 1]]
                queries[q] = " ".join(list(vocab[rng.choice(own, 5)]) + [vocab[rng.integers(0, VOCAB)]])
    with (folder / "goldset.jsonl").open("w") as fh:
        for q, d in enumerate(targets.tolist()):
            fh.write(f'{{"id": "q{q:07d}", "query": "{queries[q]}", '
                     f'"relevant": [{{"doc": "d{d:07d}", "grade": 1}}]}}\n')


def write_config(folder: Path, depth: int) -> Path:
    path = folder / "scale.yaml"
    path.write_text(f"name: scale\ncorpus: {{path: {folder / 'corpus.jsonl'}}}\nchunking: {{strategy: none}}\n"
                    f"goldset: {{path: {folder / 'goldset.jsonl'}}}\n"
                    f"retriever: {{kind: bm25, backend: fast}}\ncutoff: {{k: 10}}\ndepth: {depth}\n"
                    f"metrics: [ap, ndcg@10, rr@10, recall@{depth}]\n")
    return path


MAX_RSS_GB = 14.0  # a child past this is stopped: the machine is shared


def _rss_now_gb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(line.split()[1]) / 1e6 for line in fh if line.startswith("VmRSS:")), 0.0)
    except OSError:
        return 0.0


def measured(cmd: list[str], max_rss: float = MAX_RSS_GB, **kw) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in GB, exit code, CPU seconds) of one child process, stopped (exit code -9) when
    its RSS passes ``max_rss`` GB. CPU time (user + system) is printed too: on a shared machine it moves less than
    the wall time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, **kw)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if _rss_now_gb(proc.pid) > max_rss:
            print(f"  stopped: RSS past {max_rss} GB (--max-rss)", file=sys.stderr)
            proc.kill()
        time.sleep(0.25)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, usage.ru_maxrss / 1e6, proc.returncode, usage.ru_utime + usage.ru_stime


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def bench_index(n_chunks: int, n_queries: int, args, work: Path) -> dict:
    """The retriever alone (bench/scale_index.py in a child): index time and peak, bytes per posting, ms/query."""
    folder = _data(n_chunks, n_queries, args, work)
    depths = sorted({100, args.depth})
    cmd = [sys.executable, str(ROOT / "bench" / "scale_index.py"), str(folder), "--depths",
           ",".join(map(str, depths)), "--timed", str(args.timed)]
    load_before = _load()
    with (folder / "index-stdout.txt").open("w") as out, (folder / "index-stderr.txt").open("w") as log:
        wall, rss, code, cpu = measured(cmd, args.max_rss, stdout=out, stderr=log)
    if code != 0:
        print(f"  {n_chunks:,} x {n_queries:,}: the index phase exited {code} after {wall:.1f} s ({rss:.2f} GB "
              f"peak); see {folder / 'index-stderr.txt'}")
        return {"chunks": n_chunks, "failed": code}
    r = json.loads((folder / "index-stdout.txt").read_text())
    print(f"{n_chunks:,} chunks x {r['queries_timed']:,} queries, BM25 fast, the retriever alone: wall {wall:.1f} s "
          f"(CPU {cpu:.1f} s), peak RSS {rss:.2f} GB; load average {load_before} before, {_load()} after")
    print(f"  corpus read in {r['load_s']:.1f} s ({r['rss_loaded_gb']:.2f} GB); index {r['index_s']:.1f} s "
          f"(CPU {r['index_cpu_s']:.1f} s; {n_chunks / max(r['index_s'], 1e-9):,.0f} chunks/s), peak RSS while "
          f"indexing {r['rss_indexed_gb']:.2f} GB")
    print(f"  {r['postings']:,} postings ({r['sparse_postings']:,} in lists, the rest in {r['dense_terms']} dense "
          f"columns), {r['terms']:,} terms: index {r['index_bytes'] / 1e9:.2f} GB = "
          f"{r['index_bytes'] / max(r['postings'], 1):.1f} bytes per posting; chunk table "
          f"{r['table_bytes'] / 1e9:.2f} GB")
    print("  " + "; ".join(f"depth {d}: {r[f'ms_per_query@{d}']:.1f} ms/query (CPU {r[f'cpu_ms_per_query@{d}']:.1f})"
                           for d in depths))
    return r


def _data(n_chunks: int, n_queries: int, args, work: Path) -> Path:
    folder = work / f"c{n_chunks}-q{n_queries}-{args.lengths}{args.words}"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "goldset.jsonl").exists():
        t0 = time.perf_counter()
        make_corpus(folder, n_chunks, n_queries, args.words, args.lengths)
        print(f"  data made in {time.perf_counter() - t0:.1f} s: {_mb((folder / 'corpus.jsonl').stat().st_size)}")
    return folder


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
    folder = _data(n_chunks, n_queries, args, work)
    config, out = write_config(folder, args.depth), folder / "out"
    cmd = [sys.executable, "-m", "harness.cli.main", "run", str(config), "--out", str(out)]
    if args.executor == "ray":
        cmd += ["--executor", "ray"]
    with (folder / "stderr.txt").open("w") as log:  # a file, not a pipe: nothing blocks on a full pipe
        wall, rss, code, cpu = measured(cmd, args.max_rss, stdout=subprocess.DEVNULL, stderr=log)
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
    print(f"{n_chunks:,} chunks x {n_queries:,} queries, harness run: wall {wall:.1f} s "
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
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--words", type=int, default=56, help="mean words per chunk")
    ap.add_argument("--lengths", choices=("msmarco", "uniform"), default="msmarco")
    ap.add_argument("--phases", default="index,run",
                    help="index (the retriever alone), run (harness run), or both; data: only write the data")
    ap.add_argument("--timed", type=int, default=0, help="index phase: queries timed per depth (default 0: all)")
    ap.add_argument("--max-rss", type=float, default=MAX_RSS_GB, help="GB; a child past it is stopped")
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
        phases = set(args.phases.split(","))
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1e9
        print(f"BM25 backend fast, depth {args.depth}, {args.lengths} lengths of {args.words} words on average, "
              f"executor {args.executor}, {os.cpu_count()} CPUs, {memory:.0f} GB")
        rows = []
        for c, q in _pairs(args.sizes):
            if "data" in phases:  # only the corpus, golden set and config (to run elsewhere)
                print(f"  {write_config(_data(c, q, args, work), args.depth)}")
            if "index" in phases:
                bench_index(c, q, args, work)
            if "run" in phases:
                rows.append(bench_run(c, q, args, work))
        growth(rows)


if __name__ == "__main__":
    main()
