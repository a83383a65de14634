"""The metric engine: every metric of a whole run from one padded queries x ranks matrix of grades.

Conventions (trec_eval's unless an option says otherwise; every result echoes them):
- hits are ordered by score descending, ties by doc id descending; ``order="rank"`` trusts given ranks;
- a doc id that repeats in one ranked list counts once, at its best rank (the dropped copies are counted);
- relevant means grade >= ``rel`` (default 1); negative grades and unjudged docs are never relevant and gain 0;
- P@k divides by k; recall, AP and AP@k divide by R, all relevant documents of the query;
- nDCG discounts by 1/log2(rank + 1); its ideal is built from every judged document (``ideal=retrieved``: from the
  retrieved labels re-sorted); linear gain = grade, ``gain=exp`` = 2^grade - 1;
- judged queries absent from the run score 0; run queries with no judgments are ignored and counted;
- which queries enter a mean is decided by ``table.included`` alone: judged queries with no relevant document are
  excluded from means (``query_policy="zero"``: included as 0), and so are queries whose golden-set entry could not
  be checked (``gold_errors``, known to a pipeline run);
- ``@window`` metrics cut each query's list at its own context window (``Window``, a pipeline run's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Iterable, Iterator, Mapping

import numpy as np

from ..core.errors import MetricError
from .spec import MetricSpec, parse_metrics
from .table import QUERY_POLICIES, MetricTable, build_table, conventions  # noqa: F401  (their old home)
from ..core.runtable import ColumnarRun, Qrels
from ..core.spilled import SpilledRows

ORDERS = ("score", "rank")


@dataclass(frozen=True)
class Window:
    """Each query's context window at one level, by query id: the first ``cut`` items of the level's ranked list
    lie in it (the distinct documents, or the chunks, among the window's chunks); ``size`` is the window's k in
    chunks, the denominator of precision@window at both levels."""

    cut: Mapping[str, int]
    size: Mapping[str, int]

    def arrays(self, query_ids) -> tuple[np.ndarray, np.ndarray]:
        ids = [str(q) for q in query_ids]
        return (np.array([self.cut.get(q, 0) for q in ids], dtype=np.int64),
                np.array([self.size.get(q, 0) for q in ids], dtype=np.float64))


@dataclass(frozen=True)
class Labels:
    """A run joined with its judgments; row i is judged query i."""

    query_ids: np.ndarray
    grades: np.ndarray  # (Q, D) float64 grade of the hit at each rank; 0 for unjudged and padding
    judged: np.ndarray  # (Q, D) bool: the hit has a judgment
    n_retrieved: np.ndarray  # (Q,) int64, after dropping duplicates
    ideal: np.ndarray  # (Q, J) float64 positive judged grades, sorted descending, 0-padded
    qrels_row: np.ndarray  # (m,) judged query row of each judgment
    qrels_grade: np.ndarray  # (m,) grade of each judgment
    in_run: np.ndarray  # (Q,) bool
    dropped_duplicates: int
    # n_relevant by threshold, counted once: every metric asks (a bincount over every judgment each time)
    _n_relevant: dict = field(default_factory=dict, compare=False, repr=False)

    def n_relevant(self, rel: int = 1) -> np.ndarray:
        if rel not in self._n_relevant:
            self._n_relevant[rel] = np.bincount(self.qrels_row[self.qrels_grade >= rel],
                                                minlength=len(self.query_ids)).astype(np.int64)
        return self._n_relevant[rel]


def _position_in_group(groups: np.ndarray) -> np.ndarray:
    """For sorted group labels, each element's position within its group: [3, 3, 5, 5, 5] -> [0, 1, 0, 1, 2].
    Linear (each group's start repeated over it), not a binary search per element."""
    n = len(groups)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]]))
    return np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))


