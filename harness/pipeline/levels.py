"""Evaluate a pipeline run at document and chunk level: the configured metrics and the ``@window`` metrics in one
table per level, each with the ``counted`` mask of ``metrics.table.included``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Collection, Iterator, Mapping, Sequence

import numpy as np

from ..hits.table import HitTable
from ..hits.levelgrades import LevelGrades, as_qrels
from ..hits.units import EvidenceUnits, evidence_units, table_items, unit_items
from ..core.runtable import Run, Qrels, offsets_of
from ..core.types import Chunk, GoldSet, RankedList, best_hits
from ..gold.resolve import GoldProblem, chunk_qrels, doc_qrels
from ..metrics import engine
from ..metrics.engine import Window, evaluate
from ..hits.evidence import evidence_columns
from ..hits.groups import sufficient_values
from ..hits.levelgrades import grades_at
from ..metrics.spec import FAMILIES, GROUP_METRICS, WINDOW_METRICS, MetricSpec, parse_metric, parse_metrics
from ..metrics.table import MetricTable, with_column

__all__ = ["WINDOW_METRICS", "Coverage", "Levels", "doc_lists", "chunk_lists", "level_qrels", "evaluate_levels"]

def doc_lists(lists: Sequence[RankedList], limits: Sequence[int] | None = None) -> dict[str, list[tuple[str, float]]]:
    """Collapse chunk hits to documents: each document at its best-ranked chunk, with that chunk's score."""
    out: dict[str, list[tuple[str, float]]] = {}
    for i, ranked in enumerate(lists):
        hits = ranked.hits if limits is None else ranked.hits[: limits[i]]
        out[ranked.query_id] = [(h.doc_id, h.score) for h in best_hits(hits)]
    return out


def chunk_lists(lists: Sequence[RankedList], limits: Sequence[int] | None = None) -> dict[str, list[tuple[str, float]]]:
    return {r.query_id: [(h.chunk_id, h.score) for h in (r.hits if limits is None else r.hits[: limits[i]])]
            for i, r in enumerate(lists)}


def unit_lists(lists: Sequence[RankedList], units: EvidenceUnits, window_k: Sequence[int]
               ) -> tuple[dict[str, list[tuple[str, float]]], Window]:
    """The chunk level's ranked lists over evidence units (``hits.units.unit_items``), and each query's window in
    items: its cut, and its size (k plus the extra items of hits that stand for several units)."""
    out, cut, size = {}, {}, {}
    for i, (ranked, k) in enumerate(zip(lists, window_k)):
        row = units.at(i, ranked.query_id)
        hits = ranked.hits
        items = list(unit_items(row, ((h.chunk_id, h.doc_id, h.start, h.end) for h in hits)))
        out[ranked.query_id] = [(item, hits[j].score) for j, item, _ in items]
        in_window = sum(1 for j, _, _ in items if j < k)
        cut[ranked.query_id] = in_window
        size[ranked.query_id] = k + in_window - min(k, len(hits))
    return out, Window(cut, size)


def level_qrels(gold: GoldSet, chunks: Sequence[Chunk], problems: Sequence[GoldProblem]
                ) -> tuple[LevelGrades, LevelGrades]:
    """Document and chunk judgments (``gold.resolve``: a judgment whose evidence failed to resolve judges its
    document's chunks not relevant), as columns in golden-set order. The chunk judgments say which chunks overlap
    evidence (hits.parquet, verdicts); the chunk level's metrics read ``unit_qrels``."""
    return doc_qrels(gold), chunk_qrels(gold, chunks, problems)


def unit_qrels(gold: GoldSet, chunks: Sequence[Chunk], problems: Sequence[GoldProblem]
               ) -> tuple[EvidenceUnits, LevelGrades]:
    """The evidence units of every query and the chunk level's judgments over them (``hits.units``)."""
    units = evidence_units(gold, problems)
    return units, units.grades()


@dataclass(frozen=True)
class Coverage:
    """What the retriever had no answer for: golden-set queries missing from its output (an external run that
    lacks them), and queries it answered that the golden set does not have. A retriever that answers every query,
    possibly with nothing, has an empty coverage."""

    absent: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Levels:
    doc: MetricTable
    chunk: MetricTable

    def table(self, level: str) -> MetricTable:
        return getattr(self, level)


def _window_cuts(lists: Sequence[RankedList], window_k: Sequence[int]) -> tuple[Window, Window]:
    docs, chunks, size = {}, {}, {}
    for ranked, k in zip(lists, window_k):
        size[ranked.query_id] = k
        chunks[ranked.query_id] = min(k, len(ranked.hits))
        docs[ranked.query_id] = len({h.doc_id for h in ranked.hits[:k]})  # doc lists keep first-appearance order
    return Window(docs, size), Window(chunks, size)


