"""The join: a run's hits laid against their judgments, one padded queries x ranks matrix of grades in evaluation
order (score descending, ties by doc id descending, or the given ranks), each doc id once at its best rank.
The engine's kernels (``engine.compute``) read nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import MetricError
from ..core.runtable import Run, Qrels, vocab_as_stored

ORDERS = ("score", "rank")
# Up to this many judgments of a query are laid out as columns, each compared with every hit (``join``).
JUDGED_COLUMNS = 32


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


class KeySpace:
    """The vocabulary of a run whose hits are named by their packed keys (``keyed``): every key is a code in it."""

    def __len__(self) -> int:
        return 2**63 - 1


def keyed(qrels: Qrels, run: Run) -> tuple[Qrels, Run] | None:
    """(judgments, run) with every doc named by its packed key (``io.packed_ids``) as an int64 code, for a run still
    holding ``UncodedHits``: keys compare as the ids do, so the tie rule, the repeats and the join read them as they
    read codes, and the run's three million ids need not be sorted to number them. None (the run is coded) unless
    every key fits in 63 bits (ids beginning with an ASCII character: the sign bit stays free, and -1 and -2, the
    join's padding, are no id's key, as 0xFF is never in UTF-8), the judgments' ids pack, and no query has more
    judgments than the join lays out as columns (``JUDGED_COLUMNS``)."""
    from dataclasses import replace

    from ..core.runtable import doc_keys
    from ..core.textcolumns import packed_keys, text_column
    from ..core.vocab import uncoded_hits

    hits = uncoded_hits(run)
    if hits is None or not len(hits.keys) or hits.keys.max() >= np.uint64(2**63):
        return None
    if len(qrels.grades) and np.diff(qrels.offsets).max() > JUDGED_COLUMNS:
        return None
    keys = doc_keys(qrels)
    if keys is None and len(qrels.doc_ids):
        text = text_column(qrels.doc_ids)
        keys = None if text is None else packed_keys(text)
    if keys is None:
        return None
    space = KeySpace()
    view = Run(run.query_ids, run.offsets, space, hits.keys.view(np.int64), run.scores, run.ranks)
    return replace(qrels, doc_vocab=space, doc_codes=keys.view(np.int64)), view


def position_in_group(groups: np.ndarray) -> np.ndarray:
    """For sorted group labels, each element's position within its group: [3, 3, 5, 5, 5] -> [0, 1, 0, 1, 2].
    Linear (each group's start repeated over it), not a binary search per element."""
    n = len(groups)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]]))
    return np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))


def _gather_rows(run: Run, rows: np.ndarray):
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


def join(qrels: Qrels, run: Run, *, order: str = "score", float32_scores: bool = False,
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
    vocab = vocab_as_stored(run)  # (not made strings: only its size and identity are read)
    if len(vocab) < 2**31 - 1:
        codes = codes.astype(np.int32, copy=False)  # half the memory traffic, and numpy sorts 32-bit rows with SIMD
    valid, codes = _order_rows(valid, codes, scores, ranks, order, run.doc_order)
    valid, codes, dropped = _drop_duplicates(valid, codes)

    n_q = qrels.n_queries
    q_lengths = np.diff(qrels.offsets)
    qrels_row = np.repeat(np.arange(n_q), q_lengths)
    vocab_size = max(len(vocab), 1)
    q_codes = qrels.codes_for(vocab)
    known = q_codes >= 0

    grades = np.zeros(codes.shape, dtype=np.float64)
    judged = np.zeros(codes.shape, dtype=bool)
    per_query = np.bincount(qrels_row[known], minlength=n_q) if n_q else np.zeros(0, np.int64)
    width = int(per_query.max()) if len(per_query) else 0
    if 0 < width <= JUDGED_COLUMNS:
        # Few judgments per query: lay each query's judged docs out as columns, then compare every hit with one
        # column at a time (width passes over the (Q, D) matrix; no per-query Python loop, no Q x D x J array).
        # qrels_row is sorted (each query's judgments are together), and so are the rows of the known ones.
        rows_k, codes_k, grades_k = qrels_row[known], q_codes[known], qrels.grades[known]
        col = position_in_group(rows_k)
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
        ideal[rows_p, position_in_group(rows_p)] = positive[sel]
        ideal = -np.sort(-ideal, axis=1)  # each row's grades descending, the 0 padding last

    return Labels(qrels.query_ids, grades, judged, valid.sum(axis=1).astype(np.int64), ideal, qrels_row,
                  qrels.grades, rows >= 0, dropped)
