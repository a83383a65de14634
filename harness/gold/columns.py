"""A loaded golden set's queries and judgments held as columns, read as the sequences of ``Query`` and ``Judgment``
they replace (each object made when asked for).

As objects, a golden set of 1M queries held ~340 bytes a query from loading to the last output (issue 14): a
``Query`` (56 bytes), its text as a str (49 bytes of header), an empty tags dict (64), a ``Judgment`` (64), the
tuples holding them. Here a query is its id (the str itself, shared by every table that names the query), its text
as UTF-8 in one buffer and a few array slots; a judgment is a row of arrays. Tags are kept only for the queries that
have some. A golden set built by hand (tuples of objects) reads the same to every stage."""

from __future__ import annotations

from array import array
from typing import Iterator, Mapping, Sequence, overload

import numpy as np

from ..core.runtable import object_array, offsets_of
from ..core.types import Judgment, Query, Span


def _packed_strings(items: list[str]) -> list[str]:
    """The same strings made anew side by side. The ids were made while the golden set was read, each among the
    parser's short-lived objects, so every one of Python's small-object arenas kept a live id and none could be given
    back: 1M queries held 57 MB of ids in ~160 MB (232 MB held after loading, 135 MB of it columns; 182 MB with
    this, what ``validate`` holds). A whole run's peak is later and the same (713 MB at 2k chunks x 1M queries:
    the arenas' free room was reused by then). Ids hold no whitespace (``core.ids.id_problem``); a set built
    otherwise keeps its strings."""
    fresh = "\n".join(items).split("\n") if items else items
    return fresh if len(fresh) == len(items) else items  # (an id with a newline splits in two: kept as it was)


class _Column(Sequence):
    """Indexing and equality shared by the two columns: ``item(i)`` makes the i-th object."""

    def item(self, i: int):
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int): ...

    @overload
    def __getitem__(self, i: slice) -> list: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.item(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.item(i)

    def __iter__(self):
        return (self.item(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:  # equal to any sequence of the same objects (a tuple of them, too)
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} items)"


class QueryColumn(_Column, Sequence[Query]):
    def __init__(self, ids: np.ndarray, text_data: bytes, text_offsets: np.ndarray,
                 tags: Mapping[int, Mapping[str, str]]):
        self.ids = ids  # (Q,) object: the id strings
        self._text_data, self._text_offsets = text_data, text_offsets  # query i's text: data[off[i]:off[i + 1]]
        self._tags = tags  # query position -> its tags, for the queries that have any

    def __len__(self) -> int:
        return len(self.ids)

    def text(self, i: int) -> str:
        return self._text_data[self._text_offsets[i]:self._text_offsets[i + 1]].decode()

    def item(self, i: int) -> Query:
        return Query(self.ids[i], self.text(i), self._tags.get(i, {}))

    def tagged(self) -> Iterator[tuple[str, Mapping[str, str]]]:
        """(id, tags) of each query that has tags, in order."""
        return ((self.ids[i], tags) for i, tags in self._tags.items())


class JudgmentColumn(_Column, Sequence[Judgment]):
    """The judgments grouped in golden-set query order: query ``i`` (``query_ids[i]``) owns judgments
    ``query_offsets[i]:query_offsets[i+1]``; judgment ``j`` is document ``doc_ids[j]`` at grade ``grades[j]`` with
    spans ``span_offsets[j]:span_offsets[j+1]`` of ``starts``/``ends``."""

    def __init__(self, query_ids: np.ndarray, query_offsets: np.ndarray, doc_ids: np.ndarray, grades: np.ndarray,
                 span_offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 groups: Mapping[int, str] | None = None):
        self.query_ids, self.query_offsets = query_ids, query_offsets  # the QueryColumn's ids
        self.doc_ids, self.grades = doc_ids, grades
        self.span_offsets, self.starts, self.ends = span_offsets, starts, ends
        self.groups = dict(groups or {})  # judgment position -> its evidence group, for the judgments that name one

    def __len__(self) -> int:
        return len(self.doc_ids)

    def item(self, j: int) -> Judgment:
        query = int(np.searchsorted(self.query_offsets, j, side="right")) - 1
        return self._judgment(self.query_ids[query], j)

    def _judgment(self, query_id: str, j: int) -> Judgment:
        lo, hi = int(self.span_offsets[j]), int(self.span_offsets[j + 1])
        spans = tuple(map(Span, self.starts[lo:hi].tolist(), self.ends[lo:hi].tolist())) if hi > lo else ()
        return Judgment(query_id, self.doc_ids[j], int(self.grades[j]), spans, self.groups.get(j))

    def __iter__(self) -> Iterator[Judgment]:
        for i in range(len(self.query_ids)):
            yield from self.of_query(i)

    def of_query(self, i: int) -> list[Judgment]:
        """The judgments of the golden set's ``i``-th query."""
        query_id = self.query_ids[i]
        return [self._judgment(query_id, j) for j in range(int(self.query_offsets[i]), int(self.query_offsets[i + 1]))]

    @property
    def has_evidence(self) -> bool:
        return bool(self.span_offsets[-1] > 0)

    @property
    def has_groups(self) -> bool:
        return bool(self.groups)


class GoldColumnsBuilder:
    """A golden set's queries added one at a time (``add_query``, then each of its judgments with
    ``add_judgment``), then ``build``."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._text = bytearray()
        self._text_lengths = array("q")
        self._tags: dict[int, dict[str, str]] = {}
        self._per_query = array("q")
        self._doc_ids: list[str] = []
        self._grades = array("q")
        self._span_counts = array("q")
        self._starts, self._ends = array("q"), array("q")
        self._groups: dict[int, str] = {}

    def add_query(self, query_id: str, text: str, tags: Mapping[str, str]) -> None:
        if tags:
            self._tags[len(self._ids)] = dict(tags)
        self._ids.append(query_id)
        data = text.encode()
        self._text += data
        self._text_lengths.append(len(data))
        self._per_query.append(0)

    def add_judgment(self, doc_id: str, grade: int, spans: Sequence[Span], group: str | None = None) -> None:
        """A judgment of the query added last."""
        if group is not None:
            self._groups[len(self._doc_ids)] = group
        self._per_query[-1] += 1
        self._doc_ids.append(doc_id)
        self._grades.append(grade)
        self._span_counts.append(len(spans))
        for span in spans:
            self._starts.append(span.start)
            self._ends.append(span.end)

    def build(self) -> tuple[QueryColumn, JudgmentColumn]:
        ids = object_array(_packed_strings(self._ids))
        self._ids = []
        queries = QueryColumn(ids, bytes(self._text), offsets_of(self._text_lengths), self._tags)
        judgments = JudgmentColumn(ids, offsets_of(self._per_query), object_array(self._doc_ids),
                                   np.asarray(self._grades, dtype=np.int64), offsets_of(self._span_counts),
                                   np.asarray(self._starts, dtype=np.int64), np.asarray(self._ends, dtype=np.int64),
                                   self._groups)
        return queries, judgments

