"""How a run ran, as results.json records it: its timings, where it ran (the executor), its per-query latency, a
live retriever's requests and the hits it dropped. Part of the Result schema (``core.result``), kept here so that
module stays readable."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from .records import Count, Record


class Timings(Record):
    index_s: float
    retrieve_s: float
    queries_per_s: float
    # Seconds per stage of the executor (e.g. ray: start_s, encode_s, index_s, retrieve_s); absent before executors.
    stages: dict[str, float] = Field(default_factory=dict)


class ExecutorRecord(Record):
    """Where retrieval ran (``executor:`` of the config, as used): absent from results written before executors."""

    kind: str
    address: str | None = None
    workers: Count = 1
    shards: Count = 1
    gpus_per_worker: float = 0.0
    batch_size: Count | None = None
    # How the index reached the workers: "local" (no workers), "shipped" (the built index, pickled), "rebuilt"
    # (each worker indexed from the config and the chunks), "sharded" (one slice of the index per worker),
    # "driver" (a live retriever under the Ray executor: the requests are sent from the driver).
    placement: str = "local"


class LatencyRecord(Record):
    """Per-query retrieval latency (``executors.latency``): measured per request (http) or per batch divided."""

    queries: Count
    p50_ms: float
    p95_ms: float
    max_ms: float
    mean_ms: float
    queries_per_s: float
    measured: str


class RequestLogRecord(Record):
    query_id: str
    status: int | None  # the last HTTP status; null when no response came (timeout, connection error)
    attempts: Annotated[int, Field(ge=1)]
    latency_ms: float
    error: str | None


class RequestsRecord(Record):
    """A live retriever's requests (``kind: http``, elasticsearch, opensearch): a failed query is listed here and
    absent from the run (``on_error: skip``), never an empty answer."""

    on_error: Literal["fail", "skip"]
    sent: Count
    failed: Count
    retried: Count
    failed_query_ids: list[str]
    log: list[RequestLogRecord]


class HitProblemRecord(Record):
    query_id: str
    rank: Annotated[int, Field(ge=0)]
    reason: str
    message: str


class HitProblemsRecord(Record):
    """Hits a run dropped because they name no chunk of the corpus (``retriever_hits.unplaceable: skip``)."""

    unplaceable: Literal["fail", "skip"]
    skipped: Count
    queries: Count
    by_reason: dict[str, Count]
    duplicates: Count
    examples: list[HitProblemRecord]
    # Hits whose text matched their document only after normalising case, whitespace and Unicode forms.
    placed_by_normalised_text: Count = 0
    normalised_examples: list[dict[str, JsonValue]] = []
