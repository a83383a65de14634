"""Stage attribution: for a composite retriever (``hybrid``, ``reranked``, nested), each stage's ranks of the query's
relevant items, and, for a query that lost its evidence, the stage that lost it (``detail.lost_at``).

The ladder (``detail.stages``, on every query of a run whose retriever has stages, but those without checkable
gold: ``goldset_error``, ``no_gold``): per stage in pipeline order its
path, role, depth, the length of its list, and the rank of each relevant document (``docs``) and evidence unit
(``units``) it holds; items it does not hold are left out, so the record is bounded by the golden set, not the lists.

The rule (``lost_at``): the evidence followed is what the verdict says is missing: the relevant documents of a
``missing_document``, the units of a ``wrong_chunk``, the units of the missing groups of an ``incomplete``; a stage's
rank of it is the best rank of any of those items. With ``k`` the query's window, the stage named is the first, in
pipeline order, whose input held the evidence within ``k`` and whose list does not: ``fusion`` (a child had it at
rank r1, the fused list at r2) or ``rerank`` (the reranker demoted it from r1 to r2). When no stage ever held it
within ``k``: ``retriever`` if no stage held it at all (no child found it within its depth; the children named),
``rerank_candidates`` if a reranker's child held it past the candidate cut (``top_n``, so the reranker never scored
it), else ``window`` (the window's cut was the first to leave it out).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from ..core.ids import unit_id
from ..core.types import Chunk, Judgment
from ..hits.groups import required_groups
from ..hits.units import QueryUnits, new_units
from ..retrievers.stages import StageRecord

# stage name -> how report.md and the summary say "{n} queries" lost there; the order is the pipeline's
LOST_AT = {
    "retriever": "the retrievers missed {n} (no stage found the evidence)",
    "fusion": "fusion lost {n}",
    "rerank_candidates": "the rerank cut lost {n}",
    "rerank": "the reranker lost {n}",
    "window": "the window cut {n} (no stage had the evidence within k)",
}
STAGE_NAMES = tuple(LOST_AT)
RULE = ("lost_at names the first stage, in pipeline order, whose input held the evidence the verdict misses within "
        "the window's k and whose list did not (fusion, rerank); when no stage held it within k: retriever (no "
        "stage held it at all), rerank_candidates (a reranker's child held it past top_n), else window")


def ladder(records: Sequence[StageRecord], units: QueryUnits, chunks: Mapping[str, Chunk]) -> list[dict]:
    """Each stage's ranks of the query's relevant documents and units (``detail.stages``). A hit without its span
    (named by chunk id) is read at its chunk's span."""
    out = []
    for s in records:
        docs: dict[str, int] = {}
        covered: dict[str, int] = {}
        seen: set[str] = set()
        for rank, chunk_id, doc_id, start, end in s.hits:
            docs.setdefault(doc_id, rank)
            if start < 0 and chunk_id in chunks:
                start, end = chunks[chunk_id].start, chunks[chunk_id].end
            for u in new_units(units, doc_id, start, end, seen) if doc_id in units.by_doc else ():
                covered[u.unit_id] = rank
        out.append({"path": s.path, "role": s.role, "inputs": list(s.inputs), "depth": s.depth,
                    "length": s.length, "docs": docs, "units": covered})
    return out


def _followed(kind: str, detail: Mapping, judgments: Sequence[Judgment]) -> tuple[str, set[str]] | None:
    """(which ranks of a stage to read, the items) of the evidence the verdict says is missing; None when nothing is
    missing from the window."""
    if kind == "missing_document":
        return "docs", {d for d in detail.get("best_rank", {})}
    if kind == "wrong_chunk":
        return "units", {unit_id(j.doc_id, sorted(j.evidence, key=lambda s: (s.start, s.end)))
                         for j in judgments if j.relevance >= 1}
    if kind == "incomplete":
        groups = required_groups(judgments)
        missing = [m.get("group") for m in detail.get("missing_groups", [])]
        return "units", {unit_id(j.doc_id, sorted(j.evidence, key=lambda s: (s.start, s.end)))
                         for g in missing for j in groups.get(g, [])}
    return None


def lost_at(stages: Sequence[dict], k: int, level: str, items: Iterable[str]) -> dict:
    """Where the evidence (``items`` at ``level``: "docs" or "units") was lost, by the rule in the module's doc."""
    items = set(items)
    rank = {s["path"]: min((r for i, r in s[level].items() if i in items), default=None) for s in stages}
    within = {p: r is not None and r <= k for p, r in rank.items()}
    by_path = {s["path"]: s for s in stages}
    ranks = dict(rank)
    for s in stages:
        if s["role"] == "fusion":
            held = [p for p in s["inputs"] if within.get(p)]
            if held and not within[s["path"]]:
                best = min(held, key=lambda p: rank[p])
                return {"stage": "fusion", "path": s["path"], "from": {"path": best, "rank": rank[best]},
                        "to": {"path": s["path"], "rank": rank[s["path"]]}, "window": k, "ranks": ranks}
        elif s["role"] == "rerank":
            child = by_path[s["inputs"][0]]["inputs"][0]
            if within.get(child) and not within[s["path"]]:
                return {"stage": "rerank", "path": s["path"], "from": {"path": child, "rank": rank[child]},
                        "to": {"path": s["path"], "rank": rank[s["path"]]}, "window": k, "ranks": ranks}
    if all(r is None for r in rank.values()):
        children = [{"path": s["path"], "depth": s["depth"]} for s in stages if s["role"] == "retriever"]
        return {"stage": "retriever", "children": children, "window": k, "ranks": ranks}
    for s in stages:
        if s["role"] == "candidates":
            child = s["inputs"][0]
            if rank[child] is not None and rank[s["path"]] is None:
                return {"stage": "rerank_candidates", "path": s["path"], "depth": s["depth"],
                        "from": {"path": child, "rank": rank[child]}, "window": k, "ranks": ranks}
    return {"stage": "window", "window": k, "ranks": ranks}


def attributed(kind: str, detail: dict, records: Sequence[StageRecord] | None, units: QueryUnits,
               chunks: Mapping[str, Chunk], judgments: Sequence[Judgment], k: int) -> dict:
    """``detail`` with the query's ladder (``stages``) and, for a query that lost evidence, ``lost_at``."""
    if records is None or kind in ("goldset_error", "no_gold"):  # no evidence that can be followed
        return detail
    stages = ladder(records, units, chunks)
    out = dict(detail, stages=stages)
    followed = _followed(kind, detail, judgments) if detail.get("where") != "absent_from_run" else None
    if followed is not None and stages:
        out["lost_at"] = lost_at(stages, k, *followed)
    return out


def lost_counts(stages_lost: Iterable[str]) -> dict[str, int]:
    """Queries per losing stage, every stage named (0 when none), in pipeline order."""
    counts = Counter(stages_lost)
    return {name: counts.get(name, 0) for name in STAGE_NAMES}


def lost_sentence(counts: Mapping[str, int]) -> str:
    """"fusion lost 12 queries, the rerank cut lost 5": the stages that lost any, in pipeline order."""
    return ", ".join(LOST_AT[name].format(n=f"{n} quer{'y' if n == 1 else 'ies'}") for name, n in counts.items()
                     if n and name in LOST_AT)
