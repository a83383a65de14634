"""Retrieval on Ray: actors that hold the index (the built retriever shipped, rebuilt from its config in each actor,
or one shard of it each) answer query batches; ``RayRetriever`` is what ``retrieve_all`` drives on the driver."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..config.schema import ExperimentConfig
from ..core.errors import ConfigError
from ..core.types import Chunk, Hit, Query, RankedList
from ..retrievers import BuildContext, Retriever, build_retriever
from ..retrievers.compose import dropped_duplicates
from ..retrievers.ranking import merge_shard_lists
from ..retrievers.stages import packed as packed_stages, unpacked as unpacked_stages
from .ray_encode import import_folders
from .ray_session import cpus_per_actor, get_raising, set_threads

CLOSE_TIMEOUT_S = 120.0  # an actor's close() (stopping its PostgreSQL, say) waits at most this long

class IndexActor:
    """Holds one retriever (whole, or one shard) and answers query batches."""

    def __init__(self, shipped: list | None, section: dict | None, chunks: Sequence[Chunk] | None,
                 documents: dict | None, cache_dir: str, unplaceable: str, threads: int,
                 folders: Sequence[str] = ()):
        set_threads(threads)
        # A python retriever's module is imported from its path: (on every node: shared storage), here as on the
        # driver. Before the retriever is unpickled, which imports it: so it comes nested ([ref]), not resolved
        # by Ray ahead of this constructor.
        for folder in folders:
            if folder not in sys.path:
                sys.path.insert(0, folder)
        retriever = None
        if shipped is not None:
            import ray

            retriever = ray.get(shipped[0])
        self.retriever = retriever
        if retriever is None:  # rebuilt here from its config: for retrievers that cannot be pickled
            context = BuildContext(cache_dir=Path(cache_dir), progress=False, documents=documents or {},
                                   unplaceable=unplaceable)
            self.retriever = build_retriever(section, context)
            try:
                self.retriever.index(tuple(chunks))
            except BaseException:  # a server or folder indexing started is not left behind by a dead actor
                self.close()
                raise
        set_threads(threads)  # again: indexing may have loaded torch (a cache miss)

    def ready(self) -> bool:
        return True

    def close(self) -> bool:
        """Release what this actor's retriever holds (a PostgreSQL started by pgserver, a temporary LanceDB
        folder, a client), as the local run's ``retriever.close()`` does: ``ray.kill`` runs no exit handler."""
        retriever, self.retriever = self.retriever, None
        close = getattr(retriever, "close", None)
        if callable(close):
            close()
        return True

    def retrieve(self, queries: Sequence[Query], k: int) -> tuple[list[tuple], int, list | None]:
        """The batch's lists, the repeated hits its retrievers dropped before the cut (results.json counts them
        as a local run does: the count lives in this actor's copy of the retriever), and a composite's stages
        (``retrievers.stages``; they travel with the hits, so a Ray run records what a local one does)."""
        before = dropped_duplicates(self.retriever)
        packed = [_packed(ranked) for ranked in self.retriever.retrieve(queries, k)]
        traced = getattr(self.retriever, "stage_lists", None)
        stages = traced() if callable(traced) else None
        return (packed, dropped_duplicates(self.retriever) - before,
                None if stages is None else [packed_stages(s) for s in stages])


def _packed(ranked: RankedList) -> tuple:
    """A ranked list as plain tuples: pickled in C, several times faster to send than ``Hit`` objects."""
    return ranked.query_id, [(h.chunk_id, h.doc_id, h.score, h.rank, h.start, h.end, h.text) for h in ranked.hits]


def _unpacked(packed: Sequence[tuple]) -> list[RankedList]:
    return [RankedList(query_id, tuple(Hit(*h) for h in hits)) for query_id, hits in packed]


def _put(ray, obj: Any):
    """``ray.put(obj)``, or None when it cannot be pickled (e.g. a C method cached on it: today's BM25 stemmer)."""
    try:
        return ray.put(obj)
    except TypeError:
        return None


