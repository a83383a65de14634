"""Where ``harness run`` writes (--out, --name, a --set variant's own folder, the config's) and what it refuses to
keep: a run that measured nothing."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional


def measured_something(result, cfg) -> None:
    """A run whose means are over no query at a level measured nothing there: not a run to keep or to gate
    (validate refuses most such golden sets before retrieval: pipeline.measurable.nothing_counted)."""
    from ..core.errors import GoldSetError

    for level in ("doc", "chunk"):
        counts = getattr(result.summary.counts, level)
        if counts.evaluated_queries == 0:
            why = (f"every query is a golden-set error ({counts.excluded_goldset_error})"
                   if counts.excluded_goldset_error == counts.judged_queries else
                   f"no query has anything relevant at {level} level")
            raise GoldSetError(f"{cfg.goldset.path}: no query can be counted at {level} level ({why}), so the run "
                               f"measured nothing there; nothing was written")


def run_folder(cfg, config: Path, out: Optional[Path], name: Optional[str],
               overrides: List[str]) -> tuple[Path, Optional[str]]:
    """Where a run writes, and what chose it (for messages about the folder). --out wins; --name is a folder of
    its own beside the default one; a --set variant gets its own folder beside the base run's, so the base
    run's outputs are never replaced by a variant."""
    from ..config.overrides import variant_suffix

    if out:
        return out, "--out"
    base = cfg.output_dir()
    if name is not None:
        return base.parent / name, f"--name {name}"
    if overrides:
        return base.parent / f"{base.name}+{variant_suffix(overrides)}", "--set (a variant's own folder)"
    return base, (f"{config}: output:" if cfg.output else None)
