"""hits.parquet's ``stage_ranks`` column, written for a composite retriever's run (``retrievers.stages``): on each
hit in a relevant document, the rank its chunk had at every stage that held it (stage path -> rank; a stage that
did not hold it is absent), null on the other hits. The ranks of relevant items a stage held but the final list
did not are in results.json (``verdict.detail.stages``)."""

from __future__ import annotations

from typing import Mapping, Sequence

from ..retrievers.stages import StageRecord

COLUMN = "stage_ranks"


def stage_field():
    import pyarrow as pa

    return pa.field(COLUMN, pa.map_(pa.string(), pa.int32()))


def _by_chunk(records: Sequence[StageRecord]) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    for s in records:
        for rank, chunk_id, *_ in s.hits:
            ranks = out.setdefault(chunk_id, [])
            if not ranks or ranks[-1][0] != s.path:  # a chunk twice in one stage: its best (first) rank
                ranks.append((s.path, rank))
    return out


def with_stage_ranks(batch, stages: Mapping[str, Sequence[StageRecord]]):
    """``batch`` (hits.parquet rows) with the ``stage_ranks`` column added."""
    import pyarrow as pa

    per_query: dict[str, dict[str, list[tuple[str, int]]]] = {}
    values = []
    for qid, chunk_id, doc_relevant in zip(batch.column("query_id").to_pylist(), batch.column("chunk_id").to_pylist(),
                                           batch.column("doc_relevant").to_pylist()):
        if qid not in per_query:
            per_query[qid] = _by_chunk(stages.get(qid, ()))
        values.append(per_query[qid].get(chunk_id) if doc_relevant else None)
    field = stage_field()
    return pa.RecordBatch.from_arrays(list(batch.columns) + [pa.array(values, field.type)],
                                      schema=batch.schema.append(field))
