"""Executors: where retrieval runs. An ``Executor`` takes the built retriever, the chunks and the golden-set queries
and returns ``Executed``: the placed ranked lists (``executors.retrieval.Retrieved``, the same whichever executor
ran), its record for results.json and its per-stage timings. ``LocalExecutor`` runs in this process;
``RayExecutor`` (``executors.ray``) spreads encoding (Ray Data) and retrieval (actors holding the index, or one
shard of it each) over a Ray cluster. ``executor_for`` picks the one the config's ``executor.kind`` names."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, Protocol, Sequence

from ..config.schema import ExperimentConfig
from ..core.types import Chunk, Query
from ..retrievers import BuildContext, Retriever
from .local import Executed, LocalExecutor


class Executor(Protocol):
    """Hands the queries, a batch at a time, to a built index wherever it runs; every executor returns the same
    lists for the same config (a test compares Ray's with the local one's on the demo and SciFact)."""

    def execute(self, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query], *,
                context: BuildContext, progress: bool = True, log: Callable[[str], None] | None = None,
                stage_docs: Mapping[str, frozenset[str]] | None = None) -> Executed: ...


def executor_for(config: ExperimentConfig) -> Executor:
    """The executor the config names (``executor.kind``)."""
    if config.executor.kind == "ray":
        from .ray import RayExecutor  # Ray is an optional extra: imported only when a config asks for it

        return RayExecutor(config)
    return LocalExecutor(config)


def execute(config: ExperimentConfig, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query], *,
            context: BuildContext, progress: bool = True, log: Callable[[str], None] | None = None,
            stage_docs: Mapping[str, frozenset[str]] | None = None) -> Executed:
    """Retrieve every query with the executor the config names; ``stage_docs`` (query id -> relevant documents)
    keeps a composite retriever's stages (``retrievers.stages``)."""
    return executor_for(config).execute(retriever, chunks, queries, context=context, progress=progress, log=log,
                                        stage_docs=stage_docs)


@contextmanager
def shared(configs: Sequence[ExperimentConfig]) -> Iterator[None]:
    """One executor session for several runs (a sweep's points): Ray is started once when every run that uses it
    names the same Ray; otherwise each run starts its own, as a single run does."""
    rays = {c.executor.model_dump_json() for c in configs if c.executor.kind == "ray"}
    if len(rays) != 1:
        yield
        return
    from .ray_session import session

    with session(next(c for c in configs if c.executor.kind == "ray").executor):
        yield
