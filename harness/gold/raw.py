"""A golden set as read from its files, before it meets the corpus (``resolve``): what every format's reader makes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class RawEvidence:
    start: int | None = None
    end: int | None = None
    quote: str | None = None
    # A span's text as recorded beside it (`goldset build` writes it, SQuAD-style answers give it): the span must
    # still read it, and a golden set written back keeps it, with how it was found (``how``, ``score``)
    text: str | None = None
    found: dict | None = None
    group: str | None = None  # its evidence group, when it names its own (else its judgment's)


@dataclass(slots=True)
class RawJudgment:
    doc_id: str
    grade: int
    evidence: list[RawEvidence] = field(default_factory=list)
    group: str | None = None  # the evidence group of its units (an evidence item may name another)

    def unit_groups(self) -> list[str | None]:
        """The group of each evidence item (its own, else the judgment's)."""
        return [ev.group if ev.group is not None else self.group for ev in self.evidence]


@dataclass(slots=True)  # a golden set of 1M queries makes 2M of these at once
class RawQuery:
    query_id: str
    text: str
    tags: dict[str, str]
    relevant: list[RawJudgment]
    where: str
    answerable: bool = True  # False: its answer is not in the corpus (``answerable: false``); it has no judgments
