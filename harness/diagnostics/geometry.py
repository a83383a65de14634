"""Advice from the evidence geometry of a run (``hits.geometry``): each line a count, its queries named, and what
would help; nothing is said that the counts do not show."""

from __future__ import annotations

from ..hits.geometry import MOSTLY_NOISE, THIN_WORDS, Geometry
from ..result.model import GEOMETRY_SHOWN, GeometryCounts


def _named(ids: list[str], shown: int = 5) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def geometry_counts(g: Geometry) -> GeometryCounts:
    return GeometryCounts(split_evidence_units=g.split_units, split_evidence_queries=len(g.split_queries),
                          split_evidence_query_ids=g.split_queries[:GEOMETRY_SHOWN],
                          thin_first_queries=len(g.thin_first), thin_first_query_ids=g.thin_first[:GEOMETRY_SHOWN],
                          mostly_noise_queries=len(g.mostly_noise),
                          mostly_noise_query_ids=g.mostly_noise[:GEOMETRY_SHOWN])


def geometry_advice(g: Geometry) -> list[str]:
    out = []
    if g.split_units:
        out.append(f"{g.split_units} evidence unit{'' if g.split_units == 1 else 's'} in "
                   f"{_queries(len(g.split_queries))} ({_named(g.split_queries)}) "
                   f"{'crosses' if g.split_units == 1 else 'cross'} a chunk boundary: no single "
                   f"chunk holds {'it' if g.split_units == 1 else 'them'} whole; larger chunks, overlap, or "
                   f"boundaries at sentences or headings would keep evidence together")
    if g.thin_first:
        example = f" (e.g. {g.thin_examples[0][:40]!r})" if g.thin_examples and g.thin_examples[0] else ""
        out.append(f"{_queries(len(g.thin_first))} ({_named(g.thin_first)}) "
                   f"{'ranks' if len(g.thin_first) == 1 else 'rank'} first a chunk of fewer than "
                   f"{THIN_WORDS} words{example}: a heading or fragment alone; merge such chunks into the text they "
                   f"head, or prepend the heading to each chunk instead")
    if g.mostly_noise:
        mean = sum(g.shares) / len(g.shares)
        out.append(f"{_queries(len(g.mostly_noise))} of the {len(g.shares)} whose window holds evidence "
                   f"({_named(g.mostly_noise)}) {'has' if len(g.mostly_noise) == 1 else 'have'} a window under "
                   f"{MOSTLY_NOISE:.0%} evidence by characters "
                   f"(mean evidence share {mean:.0%}): smaller chunks, a smaller window or a token budget would send "
                   f"the model less text that is not evidence")
    return out
