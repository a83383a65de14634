"""Kernels of the metrics for incomplete judgments: ``judged@k``, ``bpref`` and ``infAP``.

trec_eval's reading of a judgment list (``form_res_rels.c``), which these three follow: a retrieved document the
judgments do not list is *not in the pool*; one listed with a negative grade is *in the pool but unjudged*
(trec_eval's -1, e.g. a document of the pool that a sampled judging round left out); a grade >= 0 is a judgment,
relevant from ``rel`` up. The other metrics read a negative grade as "not relevant, gain 0"; only these ask
whether a document was judged at all.

- ``judged@k``: judged documents among the top k over min(k, retrieved) (ir_measures' ``Judged@k``; 0 when nothing
  is retrieved). Without k: over all retrieved. A negative grade is not a judgment here (trec_eval 10's ``unj``
  counts it unjudged too; ir_measures counts any listed document as judged).
- ``bpref``: trec_eval 10 ``m_bpref.c``: each relevant retrieved document scores 1 - min(n, R) / min(N, R), n the
  judged non-relevant documents above it, N all judged non-relevant documents of the query (grades 0..rel-1), R all
  relevant ones; the sum over R. Unjudged documents are skipped.
- ``infAP``: trec_eval 10 ``m_infap.c`` (Yilmaz & Aslam 2006): at the relevant document at 0-based position j > 0,
  1/(j+1) + j/(j+1) * (pooled above / j) * (relevant above + eps) / (judged above + 2 eps), eps = 1e-5, pooled =
  relevant + non-relevant + unjudged-in-pool; 1 at j = 0; the sum over R. With every retrieved document judged it
  is AP within 1e-4 (the eps).
"""

from __future__ import annotations

import numpy as np

from .join import Labels, position_in_group

INFAP_EPSILON = 0.00001  # trec_eval.h


def _exclusive_cumsum(mask: np.ndarray) -> np.ndarray:
    """How many of the row's earlier positions are set, at each position (int64)."""
    counts = np.cumsum(mask, axis=1, dtype=np.int64)
    return counts - mask


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(len(num), dtype=np.float64), where=den > 0)


def judged_at(labels: Labels, k: int | None) -> np.ndarray:
    graded = labels.judged & (labels.grades >= 0)
    top = graded if k is None else graded[:, :k]
    shown = labels.n_retrieved if k is None else np.minimum(labels.n_retrieved, k)
    return _ratio(top.sum(axis=1).astype(np.float64), shown)


def _masks(labels: Labels, rel: int) -> tuple[np.ndarray, np.ndarray]:
    relevant = labels.judged & (labels.grades >= rel)
    nonrelevant = labels.judged & (labels.grades >= 0) & (labels.grades < rel)
    return relevant, nonrelevant


def bpref(labels: Labels, rel: int) -> np.ndarray:
    relevant, nonrelevant = _masks(labels, rel)
    n_rel = labels.n_relevant(rel)
    judged_non = (labels.qrels_grade >= 0) & (labels.qrels_grade < rel)
    n_non = np.bincount(labels.qrels_row[judged_non], minlength=len(n_rel)).astype(np.int64)
    rows, cols = np.nonzero(relevant)  # row-major: each row's relevant hits in rank order, summed in that order
    above = _exclusive_cumsum(nonrelevant)[rows, cols]
    r = n_rel[rows]
    denominator = np.minimum(n_non[rows], r).astype(np.float64)
    penalty = np.divide(np.minimum(above, r).astype(np.float64), denominator,
                        out=np.zeros(len(rows)), where=above > 0)
    return _ratio(np.bincount(rows, weights=1.0 - penalty, minlength=len(n_rel)), n_rel)


def infap(labels: Labels, rel: int) -> np.ndarray:
    relevant, nonrelevant = _masks(labels, rel)
    unjudged_in_pool = labels.judged & (labels.grades < 0)
    n_rel = labels.n_relevant(rel)
    rows, cols = np.nonzero(relevant)
    rel_above = position_in_group(rows)  # trec_eval's rel_so_far - 1: rows come row-major, in rank order
    non_above = _exclusive_cumsum(nonrelevant)[rows, cols]
    unj_above = _exclusive_cumsum(unjudged_in_pool)[rows, cols]
    # The expression in trec_eval's order of operations, so each term is its double to the last bit.
    fj = cols.astype(np.float64)
    safe = np.where(cols > 0, fj, 1.0)
    term = (1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_above + non_above + unj_above) / safe)
            * ((rel_above + INFAP_EPSILON) / ((rel_above + non_above) + 2 * INFAP_EPSILON)))
    term = np.where(cols == 0, 1.0, term)
    return _ratio(np.bincount(rows, weights=term, minlength=len(n_rel)), n_rel)
