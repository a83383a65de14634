"""Sweeps: ``sweep: {key.path: [values...]}`` in a config expands into one named run per grid point; all runs
are compared against the best (by the first configured metric) with the correction applied, and a leaderboard
marks the runs statistically tied with the best. Embedding caches are content-keyed, so a grid point that does
not change chunks or the encoder reuses them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..io.files import write_text
from ..metrics.spec import split_metric
from ..stats.compare import compare_runs, window_size_note
from ..config.grid import expand  # noqa: F401  (re-exported: sweeps and their callers expand the grid here)
from ..config.schema import ExperimentConfig, relative_paths
from ..core.errors import ConfigError
from ..config.selection import folds
from .kfold import kfold_report, runner_up

if TYPE_CHECKING:
    from ..result.outcomes import Comparison
    from ..io.outdir import OutputFolder
    from ..result.model import Result
    from ..retrievers import BuildContext


def run_sweep(config: ExperimentConfig, out_dir: Path | OutputFolder, *, progress: bool = True, log=None, warn=None,
              force: bool = False, context: "BuildContext | None" = None) -> dict:
    """Every output is staged inside ``out_dir`` and moved into place when all runs are done (see ``outdir``: the
    sweep's folder owns its run subfolders; harness replaces only files it wrote). A Path is opened here."""
    from ..io.outdir import OutputFolder, open_output

    if not isinstance(out_dir, OutputFolder):
        with open_output(out_dir, run=config.name, force=force) as folder:
            return run_sweep(config, folder, progress=progress, log=log, warn=warn, context=context)
    with out_dir.publish() as stage:
        return _run_sweep(config, stage, progress=progress, log=log, warn=warn, context=context,
                          final_dir=out_dir.path)


def _run_sweep(config: ExperimentConfig, out_dir: Path, *, progress: bool, log, warn=None, context=None,
               final_dir: Path | None = None) -> dict:
    from ..executors import shared

    log = log or (lambda m: print(m, file=sys.stderr))
    warn = warn or log
    points = expand(config, on_selection=True)
    with shared([cfg for cfg, _ in points]):  # one Ray for every point that runs on it
        return _run_points(config, points, out_dir, progress=progress, log=log, warn=warn, context=context,
                           final_dir=final_dir)


def _named(warn, run: str):
    """A grid point's warnings, each naming its run (the sweep's log names the point before it runs)."""
    def named(message: str) -> None:
        kind, sep, rest = message.partition(": ")
        warn(f"{kind}: {run}: {rest}" if sep and kind in ("warning", "note") else f"{run}: {message}")

    return named


def _run_points(config: ExperimentConfig, points, out_dir: Path, *, progress: bool, log, warn, context,
                final_dir: Path | None) -> dict:
    from .assemble import prepare, run_experiment
    from ..render.outputs import write_run_files
    from ..render.sweep import leaderboard_markdown

    results = []
    loaded: dict[str, object] = {}  # corpus, chunks and gold, shared by grid points that do not change them
    for i, (cfg, params) in enumerate(points, 1):
        key = json.dumps([cfg.corpus.model_dump(mode="json"), cfg.chunking.model_dump(mode="json"),
                          cfg.goldset.model_dump(mode="json"), cfg.diagnostics.on_gold_error], sort_keys=True)
        reused = key in loaded
        if not reused:
            loaded[key] = prepare(cfg, log=lambda m: None)
        log(f"sweep {i}/{len(points)}: {cfg.name} {params}" + (" (chunks reused)" if reused else ""))
        result = run_experiment(cfg, progress=progress, log=lambda m: None, warn=_named(warn, cfg.name),
                                prepared=loaded[key], context=context)
        write_run_files(result, out_dir / cfg.name)
        results.append((cfg, params, result))
    level, primary = split_metric(config.ranking_metric())  # canonical name: `NDCG_cut_10` is stored as ndcg@10
    leaderboard, comparison, ranked = build_leaderboard(config.name, f"{level}.{primary}",
                                                        [(cfg.name, params, result) for cfg, params, result in results],
                                                        log)
    best = next(r for r in results if r[0].name == leaderboard["best"])
    if (second := runner_up(leaderboard, comparison)) is not None:
        leaderboard["runner_up"] = second
    if (chosen_folds := folds(config.select_on)) is not None:
        leaderboard["kfold"] = kfold_report([(cfg.name, params, result) for cfg, params, result in results], level,
                                            primary, *chosen_folds, config.select_on, leaderboard["best"])
        log(f"sweep: {chosen_folds[0]}-fold selection: mean held-out {level}.{primary} "
            f"{leaderboard['kfold']['mean_heldout']:.4f}, optimism gap {leaderboard['kfold']['optimism_gap']:+.4f}")
    if config.selects_elsewhere():
        leaderboard.update(_report_best_on_goldset(config, best, out_dir, level, primary, progress, log, warn,
                                                   context))
    write_text(out_dir / "leaderboard.json", json.dumps(leaderboard, indent=2))
    write_text(out_dir / "leaderboard.md", leaderboard_markdown(leaderboard))
    from ..render.html import render
    write_text(out_dir / "leaderboard.html", render(ranked, comparison=comparison, leaderboard=leaderboard)
               if comparison else render([best[2]], [best[2].chunk_text], leaderboard=leaderboard))
    from ..render.plots import write_sweep_plots
    write_sweep_plots(out_dir, leaderboard)  # the metric against each swept parameter, for slides
    # best.yaml: the best point as a runnable config on the reported golden set, its paths relative to the folder
    # it is written in (so it runs where the folder is copied), without the sweep keys.
    best_cfg = {**best[0].resolved(), "goldset": config.resolved()["goldset"], "output": None}
    for key in ("sweep", "sweep_metric", "select_on"):
        best_cfg.pop(key, None)
    _drop_idle_defaults(best_cfg, best[0])
    chosen = f" on {_describe(config.selection_goldset())}" if config.select_on is not None else ""
    write_text(out_dir / "best.yaml", f"# best run of sweep {config.name} by {level}.{primary}{chosen}\n"
               + yaml.safe_dump(relative_paths(best_cfg, final_dir or out_dir), sort_keys=False))
    return leaderboard


def _drop_idle_defaults(data: dict, config) -> None:
    """Leave out of ``data`` (a resolved config) the defaults it spells out that its settings do not read
    (``chunking.unit`` with sentences, ``cutoff.tokenizer`` with k): written, they read as given and a run of
    best.yaml warned that each has no effect. Defaults only, so the config and its hash are the same."""
    for section in ("chunking", "cutoff"):
        part = getattr(config, section)
        for key in part.idle_fields():
            if data.get(section, {}).get(key) == type(part).model_fields[key].default:
                data[section].pop(key)


def _describe(goldset) -> str:
    return f"{Path(goldset.path).name} ({goldset.format}, split {goldset.split})" if goldset.format == "beir" \
        else Path(goldset.path).name


def _report_best_on_goldset(config: ExperimentConfig, best, out_dir: Path, level: str, primary: str, progress: bool,
                            log, warn, context) -> dict:
    """``select_on``: the sweep ranked its runs on the selection golden set; the chosen configuration alone is run
    on ``goldset`` (the queries the numbers are reported on), into ``<best run>-reported/``."""
    from .assemble import run_experiment
    from ..render.outputs import write_outputs

    cfg = best[0].model_copy(update={"goldset": config.goldset, "name": f"{best[0].name}-reported"})
    log(f"sweep: best on {_describe(config.selection_goldset())} is {best[0].name}; reporting it on "
        f"{_describe(config.goldset)}")
    result = run_experiment(cfg, progress=progress, log=lambda m: None, warn=_named(warn, cfg.name), context=context)
    write_outputs(result, out_dir / cfg.name)
    return {"selected_on": _describe(config.selection_goldset()), "reported_on": _describe(config.goldset),
            "reported": {"run": cfg.name, "metric": f"{level}.{primary}",
                         "mean": result.summary.means(level).get(primary),
                         "queries": result.summary.level_counts(level).evaluated_queries}}


def build_leaderboard(name: str, metric: str, runs: list[tuple[str, dict, Result]], log=None
                      ) -> tuple[dict, Comparison | None, list[Result]]:
    """The leaderboard of ``runs`` (run name, grid parameters, result) by ``metric`` ("level.metric"): best first,
    each run's mean as its summary states it and the number of queries it is over (the counted ones), the paired
    comparison against the best, and the results in rank order."""
    level, primary = split_metric(metric)
    ranked = rank_runs(runs, level, primary, name, log or (lambda m: None))
    comparison = (compare_runs([r[2] for r in ranked], [f"{level}.{primary}"]) if len(ranked) > 1 else None)
    rows_by_run = {row.run: row for row in (comparison.rows if comparison else [])}
    board = []
    for run_name, params, result in ranked:
        row = rows_by_run.get(run_name)
        board.append({"run": run_name, "params": params, "metric": f"{level}.{primary}",
                      "mean": result.summary.means(level)[primary],
                      "queries": result.summary.level_counts(level).evaluated_queries,
                      "delta_vs_best": row.delta if row else 0.0,
                      "p_corrected": row.p_corrected if row else None,
                      "tied_with_best": (row is None) or not row.significant,
                      # what each run's window holds: bigger windows win recall trivially (compare notes it)
                      "mean_window_chars": result.cutoff.mean_window_chars,
                      "mean_window_tokens": result.cutoff.mean_window_tokens})
    leaderboard = {"name": name, "metric": f"{level}.{primary}", "correction": "holm",
                   "test": "randomization", "best": ranked[0][0], "runs": board}
    if level == "chunk":  # ranking chunkers at k: say when the winner may just hold more text
        notes = [note for r in ranked[1:] if (note := window_size_note(ranked[0][2], r[2]))]
        if notes:
            leaderboard["notes"] = notes
            for note in notes:
                (log or (lambda m: None))(f"note: {note}")
    return leaderboard, comparison, [r[2] for r in ranked]


def rank_runs(results: list, level: str, metric: str, name: str, log) -> list:
    """Best first by the run's mean of ``level.metric``; ties keep grid order. A run without a value (no query
    with relevant gold at that level) ranks last with a warning; if no run has one there is nothing to rank."""
    def mean(r):
        return r[2].summary.means(level).get(metric)

    def label(r):
        return r[0] if isinstance(r[0], str) else r[0].name

    missing = [label(r) for r in results if mean(r) is None]
    if len(missing) == len(results):
        raise ConfigError(f"sweep {name}: cannot rank the runs by {level}.{metric} (metrics.0): no run has a value "
                          f"for it, because no query has relevant gold at {level} level; check the golden set or "
                          f"put another metric first")
    if missing:
        log(f"warning: {len(missing)} run(s) have no {level}.{metric} (no query with relevant gold); ranked last: "
            + ", ".join(missing))
    return sorted(results, key=lambda r: (mean(r) is None, -(mean(r) or 0.0)))
