"""The local executor: the in-process ``retrieval.retrieve_all``, and what every executor returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..config.schema import ExperimentConfig
from ..result.run_records import ExecutorRecord
from ..core.types import Chunk, Document, Query
from ..retrievers import BuildContext, Retriever
from .retrieval import Retrieved, retrieve_all


@dataclass(frozen=True)
class Executed:
    """What an executor hands back: the placed lists (identical whichever executor ran), where it ran (results.json
    ``executor``) and seconds per stage."""

    retrieved: Retrieved
    record: ExecutorRecord
    stages: dict[str, float] = field(default_factory=dict)


def run_local(config: ExperimentConfig, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query],
              documents: Mapping[str, Document], progress: bool, batch_size: int | None = None,
              stage_docs: Mapping[str, frozenset[str]] | None = None) -> Retrieved:
    """``retrieve_all`` with the config's settings (the Ray executor calls it too, with a retriever that sends the
    batches to its workers, so the contract checks and hit placement are the same code)."""
    return retrieve_all(retriever, chunks, queries, config.depth, batch_size or config.batch_size, progress,
                        kind=config.retriever["kind"], documents=documents,
                        unplaceable=config.unplaceable(), include_title=config.chunking.include_title,
                        stage_docs=stage_docs)


def retrieval_stages(retrieved: Retrieved) -> dict[str, float]:
    """The stages every executor times: building the index and answering the queries."""
    return {"index_s": retrieved.timings["index_s"], "retrieve_s": retrieved.timings["retrieve_s"]}


@dataclass(frozen=True)
class LocalExecutor:
    """Retrieval in this process, a batch of ``config.batch_size`` queries at a time."""

    config: ExperimentConfig

    def execute(self, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query], *,
                context: BuildContext, progress: bool = True, log: Callable[[str], None] | None = None,
                stage_docs: Mapping[str, frozenset[str]] | None = None) -> Executed:
        retrieved = run_local(self.config, retriever, chunks, queries, context.documents, progress,
                              stage_docs=stage_docs)
        return Executed(retrieved, ExecutorRecord(kind="local", placement="local"), retrieval_stages(retrieved))
