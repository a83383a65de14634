"""One level's judgments of a run (query id -> document or chunk id -> grade) held as columns.

As a dict per query, the two levels of a 1M-query run held ~420 bytes a query from scoring to the last output
(issue 14); as columns they hold 16 bytes a query and 16 a judgment (the ids are the golden set's and the corpus's
own strings). It reads as the Mapping it replaced, a query's grades made as a dict when asked for; ``at`` reads the
i-th query's without a lookup, as every stage walks the queries in golden-set order."""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from .positions import Positions
from ..core.runtable import Qrels, object_array, offsets_of


class LevelGrades(Mapping[str, Mapping[str, int]]):
    """``qrels``: the judgments in golden-set query order (every query listed, judged or not)."""

    def __init__(self, qrels: Qrels):
        self.qrels = qrels
        self._positions = Positions(qrels.query_ids)

    @classmethod
    def from_rows(cls, query_ids: Sequence[str], rows: Iterable[Mapping[str, int]]) -> "LevelGrades":
        """From each query's ``{id: grade}``, in the order of ``query_ids``; each row is read once and let go."""
        lengths, ids, grades = [], [], []
        for row in rows:
            lengths.append(len(row))
            ids += row.keys()
            grades += row.values()
        if len(lengths) != len(query_ids):
            raise ValueError(f"{len(lengths)} rows of grades for {len(query_ids)} queries")
        return cls(Qrels(object_array(query_ids), offsets_of(np.array(lengths, dtype=np.int64)), object_array(ids),
                         np.array(grades, dtype=np.int64)))

    def row(self, i: int) -> dict[str, int]:
        """The ``i``-th query's grades."""
        lo, hi = int(self.qrels.offsets[i]), int(self.qrels.offsets[i + 1])
        return dict(zip(self.qrels.doc_ids[lo:hi].tolist(), self.qrels.grades[lo:hi].tolist()))

    def at(self, i: int, query_id: str) -> dict[str, int]:
        """``query_id``'s grades, found at row ``i`` when it is there (no lookup), else by id; {} when unjudged."""
        found = self._positions.find(query_id, i)
        return {} if found < 0 else self.row(found)

    def __getitem__(self, query_id: str) -> dict[str, int]:
        found = self._positions.find(query_id)
        if found < 0:
            raise KeyError(query_id)
        return self.row(found)

    def __contains__(self, query_id: object) -> bool:
        return isinstance(query_id, str) and self._positions.find(query_id) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.qrels.query_ids.tolist())

    def __len__(self) -> int:
        return len(self.qrels.query_ids)


def grades_at(grades: Mapping[str, Mapping[str, int]], i: int, query_id: str) -> Mapping[str, int]:
    """The grades of ``query_id``, the ``i``-th query: by position from ``LevelGrades``, else by id ({} if none)."""
    if isinstance(grades, LevelGrades):
        return grades.at(i, query_id)
    return grades.get(query_id, {})


def as_qrels(grades: Mapping[str, Mapping[str, int]]) -> Qrels:
    return grades.qrels if isinstance(grades, LevelGrades) else Qrels.from_checked_dict(grades)
