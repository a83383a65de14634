"""The base of every results.json model, the hit and chunk records, and how a ``Result`` reaches its hits and chunk
texts: kept in results.json, or (a run with more queries than ``selection.KEEP_ALL_HITS_UP_TO``) in the run in
memory or in hits.parquet / chunks.parquet beside the results.json (``io.hitsfile``)."""

from __future__ import annotations

from typing import Annotated, Any, Iterable, Iterator

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import InputError
from ..core.types import best_hits

Count = Annotated[int, Field(ge=0)]
# A metric's value: never NaN or infinite (the engine makes neither; a query not counted is checked by nothing
# else, since only counted values enter the means the summary check recomputes).
MetricValue = Annotated[float, Field(allow_inf_nan=False)]


class Record(BaseModel):
    """Base of every results.json model: unknown keys are errors, nothing is coerced (ints pass as floats), and a
    built record is not changed afterwards (``model_copy(update=...)`` makes a changed copy). NaN and infinities are
    written as JSON's usual ``NaN``/``Infinity`` (as ``json.dumps`` does), so they read back as the same number."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, ser_json_inf_nan="constants")


class HitRecord(Record):
    rank: Annotated[int, Field(ge=1)]
    chunk_id: str
    doc_id: str
    start: Count
    end: Count
    score: float
    relevant: bool
    doc_relevant: bool
    grade: int | None  # the document's judged grade; null when unjudged
    in_window: bool


class ChunkRecord(Record):
    """A chunk's text as the run saw it (``text`` is the document's ``[start, end)``), for explain and report."""

    doc_id: str
    start: Count
    end: Count
    text: str


class StoredHits:
    """Reading hits and texts wherever the result keeps them (a mixin of ``Result``: its fields ``queries``,
    ``hits_kept``, ``chunks`` and private ``_hits``/``_chunk_text``)."""

    def hits_of(self, q: Any) -> list[HitRecord]:
        """The hits of query ``q`` (a ``QueryResult``): from results.json when kept there, else from the run in
        memory or hits.parquet beside it."""
        if q.hits is not None:
            return q.hits
        return self._source(f"the hits of query {q.id!r}").hits(q.id)

    def each_with_hits(self, max_rank: int | None = None) -> Iterator[tuple[Any, list[HitRecord]]]:
        """Every query with its hits (down to ``max_rank``), in order: those results.json does not keep read in one
        pass over the hits file, not looked up a query at a time (~2.5 ms each)."""
        stream = getattr(self._hits, "all_hits", None) if self.hits_kept == "selected" else None
        if stream is None:
            for q in self.queries:
                yield q, [h for h in self.hits_of(q) if max_rank is None or h.rank <= max_rank]
            return
        rows = stream(max_rank)
        pending = next(rows, None)
        for q in self.queries:
            hits: list[HitRecord] = []
            if pending is not None and pending[0] == q.id:  # a query without hits has no rows in the file
                hits, pending = pending[1], next(rows, None)
            yield q, hits
        if pending is not None:  # rows left: the file is not in the records' order, so some were read as none
            raise InputError(f"{self.hits_file or 'hits.parquet'}: query {pending[0]!r}'s hits are not where "
                             "results.json's order puts them (files from two runs?)")

    def with_hits(self, q: Any) -> Any:
        """``q`` itself when results.json keeps its hits, else a copy holding them (``hits_of``)."""
        return q if q.hits is not None else q.model_copy(update={"hits": self.hits_of(q)})

    def texts_of(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        """Chunk id -> text, for the ids known: the run in memory, the results.json ``chunks`` table, else
        chunks.parquet beside it. Unknown ids are left out (a renderer shows "text not loaded")."""
        ids = list(dict.fromkeys(chunk_ids))
        if self._chunk_text:
            return {c: self._chunk_text[c] for c in ids if c in self._chunk_text}
        table = self.chunks or {}
        out = {c: table[c].text for c in ids if c in table}
        missing = [c for c in ids if c not in out]
        if missing and self.hits_kept == "selected" and self._hits is not None:
            out.update(self._hits.texts(missing))
        return out

    def relevance(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, relevant flag of each hit in rank order) for every query that has hits, in golden-set order
        when they are kept here; from the hits file otherwise (its order, which is the same)."""
        if self.hits_kept == "all":
            for q in self.queries:
                yield q.id, np.fromiter((h.relevant for h in q.hits or ()), dtype=bool)
        else:
            yield from self._source("the hits of the queries not kept in results.json").relevance()

    def doc_gains(self) -> Iterator[tuple[str, np.ndarray]]:
        """(query id, the grades of its documents at their best chunk in rank order, negatives and unjudged as 0)
        for every query that has hits: the gains of its doc-level ranking, read as ``relevance`` reads flags."""
        if self.hits_kept == "all":
            for q in self.queries:
                yield q.id, np.asarray([max(h.grade or 0, 0) for h in best_hits(q.hits or ())], dtype=np.int64)
        else:
            yield from self._source("the hits of the queries not kept in results.json").doc_gains()

    @property
    def hit_source(self):
        """Where the hits not kept here are: ``io.hitsfile.RunHits`` (a run in memory), ``ParquetHits`` (a
        results.json loaded by path) or None."""
        return self._hits

    def _source(self, what: str):
        if self._hits is None:
            raise InputError(f"{what}: not in this results.json; they are in {self.hits_file or 'hits.parquet'} "
                             "beside the results.json it was loaded from (load it by path)")
        return self._hits


class GeometryCounts(Record):
    """Evidence geometry of the run (``hits.geometry``): each count, with up to ``GEOMETRY_SHOWN`` of its queries."""

    split_evidence_units: Count  # relevant evidence units no single chunk holds whole
    split_evidence_queries: Count
    split_evidence_query_ids: list[str]
    thin_first_queries: Count  # the window's first chunk has almost no content (a heading alone)
    thin_first_query_ids: list[str]
    mostly_noise_queries: Count  # the window holds evidence, but under half of its characters are evidence
    mostly_noise_query_ids: list[str]


GEOMETRY_SHOWN = 20