def _gather_rows(run: ColumnarRun, rows: np.ndarray):
    """Padded (Q, D) matrices of the run rows named by ``rows`` (-1: an empty row). Read-only views may come back."""
    lengths_all = run.lengths
    if len(lengths_all) and len(run.doc_codes) and (lengths_all == lengths_all[0]).all():
        # Every query has the same depth (the usual case for a run cut at k): the matrices are a reshape.
        depth = int(lengths_all[0])
        codes_m, scores_m = run.doc_codes.reshape(-1, depth), run.scores.reshape(-1, depth)
        ranks_m = None if run.ranks is None else run.ranks.reshape(-1, depth)
        absent = rows < 0
        if not absent.any() and len(rows) == len(lengths_all) and (rows == np.arange(len(rows))).all():
            return np.ones(codes_m.shape, dtype=bool), codes_m, scores_m, ranks_m
        take = np.maximum(rows, 0)
        codes, scores = codes_m[take], scores_m[take]
        codes[absent], scores[absent] = -1, -np.inf
        ranks = None
        if ranks_m is not None:
            ranks = ranks_m[take]
            ranks[absent] = np.iinfo(np.int64).max
        return np.repeat(~absent[:, None], depth, axis=1), codes, scores, ranks
    # Row -1 indexes the appended zero-length entry: an absent query is an empty row.
    starts = np.append(run.offsets[:-1], 0)[rows]
    lengths = np.append(lengths_all, 0)[rows]
    depth = int(lengths.max()) if len(lengths) else 0
    cols = np.arange(depth)
    valid = cols[None, :] < lengths[:, None]
    n_hits = len(run.doc_codes)
    src = np.minimum(starts[:, None] + cols[None, :], max(n_hits - 1, 0))
    if n_hits == 0:  # no hit at all (e.g. every context window empty): still a run with ranks if it has them
        ranks = None if run.ranks is None else np.full(valid.shape, np.iinfo(np.int64).max)
        return valid, np.full(valid.shape, -1, np.int64), np.full(valid.shape, -np.inf), ranks
    codes = np.where(valid, run.doc_codes[src], -1)
    scores = np.where(valid, run.scores[src], -np.inf)
    ranks = None
    if run.ranks is not None:
        ranks = np.where(valid, run.ranks[src], np.iinfo(np.int64).max)
    return valid, codes, scores, ranks


def _order_rows(valid, codes, scores, ranks, order: str, doc_order: np.ndarray | None = None):
    """Sort each row into evaluation order; only rows out of order (the usual case: none) are sorted. Ties in
    score go by doc id descending: by code when the vocabulary is sorted, else by ``doc_order`` (each code's
    position in sorted order), looked up only in the rows that have a tie."""
    if order == "rank":
        if ranks is None:
            raise MetricError("order 'rank' needs ranks in the run; this run has none")
        if ranks.shape[1] < 2 or (ranks[:, 1:] >= ranks[:, :-1]).all():
            return valid, codes  # already in rank order (padding carries the largest rank)
        perm = np.argsort(ranks, axis=1, kind="stable")
        return np.take_along_axis(valid, perm, 1), np.take_along_axis(codes, perm, 1)
    if codes.shape[1] < 2:
        return valid, codes
    # Rows whose scores are not strictly decreasing: a tie (then the doc ids decide), an inversion, or a NaN.
    maybe = np.flatnonzero((~(scores[:, :-1] > scores[:, 1:]) & valid[:, 1:]).any(axis=1))
    if len(maybe) == 0:
        return valid, codes
    sub_valid, sub_codes, sub_scores = valid[maybe], codes[maybe], scores[maybe]
    keys = sub_codes if doc_order is None else np.where(sub_codes >= 0, doc_order[np.maximum(sub_codes, 0)], -1)
    s0, s1, k0, k1 = sub_scores[:, :-1], sub_scores[:, 1:], keys[:, :-1], keys[:, 1:]
    in_order = ((s0 > s1) | ((s0 == s1) & (k0 > k1)) | ~sub_valid[:, 1:]).all(axis=1)
    if in_order.all():
        return valid, codes
    bad, local = maybe[~in_order], np.flatnonzero(~in_order)
    valid, codes = valid.copy(), codes.copy()
    # lexsort: the last key is primary; padding last, then score desc, then doc id desc.
    perm = np.lexsort((-keys[local], -sub_scores[local], ~sub_valid[local]), axis=1)
    valid[bad] = np.take_along_axis(sub_valid[local], perm, 1)
    codes[bad] = np.take_along_axis(sub_codes[local], perm, 1)
    return valid, codes


