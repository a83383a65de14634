"""Runs: a config loaded, checked, retrieved, assembled and written: the one orchestration ``harness.run`` and
``harness run`` share."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..core.errors import ConfigError, InputError
from .arguments import _describe

if TYPE_CHECKING:
    from ..config.schema import ExperimentConfig
    from ..result.model import Result


def load_config(path: str | os.PathLike) -> "ExperimentConfig":
    """Read and validate an experiment YAML (paths in it are relative to the file); every problem in one error."""
    from ..config.schema import load_config as load

    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"load_config: expected the path of an experiment YAML, got {type(path).__name__}")
    return load(Path(path))


def _as_config(config: Any, overrides: list[str]) -> tuple["ExperimentConfig", str]:
    from ..config.schema import ExperimentConfig, parse_config

    if overrides and not isinstance(config, (str, os.PathLike)):
        raise ConfigError("overrides: --set style settings apply to a config file; change a loaded config with "
                          "config.model_copy(update=...) or the mapping's keys")
    if isinstance(config, ExperimentConfig):
        return config, config.name
    if isinstance(config, (str, os.PathLike)):
        from ..config.schema import load_config as load

        return load(Path(config), overrides), str(config)
    if isinstance(config, Mapping):  # paths in it are relative to the working folder
        return parse_config(dict(config), "config"), "config"
    raise ConfigError(f"config: expected the path of an experiment YAML, a loaded config (harness.load_config) or "
                      f"a mapping of its keys; got {type(config).__name__}")


def run(config: Any, *, out: str | os.PathLike | None = None, force: bool = False, progress: bool = False,
        log: Callable[[str], None] | None = None, overrides: Sequence[str] = (), name: str | None = None,
        cache_dir: str | os.PathLike | None = None) -> "Result":
    """Run one experiment: the same checks and code as ``harness run``, returning its Result.

    ``config``: a path, a loaded config or a mapping. ``out``: also write results.json, the run files and the
    reports into that folder (a folder harness owns; ``force`` as ``--force``). ``overrides``: ``key=value``
    settings as ``--set`` takes them (recorded in the result); ``name``: the run's name, as ``--name``;
    ``cache_dir``: the embedding cache, as ``--cache-dir``. Golden-set problems that the run flags are Python
    warnings; ``log`` receives the progress lines the CLI prints on stderr."""
    problems = [f"{key}: expected True or False, got {value!r}"[:300]
                for key, value in (("force", force), ("progress", progress)) if not isinstance(value, bool)]
    for key, value in (("out", out), ("cache_dir", cache_dir)):
        if value is not None and not isinstance(value, (str, os.PathLike)) or isinstance(value, str) and not value.strip():
            problems.append(f"{key}: expected a folder path (str or Path), got {value!r}"[:300])
    if log is not None and not callable(log):
        problems.append(f"log: expected a function taking one line of text, got {_describe(log)}")
    if isinstance(overrides, str) or not all(isinstance(o, str) for o in overrides):
        problems.append(f"overrides: expected a list of 'key=value' strings, got {overrides!r}"[:300])
    if problems:
        raise InputError("run: invalid arguments", problems)
    if out is not None:
        from ..render.plots import charts_off

        charts_off()  # a HARNESS_CHARTS that is neither on nor off: said before the run, not after it
    cfg, source = _as_config(config, list(overrides))
    if name is not None:
        cfg = named(cfg, name)
    if cfg.sweep:
        raise ConfigError(f"{source}: sweep: harness.run runs one experiment; run the sweep with "
                          f"`harness run {source}` (it writes the leaderboard)")

    def warn(message: str) -> None:  # a run's warnings (skipped hits, failed requests...) as Python warnings
        warnings.warn(message.removeprefix("warning: "), stacklevel=4)

    return run_config(cfg, source=source, out=None if out is None else Path(out), origin="out=", force=force,
                      progress=progress, log=log or (lambda message: None), warn=warn,
                      cache_dir=None if cache_dir is None else Path(cache_dir), overrides=list(overrides))


def named(cfg: "ExperimentConfig", name: str) -> "ExperimentConfig":
    """The config under another run name (``--name``), checked as a name that is also a folder."""
    from ..config.overrides import check_run_name

    check_run_name(name)
    return cfg.model_copy(update={"name": name})


def run_config(cfg: "ExperimentConfig", *, source: str, out: Path | None, origin: str | None = None,
               force: bool = False, progress: bool, log: Callable[[str], None], warn: Callable[[str], None],
               cache_dir: Path | None = None, overrides: Sequence[str] = ()) -> "Result | dict":
    """THE orchestration of a run, for ``harness.run`` and ``harness run`` alike: every check before retrieval
    (``validate``'s), the output folder opened and locked before the work (a folder harness may not write is
    refused before any encoding), retrieval and assembly, the refusal of a run that measured nothing, the overrides
    recorded, the outputs written. A sweep (the CLI's) writes every point and returns the leaderboard."""
    from ..pipeline.assemble import check_before_retrieval, run_experiment
    from ..pipeline.measurable import measured_something
    from ..retrievers import BuildContext

    checked = check_before_retrieval(cfg, source=source, log=log, cache_dir=cache_dir)
    for warning in checked.warnings:
        warn(f"warning: {warning}")
    context = BuildContext(progress=progress, **({"cache_dir": cache_dir} if cache_dir else {}))

    def one_run() -> "Result":
        result = run_experiment(cfg, progress=progress, log=log, warn=warn, prepared=checked.prepared,
                                context=context)
        measured_something(result, cfg)
        return result.model_copy(update={"overrides": list(overrides)}) if overrides else result

    if out is None:
        return one_run()
    from ..io.outdir import open_output
    from ..render.outputs import write_outputs

    with open_output(out, run=cfg.name, force=force, origin=origin) as folder:
        if cfg.sweep:
            from ..pipeline.sweep import run_sweep

            checked = None  # each point prepares its own corpus and golden set
            return run_sweep(cfg, folder, progress=progress, log=log, warn=warn, context=context)
        result = one_run()
        checked = None  # the corpus and the golden set as loaded: the result has what the outputs need
        write_outputs(result, folder)
    return result
