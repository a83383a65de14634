"""Where ``harness run`` writes: --out, --name, a --set variant's own folder, or the config's."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional


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
