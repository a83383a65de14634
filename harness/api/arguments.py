"""What every API function does with its arguments: a wrong one is a HarnessError naming it and what was
expected, never an AttributeError from deep inside."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..core.errors import InputError


def _metric_names(metrics: Any, name: str = "metrics") -> list:
    from ..metrics.spec import MetricSpec

    if isinstance(metrics, (str, MetricSpec)):
        return [metrics]  # one name, not its characters
    if isinstance(metrics, Iterable) and not isinstance(metrics, Mapping):
        names = list(metrics)
        bad = [m for m in names if not isinstance(m, (str, MetricSpec))]
        if not bad and names:
            return names
        if bad:
            raise InputError(f"{name}: expected metric names like 'ndcg@10', got {bad[0]!r}")
    raise InputError(f"{name}: expected a metric name like 'ndcg@10' or a non-empty list of them, "
                     f"got {metrics!r}"[:300])


def _describe(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__
