"""``harness eval`` of TREC files as the run is read: each batch of whole queries (``io.run_batches``) is joined to
its judgments and scored (``engine.evaluate_parts``), then dropped. Memory holds the qrels, a few numbers a query
and a few blocks of the run, never the whole run: a 100M-line run takes about the memory of a 10M-line one.

Same numbers as reading the run whole (``engine.evaluate``): the kernels work query by query, and a batch's doc
codes compare as the ids do (``run_batches.Coded``). A run whose queries are not together is spread over temp files
by query first (``io.run_buckets``). The whole read remains for what this path declines (see ``evaluate_files``)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from ..core.runtable import Run, Qrels
from ..io import fast_trec, packed_ids, run_batches, run_buckets
from ..io.arrow_text import Declined, arrow
from ..io.run_stream import LongIds
from . import engine
from .engine import evaluate_parts
from .spec import MetricSpec
from .table import MetricTable


def evaluate_files(qrels_path: Path, run_path: Path, metrics: Iterable[str | MetricSpec],
                   **options) -> MetricTable | None:
    """The table of TREC ``run_path`` against TREC qrels ``qrels_path`` (``options`` as ``engine.evaluate``'s);
    None when a fast reader declines either file (the line readers then say what is wrong) or when the qrels judge
    no query: the caller reads the files whole. A run whose queries are not together is read again through
    ``io.run_buckets`` (spread over temp files by query, each grouped)."""
    if arrow() is None:
        return None
    try:
        first, batches, both, together = _start(qrels_path, run_path)
        if both is None or both[0].n_queries == 0:
            return None
        qrels, vocab, query_ids = both
        if together:
            try:
                return _scored(qrels, query_ids, vocab, batches and (lambda: itertools.chain(first, batches)),
                               lambda packed: run_batches.query_batches(run_path, packed), metrics, options)
            except run_batches.Interleaved:  # a query met again further on
                if batches is not None:
                    batches.close()  # its parse threads are stopped
        return _scored(qrels, query_ids, vocab, lambda: run_buckets.query_batches(run_path, True),
                       lambda packed: run_buckets.query_batches(run_path, packed), metrics, options)
    except (Declined, LongIds, run_batches.Interleaved):
        return None


def _scored(qrels: Qrels, query_ids, vocab, packed_batches, read, metrics, options: dict) -> MetricTable:
    """Scored from the packed batches when the judged ids pack and ``packed_batches`` is given, else (or when a run
    id further on does not pack) from the run read again as strings (``read(False)``)."""
    if isinstance(vocab, np.ndarray) and packed_batches is not None:
        try:
            return _evaluate(qrels, query_ids, vocab, packed_batches(), True, metrics, options)
        except LongIds:
            pass
    strings = packed_ids.unpack(vocab) if isinstance(vocab, np.ndarray) else vocab
    return _evaluate(qrels, query_ids, strings, read(False), False, metrics, options)


def _start(qrels_path: Path, run_path: Path) -> tuple[list, Iterator | None, tuple | None, bool]:
    """(the run's first batch, the rest of its batches, ``read_qrels_coded``'s answer, False when the first batch
    already shows the run's queries are not together): the run's first blocks are
    parsed, packed, while the qrels are read (both in arrow, without the GIL; 0.5 s of 2.9 on 100k x 100 was the
    qrels alone). The batches are None when a run id does not pack, or the qrels' ids do not (read as strings)."""
    from concurrent.futures import ThreadPoolExecutor

    batches = run_batches.query_batches(run_path, True)
    with ThreadPoolExecutor(1) as pool:
        reading = pool.submit(fast_trec.read_qrels_coded, qrels_path)
        together = True
        try:
            first = [next(batches, None)]
        except LongIds:
            first, batches = [], None
        except run_batches.Interleaved:  # already in the first batch
            first, batches, together = [], None, False
        finally:
            both = reading.result()
    first = [b for b in first if b is not None]
    if batches is not None and (both is None or not isinstance(both[1], np.ndarray)):
        batches.close()  # not needed (declined) or read again as strings: its parse threads are stopped
        batches = None
    return first, batches, both, together


def _evaluate(qrels: Qrels, query_ids, vocab, batches: Iterable, packed: bool, metrics, options: dict) -> MetricTable:
    """``qrels``' doc ids are codes into ``vocab`` (the judged docs' keys when ``packed``, else their strings);
    ``query_ids`` are its query ids as arrow strings; ``batches`` the run's (``run_batches.query_batches``)."""
    rows_of = _QueryRows(query_ids)

    def parts() -> Iterator[tuple]:
        seen = np.zeros(qrels.n_queries, dtype=bool)
        for batch in batches:
            found = rows_of(batch.query_ids)
            present = np.flatnonzero(found >= 0)  # the judged queries' rows in the batch
            rows = found[present]
            if seen[rows].any():  # a judged query met again: its rows are not together
                raise run_batches.Interleaved
            seen[rows] = True
            judged = qrels.select(rows)
            coded = run_batches.coded(batch.docs, vocab[judged.doc_ids] if packed else vocab.take(judged.doc_ids))
            # The run's query ids are not read again: the judged rows are given (``present``).
            run = Run(np.empty(len(found), dtype=object), batch.offsets, coded.vocab, coded.codes,
                              batch.scores, batch.ranks, coded.doc_order)
            yield rows, replace(judged, doc_vocab=coded.vocab, doc_codes=coded.judged_codes), run, present

    def doc_name(code) -> str:
        return (packed_ids.unpack(vocab[[code]]) if packed else vocab.take([code]))[0].as_py()

    return evaluate_parts(qrels, parts(), metrics, unjudged_run_queries=rows_of.unjudged,
                          spill=qrels.n_queries > engine.SPILL_VALUES_ABOVE, doc_name=doc_name, **options)


class _QueryRows:
    """Each run query's row in the qrels (-1: not judged): by binary search over packed keys when the judged ids
    pack (the usual case: no Python string a run query), else by a dict. Counts the distinct unjudged ones."""

    def __init__(self, query_ids):
        keys = packed_ids.pack(query_ids)
        self._order = None if keys is None else np.argsort(keys)
        self._sorted = None if keys is None else keys[self._order]
        self._row_of = {q: i for i, q in enumerate(query_ids.to_pylist())} if keys is None else {}
        self._unjudged_keys: list[np.ndarray] = []
        self._unjudged_names: set[str] = set()

    def __call__(self, ids) -> np.ndarray:
        keys = None if self._sorted is None else packed_ids.pack(ids)
        if keys is None:  # by name (a judged id that does not pack, or one of this batch's that does not)
            names = ids.to_pylist()
            rows = np.array([self._row_of.get(q, -1) for q in names], dtype=np.int64)
            if self._sorted is not None:  # only the ids that pack can be judged: look them up by key
                short = np.array([len(q.encode()) <= packed_ids.MAX_BYTES for q in names], dtype=bool)
                rows[short] = self(ids.filter(arrow()[0].array(short)))
                names = [q for q, is_short in zip(names, short.tolist()) if not is_short]
                rows_named = rows[~short]
            else:
                rows_named = rows
            self._unjudged_names.update(q for q, row in zip(names, rows_named.tolist()) if row < 0)
            return rows
        if not len(self._sorted):
            rows = np.full(len(keys), -1, dtype=np.int64)
        else:
            at = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
            rows = np.where(self._sorted[at] == keys, self._order[at], -1)
        self._unjudged_keys.append(keys[rows < 0])
        return rows

    def unjudged(self) -> int:
        keys = len(np.unique(np.concatenate(self._unjudged_keys))) if self._unjudged_keys else 0
        return keys + len(self._unjudged_names)
