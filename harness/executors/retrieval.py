"""The in-process retrieval loop every executor drives: index once, retrieve every query in batches (progress on
stderr), check each batch against the retriever contract, place every hit on a chunk (the hit contract), keep
``depth`` hits. The local executor runs it with the retriever itself; the Ray executor with a retriever that sends
each batch to its actors, so the checks and the placing are this same code."""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping, Sequence

from ..core.errors import RetrieverError, guarded_call
from ..hits.table import HitTable, HitTableBuilder
from ..core.types import Chunk, Document, Query
from ..retrievers import REGISTRY, HitPlacer, HitProblem, Retriever, check_output
from ..retrievers.compose import dropped_duplicates
from ..retrievers.contract import HitReport, shown
from ..retrievers.ranking import id_order
from ..retrievers.stages import StageRecord, keep
from .latency import latency_summary, per_query_ms


@dataclass(frozen=True)
class Retrieved:
    """What a retriever produced, placed: one list per query (hits on the run's chunks, contract order), the run's
    chunks (the corpus's, then those made for hits' own spans), timings, and the hits skipped as unplaceable.
    ``lists`` is a ``HitTable``: columns (chunk index, score) that read as a sequence of ``RankedList``."""

    lists: HitTable
    chunks: list[Chunk]
    timings: dict[str, float]
    hits: HitReport
    latency: dict | None = None  # latency.latency_summary: p50/p95/max ms per query, queries/s
    # query id -> its stages (``retrievers.stages``: a composite's), the hits of relevant documents only; None for
    # a retriever without stages or a run not asked for them
    stages: Mapping[str, tuple[StageRecord, ...]] | None = None

    def warning(self, kind: str) -> str | None:
        """The stderr warning for skipped hits (``retriever_hits.unplaceable: skip``), or None."""
        r = self.hits
        note = (f"note: retriever.kind {kind!r}: {r.loose} hit text(s) matched their document only after "
                f"normalising case, whitespace and Unicode forms; placed there (listed in results.json "
                f"hit_problems)") if r.loose else None
        if not r.skipped:
            return note
        lines = [p.line() for p in r.examples] + ([f"... and {r.skipped - len(r.examples)} more"]
                                                  if r.skipped > len(r.examples) else [])
        warning = (f"warning: retriever.kind {kind!r}: skipped {r.skipped} hit(s) in {r.queries} queries that name "
                   f"no chunk of the corpus (retriever_hits.unplaceable: skip; listed in results.json hit_problems)\n"
                   + "\n".join(f"  - {line}" for line in lines))
        return (f"{note}\n" if note else "") + warning


def _progress(total: int, label: str, enabled: bool):
    from ..core.progress import progress

    return progress(total, label, enabled)


def _guarded(kind: str, step: str, call: Callable):
    """Run a retriever's ``step``. A third-party kind's crash becomes one error naming the kind, its origin and
    where it failed (a built-in kind's crash is a bug of harness: its traceback is kept)."""
    registered = REGISTRY.get(kind)
    if registered is None or registered.builtin:
        return call()
    return guarded_call(call, f"retriever.kind {kind!r} ({registered.origin}) failed in {step}")


