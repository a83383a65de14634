"""Formatting at the edge: numbers and counted nouns as people read them. Nothing upstream rounds or pluralises."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """``plural(1, "query", "queries")`` -> "1 query"; ``plural(2, "query", "queries")`` -> "2 queries".

    ``many`` defaults to ``one + "s"``; irregular ones (query -> queries) are passed."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def fixed(value: float | None, digits: int = 4) -> str:
    """A mean or a per-query value with ``digits`` decimals; ``n/a`` where no query has relevant gold."""
    return "n/a" if value is None else f"{value:.{digits}f}"
