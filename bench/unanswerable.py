"""Can BM25's score tell a miss on SciFact? The numbers of docs/calibration.md:
- SciFact test as it is (configs/scifact-bm25.yaml): calibration only, no query is unanswerable;
- the same with the relevant abstracts of some queries removed from the corpus (50 drawn with seed 38, kept only when
  no other query needs their abstracts) and those queries marked ``answerable: false``: in-domain questions whose
  answer is gone, the hard case for a threshold.

  python bench/unanswerable.py [--seed 38] [--drawn 50]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import harness  # noqa: E402
from harness.io.safeyaml import load_yaml  # noqa: E402
from harness.core.errors import ConfigError  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets" / "scifact"


def without_answers(folder: Path, seed: int, drawn: int) -> tuple[int, int]:
    """A native golden set of SciFact test and a corpus without the drawn queries' abstracts, in ``folder``."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DATA / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        qrels[q][d] = int(s)
    texts = {r["_id"]: r["text"] for r in map(json.loads, (DATA / "queries.jsonl").read_text().splitlines())}
    qids = sorted(qrels, key=int)
    picked = set(random.Random(seed).sample(qids, drawn))
    needed = {d for q in qids if q not in picked for d in qrels[q]}
    gone_queries = {q for q in picked if not set(qrels[q]) & needed}
    gone = {d for q in gone_queries for d in qrels[q]}
    with open(folder / "corpus.jsonl", "w") as out:
        for line in (DATA / "corpus.jsonl").read_text().splitlines():
            if json.loads(line)["_id"] not in gone:
                out.write(line + "\n")
    with open(folder / "goldset.jsonl", "w") as out:
        for q in qids:
            row = ({"id": q, "query": texts[q], "answerable": False} if q in gone_queries else
                   {"id": q, "query": texts[q], "relevant": [{"doc": d, "grade": g} for d, g in qrels[q].items()]})
            out.write(json.dumps(row) + "\n")
    return len(gone_queries), len(gone)


def show(label: str, result) -> None:
    c, a = result.summary.calibration, result.summary.abstention
    rate = lambda v: "n/a" if v is None else f"{v:.1%}"  # noqa: E731
    print(f"| {label} | {result.summary.doc['ndcg@10']:.4f} | {c.nauc_top_score:.3f} | {c.nauc_margin:.3f} | "
          f"{c.nauc_spread:.3f} | {a.threshold:.2f} | {rate(a.false_answer_rate)} ({a.false_answers} of "
          f"{a.unanswerable_queries}) | {rate(a.lost_answer_rate)} ({a.lost_answers} of {a.answerable_queries}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--drawn", type=int, default=50)
    args = parser.parse_args()
    if not (DATA / "corpus.jsonl").exists():
        raise ConfigError(f"{DATA}: SciFact is not there (see tests/conftest.py: shared_dataset)")
    config = load_yaml(ROOT / "configs" / "scifact-bm25.yaml", ConfigError)
    print("| golden set | doc nDCG@10 | nAUC top score | nAUC margin | nAUC spread | threshold | false answers | "
          "lost answers |\n|---|---|---|---|---|---|---|---|")
    show("SciFact test", harness.run(ROOT / "configs" / "scifact-bm25.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        queries, docs = without_answers(Path(tmp), args.seed, args.drawn)
        config.update(name="scifact-unanswerable", corpus={"path": str(Path(tmp) / "corpus.jsonl"), "format": "beir"},
                      goldset={"path": str(Path(tmp) / "goldset.jsonl")})
        show(f"{queries} unanswerable ({docs} abstracts removed)", harness.run(config))


if __name__ == "__main__":
    main()
