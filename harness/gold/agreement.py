"""How far two judging rounds agree on the (query, document) pairs both graded: Cohen's kappa, the grades as
categories (unweighted: grade 1 against 2 disagrees as much as 0 against 2).

kappa = (p_o - p_e) / (1 - p_e), p_o the share of pairs given the same grade, p_e the share expected by chance from
each round's own grade frequencies (sum over grades of a_g b_g / n^2). Computed from the integer counts as
(n * agreed - sum a_g b_g) / (n^2 - sum a_g b_g): one division, so the number is the exact ratio correctly rounded
(sklearn's ``cohen_kappa_score`` agrees to 1e-12). Undefined (None) when chance agreement is 1: both rounds gave
every pair the one same grade, where nothing tells agreement from chance."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Agreement:
    pairs: int  # pairs both rounds graded
    agreed: int  # of them, given the same grade
    kappa: float | None  # None: no pair, or chance agreement 1 (see the module)
    grades: tuple[int, ...]  # the categories seen in either round, ascending


def cohen_kappa(first: Sequence[int], second: Sequence[int]) -> Agreement:
    """Agreement of two rounds' grades of the same pairs (``first[i]`` and ``second[i]`` grade pair i)."""
    if len(first) != len(second):
        raise ValueError(f"two rounds of grades of the same pairs: {len(first)} and {len(second)} grades")
    n = len(first)
    agreed = sum(1 for a, b in zip(first, second) if a == b)
    a_counts, b_counts = Counter(first), Counter(second)
    grades = tuple(sorted(set(a_counts) | set(b_counts)))
    chance = sum(a_counts[g] * b_counts[g] for g in grades)  # n^2 * p_e
    kappa = None if n == 0 or chance == n * n else (n * agreed - chance) / (n * n - chance)
    return Agreement(n, agreed, kappa, grades)


def agreement_line(agreement: Agreement) -> str:
    """The report of ``harness goldset merge``: how many pairs overlapped, how many agree, and kappa."""
    n = agreement.pairs
    head = (f"{n} (query, document) pair(s) graded in both rounds (the golden set and the sheet): "
            f"{agreement.agreed} agree ({agreement.agreed / n:.1%})")
    if agreement.kappa is None:
        return head + f"; Cohen's kappa undefined (every pair has grade {agreement.grades[0]} in both rounds)"
    grades = ", ".join(map(str, agreement.grades))
    return head + f"; Cohen's kappa {agreement.kappa:.3f} (grades {grades} as categories)"