def _drop_duplicates(valid, codes):
    """Keep each doc's first (best-ranked) occurrence per row; returns new matrices and the count dropped."""
    if codes.shape[1] < 2:
        return valid, codes, 0
    ordered = np.sort(codes, axis=1)
    dup_rows = np.flatnonzero(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1))
    if len(dup_rows) == 0:
        return valid, codes, 0
    # Only the rows with a repeat (every row of a chunk-level run read as documents): a stable sort by code puts
    # each doc's copies together in rank order, so the first of each group is the one to keep.
    sub_codes, sub_valid = codes[dup_rows], valid[dup_rows]
    by_code = np.argsort(sub_codes, axis=1, kind="stable")
    grouped = np.take_along_axis(sub_codes, by_code, 1)
    first = np.ones(grouped.shape, dtype=bool)
    first[:, 1:] = grouped[:, 1:] != grouped[:, :-1]
    keep = np.zeros(grouped.shape, dtype=bool)
    np.put_along_axis(keep, by_code, first, 1)
    keep &= sub_valid
    dropped = int(sub_valid.sum() - keep.sum())
    kept_first = np.argsort(~keep, axis=1, kind="stable")  # the kept hits move up, keeping their order
    valid, codes = valid.copy(), codes.copy()
    valid[dup_rows] = np.take_along_axis(keep, kept_first, 1)
    codes[dup_rows] = np.take_along_axis(np.where(keep, sub_codes, -1), kept_first, 1)
    return valid, codes, dropped


