"""The metric engine: every metric of a whole run from one padded queries x ranks matrix of grades.

Conventions (trec_eval's unless an option says otherwise; every result echoes them):
- hits are ordered by score descending, ties by doc id descending; ``order="rank"`` trusts given ranks;
- a doc id that repeats in one ranked list counts once, at its best rank (the dropped copies are counted);
- relevant means grade >= ``rel`` (default 1); negative grades and unjudged docs are never relevant and gain 0;
- ``judged@k``, ``bpref`` and ``infAP`` also ask whether a hit was judged: a negative grade is then "pooled, not
  judged", as in trec_eval (``incomplete``);
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

from dataclasses import dataclass, replace
from typing import Callable, Collection, Iterable, Iterator, Mapping

import numpy as np

from ..core.errors import MetricError
from .spec import FAMILIES, MetricSpec, exp_gain_problem, parse_metrics
from .table import QUERY_POLICIES, MetricTable, build_table, conventions  # noqa: F401  (their old home)
from ..core.runtable import Qrels, Run, vocab_as_stored, vocab_text
from ..io.spilled import SpilledRows
from . import incomplete
from .join import Labels, join, keyed, position_in_group


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
    if FAMILIES[spec.family].evidence:
        raise MetricError(f"metric {spec.name} reads the hits' text against the evidence spans: only a pipeline run "
                          f"(harness run) has both")
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

    if fam == "judged":
        return incomplete.judged_at(labels, k)
    if fam == "bpref":
        return incomplete.bpref(labels, spec.rel)
    if fam == "infAP":
        return incomplete.infap(labels, spec.rel)
    n_rel = labels.n_relevant(spec.rel)
    if fam in ("rprec", "ap"):
        # Both only need where the relevant hits are: one pass to find them, then work on those few positions.
        rel = labels.grades if k is None else _cut(labels.grades, k)
        rows, cols = np.nonzero(rel >= spec.rel)  # row-major: each row's relevant hits in rank order
        n_q = len(n_rel)
        if fam == "rprec":  # relevant hits among the top R
            return _ratio(np.bincount(rows, weights=(cols < n_rel[rows]).astype(np.float64), minlength=n_q), n_rel)
        # precision at the rank of each relevant hit: (how many relevant so far) / rank
        precision_at = (position_in_group(rows) + 1.0) / (cols + 1.0)
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


def evaluate(qrels: Qrels, run: Run, metrics: Iterable[str | MetricSpec], *,
             query_policy: str = "exclude", order: str = "score", trec_compat: bool = False,
             gold_errors: Collection[str] | None = None, window: Window | None = None,
             columns: Mapping[MetricSpec, np.ndarray] | None = None,
             unanswerable: Collection[str] = ()) -> MetricTable:
    """Evaluate a whole run. ``trec_compat`` reproduces ``trec_eval -c`` (float32 ties, every judged query in means).
    ``gold_errors`` and ``window`` come from a pipeline run (see the module's conventions)."""
    qrels, run = keyed(qrels, run) or (qrels, run)  # (a run read from a table: scored on its packed keys)
    vocab = vocab_as_stored(run)  # (as held: a run read from a table may not have made its doc ids strings)
    if len(qrels.doc_ids) and (qrels.doc_codes is None or qrels.doc_vocab is not vocab):
        # The judged doc ids coded into the run's vocabulary once, not once a batch (the batches share the codes).
        qrels = replace(qrels, doc_vocab=vocab, doc_codes=qrels.codes_for(vocab, vocab_text(run)))
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
                          order=order, trec_compat=trec_compat, gold_errors=gold_errors, window=window,
                          columns=columns, unanswerable=unanswerable)


def relevant_counts(qrels: Qrels) -> np.ndarray:
    """Each query's relevant items (grade 1 or more): the ``n_relevant`` a table's ``included`` reads."""
    relevant = np.repeat(np.arange(qrels.n_queries), np.diff(qrels.offsets))[qrels.grades >= 1]
    return np.bincount(relevant, minlength=qrels.n_queries)