def retrieve_all(retriever: Retriever, chunks: Sequence[Chunk], queries: Sequence[Query], depth: int,
                 batch_size: int = 256, progress: bool = True, *, kind: str = "retriever",
                 documents: Mapping[str, Document] = MappingProxyType({}), unplaceable: str = "fail",
                 include_title: bool = True, stage_docs: Mapping[str, frozenset[str]] | None = None) -> Retrieved:
    """Index ``chunks``, retrieve ``queries`` in batches and place their hits. ``unplaceable``: ``fail`` raises
    one error listing every hit that names no chunk; ``skip`` drops them and reports them in ``Retrieved.hits``.
    ``stage_docs`` (query id -> relevant documents): a composite's stages are kept, each reduced to the hits of
    those documents as each batch is retrieved (``retrievers.stages.keep``)."""
    timings: dict[str, float] = {}
    chunks = tuple(chunks)  # what a retriever is handed it cannot change (chunks and documents are frozen too)
    t0 = time.perf_counter()
    _guarded(kind, "index", lambda: retriever.index(chunks))
    timings["index_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    placer = HitPlacer(chunks, documents, include_title)
    # Each batch's hits become columns at once: memory grows by ~12 bytes a hit, not by a Hit object a hit.
    table = HitTableBuilder(chunks)
    # A retriever that answers with positions in the chunks it indexed (``contract.IndexedLists``) skips making,
    # checking and placing a Hit per hit, most of a fast BM25 run's time; its lists are checked as columns.
    indexed = _indexed(retriever)
    id_rank = id_order(chunks) if indexed is not None else None
    n_adopted = 0
    problems: list[HitProblem] = []
    duplicates = 0
    dropped_before = dropped_duplicates(retriever)
    batches: list[tuple[float, int]] = []  # (seconds, queries) per retrieve call, for per-query latency
    traced = getattr(retriever, "stage_lists", None) if stage_docs is not None else None
    stages: dict[str, tuple[StageRecord, ...]] | None = {} if callable(traced) else None
    with _progress(len(queries), "retrieving", progress) as advance:
        for i in range(0, len(queries), batch_size):
            batch = queries[i:i + batch_size]
            given = _handed(batch)
            tb = time.perf_counter()
            if indexed is not None:  # columns, no Hit objects; a batch that is not clean goes the usual way
                got = _guarded(kind, "retrieve", lambda: indexed(given, depth))
                batches.append((time.perf_counter() - tb, len(batch)))
                if got.is_clean(len(batch), depth, id_rank):
                    table.add_indexed([q.query_id for q in batch], got.lengths, got.chunk, got.scores)
                    advance(i + len(batch))
                    continue
                lists = got.as_lists(batch, chunks)
            else:
                lists = _guarded(kind, "retrieve", lambda: retriever.retrieve(given, depth))
                batches.append((time.perf_counter() - tb, len(batch)))
                if stages is not None:
                    _keep_stages(stages, batch, traced(), stage_docs)
            check_output(kind, batch, lists, depth)
            placed_lists = []
            for ranked in lists:
                placed, dropped, merged = placer.place(ranked)
                placed_lists.append(placed)
                problems += dropped
                duplicates += merged
            if len(placer.adopted) > n_adopted:
                table.added(list(placer.adopted.values())[n_adopted:])
                n_adopted = len(placer.adopted)
            table.add(placed_lists)
            advance(i + len(batch))
    timings["retrieve_s"] = time.perf_counter() - t0
    timings["queries_per_s"] = len(queries) / timings["retrieve_s"] if timings["retrieve_s"] > 0 else 0.0
    if problems and unplaceable == "fail":
        n_queries = len({p.query_id for p in problems})
        raise RetrieverError(f"retriever.kind {kind!r}: {len(problems)} hit(s) in {n_queries} of {len(queries)} "
                             f"queries name no chunk of the corpus (retriever_hits.unplaceable: fail; set it to "
                             f"skip to drop them, counted in results.json)", shown(problems))
    # Kinds whose hits come from elsewhere (external, http, python) drop repeats before the cut at depth, counted
    duplicates += dropped_duplicates(retriever) - dropped_before  # (a composite's children, Ray's actors too)
    loose = list(getattr(retriever, "loosely_placed", ())) + placer.loose  # the external run places its own hits
    run_chunks = list(chunks) + list(placer.adopted.values())
    ms, measured = per_query_ms(retriever, queries, batches)
    return Retrieved(table.build(run_chunks), run_chunks, timings, HitReport.of(problems, duplicates, loose),
                     latency_summary(ms, sum(s for s, _ in batches), measured), stages or None)


def _keep_stages(out: dict, batch: Sequence[Query], per_query, stage_docs: Mapping[str, frozenset[str]]) -> None:
    """A batch's stages, each reduced to the hits of the query's relevant documents (a retriever whose stages do
    not line up with the batch, a sharded run's, records none)."""
    if per_query is None or len(per_query) != len(batch):
        return
    for q, query_stages in zip(batch, per_query):
        docs = stage_docs.get(q.query_id, frozenset())
        out[q.query_id] = keep(query_stages, docs.__contains__)


def _handed(batch: Sequence[Query]) -> tuple[Query, ...]:
    """What a retriever is given of a batch: a tuple (it cannot reorder or empty the list the run checks its
    answers against) of queries whose tags are its own copies (a tag it changes is not the golden set's)."""
    return tuple(Query(q.query_id, q.text, dict(q.tags)) for q in batch)


def _indexed(retriever: Retriever):
    """The retriever's ``retrieve_indexed``, when it answers for the ``retrieve`` the class calls: a subclass that
    overrides ``retrieve`` (to filter or re-score) must not be bypassed by the parent's columns."""
    method = getattr(retriever, "retrieve_indexed", None)
    if not callable(method):
        return None
    cls = type(retriever)
    owner = next((c for c in cls.__mro__ if "retrieve_indexed" in c.__dict__), None)
    defines_retrieve = next((c for c in cls.__mro__ if "retrieve" in c.__dict__), None)
    return method if owner is not None and owner is defines_retrieve else None


def query_coverage(retriever: Retriever, queries: Sequence[Query]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(golden-set queries the retriever has no answer for, queries it answers that the golden set lacks). Only a
    retriever replaying answers made elsewhere knows (``answered_query_ids()``: the external run); any other
    answers every query, possibly with nothing."""
    answered = getattr(retriever, "answered_query_ids", None)
    if answered is None:
        return (), ()
    ids = list(answered())
    known, wanted = set(ids), {q.query_id for q in queries}
    return (tuple(q.query_id for q in queries if q.query_id not in known),
            tuple(q for q in ids if q not in wanted))
