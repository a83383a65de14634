"""Stage traces of composite retrievers: each stage's ranked list of a query, so a run can say which stage lost the
evidence (``diagnostics.stages``).

An optional hook of the retriever contract: a retriever with ``stage_lists()`` returns, for the queries of its last
``retrieve`` call, each query's stages in pipeline order (a stage's inputs come before it). ``hybrid`` and
``reranked`` have it, and a composite nested in another hands its stages up, under its parent's path; any other
kind has none and nothing changes for it.

A stage is named by its path: the composite's kind, then the child's kind (a second child of the same kind gets
``#2``), then the step: ``hybrid/bm25``, ``hybrid/fusion``, ``reranked/candidates``, ``reranked/rerank``,
``reranked/hybrid/dense``. Roles: ``retriever`` (a leaf child's own list, cut at its depth), ``fusion`` (the fused
list), ``candidates`` (the reranker's input: the child's top ``top_n``), ``rerank`` (the reranked list, the child's
order kept below the candidates).

What leaves the executor is small (``keep``): per stage, only the hits of the query's relevant documents, with their
ranks, and the stage's depth and length. Whole lists live for one batch only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ..core.types import Hit

ROLES = ("retriever", "fusion", "candidates", "rerank")


@dataclass(frozen=True)
class StageList:
    """One stage's ranked list of one query, while its batch is being retrieved."""

    path: str
    role: str
    inputs: tuple[str, ...]  # the paths this stage ranks from (none for a leaf retriever)
    depth: int  # the hits the stage was asked for (a child's depth, a reranker's top_n)
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class StageRecord:
    """One stage of one query as the run keeps it: the hits of relevant documents only, as (rank, chunk id, doc id,
    start, end), and how long the stage's list was (a hit past ``length`` was not found by it)."""

    path: str
    role: str
    inputs: tuple[str, ...]
    depth: int
    length: int
    hits: tuple[tuple[int, str, str, int, int], ...]


def child_names(kinds: Iterable[str]) -> list[str]:
    """Each child's name in a path: its kind, ``kind#n`` for the n-th child of a kind already named."""
    seen: dict[str, int] = {}
    out = []
    for kind in kinds:
        seen[kind] = seen.get(kind, 0) + 1
        out.append(kind if seen[kind] == 1 else f"{kind}#{seen[kind]}")
    return out


def child_stages(child, name: str, prefix: str, hits_of: Sequence[Sequence[Hit]], depth: int
                 ) -> list[list[StageList]]:
    """The stages of one child per query of a batch, under ``prefix``: a composite child's own stages (its path
    prefixed), a leaf child's one list (``hits_of``: its lists in query order)."""
    own = getattr(child, "stage_lists", None)
    nested = own() if callable(own) else None
    if nested is not None:
        return [[StageList(f"{prefix}/{s.path}", s.role, tuple(f"{prefix}/{p}" for p in s.inputs), s.depth, s.hits)
                 for s in stages] for stages in nested]
    return [[StageList(f"{prefix}/{name}", "retriever", (), depth, tuple(hits))] for hits in hits_of]


def output_path(stages: Sequence[StageList]) -> str:
    """The path of the stage whose list a composite (or a child) hands on: its last one."""
    return stages[-1].path


def keep(stages: Sequence[StageList], relevant_docs: Callable[[str], bool]) -> tuple[StageRecord, ...]:
    """``stages`` of one query reduced to what the run keeps: each stage's hits in a relevant document."""
    return tuple(StageRecord(s.path, s.role, s.inputs, s.depth, len(s.hits),
                             tuple((h.rank, h.chunk_id, h.doc_id, h.start, h.end) for h in s.hits
                                   if relevant_docs(h.doc_id)))
                 for s in stages)


def packed(stages: Sequence[StageList]) -> list[tuple]:
    """Stages as plain tuples (what a Ray actor sends back; ``unpacked`` reverses it)."""
    return [(s.path, s.role, s.inputs, s.depth,
             [(h.chunk_id, h.doc_id, h.score, h.rank, h.start, h.end) for h in s.hits]) for s in stages]


def unpacked(rows: Sequence[tuple]) -> list[StageList]:
    return [StageList(path, role, tuple(inputs), depth, tuple(Hit(*h) for h in hits))
            for path, role, inputs, depth, hits in rows]