def evaluate_parts(qrels: Qrels, parts: Iterable[tuple], metrics: Iterable[str | MetricSpec], *,
                   unjudged_run_queries: Callable[[], int] = lambda: 0, query_policy: str = "exclude",
                   order: str = "score", trec_compat: bool = False, gold_errors: Collection[str] | None = None,
                   window: Window | None = None, spill: bool = False,
                   doc_name: Callable[[object], str] = str,
                   columns: Mapping[MetricSpec, np.ndarray] | None = None,
                   unanswerable: Collection[str] = ()) -> MetricTable:
    """The table of a run given in parts, each ``(rows, judged, run, present)``: judged queries (their rows in
    ``qrels``, a query in one part at most), their judgments (``qrels.select(rows)``, its doc codes in ``run``'s
    vocabulary), run rows, each judged query's row in ``run`` (-1: absent). A part is scored as the whole run would
    be (kernels work row by row); judged queries no part names score as absent; ``unjudged_run_queries`` is asked
    once every part is read; the table is built once, under one rule. ``spill``: the values go to a temporary file
    as each part is scored (``core.spilled.SpilledRows``), read back a block at a time: a large run's table holds a
    few bytes a query in memory (its counts and flags), not 8 a metric. ``doc_name`` reads a doc id of ``qrels``
    for an error that names one (``harness eval``'s are codes). ``columns``: metrics computed elsewhere
    (``hits.evidence``), one value per query of ``qrels``, taken as they are. ``unanswerable``: the queries marked
    ``answerable: false`` (a pipeline run's), never in a mean."""
    if query_policy not in QUERY_POLICIES:
        raise MetricError(f"unknown query policy {query_policy!r}; choose from {', '.join(QUERY_POLICIES)}")
    if trec_compat:
        query_policy = "zero"
    specs = parse_metrics(metrics)
    _check_gains(specs, qrels, doc_name)
    values = SpilledRows(qrels.n_queries, len(specs)) if spill else np.zeros((qrels.n_queries, len(specs)))
    in_run, scored = np.zeros(qrels.n_queries, dtype=bool), np.zeros(qrels.n_queries, dtype=bool)
    dropped = 0
    for rows, judged, run, present in _and_absent(parts, qrels, scored):
        labels = join(judged, run, order=order, float32_scores=trec_compat, rows=present)
        cuts = window.arrays(labels.query_ids) if window is not None else None
        if specs:
            values[rows] = np.column_stack([columns[spec][rows] if columns and spec in columns
                                            else compute(spec, labels, cuts) for spec in specs])
        in_run[rows] = labels.in_run
        dropped += labels.dropped_duplicates
    return build_table(qrels.query_ids, specs, values, relevant_counts(qrels), in_run,
                       query_policy=query_policy, gold_errors=gold_errors,
                       conventions=conventions(order=order, query_policy=query_policy, trec_compat=trec_compat),
                       unjudged_run_queries=unjudged_run_queries(), dropped_duplicates=dropped,
                       unanswerable=unanswerable)


def _check_gains(specs: list[MetricSpec], qrels: Qrels, doc_name: Callable[[object], str]) -> None:
    """A judgment whose grade an exponential gain cannot score is an error naming it."""
    if not len(qrels.grades):
        return
    top = int(np.argmax(qrels.grades))
    problem = exp_gain_problem(specs, int(qrels.grades[top]))
    if problem:
        query = qrels.query_ids[int(np.searchsorted(qrels.offsets, top, side="right")) - 1]
        raise MetricError(f"query {str(query)!r}, document {doc_name(qrels.doc_ids[top])!r}: {problem}")


def _and_absent(parts: Iterable[tuple], qrels: Qrels, scored: np.ndarray) -> Iterator[tuple]:
    """``parts``, then one of the judged queries none of them named, against an empty run."""
    for part in parts:
        scored[part[0]] = True
        yield part
    if len(rows := np.flatnonzero(~scored)):
        yield rows, qrels.select(rows), Run.empty(), np.full(len(rows), -1, np.int64)


# A table of more judged queries than this keeps its values in a temporary file (``evaluate_parts(spill=True)``,
# asked for by a pipeline run and `harness eval`'s file path; ``evaluate`` returns arrays in memory as it always did).
SPILL_VALUES_ABOVE = 1 << 16

# Judged queries are joined and scored at most this many hits at a time (of the run's greatest depth): one batch's
# (queries x depth) matrices are in memory, ~54 bytes a hit, not the whole run's.
BATCH_HITS = 1 << 20
