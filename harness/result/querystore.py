"""A run's per-query records kept as compact JSON in a spool file, read back on access: what bounds a large run's
memory by a record, not by the query count (``Result.queries`` of a run with more than ``SPOOL_ABOVE`` queries).

A ``QueryStore`` is a read-only sequence of records (``core.result.QueryResult``; the model is passed in, so this
module imports nothing of the result): ``len``, iteration, indexing (a slice is a list), ``==`` against any sequence.
Each record is the bytes of ``model_dump_json()``; an item is ``model_validate_json`` of them, so what a reader gets
is what results.json will hold and what a later ``load_result`` gives back (a test compares them). In memory: the
byte offsets (8 bytes a query) and one batch of records while iterating.

The spool is an anonymous temporary file (``tempfile.TemporaryFile``: unlinked at creation, under ``TMPDIR``), so
nothing is left behind by an interrupt or a crash; it is closed when the store is dropped."""

from __future__ import annotations

import json
import os
import tempfile
import weakref
from array import array
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..io.files import temp_space
from ..hits.positions import Positions

# Runs with more queries than this spool their records; smaller runs keep them as a list (a few MB at most, and
# renderers read them several times). Equal to ``selection.KEEP_ALL_HITS_UP_TO`` so a spooled record has no hits
# unless it is one of the bounded set shown.
SPOOL_ABOVE = 5_000
READ_BATCH = 1_000  # records decoded per read while iterating


class QueryStore(Sequence):
    """Records appended once (``append``/``extend``), then read any number of times."""

    def __init__(self, model: Any, folder: str | os.PathLike | None = None):
        self._model = model
        with temp_space("the per-query records"):
            self._file = tempfile.TemporaryFile(prefix="harness-queries-", dir=folder)
        self._close = weakref.finalize(self, self._file.close)
        self._ends = array("q")  # each record's end offset, 8 bytes a query (a list of ints took 32)
        self._offsets: np.ndarray | None = None
        self._size = 0

    # ---- writing ----

    def append(self, record: Any) -> None:
        if self._offsets is not None:
            raise RuntimeError("QueryStore: records are appended before the store is read")
        data = record.model_dump_json(warnings=False).encode("utf-8")
        with temp_space("the per-query records"):
            self._file.write(data)
        self._size += len(data)
        self._ends.append(self._size)

    def append_json(self, data: bytes, record: Any) -> None:
        """Store ``data``, the JSON of ``record`` already validated by the caller (a results.json line read by
        ``io.results_stream``), without encoding it again, when it starts as ``index_of`` looks for it
        (``{"id":<the id>,``); otherwise (hand-edited spacing or key order) the record's own JSON."""
        if not data.startswith(id_head(record.id)):
            self.append(record)
            return
        if self._offsets is not None:
            raise RuntimeError("QueryStore: records are appended before the store is read")
        with temp_space("the per-query records"):
            self._file.write(data)
        self._size += len(data)
        self._ends.append(self._size)

    def extend(self, records: Iterable[Any]) -> "QueryStore":
        for record in records:
            self.append(record)
        return self

    def _sealed(self) -> np.ndarray:
        if self._offsets is None:
            with temp_space("the per-query records"):
                self._file.flush()
            self._offsets = np.zeros(len(self._ends) + 1, dtype=np.int64)
            self._offsets[1:] = np.frombuffer(self._ends, dtype=np.int64) if self._ends else 0
            self._ends = array("q")
        return self._offsets

    # ---- reading ----

    def __len__(self) -> int:
        return len(self._ends) if self._offsets is None else len(self._offsets) - 1

    def raw(self, start: int, stop: int) -> list[bytes]:
        """The JSON bytes of records ``start:stop`` (one read)."""
        off = self._sealed()
        data = os.pread(self._file.fileno(), int(off[stop] - off[start]), int(off[start]))
        base = int(off[start])
        return [data[int(a) - base:int(b) - base] for a, b in zip(off[start:stop], off[start + 1:stop + 1])]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("query index out of range")
        return self._model.model_validate_json(self.raw(i, i + 1)[0])

    def __iter__(self) -> Iterator[Any]:
        for start in range(0, len(self), READ_BATCH):
            for data in self.raw(start, min(start + READ_BATCH, len(self))):
                yield self._model.model_validate_json(data)

    def index_of(self, query_id: str) -> int | None:
        """The position of the record with this id, found by its bytes (each record starts with its id: the
        model's first field), without decoding the others."""
        head = id_head(query_id)
        for start in range(0, len(self), READ_BATCH):
            for i, data in enumerate(self.raw(start, min(start + READ_BATCH, len(self)))):
                if data.startswith(head):
                    return start + i
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  (mutable while written, like a list)

    def __repr__(self) -> str:
        return f"QueryStore({len(self)} records, {int(self._sealed()[-1]) if len(self) else 0} bytes spooled)"

    def __reduce__(self):  # pickled (sent to another process, deep-copied) as the list it reads as: a file is not
        return list, (list(self),)

    def close(self) -> None:
        self._close()


