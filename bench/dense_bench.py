"""Dense encoding backends side by side on SciFact: passages/s, GFLOPS reached, nDCG@10 and the vectors' distance from
torch's, for each ``backend`` x ``quantize`` of the harness's encoder, in one process.

  python bench/dense_bench.py [--passages 5183] [--batch-size 64] [--backends torch torch:int8 onnx:int8 ...]

Fair on a shared machine: the passages are sorted longest first and cut into blocks; every backend encodes each
block in turn (the first backend rotates), through the same ``Encoder`` code path and the same batches, so a load
spike slows all of them alike. The load average before and after is printed. ``--passages`` below the corpus size
keeps every passage judged for a test query and fills up with the others in corpus order (nDCG@10 is then over that
smaller corpus, the same one for every backend). GFLOPS: the model's matrix products and attention over the
passages' real (unpadded) tokens, divided by the backend's encoding seconds."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from harness.cache import default_cache_dir  # noqa: E402
from harness.config.schema import ChunkingConfig, CorpusConfig  # noqa: E402
from harness.core.runtable import Qrels, Run  # noqa: E402
from harness.io.documents import load_corpus  # noqa: E402
from harness.metrics.engine import evaluate  # noqa: E402
from harness.retrievers.encoders import BUNDLED, Encoder, model_path  # noqa: E402
from harness.text.chunking import chunk_documents  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"


def flops(config: dict, tokens: np.ndarray) -> float:
    """A BERT encoder's multiply-adds x 2 for passages of ``tokens`` tokens: per layer, the Q/K/V/output
    projections (4 h^2) and the feed-forward (2 h i) per token, plus attention's QK^T and AV (2 s^2 h)."""
    layers, h, i = config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"]
    s = tokens.astype(np.float64)
    return float(np.sum(layers * (2 * (4 * h * h + 2 * h * i) * s + 4 * s * s * h)))


def load(passages: int | None):
    chunks = chunk_documents(load_corpus(CorpusConfig(path=SCIFACT, format="beir")),
                             ChunkingConfig(strategy="none", include_title=True))
    qrels: dict[str, dict[str, int]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    queries = {}
    for line in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["_id"] in qrels:
            queries[row["_id"]] = row["text"]
    if passages and passages < len(chunks):
        judged = {d for docs in qrels.values() for d in docs}
        keep = [c for c in chunks if c.doc_id in judged]
        keep += [c for c in chunks if c.doc_id not in judged][:max(passages - len(keep), 0)]
        chunks = keep
    return chunks, queries, qrels


def ndcg10(vectors: np.ndarray, qvecs: np.ndarray, doc_ids: list[str], query_ids: list[str], qrels) -> float:
    scores = qvecs @ vectors.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :100]
    run = {q: {doc_ids[j]: float(scores[r, j]) for j in top[r]} for r, q in enumerate(query_ids)}
    return evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["ndcg@10"]).mean()["ndcg@10"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--passages", type=int, default=None, help="passages to encode (default: all 5,183)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--block", type=int, default=256, help="passages each backend encodes in its turn")
    ap.add_argument("--backends", nargs="+", default=["torch", "torch:int8", "onnx", "onnx:int8", "openvino", "openvino:int8"],
                    help="BACKEND or BACKEND:int8")
    args = ap.parse_args()
    if not SCIFACT.is_dir():
        sys.exit(f"{SCIFACT} is not present")
    chunks, queries, qrels = load(args.passages)
    texts = [c.index_text for c in chunks]
    order = np.argsort(-np.array([len(t) for t in texts]), kind="stable")  # longest first, as Encoder.plan
    texts = [texts[i] for i in order.tolist()]
    doc_ids = [chunks[i].doc_id for i in order.tolist()]
    encoders = {}
    for name in args.backends:
        backend, _, quantize = name.partition(":")
        enc = Encoder(BUNDLED, None, batch_size=args.batch_size, backend=backend, quantize=quantize or "none",
                      export_root=default_cache_dir())
        enc._encode(texts[:8], "", True, False)  # load / export, warm up: not timed
        encoders[name] = enc
    torch_model = encoders.get("torch") or Encoder(BUNDLED, None, batch_size=args.batch_size)
    tokenizer = torch_model.loaded().tokenizer
    max_len = torch_model.loaded().max_seq_length
    tokens = np.array([len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_len)["input_ids"]])
    config = json.loads((Path(model_path(BUNDLED)) / "config.json").read_text(encoding="utf-8"))
    work = flops(config, tokens)
    load_before = os.getloadavg()
    seconds = {name: 0.0 for name in encoders}
    parts: dict[str, list[np.ndarray]] = {name: [] for name in encoders}
    names = list(encoders)
    for number, first in enumerate(range(0, len(texts), args.block)):
        block = texts[first:first + args.block]
        for name in names[number % len(names):] + names[:number % len(names)]:
            t0 = time.perf_counter()
            parts[name].append(encoders[name]._encode(block, "", True, False))
            seconds[name] += time.perf_counter() - t0
        print(f"  {first + len(block)}/{len(texts)} passages", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    qids = list(queries)
    vectors = {name: np.concatenate(parts[name]) for name in encoders}
    reference = vectors.get("torch")
    base = seconds.get("torch")
    print(f"SciFact: {len(texts)} passages ({int(tokens.sum()):,} tokens, {work / 1e9 / len(texts):.2f} GFLOP per "
          f"passage), {len(qids)} test queries, batch {args.batch_size}, {os.cpu_count()} cores; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"{'backend':<15} {'passages/s':>10} {'x torch':>8} {'GFLOPS':>7} {'nDCG@10':>8} {'min cos':>8}")
    for name, enc in encoders.items():
        qvecs = enc._encode([queries[q] for q in qids], "", True, False)
        score = ndcg10(vectors[name], qvecs, doc_ids, qids, qrels)
        cos = (f"{float(np.min(np.sum(vectors[name] * reference, axis=1))):.4f}" if reference is not None else "-")
        ratio = f"{base / seconds[name]:.2f}" if base else "-"
        print(f"{name:<15} {len(texts) / seconds[name]:>10.1f} {ratio:>8} {work / seconds[name] / 1e9:>7.1f} "
              f"{score:>8.4f} {cos:>8}", flush=True)


if __name__ == "__main__":
    main()
