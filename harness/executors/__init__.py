"""Executors: where retrieval runs. In: the config, the built retriever, the chunks and the golden-set queries.
Out: ``Executed`` = the placed ranked lists (``executors.retrieval.Retrieved``, the same whichever executor ran),
the executor's record for results.json and its per-stage timings. ``local`` runs in this process; ``ray`` spreads
encoding (Ray Data) and retrieval (actors holding the index, or one shard of it each) over a Ray cluster."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from ..config.schema import ExperimentConfig
from ..core.types import Chunk, Query
from ..retrievers import BuildContext, Retriever
from .local import Executed, run_local


def execute(config: ExperimentConfig, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query], *,
            context: BuildContext, progress: bool = True, log: Callable[[str], None] | None = None) -> Executed:
    """Retrieve every query with the executor the config names (``executor.kind``)."""
    if config.executor.kind == "ray":
        from .ray import execute_ray  # Ray is an optional extra: imported only when a config asks for it

        return execute_ray(config, retriever, chunks, queries, context=context, progress=progress, log=log)
    retrieved = run_local(config, retriever, chunks, queries, context.documents, progress)
    return Executed(retrieved, {"kind": "local", "placement": "local"},
                    {"index_s": retrieved.timings["index_s"], "retrieve_s": retrieved.timings["retrieve_s"]})


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
