"""The ladder of a composite retriever's stages in a query's drill-down (report.md, explain; report.html's is in
``stages_html``), the sentence that says where its evidence was lost (``detail.lost_at``, ``diagnostics.stages``),
and the run's counts per stage."""

from __future__ import annotations

from typing import Mapping

from ..diagnostics.stages import lost_sentence
from .fmt import md, md_code


def _rank(r) -> str:
    return "—" if r is None else str(r)


def lost_text(lost: Mapping) -> str:
    """One sentence: which stage lost the evidence, with its ranks before and after."""
    k = lost.get("window")
    stage = lost.get("stage")
    if stage in ("fusion", "rerank"):
        before, after = lost["from"], lost["to"]
        return (f"lost at {stage}: {before['path']} had it at rank {before['rank']}, {after['path']} at "
                f"{_rank(after['rank']) if after['rank'] is not None else 'none'} (window {k})")
    if stage == "rerank_candidates":
        return (f"lost at the rerank cut: {lost['from']['path']} had it at rank {lost['from']['rank']}, past the "
                f"{lost['depth']} candidates the reranker scores (window {k})")
    if stage == "retriever":
        named = ", ".join(f"{c['path']} (depth {c['depth']})" for c in lost.get("children", []))
        return f"lost at the retrievers: no stage found it ({named})"
    return f"lost at the window: no stage had it within the window's {k}"


def rows(detail: Mapping) -> list[tuple[str, str, int, str, str, bool]]:
    """(path, role, depth, documents' ranks, units' ranks, whether this stage lost it) per stage."""
    lost = detail.get("lost_at") or {}
    out = []
    for s in detail.get("stages") or []:
        docs = ", ".join(f"{d} {r}" for d, r in s.get("docs", {}).items()) or "none"
        units = ", ".join(f"{u} {r}" for u, r in s.get("units", {}).items()) or "none"
        out.append((s["path"], s["role"], s["depth"], docs, units, lost.get("path") == s["path"]))
    return out


def ladder_md(detail: Mapping) -> list[str]:
    """report.md's ladder (report.html's: ``stages_html``): the losing stage, then each stage's ranks."""
    ladder = rows(detail)
    if not ladder:
        return []
    lost = detail.get("lost_at")
    out = [f"  - {md(lost_text(lost))}"] if lost else []
    out.append("  - stages (relevant documents: rank; evidence units: rank):")
    out += [f"    - {md_code(path)} ({md(role)}, depth {md(depth)}): {md(docs)}; {md(units)}"
            + (" ← lost here" if here else "") for path, role, depth, docs, units, here in ladder]
    return out


def ladder_lines(detail: Mapping) -> list[str]:
    """The same as plain text lines (``harness explain``'s terminal output)."""
    lost = detail.get("lost_at")
    out = [lost_text(lost)] if lost else []
    out += [f"{path} ({role}, depth {depth}): {docs}; {units}" + (" (lost here)" if here else "")
            for path, role, depth, docs, units, here in rows(detail)]
    return out


def lost_counts_line(counts: Mapping[str, int] | None) -> str:
    """"Where the evidence was lost: fusion lost 12 queries, ..." ("" for a retriever without stages)."""
    if counts is None:
        return ""
    said = lost_sentence(counts)
    return f"Where the evidence was lost (stage attribution): {said or 'no query lost its evidence at a stage'}."