def join(qrels: Qrels, run: ColumnarRun, *, order: str = "score", float32_scores: bool = False,
         rows: np.ndarray | None = None) -> Labels:
    """Join a run to its judgments: the grade of every hit, in evaluation order. ``rows``: each judged query's row
    in the run (-1: absent), when the caller knows them; else they are looked up by id."""
    if order not in ORDERS:
        raise MetricError(f"unknown order {order!r}; choose from {', '.join(ORDERS)}")
    if rows is None and len(run.query_ids) == len(qrels.query_ids) and np.array_equal(run.query_ids, qrels.query_ids):
        rows = np.arange(len(run.query_ids))  # the same queries in the same order
    elif rows is None:
        run_row = {str(q): i for i, q in enumerate(run.query_ids)}
        rows = np.array([run_row.get(str(q), -1) for q in qrels.query_ids], dtype=np.int64)

    valid, codes, scores, ranks = _gather_rows(run, rows)
    if float32_scores:  # trec_eval 9 compares scores in single precision
        scores = scores.astype(np.float32).astype(np.float64)
    if len(run.doc_vocab) < 2**31 - 1:
        codes = codes.astype(np.int32, copy=False)  # half the memory traffic, and numpy sorts 32-bit rows with SIMD
    valid, codes = _order_rows(valid, codes, scores, ranks, order, run.doc_order)
    valid, codes, dropped = _drop_duplicates(valid, codes)

    n_q = qrels.n_queries
    q_lengths = np.diff(qrels.offsets)
    qrels_row = np.repeat(np.arange(n_q), q_lengths)
    vocab_size = max(len(run.doc_vocab), 1)
    q_codes = qrels.codes_for(run.doc_vocab)
    known = q_codes >= 0

    grades = np.zeros(codes.shape, dtype=np.float64)
    judged = np.zeros(codes.shape, dtype=bool)
    per_query = np.bincount(qrels_row[known], minlength=n_q) if n_q else np.zeros(0, np.int64)
    width = int(per_query.max()) if len(per_query) else 0
    if 0 < width <= 32:
        # Few judgments per query: lay each query's judged docs out as columns, then compare every hit with one
        # column at a time (width passes over the (Q, D) matrix; no per-query Python loop, no Q x D x J array).
        # qrels_row is sorted (each query's judgments are together), and so are the rows of the known ones.
        rows_k, codes_k, grades_k = qrels_row[known], q_codes[known], qrels.grades[known]
        col = _position_in_group(rows_k)
        judged_codes = np.full((n_q, width), -2, dtype=codes.dtype)  # -2 matches no hit (padding hits are -1)
        judged_grades = np.zeros((n_q, width), dtype=np.float64)
        judged_codes[rows_k, col] = codes_k
        judged_grades[rows_k, col] = grades_k
        hit_codes = codes if valid.all() else np.where(valid, codes, -1)  # padding is -1 already; be sure
        grades = np.full(codes.shape, np.nan)  # NaN until a judgment matches: unjudged and grade 0 stay apart
        for j in range(width):
            np.copyto(grades, judged_grades[:, j, None], where=hit_codes == judged_codes[:, j, None])
        judged = ~np.isnan(grades)
        grades[~judged] = 0.0
    elif known.any():
        q_keys = qrels_row[known] * vocab_size + q_codes[known]
        key_order = np.argsort(q_keys, kind="stable")
        q_keys, q_grades = q_keys[key_order], qrels.grades[known][key_order]
        hit_keys = np.arange(n_q)[:, None] * vocab_size + np.maximum(codes, 0)
        pos = np.minimum(np.searchsorted(q_keys, hit_keys), len(q_keys) - 1)
        judged = (q_keys[pos] == hit_keys) & valid
        grades = np.where(judged, q_grades[pos], 0).astype(np.float64)

    positive = np.maximum(qrels.grades, 0).astype(np.float64)
    width = int(np.bincount(qrels_row[positive > 0], minlength=n_q).max()) if (positive > 0).any() else 0
    ideal = np.zeros((n_q, width), dtype=np.float64)
    if width:
        sel = positive > 0
        rows_p = qrels_row[sel]  # in row order: qrels_row is
        ideal[rows_p, _position_in_group(rows_p)] = positive[sel]
        ideal = -np.sort(-ideal, axis=1)  # each row's grades descending, the 0 padding last

    return Labels(qrels.query_ids, grades, judged, valid.sum(axis=1).astype(np.int64), ideal, qrels_row,
                  qrels.grades, rows >= 0, dropped)


def _cut(matrix: np.ndarray, k: int | None) -> np.ndarray:
    """The top k columns, never padded out to k: ranks past the run's depth hold no hit (gain 0, never relevant, as
    rel >= 1), so they change no sum, and a cutoff of 10^8 costs nothing. Only P@k divides by k itself."""
    return matrix if k is None else matrix[:, :k]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(len(num), dtype=np.float64), where=den > 0)


