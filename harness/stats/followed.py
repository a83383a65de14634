"""Which child a composite retriever followed, query by query: ``compare`` of a ``hybrid`` or ``reranked`` run
against runs of its children.

A compared run is a child of a composite when its retriever section holds every setting the composite's child
section gives (the parent's ``weight`` and ``depth`` aside), of the same kind; each child section is matched to one
run. Per query, on the comparison's first metric: the composite **followed** the children whose value it equals
(several when they tie with it); ``all`` when every child (two or more) scores what it scores; ``above`` / ``below`` when it beats
or trails every child (it followed none); ``between`` otherwise. Queries either run does not count are left out.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

from ..result import querycolumns
from ..result.model import Result
from ..retrievers.stages import child_names

PARENT_KEYS = ("weight", "depth")


def _holds(given: Any, resolved: Any) -> bool:
    """Every setting of ``given`` is in ``resolved`` with the same value (nested sections too)."""
    if isinstance(given, dict):
        return isinstance(resolved, dict) and all(k in resolved and _holds(v, resolved[k]) for k, v in given.items())
    return given == resolved


def _retriever(run: Result) -> dict:
    """The run's retriever section ({} for a result without a config: one made from a metric table)."""
    config = getattr(run, "config", None)
    retriever = getattr(config, "retriever", None)
    return retriever.model_dump() if retriever is not None else {}


def child_sections(composite: Result) -> list[dict]:
    """The composite's child sections, without the parent's keys (none for another kind)."""
    section = _retriever(composite)
    kids = section.get("children") if section.get("kind") == "hybrid" else (
        [section["child"]] if section.get("kind") == "reranked" and isinstance(section.get("child"), dict) else [])
    return [{k: v for k, v in kid.items() if k not in PARENT_KEYS} for kid in kids or [] if isinstance(kid, dict)]


def children_of(composite: Result, runs: Sequence[Result]) -> list[tuple[str, Result]]:
    """(child name, its run) for each child section of ``composite`` that one of ``runs`` matches; names as the
    stage paths name children (``retrievers.stages.child_names``)."""
    sections = child_sections(composite)
    names = child_names(s.get("kind", "?") for s in sections)
    taken: set[int] = set()
    out = []
    for name, section in zip(names, sections):
        for i, run in enumerate(runs):
            if run is composite or i in taken:
                continue
            if _holds(section, _retriever(run)):
                taken.add(i)
                out.append((name, run))
                break
    return out


def _values(run: Result, level: str, metric: str) -> dict[str, float]:
    columns = querycolumns.of(run)
    values, counted = columns.value(level, metric), columns.counted[level]
    return {qid: float(v) for qid, v, c in zip(columns.ids, values.tolist(), counted.tolist()) if c}


def followed(composite: Result, children: Sequence[tuple[str, Result]], level: str, metric: str) -> dict:
    """``{"metric", "children", "queries": {query id: label}, "counts": {label: n}}`` (module doc for the labels)."""
    mine = _values(composite, level, metric)
    theirs = [(name, _values(run, level, metric)) for name, run in children]
    queries: dict[str, str] = {}
    for qid, x in mine.items():
        values = [(name, v[qid]) for name, v in theirs if qid in v]
        if len(values) < len(theirs) or not values:
            continue
        same = [name for name, y in values if np.isclose(x, y, rtol=0, atol=1e-12)]
        if len(same) == len(values) > 1:
            label = "all"
        elif same:
            label = "+".join(same)
        elif all(x > y for _, y in values):
            label = "above"
        elif all(x < y for _, y in values):
            label = "below"
        else:
            label = "between"
        queries[qid] = label
    counts = Counter(queries.values())
    order = [name for name, _ in children] + sorted(k for k in counts if k not in dict(children))
    return {"metric": f"{level}.{metric}", "children": {name: run.name for name, run in children},
            "queries": queries, "counts": {k: counts[k] for k in order if counts.get(k)}}


def followed_of(runs: Sequence[Result], level: str, metric: str) -> dict[str, dict]:
    """composite run name -> ``followed`` against the compared runs that are its children (composites with none
    among the runs are left out)."""
    out = {}
    for run in runs:
        children = children_of(run, runs)
        if children:
            out[run.name] = followed(run, children, level, metric)
    return out


def followed_sentence(run: str, f: dict) -> str:
    """"hybrid on doc.ndcg@10 followed bm25 in 30 queries, dense in 10, ...": the counts in words."""
    words = {"all": "all children alike", "above": "above every child", "below": "below every child",
             "between": "between its children"}
    parts = [f"{words.get(label, label)} in {n} quer{'y' if n == 1 else 'ies'}" for label, n in f["counts"].items()]
    return f"{run} on {f['metric']} followed " + (", ".join(parts) if parts else "no query counted by all")
