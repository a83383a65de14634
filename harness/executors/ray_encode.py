"""Encoding on Ray: Ray Data ``map_batches`` over an actor pool, each actor loading the model once; the vectors are
written to the same content-addressed cache a local run reads, batch for batch the local encoder's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..config.schema import ExecutorConfig
from ..core.types import Chunk, Query
from ..retrievers.compose import parts as _parts
from .ray_session import cpus_per_actor, get_raising, set_threads

def live_parts(retriever: Any) -> list[str]:
    """The kinds of the live retrievers in ``retriever`` (http, elasticsearch...): their work is done by a service,
    and what a run reports of them (which queries were answered, every request, its latency) is the state of the
    one object that sent the requests."""
    from ..retrievers.http import LiveRetriever

    return [getattr(node, "kind", type(node).__name__) for node in _parts(retriever) if isinstance(node, LiveRetriever)]


def import_folders(retriever: Any) -> list[str]:
    """The folders the python and framework retrievers in ``retriever`` import their modules from (their ``path:``, absolute
    once the config is read): the actors put them on their import path, as ``load_target`` does on the driver."""
    from ..retrievers.frameworks import FrameworkRetriever
    from ..retrievers.python import PythonRetriever

    folders = []
    for node in _parts(retriever):
        path = getattr(node.config, "path", None) if isinstance(node, (PythonRetriever, FrameworkRetriever)) else None
        if path is not None and str(Path(path).resolve()) not in folders:
            folders.append(str(Path(path).resolve()))
    return folders


def _dense_parts(retriever: Any) -> list:
    """The dense retrievers inside ``retriever`` (itself, a hybrid's children, a reranked child), with a cache."""
    return [node for node in _parts(retriever)
            if getattr(node, "encoder", None) is not None and hasattr(node, "_cached_encode") and node.cache is not None]


class EncodeActor:
    """One model per actor, loaded in the constructor; each call encodes the rows of one encoder batch."""

    def __init__(self, name: str, max_length: int | None, batch_size: int, threads: int, gpu: bool = False,
                 backend: str = "torch", quantize: str = "none", export_root: str | None = None):
        from ..retrievers.encoders import Encoder

        # The driver's backend and quantize, or the actor's vectors (torch fp32) would fill that backend's entries.
        self.encoder = Encoder(name, None, batch_size=batch_size, max_length=max_length, backend=backend,
                               quantize=quantize, export_root=None if export_root is None else Path(export_root))
        set_threads(threads)
        if backend != "torch":
            self.encoder.runner()  # exported once into the shared cache folder, or read from it
            return
        model = self.encoder.loaded()
        if gpu:  # Ray gave this actor a GPU (num_gpus_per_worker); the models load on the CPU everywhere else
            import torch

            if torch.cuda.is_available():
                model.to("cuda")

    def __call__(self, batch: dict) -> dict:
        vectors, dims = [], []
        for texts, prefix, normalize in zip(batch["texts"], batch["prefix"], batch["normalize"]):
            vecs = self.encoder._encode([str(t) for t in texts], str(prefix), bool(normalize), False)
            vectors.append(vecs.tobytes())
            dims.append(vecs.shape[1])
        return {"item": batch["item"], "vectors": np.array(vectors, dtype=object), "dim": np.array(dims)}


def actor_arguments(enc: Any, *, threads: int, gpu: bool) -> dict:
    """What an ``EncodeActor`` needs to encode as ``enc`` does: the same model, batches, backend and quantize."""
    return {"name": enc.name, "max_length": enc.max_length, "batch_size": enc.batch_size, "threads": threads,
            "gpu": gpu, "backend": enc.backend, "quantize": enc.quantize,
            "export_root": None if enc.export_root is None else str(enc.export_root)}


def client_mode(ray) -> bool:
    """True when this process is a Ray Client driver (``address: ray://...``): Ray Data's executor needs a driver
    with its own core worker, which a client has not (``'Worker' object has no attribute 'core_worker'``)."""
    try:
        from ray.util.client import ray as client
    except ImportError:
        return False
    return bool(client.is_connected())


def _encode_items(items: list[dict], workers: int, cpus: float, gpus: float | None,
                  actor: dict) -> dict[int, np.ndarray]:
    """Every item's vectors, encoded by Ray Data over a pool of ``workers`` EncodeActors (run in the driver, or in
    a task on the cluster for a Ray Client driver)."""
    import logging

    import ray

    ray.data.DataContext.get_current().enable_progress_bars = False
    # Ray Data's INFO lines ("Dataset ... execution finished in 14.81 seconds") reached stderr under -q: the run's own
    # progress line tells the encoding's progress; Ray Data's warnings still show.
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    # and its warning that progress bars are off is about the line above, a choice made here, not the user's to act on
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    ds = ray.data.from_items(items, override_num_blocks=min(len(items), 4 * workers))
    ds = ds.map_batches(EncodeActor, batch_size=1, compute=ray.data.ActorPoolStrategy(size=workers),
                        fn_constructor_kwargs=actor, num_cpus=cpus, num_gpus=gpus)
    done: dict[int, np.ndarray] = {}
    for row in ds.iter_rows():  # streamed back as the actors finish batches
        done[int(row["item"])] = np.frombuffer(row["vectors"], dtype=np.float32).reshape(-1, int(row["dim"]))
    return done


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
        cpus = cpus_per_actor(ray, workers)
        actor = actor_arguments(enc, threads=max(1, int(cpus) or 1), gpu=ex.num_gpus_per_worker > 0)
        args = (items, workers, cpus, ex.num_gpus_per_worker or None, actor)
        if client_mode(ray):  # Ray Data cannot run in a Ray Client driver: it runs in a task on the cluster
            done = get_raising(ray, ray.remote(num_cpus=0)(_encode_items).remote(*args))
        else:
            done = _encode_items(*args)
        # Saved through the cache's own shard writer, so the entries are exactly those a local run writes.
        for plan, (kind, texts, key, order) in enumerate(todo):
            dense.cache.get_or_build_rows(kind, key, order, enc.batch_size,
                                          lambda rows, plan=plan: done[where[(plan, int(rows[0]))]])
            encoded += len(texts)
    return encoded
