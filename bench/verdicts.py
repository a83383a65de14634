"""Verdict distributions on real data, for BM25 and dense:
- SciFact test: abstracts (sentence chunks of 2) with the rationale sentences as evidence quotes;
- SQuAD v1.1 dev: the 48 whole articles chunked into 120-word windows, answer spans (article offsets) as evidence.

  python bench/verdicts.py [--squad-queries 2000]
The SQuAD golden set is written to a temporary folder in the native format; nothing is copied into the repo."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.config.schema import parse_config  # noqa: E402
from harness.pipeline.assemble import run_experiment  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
BM25 = {"kind": "bm25", "backend": "fast", "k1": 0.9, "b": 0.4, "tokenizer": {"stopwords": "english", "stemmer": "porter"}}
DENSE = {"kind": "dense"}


def squad_goldset(folder: Path, limit: int) -> Path:
    queries = {}
    for line in (DATA / "squad-v1.1-dev/queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        queries[row["_id"]] = row["text"]
    out = folder / "squad.jsonl"
    with out.open("w") as fh:
        for i, line in enumerate((DATA / "squad-v1.1-dev/answers.jsonl").read_text().splitlines()):
            if i >= limit:
                break
            row = json.loads(line)
            spans = sorted({(a["article_start"], a["article_start"] + len(a["text"])) for a in row["answers"]})
            fh.write(json.dumps({"id": row["query-id"], "query": queries[row["query-id"]],
                                 "relevant": [{"doc": row["article-id"],
                                               "evidence": [{"start": s, "end": e} for s, e in spans]}]}) + "\n")
    return out


def table(name: str, cfg: dict) -> None:
    result = run_experiment(parse_config(cfg, name, ROOT), progress=True, log=lambda m: None).to_dict()
    counts = result["summary"]["verdicts"]["counts"]
    where = result["summary"]["verdicts"]["by_where"]
    total = sum(counts.values())
    cells = " | ".join(f"{counts[k]} ({counts[k] / total:.0%})" for k in
                       ("ok", "buried_evidence", "wrong_chunk", "missing_document", "goldset_error"))
    print(f"| {name} | {total} | {cells} | {where['beyond_cutoff']} ({where['near_cutoff']}) / {where['not_retrieved']} |",
          flush=True)
    for a in result["summary"]["verdicts"]["advice"]:
        print(f"|   advice: {a}", flush=True)


def scifact_config() -> dict:
    """SciFact test: abstracts in 2-sentence chunks, the rationale sentences as evidence; k 5 (no name, no retriever)."""
    return {"corpus": {"path": str(DATA / "scifact"), "format": "beir"},
            "chunking": {"strategy": "sentences", "size": 2},
            "goldset": {"path": str(DATA / "scifact"), "format": "beir", "split": "test",
                        "evidence": str(DATA / "scifact/evidence_test.jsonl")},
            "cutoff": {"k": 5}, "depth": 100}


def squad_config(gold: Path) -> dict:
    """SQuAD dev's articles in 120-word windows overlapping by 20, the golden set ``squad_goldset`` wrote; k 5."""
    return {"corpus": {"path": str(DATA / "squad-v1.1-dev/articles.jsonl")},
            "chunking": {"strategy": "tokens", "size": 120, "overlap": 20},
            "goldset": {"path": str(gold)}, "cutoff": {"k": 5}, "depth": 100}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--squad-queries", type=int, default=2000)
    ap.add_argument("--kinds", nargs="*", default=["bm25", "dense"])
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit("../shared/datasets is not present")
    print("| run | queries | ok | buried_evidence | wrong_chunk | missing_document | goldset_error | "
          "missing: beyond (of them near) / never |")
    print("|---|---|---|---|---|---|---|---|")
    retrievers = {"bm25": BM25, "dense": DENSE}
    scifact = scifact_config()
    with tempfile.TemporaryDirectory() as tmp:
        gold = squad_goldset(Path(tmp), args.squad_queries)
        squad = squad_config(gold)
        for kind in args.kinds:
            table(f"scifact-{kind}", dict(scifact, name=f"scifact-{kind}", retriever=retrievers[kind]))
            table(f"squad-{kind}", dict(squad, name=f"squad-{kind}", retriever=retrievers[kind]))


if __name__ == "__main__":
    main()
