"""The Ray executor: encoding as Ray Data ``map_batches`` over an actor pool (the model loaded once per actor),
retrieval as query batches sent to actors that hold the index (the built retriever shipped, rebuilt from its config
in each actor, or one shard of it each), the driver checking and placing every list as ``retrieve_all`` does.

Ray is imported only here, and only when a config asks for ``executor: {kind: ray}``. Resources are explicit: on a
small machine Ray's default layout deadlocks (the actors take every CPU and the task that feeds them never runs),
so every actor asks for a fraction of the CPUs and sets its torch threads to match."""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..config.schema import ExecutorConfig, ExperimentConfig
from ..core.errors import ConfigError, HarnessError, MissingDependencyError
from ..core.types import Chunk, Hit, Query, RankedList
from ..retrievers import BuildContext, Retriever, build_retriever
from ..retrievers.compose import dropped_duplicates, parts as _parts
from ..retrievers.ranking import rank_hits
from .local import Executed, run_local

INSTALL = "pip install 'rag-harness[ray]'"
CLOSE_TIMEOUT_S = 120.0  # an actor's close() (stopping its PostgreSQL, say) waits at most this long
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this copy of the harness package


def import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise MissingDependencyError(f"executor.kind 'ray' needs Ray: {INSTALL}") from None
    return ray