def _ranked_run(lists: dict[str, list[tuple[str, float]]], coverage: Coverage) -> Run:
    # Lists arrive in the runner's canonical order; give that order as ranks so doc-level collapsing keeps it. The
    # run holds what the retriever answered: not the queries it lacks, plus the ones the golden set lacks.
    absent = set(coverage.absent)
    answered = {q: v for q, v in lists.items() if q not in absent}
    answered.update((q, []) for q in coverage.unknown if q not in answered)
    ranks = {q: list(range(1, len(v) + 1)) for q, v in answered.items()}
    return Run.from_checked_lists(answered, ranks=ranks)


def evaluate_levels(dq: Mapping[str, Mapping[str, int]], cq: Mapping[str, Mapping[str, int]],
                    lists: Sequence[RankedList], window_k: Sequence[int], metrics: Sequence[MetricSpec | str],
                    query_policy: str, gold_errors: Collection[str], coverage: Coverage = Coverage(),
                    units: EvidenceUnits | None = None, counter=None, doc_text: Mapping[str, str] | None = None,
                    gold: GoldSet | None = None, chunk_grades: Mapping[str, Mapping[str, int]] | None = None
                    ) -> Levels:
    """One table per level: the configured metrics, then the window metrics not among them, ``sufficient@window``
    last. With ``units``, the chunk level is scored over evidence units (``cq`` then holds their grades:
    ``unit_qrels``), and the evidence metrics are read from the hits' text (``hits.evidence``: characters, or tokens
    of ``counter`` over ``doc_text``), the same value at both levels (the window's text is one text).
    ``sufficient@window`` reads ``gold``'s evidence groups (``hits.groups``; ``chunk_grades``: the chunks' own
    grades, for judgments without spans); without ``gold``, no groups: it is ``hit@window``."""
    group_specs = [parse_metric(name) for name in GROUP_METRICS]
    specs = [s for s in parse_metrics(list(metrics) + list(WINDOW_METRICS)) if s not in group_specs]
    columns = None
    if units is not None and any(FAMILIES[s.family].evidence for s in specs):
        columns = evidence_columns(lists, units, window_k, specs, counter, doc_text)
    unanswerable = gold.unanswerable if gold is not None else ()
    levels = _engine_levels(dq, cq, lists, window_k, specs, query_policy, gold_errors, coverage, units, columns,
                            unanswerable)
    if gold is not None and len(gold.queries) != len(window_k):
        raise ValueError(f"{len(window_k)} windows for {len(gold.queries)} golden-set queries")
    has_groups = gold is not None and gold.has_groups
    grades = cq if chunk_grades is None else chunk_grades
    tables = []
    for level, table in (("doc", levels.doc), ("chunk", levels.chunk)):
        query_ids = gold.query_ids() if gold is not None else ()
        grades_of = (lambda i: None) if level == "doc" else (lambda i: grades_at(grades, i, query_ids[i]))
        values = sufficient_values(gold.judgments_per_query() if gold is not None else (), lists, window_k,
                                   grades_of, table.column("hit@window"), has_groups)
        tables.append(with_column(table, group_specs[0], values))
    return Levels(*tables)


def _engine_levels(dq, cq, lists, window_k, specs, query_policy, gold_errors, coverage, units, columns,
                   unanswerable=()) -> Levels:
    if isinstance(lists, HitTable):
        tables = []
        for level, qrels in (("doc", as_qrels(dq)), ("chunk", as_qrels(cq))):
            parts, unjudged, window = _level_parts(lists, qrels, window_k, coverage, level,
                                                   units if level == "chunk" else None)
            tables.append(engine.evaluate_parts(qrels, parts, specs, unjudged_run_queries=unjudged,
                                                query_policy=query_policy, order="rank", gold_errors=gold_errors,
                                                window=window, spill=len(qrels.query_ids) > engine.SPILL_VALUES_ABOVE,
                                                columns=columns, unanswerable=unanswerable))
        return Levels(*tables)
    doc_window, chunk_window = _window_cuts(lists, window_k)
    chunk_ranked = chunk_lists(lists)
    if units is not None:
        chunk_ranked, chunk_window = unit_lists(lists, units, window_k)
    tables = [evaluate(as_qrels(qrels), _ranked_run(ranked, coverage), specs, query_policy=query_policy,
                       order="rank", gold_errors=gold_errors, window=window, columns=columns,
                       unanswerable=unanswerable)
              for qrels, ranked, window in ((dq, doc_lists(lists), doc_window), (cq, chunk_ranked, chunk_window))]
    return Levels(*tables)


