"""Three chunkers under BM25, at k and at an equal token budget (the table in docs/chunking.md).

  python bench/chunkers.py [demo scifact]
Each chunker runs the dataset's BM25 config with only ``chunking`` and ``cutoff`` changed; the chunk-level
numbers are compared against the first chunker at the same cutoff (paired randomization test, Holm correction).
SciFact needs ../shared/datasets/scifact; the chonkie row needs the chunkers extra."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import harness.api as api  # noqa: E402
from harness.stats.compare import compare_runs  # noqa: E402

CHUNKERS = {  # run name (a folder name) -> chunking
    "sentences-2": {"strategy": "sentences", "size": 2},
    "recursive-400chars": {"strategy": "recursive", "unit": "characters", "size": 400},
    "chonkie-sentence-400chars": {"strategy": "chonkie", "chunker": "SentenceChunker", "chunk_size": 400},
}
# dataset -> (k, token budget in words): the budget is about half of what k windows hold with 2-sentence chunks
CUTOFFS = {"demo": (5, 150), "scifact": (10, 300)}
METRICS = ["recall@window", "precision@window", "hit@window", "ndcg@10", "evidence_recall@window",
           "evidence_precision@window", "evidence_iou@window"]


def base_config(which: str) -> dict:
    path = ROOT / "configs" / f"{which}-bm25.yaml"
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    for section, key in (("corpus", "path"), ("goldset", "path"), ("goldset", "evidence")):
        if key in cfg[section]:
            cfg[section][key] = str((path.parent / cfg[section][key]).resolve())
    return cfg


def main(which: str) -> None:
    k, budget = CUTOFFS[which]
    base = base_config(which)
    print(f"\n### {which}: BM25, k={k} and token_budget={budget} (words)\n")
    print("| chunker | cutoff | chunks | chunk recall@window | chunk precision@window | chunk hit@window | "
          "evidence recall / precision / IoU @window | mean k | window tokens | window chars | recall p vs first |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for cutoff in ({"k": k}, {"token_budget": budget}):
        runs = []
        for label, chunking in CHUNKERS.items():
            cfg = dict(base, name=label, chunking=dict(chunking, include_title=True), cutoff=cutoff,
                       metrics=METRICS)
            runs.append(api.run(cfg, log=lambda m: None))
        comparison = compare_runs(runs, ["chunk.recall@window"])
        for r in runs:
            c, cut = r.summary.chunk, r.cutoff
            p = "-" if r is runs[0] else f"{comparison.row(r.name, 'chunk.recall@window').p_corrected:.3f}"
            print(f"| {r.name} | {cut.describe} | {r.corpus.chunks} | {c['recall@window']:.4f} | "
                  f"{c['precision@window']:.4f} | {c['hit@window']:.4f} | {c['evidence_recall@window']:.4f} / "
                  f"{c['evidence_precision@window']:.4f} / {c['evidence_iou@window']:.4f} | {cut.mean_effective_k:.2f} | "
                  f"{cut.mean_window_tokens:.0f} | {cut.mean_window_chars:.0f} | {p} |")
        notes += comparison.warnings
    for note in notes:
        print(f"\nnote: {note}")


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")  # the demo golden set's two deliberately broken queries
    for name in sys.argv[1:] or ["demo", "scifact"]:
        main(name)
