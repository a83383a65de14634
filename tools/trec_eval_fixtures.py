"""Regenerate the trec_eval 10 fixtures of ``tests/metrics/test_incomplete_trec_eval.py``.

trec_eval itself is not available where the tests run, so its output is kept as small text files: its per-query
``bpref``, ``infAP``, ``unj`` (the unjudged share at 5, 10, 20) and ``num_ret`` on trec_eval's own test files and on
a few seeded random runs (grades -1..3, ties in score, queries missing on either side).

    python tools/trec_eval_fixtures.py TREC_EVAL_SOURCE

TREC_EVAL_SOURCE is a checkout of https://github.com/usnistgov/trec_eval at version 10.0 (its ``test/`` folder holds
the inputs). The source is copied to a temporary folder and built twice with ``make``: as it is, and with its two
printing files printing ``%.17g`` instead of ``%6.4f`` (nothing else changes), so the fixtures hold each double to
the last bit. Every value of the stock build is checked to be the full one rounded to 4 places before anything is
written. Writes ``tests/metrics/data/trec_eval10/``: the inputs (gzipped) and one ``<case>.txt`` per case.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "metrics" / "data" / "trec_eval10"
MEASURES = ["-m", "bpref", "-m", "infAP", "-m", "unj.5,10,20", "-m", "num_ret"]
PRINTERS = ("meas_print_single.c", "meas_print_final.c")

# (case, qrels, run, trec_eval flags): the flags also say how the test evaluates (-c: every judged query in the
# means; -l N: rel=N).
CASES = [
    ("test", "qrels.test", "results.test", []),
    ("test_c", "qrels.test", "results.test", ["-c"]),
    ("rel_level_l1", "qrels.rel_level", "results.test", ["-l", "1"]),
    ("rel_level_l2", "qrels.rel_level", "results.test", ["-l", "2"]),
    ("rel_level_l3_c", "qrels.rel_level", "results.test", ["-c", "-l", "3"]),
    ("random1", "random1.qrels", "random1.run", ["-c"]),
    ("random2_l2", "random2.qrels", "random2.run", ["-c", "-l", "2"]),
    ("random3_l2", "random3.qrels", "random3.run", ["-l", "2"]),
]


def random_files(seed: int, n_queries: int, folder: Path, same_queries: bool = False) -> tuple[str, str]:
    """A seeded qrels and run: grades -1..3 (-1: pooled, not judged), scores with ties, and queries the run lacks
    and the qrels lack, unless ``same_queries``: trec_eval 10 without -c stops at a judged query the run lacks."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(n_queries):
        docs = [f"D{i:03d}" for i in range(int(rng.integers(5, 40)))]
        judged = rng.choice(docs, size=int(rng.integers(1, len(docs))), replace=False)
        judged_query = rng.random() < 0.9
        if judged_query:
            qrels += [f"Q{q} 0 {d} {int(rng.choice([-1, 0, 0, 0, 1, 1, 2, 3]))}" for d in sorted(judged)]
        if judged_query if same_queries else rng.random() < 0.9:
            pool = docs + [f"X{i:03d}" for i in range(10)]
            hits = rng.choice(pool, size=int(rng.integers(1, len(pool))), replace=False)
            for rank, d in enumerate(hits, 1):  # a score of few distinct values: many ties, broken by doc id
                run.append(f"Q{q} Q0 {d} {rank} {rng.integers(0, 12) / 8 + 0.1:.6f} r{seed}")
    names = (f"random{seed}.qrels", f"random{seed}.run")
    (folder / names[0]).write_text("\n".join(qrels) + "\n")
    (folder / names[1]).write_text("\n".join(run) + "\n")
    return names


def build(source: Path, work: Path, full: bool) -> Path:
    tree = work / ("full" if full else "stock")
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns(".git", "*.o", "trec_eval"))
    if full:
        for name in PRINTERS:
            path = tree / name
            path.write_text(path.read_text().replace("%6.4f", "%.17g"))
    subprocess.run(["make", "-C", str(tree)], check=True, capture_output=True)
    return tree / "trec_eval"


def run(binary: Path, flags: list[str], qrels: Path, results: Path) -> list[tuple[str, str, str]]:
    out = subprocess.run([str(binary), "-q", *flags, *MEASURES, str(qrels), str(results)], check=True,
                         capture_output=True, text=True).stdout
    return [tuple(line.split()) for line in out.splitlines() if line.strip()]  # type: ignore[misc]


def main(source: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stock, full = build(source, work, False), build(source, work, True)
        inputs = work / "inputs"
        inputs.mkdir()
        for name in ("qrels.test", "qrels.rel_level", "results.test"):
            shutil.copy(source / "test" / name, inputs / name)
        for seed, n in ((1, 40), (2, 40), (3, 25)):
            random_files(seed, n, inputs, same_queries=seed == 3)
        for name, qrels, results, flags in CASES:
            precise = run(full, flags, inputs / qrels, inputs / results)
            rounded = run(stock, flags, inputs / qrels, inputs / results)
            assert [r[:2] for r in rounded] == [p[:2] for p in precise], name
            for (measure, qid, text), (_, _, value) in zip(precise, rounded):
                if measure != "num_ret" and measure != "runid":
                    assert f"{float(text):6.4f}" == value, (name, measure, qid, text, value)
            lines = [f"# trec_eval 10.0 -q {' '.join(flags + MEASURES)} {qrels} {results}",
                     "# printed with %.17g (tools/trec_eval_fixtures.py); the stock build's 4 places agree"]
            lines += ["\t".join(row) for row in precise if row[0] != "runid"]
            (OUT / f"{name}.txt").write_text("\n".join(lines) + "\n")
        for path in sorted(inputs.iterdir()):
            with gzip.GzipFile(OUT / f"{path.name}.gz", "wb", mtime=0) as fh:  # mtime 0: the same bytes each time
                fh.write(path.read_bytes())
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/trec_eval_fixtures.py TREC_EVAL_SOURCE")
    main(Path(sys.argv[1]))