def _level_parts(table: HitTable, qrels: Qrels, window_k: Sequence[int], coverage: Coverage, level: str,
                 units: EvidenceUnits | None = None) -> tuple[Iterator[tuple], Callable[[], int], Window]:
    """What ``_ranked_run`` and ``_window_cuts`` make from ranked lists, made from a ``HitTable``'s columns a batch
    of queries at a time (``engine.BATCH_HITS`` hits), as ``engine.evaluate_parts`` reads them: a batch's level
    run is in memory, not the whole run's (~50 bytes a hit while a level is built). At doc level each document at
    its best-ranked chunk (as ``types.best_hits``), ranks given in list order; the queries the retriever had no
    answer for left out (scored as absent), those the golden set lacks counted. The window holds the entries of
    the batch being read (the engine reads them with it; queries scored as absent need none), not a dict entry
    per query of the run; the queries are judged rows by position when the table lists the golden set's queries
    in its order, as every pipeline run does (no dict of every query's row)."""
    k = np.asarray(window_k, dtype=np.int64)
    ids = [str(q) for q in table.query_ids.tolist()]
    vocab, item_of_chunk = table.doc_index() if level == "doc" else (table.chunk_ids(), None)
    unit_code: dict[str, int] = {}
    if units is not None:  # items past the chunks are units
        unit_ids = units.unit_ids()
        unit_code = {u: i for i, u in enumerate(unit_ids)}
        vocab = np.concatenate([vocab, np.array(unit_ids, dtype=object)]) if unit_ids else vocab
    # The vocabulary is in first-appearance order, not sorted: ``doc_order`` gives each code's sorted position
    # (the engine looks at it only to break score ties, which order="rank" never does).
    doc_order = np.empty(len(vocab), dtype=np.int64)
    doc_order[np.argsort(vocab.astype(str)) if len(vocab) else np.zeros(0, np.int64)] = np.arange(len(vocab))
    coded = replace(qrels, doc_vocab=vocab, doc_codes=qrels.codes_for(vocab))  # looked up once, not per batch
    aligned = len(qrels.query_ids) == len(ids) and np.array_equal(qrels.query_ids, table.query_ids)
    row_of = {} if aligned else {str(q): i for i, q in enumerate(qrels.query_ids.tolist())}
    absent = set(coverage.absent)
    window = Window({}, {})
    per_batch = max(1, engine.BATCH_HITS // max(int(table.lengths.max()) if len(table) else 1, 1))

    def parts() -> Iterator[tuple]:
        for start in range(0, len(table), per_batch):
            stop = min(start + per_batch, len(table))
            lo, hi, lengths = table.span(start, stop)
            local = np.repeat(np.arange(stop - start), lengths)
            codes, scores, cut = table.chunk[lo:hi], table.scores[lo:hi], np.minimum(k[start:stop], lengths)
            if item_of_chunk is not None:
                docs, keep = item_of_chunk[codes], table.best_per_doc(start, stop)
                rank = table.ranks(start, stop)
                in_window = rank[keep] <= np.repeat(k[start:stop], lengths)[keep]
                codes, scores, local = docs[keep], scores[keep], local[keep]
                lengths = np.bincount(local, minlength=stop - start).astype(np.int64)
                cut = np.bincount(local[in_window], minlength=stop - start)
            sizes = k[start:stop]
            if units is not None:
                items = table_items(table, units, start, stop, k, unit_code)
                codes, scores, local, lengths, cut, sizes = (items.codes, items.scores, items.local, items.lengths,
                                                             items.cut, items.size)
            window.cut.clear()
            window.size.clear()
            window.cut.update(zip(ids[start:stop], cut.tolist()))
            window.size.update(zip(ids[start:stop], sizes.tolist()))
            offsets = offsets_of(lengths)
            rank_in_level = np.arange(1, len(codes) + 1, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
            run = Run(table.query_ids[start:stop], offsets, vocab, codes,
                              np.ascontiguousarray(scores, dtype=np.float64), rank_in_level, doc_order)
            if aligned:
                found = np.arange(start, stop, dtype=np.int64)
                if absent:
                    found[np.array([q in absent for q in ids[start:stop]], dtype=bool)] = -1
            else:
                found = np.array([-1 if q in absent else row_of.get(q, -1) for q in ids[start:stop]], dtype=np.int64)
            present = np.flatnonzero(found >= 0)  # the judged queries the retriever answered, by batch row
            yield found[present], coded.select(found[present]), run, present

    def unjudged() -> int:  # what the run holds that the golden set does not judge
        answered = set(ids) if coverage.unknown or not aligned else set()
        others = [q for q in dict.fromkeys(coverage.unknown) if q not in answered]
        if aligned:  # every query the table holds is judged, and the golden set's are the ones it answered
            return len(others)
        held = [q for q in ids if q not in absent] + others
        return sum(1 for q in held if q not in row_of)

    return parts(), unjudged, window


def evidence_counter(config):
    """What the evidence metrics count: the tokens of ``cutoff.tokenizer`` when it is a tokenizer.json (a
    ``TokenCounter``), else characters (None): the default ``words`` is not a tokenizer the config chose, and a
    config written out whole gives it too."""
    if not any(FAMILIES[s.family].evidence for s in parse_metrics(config.metrics)):
        return None
    if "tokenizer" not in config.cutoff.settings_given():
        return None
    from ..text.analysis import TokenCounter
    return TokenCounter(config.cutoff.tokenizer, "cutoff.tokenizer")
