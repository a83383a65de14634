"""``select_on``: how a sweep chooses its best point. Its golden-set keys (``split``, ``path``...) are merged over
``goldset`` to make the selection golden set; ``kfold`` and ``seed`` are not golden-set keys: they ask for a k-fold
estimate of the choice's optimism over the selection queries (``pipeline.kfold``).

Config-level logic only (it reads mappings), so the config checks, the grid and the sweep share it."""

from __future__ import annotations

from typing import Any

FOLD_KEYS = ("kfold", "seed")
DEFAULT_SEED = 0


def goldset_overrides(select_on: dict[str, Any] | None) -> dict[str, Any]:
    """The keys of ``select_on`` merged over ``goldset`` (everything but ``kfold`` and ``seed``)."""
    return {k: v for k, v in (select_on or {}).items() if k not in FOLD_KEYS}


def folds(select_on: dict[str, Any] | None) -> tuple[int, int] | None:
    """(k, seed) when ``select_on`` asks for k folds, else None."""
    if not select_on or "kfold" not in select_on:
        return None
    return int(select_on["kfold"]), int(select_on.get("seed", DEFAULT_SEED))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def fold_problems(select_on: dict[str, Any] | None) -> list[str]:
    """``kfold`` must be a whole number >= 2 (one fold leaves nothing to train on); ``seed`` a whole number >= 0,
    and only beside ``kfold``. The upper bound (the selection queries counted at the ranking metric's level) is
    checked once the golden set is read (``pipeline.prepare``)."""
    select_on = select_on or {}
    problems = []
    if "kfold" in select_on:
        k = select_on["kfold"]
        if not _whole(k):
            problems.append(f"select_on.kfold: expected a whole number of folds (2 or more), got {k!r}"[:300])
        elif k < 2:
            problems.append(f"select_on.kfold: {k} folds; give 2 or more (each fold is chosen on the other folds' "
                            f"queries, so one fold leaves none to choose on)")
    if "seed" in select_on:
        seed = select_on["seed"]
        if "kfold" not in select_on:
            problems.append("select_on.seed: only with select_on.kfold (it shuffles the queries into folds)")
        elif not _whole(seed) or seed < 0:
            problems.append(f"select_on.seed: expected a whole number >= 0, got {seed!r}"[:300])
    return problems


def too_many_folds(select_on: dict[str, Any] | None, n_queries: int, level: str) -> str | None:
    """The located line when ``kfold`` asks for more folds than there are selection queries counted at ``level``
    in every grid point (the queries the folds deal: a fold would be empty), else None."""
    chosen = folds(select_on) if not fold_problems(select_on) else None
    if chosen is None or chosen[0] <= n_queries:
        return None
    return (f"select_on.kfold: {chosen[0]} folds of {n_queries} selection queries counted at {level} level; give "
            f"at most {n_queries} (every fold needs a held-out query)")
