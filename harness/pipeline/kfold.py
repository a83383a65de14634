"""How honest a sweep's choice is: ``select_on: {kfold: k}`` deals the selection queries into k folds; for each
fold the point with the best mean on the other folds' queries (its training part) is chosen and scored on the
held-out fold. The optimism gap is the chosen points' mean training score minus their mean held-out score: what
choosing the best of many points on the queries that score it adds to the number.

Every point's per-query values are already in its result (a query's score does not depend on which other queries
are evaluated), so the folds cost no retrieval. Means are ``mean_of`` over the counted queries, as everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..config.selection import fold_problems, folds, too_many_folds
from ..core.errors import ConfigError
from ..metrics.spec import split_metric
from ..metrics.table import mean_of
from .measurable import counted_before_retrieval

if TYPE_CHECKING:
    from ..config.schema import ExperimentConfig
    from ..result.model import Result
    from ..result.outcomes import Comparison

ASSIGNMENT = ("the selection queries counted in every run, sorted by id, shuffled with "
              "numpy.random.default_rng(seed).permutation and dealt in turn into the k folds")


def assign_folds(query_ids: Sequence[str], k: int, seed: int) -> np.ndarray:
    """Each query's fold (0..k-1), in the order of ``query_ids``: the ids sorted (so the golden set's order does
    not matter), shuffled by ``seed``, and dealt in turn, so fold sizes differ by at most one."""
    ids = list(query_ids)
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    fold = np.empty(len(ids), dtype=np.int64)
    for position, i in enumerate(np.random.default_rng(seed).permutation(len(ids)).tolist()):
        fold[order[i]] = position % k
    return fold


def _counted_everywhere(runs: Sequence[tuple[str, dict, Result]], level: str) -> list[str]:
    """The query ids every run counts at ``level``, in the first run's order."""
    counted = [{q.id for q in result.queries if q.is_counted(level)} for _, _, result in runs]
    common = set.intersection(*counted) if counted else set()
    return [q.id for q in runs[0][2].queries if q.id in common]


def kfold_report(runs: Sequence[tuple[str, dict, Result]], level: str, metric: str, k: int, seed: int,
                 select_on: dict, final: str) -> dict:
    """The k-fold estimate of choosing among ``runs`` (run name, grid parameters, result on the selection golden
    set, in grid order) by ``level.metric``: per fold the chosen point and its training and held-out means, their
    means over the folds and the optimism gap. Ties are broken by grid order, as the leaderboard breaks them."""
    ids = _counted_everywhere(runs, level)
    if (line := too_many_folds(select_on, len(ids), level)) is not None:
        raise ConfigError(line)  # (check_before_retrieval said it before any run; this guards other callers)
    values = []
    for _, _, result in runs:
        by_id = {q.id: q.value(level, metric) for q in result.queries if q.is_counted(level)}
        values.append(np.array([by_id[q] for q in ids], dtype=np.float64))
    fold = assign_folds(ids, k, seed)
    folds = []
    for f in range(k):
        held, train = fold == f, fold != f
        train_means = [mean_of(v[train]) for v in values]
        chosen = int(np.argmax(train_means))  # the first of equal means: grid order
        folds.append({"fold": f + 1, "train_queries": int(train.sum()), "heldout_queries": int(held.sum()),
                      "chosen": runs[chosen][0], "params": runs[chosen][1], "train_mean": train_means[chosen],
                      "heldout_mean": mean_of(values[chosen][held])})
    mean_train = mean_of([f["train_mean"] for f in folds])
    mean_heldout = mean_of([f["heldout_mean"] for f in folds])
    return {"k": k, "seed": seed, "metric": f"{level}.{metric}", "queries": len(ids), "assignment": ASSIGNMENT,
            "folds": folds, "mean_train": mean_train, "mean_heldout": mean_heldout,
            "optimism_gap": mean_train - mean_heldout, "final": final}


def runner_up(leaderboard: dict, comparison: Comparison | None) -> dict | None:
    """The winner against the second-best point: the paired test's row from the leaderboard's comparison (every
    point against the best, Holm-corrected over those comparisons). None with fewer than two runs."""
    if comparison is None or len(leaderboard["runs"]) < 2:
        return None
    second = leaderboard["runs"][1]
    row = next(r for r in comparison.rows if r.run == second["run"] and r.metric == leaderboard["metric"])
    return {"winner": leaderboard["best"], "run": second["run"], "params": second["params"],
            "metric": leaderboard["metric"], "n": row.n, "winner_mean": row.baseline_mean, "mean": row.mean,
            "delta_vs_winner": row.delta, "p": row.p, "p_corrected": row.p_corrected,
            "correction": leaderboard["correction"], "test": leaderboard["test"], "significant": row.significant}


def folds_beyond_counted(config: ExperimentConfig, points: Sequence[tuple[str, object | None, str]]) -> str | None:
    """``select_on.kfold`` above the number of selection queries the folds would deal: those counted at the
    ranking metric's level in every grid point, known before retrieval. ``points``: per selection grid point, the
    key of its inputs, its loaded inputs (``prepare``'s: gold, chunks, problems; None when they did not load) and
    its query policy. None when there is no kfold, or a point's inputs did not load (their problem is said
    instead)."""
    if folds(config.select_on) is None or fold_problems(config.select_on):
        return None
    level = split_metric(config.ranking_metric())[0]
    counted, seen = None, set()
    for key, loaded, policy in points:
        if loaded is None:
            return None
        if (key, policy) in seen:
            continue
        seen.add((key, policy))
        ids = counted_before_retrieval(loaded.gold, loaded.chunks, loaded.problems, policy, level)
        counted = ids if counted is None else counted & ids
    if not counted:  # nothing counted at all: its own problem, said by the run (``measured_something``)
        return None
    return too_many_folds(config.select_on, len(counted), level)