def _discount(width: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


def _gains(grades: np.ndarray, gain: str) -> np.ndarray:
    g = np.maximum(grades, 0.0)
    return np.exp2(g) - 1.0 if gain == "exp" else g


def _window_values(spec: MetricSpec, labels: Labels, window: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    cut, size = window
    cols = np.arange(labels.grades.shape[1])
    rel = (labels.grades >= spec.rel) & (cols[None, :] < cut[:, None])
    found = rel.sum(axis=1).astype(np.float64)
    if spec.family == "hit":
        return (found > 0).astype(np.float64)
    if spec.family == "recall":
        return _ratio(found, labels.n_relevant(spec.rel))
    if spec.family == "precision":
        return _ratio(found, size)
    if spec.family == "rr":
        if rel.shape[1] == 0:
            return np.zeros(rel.shape[0])
        return np.where(rel.any(axis=1), 1.0 / (rel.argmax(axis=1) + 1.0), 0.0)
    raise MetricError(f"no window kernel for metric family {spec.family!r}")


def compute(spec: MetricSpec, labels: Labels, window: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per-query values of one metric, one per judged query; ``window`` (cut, size per row) for ``@window``."""
    if spec.window:
        if window is None:
            raise MetricError(f"metric {spec.name} needs each query's context window: only a pipeline run "
                              f"(harness run) has one")
        return _window_values(spec, labels, window)
    fam, k = spec.family, spec.k
    if fam in ("dcg", "ndcg"):
        gains = _gains(_cut(labels.grades, k), spec.gain)  # cut first: nDCG@10 of a depth-1000 run reads 10 columns
        dcg = (gains * _discount(gains.shape[1])).sum(axis=1)
        if fam == "dcg":
            return dcg
        if spec.ideal == "retrieved":
            ideal = -np.sort(-_gains(labels.grades, spec.gain), axis=1)
        else:
            ideal = _gains(labels.ideal, spec.gain)
        ideal = _cut(ideal, k)
        idcg = (ideal * _discount(ideal.shape[1])).sum(axis=1)
        return _ratio(dcg, idcg)

    n_rel = labels.n_relevant(spec.rel)
    if fam in ("rprec", "ap"):
        # Both only need where the relevant hits are: one pass to find them, then work on those few positions.
        rel = labels.grades if k is None else _cut(labels.grades, k)
        rows, cols = np.nonzero(rel >= spec.rel)  # row-major: each row's relevant hits in rank order
        n_q = len(n_rel)
        if fam == "rprec":  # relevant hits among the top R
            return _ratio(np.bincount(rows, weights=(cols < n_rel[rows]).astype(np.float64), minlength=n_q), n_rel)
        # precision at the rank of each relevant hit: (how many relevant so far) / rank
        precision_at = (_position_in_group(rows) + 1.0) / (cols + 1.0)
        return _ratio(np.bincount(rows, weights=precision_at, minlength=n_q), n_rel)
    rel_k = _cut(labels.grades, k) >= spec.rel
    if fam == "precision":
        return rel_k.sum(axis=1) / float(k)
    if fam == "recall":
        return _ratio(rel_k.sum(axis=1), n_rel)
    if fam == "hit":
        return rel_k.any(axis=1).astype(np.float64)
    if fam == "nothing_found":
        return (~rel_k.any(axis=1)).astype(np.float64)
    if fam == "rr":
        if rel_k.shape[1] == 0:
            return np.zeros(rel_k.shape[0])
        first = rel_k.argmax(axis=1)
        return np.where(rel_k.any(axis=1), 1.0 / (first + 1.0), 0.0)
    raise MetricError(f"no kernel for metric family {fam!r}")


def evaluate(qrels: Qrels, run: ColumnarRun, metrics: Iterable[str | MetricSpec], *,
             query_policy: str = "exclude", order: str = "score", trec_compat: bool = False,
             gold_errors: Collection[str] | None = None, window: Window | None = None) -> MetricTable:
    """Evaluate a whole run. ``trec_compat`` reproduces ``trec_eval -c`` (float32 ties, every judged query in means).
    ``gold_errors`` and ``window`` come from a pipeline run (see the module's conventions)."""
    # A batch of judged queries at a time (one batch for most runs), each with its rows of the run.
    per_batch = max(1, BATCH_HITS // max(int(run.lengths.max()) if run.n_queries else 1, 1))
    same = len(run.query_ids) == len(qrels.query_ids) and np.array_equal(run.query_ids, qrels.query_ids)
    run_row = {} if same else {str(q): i for i, q in enumerate(run.query_ids)}  # (no dict for the usual case)

    def parts() -> Iterator[tuple]:
        for start in range(0, qrels.n_queries, per_batch):
            rows = np.arange(start, min(start + per_batch, qrels.n_queries))
            judged = qrels.select(rows)
            present = rows if same else np.array([run_row.get(str(q), -1) for q in judged.query_ids], np.int64)
            found = present >= 0  # each judged query's row in the batch's run: its rank among the present ones
            yield rows, judged, run.select(present[found]), np.where(found, np.cumsum(found) - 1, -1)

    def unjudged() -> int:
        judged_ids = set(map(str, qrels.query_ids)) if run_row else set()
        return sum(1 for q in run_row if q not in judged_ids)

    return evaluate_parts(qrels, parts(), metrics, unjudged_run_queries=unjudged, query_policy=query_policy,
                          order=order, trec_compat=trec_compat, gold_errors=gold_errors, window=window)


def evaluate_parts(qrels: Qrels, parts: Iterable[tuple], metrics: Iterable[str | MetricSpec], *,
                   unjudged_run_queries: Callable[[], int] = lambda: 0, query_policy: str = "exclude",
                   order: str = "score", trec_compat: bool = False, gold_errors: Collection[str] | None = None,
                   window: Window | None = None, spill: bool = False) -> MetricTable:
    """The table of a run given in parts, each ``(rows, judged, run, present)``: judged queries (their rows in
    ``qrels``, a query in one part at most), their judgments (``qrels.select(rows)``, its doc codes in ``run``'s
    vocabulary), run rows, each judged query's row in ``run`` (-1: absent). A part is scored as the whole run would
    be (kernels work row by row); judged queries no part names score as absent; ``unjudged_run_queries`` is asked
    once every part is read; the table is built once, under one rule. ``spill``: the values go to a temporary file
    as each part is scored (``core.spilled.SpilledRows``), read back a block at a time: a large run's table holds a
    few bytes a query in memory (its counts and flags), not 8 a metric."""
    if query_policy not in QUERY_POLICIES:
        raise MetricError(f"unknown query policy {query_policy!r}; choose from {', '.join(QUERY_POLICIES)}")
    if trec_compat:
        query_policy = "zero"
    specs = parse_metrics(metrics)
    values = SpilledRows(qrels.n_queries, len(specs)) if spill else np.zeros((qrels.n_queries, len(specs)))
    in_run, scored = np.zeros(qrels.n_queries, dtype=bool), np.zeros(qrels.n_queries, dtype=bool)
    dropped = 0
    for rows, judged, run, present in _and_absent(parts, qrels, scored):
        labels = join(judged, run, order=order, float32_scores=trec_compat, rows=present)
        cuts = window.arrays(labels.query_ids) if window is not None else None
        if specs:
            values[rows] = np.column_stack([compute(spec, labels, cuts) for spec in specs])
        in_run[rows] = labels.in_run
        dropped += labels.dropped_duplicates
    relevant = np.repeat(np.arange(qrels.n_queries), np.diff(qrels.offsets))[qrels.grades >= 1]
    return build_table(qrels.query_ids, specs, values, np.bincount(relevant, minlength=qrels.n_queries), in_run,
                       query_policy=query_policy, gold_errors=gold_errors,
                       conventions=conventions(order=order, query_policy=query_policy, trec_compat=trec_compat),
                       unjudged_run_queries=unjudged_run_queries(), dropped_duplicates=dropped)


def _and_absent(parts: Iterable[tuple], qrels: Qrels, scored: np.ndarray) -> Iterator[tuple]:
    """``parts``, then one of the judged queries none of them named, against an empty run."""
    for part in parts:
        scored[part[0]] = True
        yield part
    if len(rows := np.flatnonzero(~scored)):
        yield rows, qrels.select(rows), ColumnarRun.empty(), np.full(len(rows), -1, np.int64)


# A table of more judged queries than this keeps its values in a temporary file (``evaluate_parts(spill=True)``,
# asked for by a pipeline run and `harness eval`'s file path; ``evaluate`` returns arrays in memory as it always did).
SPILL_VALUES_ABOVE = 1 << 16

# Judged queries are joined and scored at most this many hits at a time (of the run's greatest depth): one batch's
# (queries x depth) matrices are in memory, ~54 bytes a hit, not the whole run's.
BATCH_HITS = 1 << 20
