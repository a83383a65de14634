"""Evaluation of a run against judgments (``harness.evaluate``, what ``harness eval`` calls) and rank fusion
(``harness.fuse``)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..core.errors import InputError
from .arguments import _describe, _metric_names

if TYPE_CHECKING:
    from ..core.runtable import Qrels, Run
    from ..metrics.engine import MetricTable


def evaluate(qrels: Any, run: Any, metrics: Any = None, *, query_policy: str = "exclude",
             trec_compat: bool = False, order: str = "score") -> "MetricTable":
    """Evaluate a run against judgments, as ``harness eval`` does (trec_eval's conventions).

    ``qrels``: a Qrels, ``{qid: {doc: grade}}``, a DataFrame (query_id, doc_id, relevance) or a qrels path.
    ``run``: a Run, ``{qid: {doc: score}}``, a DataFrame (query_id, doc_id, score) or a TREC/JSONL run path.
    ``metrics``: names such as ``"ndcg@10"`` or ``["P@5", "map"]`` (default: the CLI's default set).
    ``query_policy="zero"`` counts queries without relevant documents as 0; ``trec_compat`` reproduces
    ``trec_eval -c`` (float32 score ties, every judged query in the means); ``order="rank"`` trusts given ranks."""
    from ..metrics.spec import DEFAULT_METRICS
    from ..render.evaluation import coverage_warnings

    names = list(DEFAULT_METRICS) if metrics is None else _metric_names(metrics)
    if not isinstance(trec_compat, bool):
        raise InputError(f"trec_compat: expected True or False, got {trec_compat!r}")
    table = evaluate_inputs(qrels, run, names, query_policy=query_policy, order=order, trec_compat=trec_compat)
    for message in coverage_warnings(table.counts):  # as `harness eval` says them: renamed ids score 0 quietly
        warnings.warn(message, stacklevel=2)
    return table


def evaluate_inputs(qrels: Any, run: Any, names: list, *, query_policy: str, order: str,
                    trec_compat: bool) -> "MetricTable":
    """THE evaluation of a run against judgments, for ``harness.evaluate`` and ``harness eval`` alike. Two TREC
    files are scored as the run is read (memory bounded by a batch of queries; ``metrics.streamed``), after a look
    at whether they are files of the kinds expected (a run given as the qrels is one line, not an error per line);
    anything else (dicts, DataFrames, a native golden set, a JSONL run, a run whose queries are not together) is
    read whole into ``Qrels`` and ``Run``."""
    from dataclasses import replace

    from ..metrics.engine import evaluate as evaluate_table
    from ..metrics.inputs import as_qrels, as_run
    from ..metrics.table import Deferred

    options = dict(query_policy=query_policy, order=order, trec_compat=trec_compat)
    paths = all(isinstance(x, (str, os.PathLike)) and Path(x).is_file() for x in (qrels, run))
    judged = ranked = None
    if paths:
        from ..io.sniff import wrong_kinds
        from ..io.runfiles import JSON_RUN
        from ..io.textfile import base_suffix
        from ..metrics.inputs import NATIVE_GOLD

        wrong = wrong_kinds(Path(qrels), Path(run))
        if wrong:
            raise InputError(wrong)
        if base_suffix(Path(qrels)) not in NATIVE_GOLD and base_suffix(Path(run)) not in JSON_RUN:
            from ..io import fast_trec
            from ..metrics.streamed import evaluate_files

            table = evaluate_files(Path(qrels), Path(run), names, **options)  # scored as read
            if table is not None:
                return table
            # declined (a run whose queries are not together, a line to locate): both read whole, in one pass
            # over their doc ids, or (no fast reader for them) each by its own reader below
            judged, ranked = fast_trec.read_qrels_and_run(Path(qrels), Path(run)) or (None, None)
    if judged is None:
        judged, ranked = as_qrels(qrels, "qrels"), as_run(run, "run", ranks=order == "rank")
    if judged.n_queries == 0:  # every mean would be None: a broken download must not pass a CI step
        if paths:
            from ..core.errors import GoldSetError

            raise GoldSetError(f"{qrels}: no judgments in the file; nothing to evaluate against")
        raise InputError("qrels: no judgments; nothing to evaluate against")
    table = evaluate_table(judged, ranked, names, **options)
    return replace(table, judgments=Deferred(_judgments_fingerprint, judged))  # (hashed when first read)


def _judgments_fingerprint(qrels: "Qrels") -> str:
    """The judgments as a set of (query, document, grade), whatever order they were given in (once per library-built
    Qrels: evaluating many runs against the same judgments hashes them once)."""
    import numpy as np

    from ..core.fingerprint import fingerprint_of_judgments
    from ..core.runtable import doc_keys, remembered
    from ..core.textcolumns import packed_keys, text_column

    def packed():  # (query keys, doc keys) when a table's reader kept the doc ids' keys (the same fingerprint)
        docs = doc_keys(qrels)
        text = None if docs is None else text_column(qrels.query_ids)
        queries = None if text is None else packed_keys(text)
        return None if queries is None else (np.repeat(queries, np.diff(qrels.offsets)), docs)

    return remembered(qrels, "fingerprint", lambda: fingerprint_of_judgments(
        np.repeat(qrels.query_ids, np.diff(qrels.offsets)), qrels.doc_ids, qrels.grades, packed()))


def fuse(runs: Sequence[Any], method: str = "rrf", *, weights: Sequence[float] | None = None,
         k: float | None = None) -> "Run":
    """Fuse runs into one: ``rrf`` (sum of ``weight / (k + rank)``, k = 60 unless given), ``minmax`` or ``zscore``
    (sum of ``weight * normalised score`` per query). The same arithmetic as the ``hybrid`` retriever; ranks are
    each run's evaluation order (score descending, ties by doc id descending, a repeated doc at its best rank)."""
    from ..retrievers.fusion import METHODS, fuse_runs
    from ..metrics.inputs import as_run, finite_number

    if isinstance(runs, Mapping) or not isinstance(runs, Sequence) or isinstance(runs, str) or len(runs) < 2:
        raise InputError(f"runs: expected a list of two or more runs, got {_describe(runs)}")
    problems = []
    if method not in METHODS:
        problems.append(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    if weights is None:
        weights = [1.0] * len(runs)
    elif getattr(weights, "ndim", None) == 1:  # a NumPy array (or a pandas Series) of weights: its numbers
        weights = list(weights.tolist())
    if isinstance(weights, (str, Mapping)) or not isinstance(weights, Sequence) or len(weights) != len(runs):
        problems.append(f"weights: expected one number per run ({len(runs)}), got {weights!r}"[:300])
    else:
        problems += [f"weights[{i}]: expected a number >= 0, got {w!r}" for i, w in enumerate(weights)
                     if not finite_number(w) or w < 0]
    if k is not None and method != "rrf":
        problems.append(f"k: only rrf takes k (the {method} fusion has none)")
    elif k is not None and (not finite_number(k) or k <= 0):
        problems.append(f"k: expected a number > 0, got {k!r}")
    if problems:
        raise InputError("fuse: invalid arguments", problems)
    columnar = [as_run(r, f"runs[{i}]") for i, r in enumerate(runs)]
    return fuse_runs(columnar, [float(w) for w in weights], method, 60.0 if k is None else float(k))
