"""Where a query id stands in a list of ids, guessed first: every stage walks a run's queries in golden-set order,
so the caller's guess (the position it is at) is almost always right, and a dict of every id, ~100 bytes a query on
a 1M-query run, is made only on the first wrong guess."""

from __future__ import annotations

from typing import Sequence


class Positions:
    def __init__(self, ids: Sequence[str]):
        self.ids = ids
        self._by_id: dict[str, int] | None = None

    def find(self, query_id: str, guess: int = -1) -> int:
        """The position of ``query_id`` (``guess`` when it is there), or -1 when it is not among the ids."""
        if 0 <= guess < len(self.ids) and self.ids[guess] == query_id:
            return guess
        if self._by_id is None:
            self._by_id = {q: i for i, q in enumerate(list(self.ids))}
        return self._by_id.get(query_id, -1)