def local_init_args() -> dict:
    """``ray.init`` arguments for a private Ray on this machine: every CPU, no dashboard, bound to the loopback
    address where Ray lets us choose, and workers importing the same harness as the driver."""
    path = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    return {"num_cpus": os.cpu_count() or 1, "include_dashboard": False, "_node_ip_address": "127.0.0.1",
            "log_to_driver": False, "logging_level": logging.ERROR,
            "runtime_env": {"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}}}


def _start(ray, ex: ExecutorConfig) -> bool:
    """Connect to (or start) Ray; True when this call started it (then the run shuts it down)."""
    if ray.is_initialized():
        return False
    with _our_sigterm():
        _init(ray, ex)
    return True


@contextmanager
def _our_sigterm() -> Iterator[None]:
    """Keep harness's SIGTERM handler (core.interrupt: cleanup, "interrupted", exit 143) across ``ray.init``: Ray's
    core installs its own C handler in the driver, which dumped a stack and aborted (exit 134) mid-run, leaving the
    output folder's lock behind."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if ours is not None:
            signal.signal(signal.SIGTERM, ours)


def _init(ray, ex: ExecutorConfig) -> None:
    if ex.address == "local":
        ray.init(**local_init_args())
        return
    # An existing cluster gets this package's code with the job; its dependencies (and a model folder named
    # by path) must be installed on the nodes, or given in a runtime_env by ``ray.init`` before the run.
    try:
        ray.init(address=ex.address, log_to_driver=False, runtime_env={"py_modules": [str(Path(PACKAGE_ROOT) /
                                                                                             "harness")]})
    except (ConnectionError, TimeoutError, ValueError) as exc:  # no cluster there: the config's address is wrong
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"executor.address {ex.address!r}: cannot connect to a Ray cluster there ({first}); "
                          f"start one (`ray start --head`), give its address, or use address: local for a "
                          f"private Ray on this machine") from None


@contextmanager
def session(ex: ExecutorConfig) -> Iterator[None]:
    """Ray connected (or started) for the runs inside, and shut down after them if this started it: a sweep's
    points share one Ray instead of starting and stopping one each (seconds apiece)."""
    ray = import_ray()
    started = _start(ray, ex)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def _cpus_per_actor(ray, actors: int) -> float:
    # One CPU stays free for Ray Data's read tasks and the driver's own work; the rest is shared by the actors.
    total = float(ray.cluster_resources().get("CPU", 1.0))
    return round(min(1.0, max(total - 1.0, total / 2.0) / max(actors, 1)), 3)


def _set_threads(threads: int) -> None:
    """Match torch's threads to the actor's CPUs, if torch is loaded (a BM25 actor never imports it: 10-30 s)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


# ---- encoding: Ray Data over an actor pool -------------------------------------------------------------------

def live_parts(retriever: Any) -> list[str]:
    """The kinds of the live retrievers in ``retriever`` (http, elasticsearch...): their work is done by a service,
    and what a run reports of them (which queries were answered, every request, its latency) is the state of the
    one object that sent the requests."""
    from ..retrievers.http import LiveRetriever

    return [getattr(node, "kind", type(node).__name__) for node in _parts(retriever) if isinstance(node, LiveRetriever)]


def import_folders(retriever: Any) -> list[str]:
    """The folders the python retrievers in ``retriever`` import their modules from (their ``path:``, absolute
    once the config is read): the actors put them on their import path, as ``load_target`` does on the driver."""
    from ..retrievers.python import PythonRetriever

    folders = []
    for node in _parts(retriever):
        path = getattr(node.config, "path", None) if isinstance(node, PythonRetriever) else None
        if path is not None and str(Path(path).resolve()) not in folders:
            folders.append(str(Path(path).resolve()))
    return folders


def _dense_parts(retriever: Any) -> list:
    """The dense retrievers inside ``retriever`` (itself, a hybrid's children, a reranked child), with a cache."""
    return [node for node in _parts(retriever)
            if getattr(node, "encoder", None) is not None and hasattr(node, "_cached_encode") and node.cache is not None]


class EncodeActor:
    """One model per actor, loaded in the constructor; each call encodes the rows of one encoder batch."""

    def __init__(self, name: str, max_length: int | None, batch_size: int, threads: int, gpu: bool = False):
        from ..retrievers.encoders import Encoder

        self.encoder = Encoder(name, None, batch_size=batch_size, max_length=max_length)
        model = self.encoder.loaded()
        _set_threads(threads)
        if gpu:  # Ray gave this actor a GPU (num_gpus_per_worker); the models load on the CPU everywhere else
            import torch

            if torch.cuda.is_available():
                model.to("cuda")

    def __call__(self, batch: dict) -> dict:
        vectors = []
        for texts, prefix, normalize in zip(batch["texts"], batch["prefix"], batch["normalize"]):
            vecs = self.encoder._encode([str(t) for t in texts], str(prefix), bool(normalize), False)
            vectors.append(vecs.tobytes())
        return {"item": batch["item"], "vectors": np.array(vectors, dtype=object),
                "dim": np.array([self.encoder.model.get_sentence_embedding_dimension()] * len(vectors))}


def encode_with_ray(ray, retriever: Any, chunks: Sequence[Chunk], query_batches: Sequence[Sequence[Query]],
                    ex: ExecutorConfig) -> int:
    """Fill the embedding cache for every dense part of ``retriever``: the chunks, and the queries in the batches
    the workers will send (a query batch's embeddings are one cache entry), each encoder batch as the local run
    makes it, so the vectors and cache entries are the local ones. Returns how many texts were encoded."""
    encoded = 0
    for dense in _dense_parts(retriever):
        enc, cfg = dense.encoder, dense.config
        plans = [("embeddings", [c.index_text for c in chunks], cfg.passage_prefix)]
        plans += [("query_embeddings", [q.text for q in batch], cfg.query_prefix) for batch in query_batches]
        items, todo, where = [], [], {}
        for kind, texts, prefix in plans:
            key, order = enc.plan(texts, prefix, cfg.normalize)
            if not texts or dense.cache.load(kind, key) is not None:
                continue
            todo.append((kind, texts, key, order))
            for first in range(0, len(order), enc.batch_size):
                rows = order[first:first + enc.batch_size]
                where[(len(todo) - 1, int(rows[0]))] = len(items)
                items.append({"item": len(items), "texts": [texts[i] for i in rows.tolist()], "prefix": prefix,
                              "normalize": cfg.normalize})
        if not items:
            continue
        workers = ex.num_workers
        cpus = _cpus_per_actor(ray, workers)
        ds = ray.data.from_items(items, override_num_blocks=min(len(items), 4 * workers))
        ds = ds.map_batches(EncodeActor, batch_size=1, compute=ray.data.ActorPoolStrategy(size=workers),
                            fn_constructor_kwargs={"name": enc.name, "max_length": enc.max_length,
                                                   "batch_size": enc.batch_size,
                                                   "threads": max(1, int(cpus) or 1),
                                                   "gpu": ex.num_gpus_per_worker > 0},
                            num_cpus=cpus, num_gpus=ex.num_gpus_per_worker or None)
        done: dict[int, np.ndarray] = {}
        for row in ds.iter_rows():  # streamed back as the actors finish batches
            done[int(row["item"])] = np.frombuffer(row["vectors"], dtype=np.float32).reshape(-1, int(row["dim"]))
        # Saved through the cache's own shard writer, so the entries are exactly those a local run writes.
        for plan, (kind, texts, key, order) in enumerate(todo):
            dense.cache.get_or_build_rows(kind, key, order, enc.batch_size,
                                          lambda rows, plan=plan: done[where[(plan, int(rows[0]))]])
            encoded += len(texts)
    return encoded


# ---- retrieval: actors holding the index ---------------------------------------------------------------------

class IndexActor:
    """Holds one retriever (whole, or one shard) and answers query batches."""

    def __init__(self, shipped: list | None, section: dict | None, chunks: Sequence[Chunk] | None,
                 documents: dict | None, cache_dir: str, unplaceable: str, threads: int,
                 folders: Sequence[str] = ()):
        _set_threads(threads)
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
        _set_threads(threads)  # again: indexing may have loaded torch (a cache miss)

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

    def retrieve(self, queries: Sequence[Query], k: int) -> tuple[list[tuple], int]:
        """The batch's lists, and the repeated hits its retrievers dropped before the cut (results.json counts them
        as a local run does: the count lives in this actor's copy of the retriever)."""
        before = dropped_duplicates(self.retriever)
        packed = [_packed(ranked) for ranked in self.retriever.retrieve(queries, k)]
        return packed, dropped_duplicates(self.retriever) - before


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


def merge_shards(per_shard: Sequence[Sequence[RankedList]], depth: int) -> list[RankedList]:
    """Per query, every shard's hits in the one tie rule's order, cut at ``depth``."""
    from ..retrievers import ranking

    merge = getattr(ranking, "merge_shard_lists", None)  # the retrievers' own merge, where there is one
    if merge is not None:
        return merge(per_shard, depth)
    return [rank_hits(lists[0].query_id, (h for ranked in lists for h in ranked.hits), depth)
            for lists in zip(*per_shard)]


class RayRetriever:
    """What ``retrieve_all`` drives: ``index`` puts the index on the workers, ``retrieve`` sends one batch of
    ``batch_size`` queries to each replica and returns their lists in query order (merged across shards)."""

    def __init__(self, ray, retriever: Retriever, config: ExperimentConfig, context: BuildContext, batch_size: int):
        self.ray, self.local, self.config, self.context = ray, retriever, config, context
        self.ex, self.batch_size = config.executor, batch_size
        self.groups: list[list] = []  # replicas x shards actors
        self.placement = ""
        self.duplicates_dropped = 0  # what the actors' retrievers dropped (``IndexActor.retrieve``)

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
        cpus = _cpus_per_actor(ray, actors)
        cls = ray.remote(IndexActor).options(num_cpus=cpus, num_gpus=ex.num_gpus_per_worker or None)
        threads = max(1, int(cpus) or 1)
        cache_dir = str(Path(self.context.cache_dir).resolve())  # an actor runs in another folder
        folders = import_folders(local)
        self.groups = [[cls.remote(None if ref is None else [ref], *rest, cache_dir, self.context.unplaceable,
                                   threads, folders)
                        for ref, *rest in payloads] for _ in range(ex.num_workers)]
        # Wait until every actor holds its index: index_s covers building it everywhere.
        _get(ray, [a.ready.remote() for group in self.groups for a in group])

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        refs = []
        for n, first in enumerate(range(0, len(queries), self.batch_size)):
            batch = list(queries[first:first + self.batch_size])
            refs.append([a.retrieve.remote(batch, k) for a in self.groups[n % len(self.groups)]])
        out: list[RankedList] = []
        for per_shard in refs:
            answers = _get(self.ray, per_shard)
            self.duplicates_dropped += sum(dropped for _, dropped in answers)
            lists = [_unpacked(part) for part, _ in answers]
            out += lists[0] if len(lists) == 1 else merge_shards(lists, k)
        return out

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


def _get(ray, refs):
    """``ray.get``; an error raised in a worker is raised here as itself (a located harness error stays one line)."""
    from ray.exceptions import RayTaskError

    try:
        return ray.get(refs)
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, (HarnessError, MemoryError)):
            raise cause from None
        raise


def execute_ray(config: ExperimentConfig, retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query],
                *, context: BuildContext, progress: bool = True,
                log: Callable[[str], None] | None = None) -> Executed:
    ray = import_ray()
    ex = config.executor
    batch = ex.batch_size or config.batch_size
    live = live_parts(retriever)
    if live:  # the service does the work; the driver sends the requests (``concurrency:`` spreads them)
        if ex.shards > 1:
            raise ConfigError(f"executor.shards: {ex.shards}, but retriever.kind {live[0]!r} is a live service "
                              f"(its index is the service's): set shards: 1")
        if log:
            log(f"note: executor.kind 'ray': retriever.kind {live[0]!r} is a live service: its requests are sent "
                f"from this process, not from Ray workers (its concurrency: setting spreads them)")
        retrieved = run_local(config, retriever, chunks, queries, context.documents, progress)
        return Executed(retrieved, {"kind": "ray", "address": ex.address, "workers": ex.num_workers,
                                    "shards": ex.shards, "gpus_per_worker": float(ex.num_gpus_per_worker),
                                    "batch_size": batch, "placement": "driver"},
                        {"index_s": retrieved.timings["index_s"], "retrieve_s": retrieved.timings["retrieve_s"]})
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    started = _start(ray, ex)
    stages["start_s"] = time.perf_counter() - t0
    remote = None
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        t0 = time.perf_counter()
        encoded = encode_with_ray(ray, retriever, chunks,
                                  [queries[i:i + batch] for i in range(0, len(queries), batch)], ex)
        stages["encode_s"] = time.perf_counter() - t0
        remote = RayRetriever(ray, retriever, config, context, batch)
        # One "batch" of retrieve_all is a wave: one query batch per replica, answered in parallel.
        retrieved = run_local(config, remote, chunks, queries, context.documents, progress,
                              batch_size=batch * ex.num_workers)
        stages["index_s"] = retrieved.timings["index_s"]
        stages["retrieve_s"] = retrieved.timings["retrieve_s"]
        if log and encoded:
            log(f"ray: encoded {encoded} texts on {ex.num_workers} worker(s) in {stages['encode_s']:.1f}s")
    finally:
        if remote is not None:
            remote.close()
        if started:
            ray.shutdown()
    record = {"kind": "ray", "address": ex.address, "workers": ex.num_workers, "shards": ex.shards,
              "gpus_per_worker": float(ex.num_gpus_per_worker), "batch_size": batch,
              "placement": remote.placement}
    return Executed(retrieved, record, stages)
