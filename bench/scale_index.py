"""The ``index`` phase of bench/scale.py, run in its own process: BM25 ``backend: fast`` over a corpus.jsonl (one
chunk per line), then retrieval of a goldset.jsonl's queries at each depth. Prints one JSON object.

  python bench/scale_index.py FOLDER --depths 100,1000 [--timed N] [--shards N]

The texts are held in Arrow buffers and each ``Chunk`` is made when the retriever reads it, its buffer released once
read (a list of 8.8M ``Chunk`` objects alone would take ~5 GB); what is measured is the retriever's own memory and
time, with the corpus read from disk as it indexes."""

from __future__ import annotations

import argparse
import collections
import json
import resource
import sys
import time
from pathlib import Path
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.core.types import Chunk, Query  # noqa: E402
from harness.retrievers.bm25 import BM25Config, BM25Retriever  # noqa: E402


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KB on Linux


class StreamedChunks:
    """Batches of ``id`` and ``text`` Arrow arrays, iterated once as ``Chunk`` objects (one chunk per document), each
    batch released once read: the texts are held as a caller streaming them from disk would hold them."""

    def __init__(self, batches: list[tuple]):
        self.batches, self.n = collections.deque(batches), sum(len(ids) for ids, _ in batches)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        while self.batches:
            ids, texts = self.batches.popleft()
            ids, texts = ids.to_pylist(), texts.to_pylist()
            yield from (Chunk(i, i, 0, len(t), t, t) for i, t in zip(ids, texts))


def read_chunks(path: Path, batch: int = 100_000) -> StreamedChunks:
    """The ``id`` and ``text`` of each line, ``batch`` lines at a time into Arrow arrays (pyarrow's JSON reader held
    ~4.7 times the file's size at 1M lines)."""
    import pyarrow as pa

    batches, batch_ids, batch_texts = [], [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            batch_ids.append(row["id"])
            batch_texts.append(row["text"])
            if len(batch_ids) == batch:
                batches.append((pa.array(batch_ids, pa.string()), pa.array(batch_texts, pa.large_string())))
                batch_ids, batch_texts = [], []
    if batch_ids:
        batches.append((pa.array(batch_ids, pa.string()), pa.array(batch_texts, pa.large_string())))
    return StreamedChunks(batches)


def read_queries(path: Path) -> list[Query]:
    with path.open() as fh:
        return [Query(r["id"], r["query"]) for r in map(json.loads, fh)]


def index_bytes(index) -> int:
    return sum(a.nbytes for a in (index.indptr, index.docs, index.weights, index.dense_slot, index.dense, index.bound,
                                  index.absent, index.seed_ptr, index.seed_docs))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--depths", default="100,1000")
    ap.add_argument("--timed", type=int, default=0, help="queries timed per depth (0: all)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    chunks = read_chunks(args.folder / "corpus.jsonl")
    queries = read_queries(args.folder / "goldset.jsonl")
    if args.timed:
        queries = queries[:args.timed]
    out = {"load_s": time.perf_counter() - t0, "rss_loaded_gb": _rss_gb(), "chunks": len(chunks)}
    retriever = BM25Retriever(BM25Config(backend="fast"))
    t0, c0 = time.perf_counter(), time.process_time()
    retriever.index(chunks)
    out["index_s"], out["index_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["rss_indexed_gb"] = _rss_gb()  # the peak so far: loading and indexing
    index = retriever._index
    dense_postings = int(np.count_nonzero(index.dense))
    out.update(postings=len(index.docs) + dense_postings, sparse_postings=len(index.docs),
               dense_terms=len(index.dense), terms=index.n_terms, index_bytes=index_bytes(index),
               table_bytes=sum(getattr(retriever._table, f).nbytes if hasattr(getattr(retriever._table, f), "nbytes")
                               else len(getattr(retriever._table, f)) for f in retriever._table.__dataclass_fields__))
    for depth in map(int, args.depths.split(",")):
        t0, c0 = time.perf_counter(), time.process_time()
        got = retriever.retrieve_indexed(queries, depth)
        # CPU time too: on a shared machine the wall time also counts the time other processes had the CPUs.
        out[f"ms_per_query@{depth}"] = (time.perf_counter() - t0) / max(len(queries), 1) * 1000
        out[f"cpu_ms_per_query@{depth}"] = (time.process_time() - c0) / max(len(queries), 1) * 1000
        out[f"hits@{depth}"] = int(got.lengths.sum())
    out["queries_timed"] = len(queries)
    out["rss_peak_gb"] = _rss_gb()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
