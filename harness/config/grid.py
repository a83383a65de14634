"""Sweep grids: ``sweep: {key.path: [values...]}`` expands into one named, validated config per grid point.

Config-level logic (it reads and writes config mappings only), so both the checks before a run and the sweep
runner use it without importing each other."""

from __future__ import annotations

import copy
import itertools
import re

from ..core.errors import ConfigError
from ..metrics.spec import default_metrics
from .schema import ExperimentConfig, parse_config
from .selection import goldset_overrides


def _set(data: dict, path: str, value) -> None:
    node = data
    parts = path.split(".")
    for i, part in enumerate(parts[:-1]):
        try:
            node = node[int(part) if isinstance(node, list) else part]
        except (KeyError, IndexError, TypeError, ValueError):
            raise ConfigError(f"sweep.{path}: '{'.'.join(parts[:i + 1])}' does not exist in the config") from None
    last = parts[-1]
    if isinstance(node, list):
        if not (last.isdigit() and int(last) < len(node)):
            raise ConfigError(f"sweep.{path}: '{path}' does not exist in the config (a list of {len(node)})")
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"sweep.{path}: cannot set a key inside a {type(node).__name__}")


def _label(value) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", str(value)).strip("-") or "x"


def expand(config: ExperimentConfig, *, on_selection: bool = False) -> list[tuple[ExperimentConfig, dict]]:
    """One config per grid point; ``on_selection``: each on the ``select_on`` golden set instead of ``goldset``."""
    base = config.resolved()
    grid = base.pop("sweep") or {}
    base.pop("sweep_metric", None)
    select_on = base.pop("select_on", None)
    if on_selection and select_on is not None:
        base["goldset"] = {**base["goldset"], **goldset_overrides(select_on)}
    if "metrics" not in config.model_fields_set and isinstance(grid.get("depth"), list):
        depths = [d for d in grid["depth"] if isinstance(d, int) and not isinstance(d, bool) and d >= 1]
        if depths:  # the defaults follow the depth, and every point scores the same ones: at the smallest depth
            base["metrics"] = list(default_metrics(min(depths)))
    keys = list(grid)
    problems = []
    for k in keys:
        if not isinstance(grid[k], list) or not grid[k]:
            raise ConfigError(f"sweep.{k}: expected a non-empty list of values")
        problems += _repeated_values(k, grid[k])
    # One key inside another (`chunking` and `chunking.size`): the later would silently replace or undo the other
    problems += [f"sweep.{inner}: inside sweep.{outer}, which replaces it whole; sweep one of them"
                 for outer in keys for inner in keys if inner.startswith(outer + ".")]
    if problems:
        raise ConfigError("sweep: the grid can be read more than one way", problems)
    out, named, invalid = [], {}, []
    for values in itertools.product(*(grid[k] for k in keys)):
        data = copy.deepcopy(base)
        for k, v in zip(keys, values):
            _set(data, k, v)
        params = dict(zip(keys, values))
        data["name"] = config.name + "-" + "-".join(f"{k.split('.')[-1]}_{_label(v)}" for k, v in params.items())
        data["output"] = None
        if data["name"] in named:  # one run folder and one leaderboard name for two points: never guessed
            raise ConfigError(f"sweep: the points {named[data['name']]} and {params} are both named "
                              f"{data['name']!r} (a run's name keeps letters, digits and _ . - of each value), so "
                              f"they would write one folder; give values that differ in those characters")
        named[data["name"]] = params
        try:
            out.append((parse_config(data, f"sweep point {params}"), params))
        except ConfigError as exc:  # every invalid point is named, not only the first
            invalid.append(exc)
    if len(invalid) == 1:
        raise invalid[0]
    if invalid:
        # A problem every point has (a typo'd key) is said once, not once a point.
        shared = [p for p in invalid[0].problems if all(p in exc.problems for exc in invalid)]
        if len(invalid) == len(out) + len(invalid) and shared:
            raise ConfigError(f"sweep: every one of the {len(invalid)} grid points is invalid", shared + [
                line for exc in invalid for line in ([str(exc).split("\n", 1)[0]] if set(exc.problems) - set(shared)
                                                     else []) + [f"  {p}" for p in exc.problems if p not in shared]])
        raise ConfigError(f"sweep: {len(invalid)} invalid grid points", [
            line for exc in invalid for line in [str(exc).split("\n", 1)[0]] + [f"  {p}" for p in exc.problems]])
    return out


def _repeated_values(key: str, values: list) -> list[str]:
    """Values of one sweep key that are the same point twice (``1.2`` and ``1.2``, or ``1.2`` and ``"1.2"`` once
    YAML has typed them): two runs of one configuration, one of them overwriting the other."""
    seen: dict[str, int] = {}
    problems = []
    for i, value in enumerate(values):
        text = str(value)
        if text in seen:
            problems.append(f"sweep.{key}.{i}: {value!r} repeats sweep.{key}.{seen[text]} "
                            f"({values[seen[text]]!r}); give each value once")
        else:
            seen[text] = i
    return problems