class RayRetriever:
    """What ``retrieve_all`` drives: ``index`` puts the index on the workers, ``retrieve`` sends one batch of
    ``batch_size`` queries to each replica and returns their lists in query order (merged across shards)."""

    def __init__(self, ray, retriever: Retriever, config: ExperimentConfig, context: BuildContext, batch_size: int):
        self.ray, self.local, self.config, self.context = ray, retriever, config, context
        self.ex, self.batch_size = config.executor, batch_size
        self.groups: list[list] = []  # replicas x shards actors
        self.placement = ""
        self.duplicates_dropped = 0  # what the actors' retrievers dropped (``IndexActor.retrieve``)
        self._stages: list | None = None  # the last retrieve call's stages (``retrievers.stages``), if any

    def index(self, chunks: Sequence[Chunk]) -> None:
        ray, ex, local = self.ray, self.ex, self.local
        kind = self.config.retriever["kind"]
        if ex.shards > 1:
            if ex.shards > len(chunks):  # empty slices, and as many actors: Ray spent minutes starting 200
                raise ConfigError(f"executor.shards: {ex.shards} slices of {len(chunks)} chunks; give at most "
                                  f"{max(len(chunks), 1)} (a slice per actor holds part of the index)")
            if not hasattr(local, "shards"):
                raise ConfigError(f"executor.shards: {ex.shards}, but retriever.kind {kind!r} cannot be sharded "
                                  f"(it has no shards(n)); set shards: 1 to give each worker the whole index")
            local.index(chunks)
            payloads = [(ray.put(part), None, None, None) for part in local.shards(ex.shards)]
            self.placement = "sharded"
        else:
            local.index(chunks)
            shipped = _put(ray, local)
            payloads = [(shipped, None, None, None)]
            self.placement = "shipped"
        if payloads[0][0] is None:  # cannot be pickled: each actor builds it from its config and the chunks
            payloads = [(None, dict(self.config.retriever), ray.put(tuple(chunks)),
                         ray.put(dict(self.context.documents)))]
            self.placement = "rebuilt"
        actors = ex.num_workers * len(payloads)
        cpus = cpus_per_actor(ray, actors)
        cls = ray.remote(IndexActor).options(num_cpus=cpus, num_gpus=ex.num_gpus_per_worker or None)
        threads = max(1, int(cpus) or 1)
        cache_dir = str(Path(self.context.cache_dir).resolve())  # an actor runs in another folder
        folders = import_folders(local)
        self.groups = [[cls.remote(None if ref is None else [ref], *rest, cache_dir, self.context.unplaceable,
                                   threads, folders)
                        for ref, *rest in payloads] for _ in range(ex.num_workers)]
        # Wait until every actor holds its index: index_s covers building it everywhere.
        get_raising(ray, [a.ready.remote() for group in self.groups for a in group])

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        refs = []
        for n, first in enumerate(range(0, len(queries), self.batch_size)):
            batch = list(queries[first:first + self.batch_size])
            refs.append([a.retrieve.remote(batch, k) for a in self.groups[n % len(self.groups)]])
        out: list[RankedList] = []
        stages: list | None = []
        for per_shard in refs:
            answers = get_raising(self.ray, per_shard)
            self.duplicates_dropped += sum(dropped for _, dropped, _ in answers)
            lists = [_unpacked(part) for part, _, _ in answers]
            out += lists[0] if len(lists) == 1 else merge_shard_lists(lists, k)
            # A shard's stages rank its slice of the corpus only: a sharded run records no stages.
            traced = answers[0][2] if len(answers) == 1 else None
            stages = None if stages is None or traced is None else stages + [unpacked_stages(s) for s in traced]
        self._stages = stages
        return out

    def stage_lists(self) -> list | None:
        """The stages of the last ``retrieve`` call's queries, as the actors' retrievers recorded them."""
        return self._stages

    def close(self) -> None:
        """Each actor closes its retriever (waiting for one still building its index), then is killed: also when
        the run failed or was interrupted (``execute_ray`` calls this in a ``finally``)."""
        actors = [actor for group in self.groups for actor in group]
        self.groups = []
        try:
            refs = [actor.close.remote() for actor in actors]
            deadline = time.monotonic() + CLOSE_TIMEOUT_S
            for ref in refs:  # one at a time: an actor that died (its constructor failed) says so for itself
                try:
                    self.ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))
                except Exception:  # noqa: BLE001 - a dead actor has nothing left to close; the others still do
                    pass
        finally:
            for actor in actors:
                self.ray.kill(actor)
