"""The Ray executor: encoding as Ray Data ``map_batches`` over an actor pool (``ray_encode``), retrieval as query
batches sent to actors that hold the index (``ray_actors``), the driver checking and placing every list as
``retrieve_all`` does; connecting to Ray and the actors' resources in ``ray_session``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..config.schema import ExperimentConfig
from ..core.errors import ConfigError
from ..result.run_records import ExecutorRecord
from ..core.types import Chunk, Query
from ..retrievers import BuildContext, Retriever
from ..retrievers.compose import parts as _parts
from ..retrievers.frameworks import FrameworkRetriever
from .local import Executed, retrieval_stages, run_local
from .ray_actors import RayRetriever
from .ray_encode import encode_with_ray, live_parts
from .ray_session import import_ray, start_ray


@dataclass(frozen=True)
class RayExecutor:
    """Retrieval on a Ray cluster (``executor: {kind: ray, ...}``): Ray is started (or joined) for the run and shut
    down after it unless it was already running; a live retriever's requests are sent from this process."""

    config: ExperimentConfig

    def execute(self, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query], *,
                context: BuildContext, progress: bool = True, log: Callable[[str], None] | None = None,
                stage_docs: Mapping[str, frozenset[str]] | None = None) -> Executed:
        ray = import_ray()  # without the extra, kind: ray is its one-line error even for a live retriever
        config, ex = self.config, self.config.executor
        live = live_parts(retriever)
        if live:  # the service does the work; the driver sends the requests (``concurrency:`` spreads them)
            if ex.shards > 1:
                raise ConfigError(f"executor.shards: {ex.shards}, but retriever.kind {live[0]!r} is a live service "
                                  f"(its index is the service's): set shards: 1")
            if log:
                log(f"note: executor.kind 'ray': retriever.kind {live[0]!r} is a live service: its requests are "
                    f"sent from this process, not from Ray workers (its concurrency: setting spreads them)")
            retrieved = run_local(config, retriever, chunks, queries, context.documents, progress,
                                  stage_docs=stage_docs)
            return Executed(retrieved, self._record("driver"), retrieval_stages(retrieved))
        skipping = [node.kind for node in _parts(retriever)
                    if isinstance(node, FrameworkRetriever) and node.config.on_error == "skip"]
        if skipping:  # which queries failed is known only where the framework ran
            raise ConfigError(f"retriever.on_error: skip with retriever.kind {skipping[0]!r} needs the local "
                              f"executor (the queries the framework failed on are known to the actor that ran "
                              f"them); use on_error: fail with executor.kind 'ray'")
        batch = self._batch_size()
        stages: dict[str, float] = {}
        t0 = time.perf_counter()
        started = start_ray(ray, ex)
        stages["start_s"] = time.perf_counter() - t0
        remote = None
        try:
            t0 = time.perf_counter()
            encoded = encode_with_ray(ray, retriever, chunks,
                                      [queries[i:i + batch] for i in range(0, len(queries), batch)], ex)
            stages["encode_s"] = time.perf_counter() - t0
            remote = RayRetriever(ray, retriever, config, context, batch)
            # One "batch" of retrieve_all is a wave: one query batch per replica, answered in parallel.
            retrieved = run_local(config, remote, chunks, queries, context.documents, progress,
                                  batch_size=batch * ex.num_workers, stage_docs=stage_docs)
            stages.update(retrieval_stages(retrieved))
            if log and encoded:
                log(f"ray: encoded {encoded} texts on {ex.num_workers} worker(s) in {stages['encode_s']:.1f}s")
        finally:
            if remote is not None:
                remote.close()
            if started:
                ray.shutdown()
        return Executed(retrieved, self._record(remote.placement), stages)

    def _batch_size(self) -> int:
        return self.config.executor.batch_size or self.config.batch_size

    def _record(self, placement: str) -> ExecutorRecord:
        ex = self.config.executor
        return ExecutorRecord(kind="ray", address=ex.address, workers=ex.num_workers, shards=ex.shards,
                              gpus_per_worker=float(ex.num_gpus_per_worker), batch_size=self._batch_size(),
                              placement=placement)
