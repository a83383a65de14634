"""Evidence that must come together: a query's evidence units in groups, and which groups a ranking's window holds.

The rule (``docs/groups.md``): units of one group are alternatives (any one suffices), the groups of a query are all
needed. A judgment without a group is in the query's unnamed group, so a query that names no group has one group:
its window is sufficient as soon as it holds any relevant unit (``sufficient@window`` is then ``hit@window``).
Only relevant judgments (grade >= 1) give units. A hit covers a unit when it overlaps the unit's span in the same
document; a judgment without spans is covered by any relevant chunk of its document (at document level: by the
document). ``sufficient@window`` and the ``incomplete`` verdict both read ``coverage``: one rule, one number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..core.types import Hit, Judgment

SUFFICIENT = "sufficient@window"
UNNAMED = None  # the group of the judgments that name none
RULE = ("units of one evidence group are alternatives, every group of a query is needed; a judgment without a "
        "group is in the query's unnamed group, so a query naming no group has one group (sufficient@window = "
        "hit@window, never incomplete); a hit covers a unit when it overlaps its span in the same document (a "
        "judgment without spans: a relevant chunk of its document; at document level, the document)")


def group_label(group: str | None) -> str:
    """A group as the reports name it (the unnamed group has no name of its own)."""
    return "(ungrouped)" if group is None else group


def required_groups(judgments: Iterable[Judgment]) -> dict[str | None, list[Judgment]]:
    """The query's groups in golden-set order, each with its relevant judgments."""
    out: dict[str | None, list[Judgment]] = {}
    for j in judgments:
        if j.relevance >= 1:
            out.setdefault(j.group, []).append(j)
    return out


def _covers(hit: Hit, j: Judgment, chunk_grades: Mapping[str, int] | None) -> bool:
    if hit.doc_id != j.doc_id:
        return False
    if chunk_grades is None:  # document level
        return True
    if j.evidence:
        return any(sp.start < hit.end and hit.start < sp.end for sp in j.evidence)
    return chunk_grades.get(hit.chunk_id, 0) >= 1  # 0 for the chunks of a judgment whose evidence failed to resolve


@dataclass(frozen=True)
class Coverage:
    """Where each required group of one query is first covered: ``first_rank[g]`` the first rank of a hit covering
    one of its units (None: no hit within the ranks read), ``window`` the window's size in hits."""

    first_rank: dict[str | None, int | None]
    window: int

    @property
    def groups(self) -> list[str | None]:
        return list(self.first_rank)

    def in_window(self, group: str | None) -> bool:
        rank = self.first_rank[group]
        return rank is not None and rank <= self.window

    @property
    def missing(self) -> list[str | None]:
        return [g for g in self.first_rank if not self.in_window(g)]

    @property
    def sufficient(self) -> bool:
        """Every required group has a unit in the window (False for a query with no relevant unit)."""
        return bool(self.first_rank) and not self.missing


def coverage(judgments: Sequence[Judgment], hits: Sequence[Hit], window: int,
             chunk_grades: Mapping[str, int] | None, *, past_window: bool = True) -> Coverage:
    """``judgments``: one query's; ``hits``: its ranking; ``chunk_grades``: its chunk-level grades (None: judged at
    document level). ``past_window=False`` reads the window only (the metric needs no more), else the ranking is
    read until every group is found (the verdict names where the missing ones ranked)."""
    groups = required_groups(judgments)
    first: dict[str | None, int | None] = {g: None for g in groups}
    left = set(groups)
    depth = len(hits) if past_window else min(window, len(hits))
    for i in range(depth):
        if not left:
            break
        hit = hits[i]
        for g in [g for g in left if any(_covers(hit, j, chunk_grades) for j in groups[g])]:
            first[g] = i + 1  # ranks are positions in the ranking (a placed list's ranks are 1..n)
            left.discard(g)
    return Coverage(first, window)


def sufficient_values(judgments_per_query: Iterable[Sequence[Judgment]], lists: Sequence, window_k: Sequence[int],
                      grades_of, hit_at_window: np.ndarray, has_groups: bool) -> np.ndarray:
    """``sufficient@window`` of every query, in golden-set order. ``grades_of(i)``: query ``i``'s chunk grades
    (None at document level). Without a group in the golden set every query has one group, and the value is
    ``hit@window`` by the rule: that column is returned as it is."""
    if not has_groups:
        return np.array(hit_at_window, dtype=np.float64, copy=True)
    out = np.zeros(len(window_k), dtype=np.float64)
    lazy = getattr(lists, "lazy", None)  # a HitTable's hits made as they are read
    for i, (judgments, k) in enumerate(zip(judgments_per_query, window_k)):
        hits = (lazy(i) if lazy is not None else lists[i]).hits
        out[i] = float(coverage(judgments, hits, int(k), grades_of(i), past_window=False).sufficient)
    return out