def id_head(query_id: str) -> bytes:
    """How a stored record starts: the model's first field, its id, as ``model_dump_json`` writes it."""
    if query_id.isascii() and query_id.isprintable() and '"' not in query_id and "\\" not in query_id:
        return b'{"id":"' + query_id.encode("ascii") + b'",'  # nothing to escape (most ids; a JSON encoder is slow)
    return b'{"id":' + json.dumps(query_id, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b","


class Spooled:
    """The pydantic marker of ``Result.queries`` (``Annotated[list[QueryResult], Spooled]``): a ``QueryStore`` is
    taken as it is (its records were made from validated models and are read back through the model), a list is
    validated as before, JSON input is a list; a store is dumped as the list it reads as."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        items = handler(source)
        return core_schema.json_or_python_schema(
            json_schema=items,
            # a wrap, not a union: a bad list's errors stay located as before (queries.3.hits.0.rank: ...)
            python_schema=core_schema.no_info_wrap_validator_function(
                lambda value, handler: value if isinstance(value, QueryStore) else handler(value), items),
            serialization=core_schema.wrap_serializer_function_ser_schema(
                lambda value, nxt: nxt(list(value) if isinstance(value, QueryStore) else value),
                schema=items, info_arg=False))


def stored(model: Any, records: Iterable[Any], expected: int, spool_above: int | None = None) -> Sequence:
    """``records`` as a list when ``expected`` (their count) is at most ``spool_above`` (default ``SPOOL_ABOVE``),
    else spooled into a ``QueryStore``: records are made one at a time and only a small run's are all kept."""
    if expected <= (SPOOL_ABOVE if spool_above is None else spool_above):
        return list(records)
    return QueryStore(model).extend(records)


class SpooledMapping(Mapping):
    """Records by key (a run's verdicts by query id) in a ``QueryStore``: the keys stay in memory (a list of the
    caller's own strings), a value is decoded when it is read; iteration is in insertion order, as a dict's. Keys
    are found by position: a read is guessed to follow the last one (every stage walks the queries in order), and a
    dict of every key (~100 bytes a query on a 1M-query run) is made only on the first wrong guess."""

    def __init__(self, model: Any, items: Iterable[tuple[str, Any]]):
        self._store = QueryStore(model)
        self._keys: list[str] = []
        for key, record in items:
            self._keys.append(key)
            self._store.append(record)
        ordered = sorted(self._keys)  # (a list of references: a set of every key would hold more)
        twice = next((a for a, b in zip(ordered, ordered[1:]) if a == b), None)
        if twice is not None:
            raise ValueError(f"SpooledMapping: duplicate key {twice!r}")
        self._positions = Positions(self._keys)
        self._next = 0  # the position after the last key read

    def _find(self, key: object) -> int:
        return self._positions.find(key, self._next) if isinstance(key, str) else -1

    def __getitem__(self, key: str) -> Any:
        at = self._find(key)
        if at < 0:
            raise KeyError(key)
        self._next = at + 1
        return self._store[at]

    def __contains__(self, key: object) -> bool:  # (Mapping's would decode the record)
        return self._find(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def values(self):  # read in batches, not a lookup per key
        return iter(self._store)

    def items(self):
        return zip(self._keys, self._store)


def stored_mapping(model: Any, items: Iterable[tuple[str, Any]], expected: int,
                   spool_above: int | None = None) -> Mapping:
    """``items`` (key, record) as a dict when ``expected`` is at most ``spool_above`` (default ``SPOOL_ABOVE``),
    else a ``SpooledMapping``."""
    if expected <= (SPOOL_ABOVE if spool_above is None else spool_above):
        return dict(items)
    return SpooledMapping(model, items)
