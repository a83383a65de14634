"""What ``harness run --format json`` prints on stdout: where the outputs are and the numbers of the summary (the
same means as results.json, report.md and compare: one computation), for ``jq`` and scripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_summary(target: Path, outcome: Any) -> dict:
    """``outcome``: a Result, or a sweep's leaderboard (a dict)."""
    if isinstance(outcome, dict):  # a sweep
        return {"name": outcome["name"], "output": str(target), "leaderboard": str(target / "leaderboard.md"),
                "metric": outcome["metric"], "best": outcome["best"],
                "runs": outcome["runs"]}
    s = outcome.summary
    return {"name": outcome.name, "output": str(target), "results": str(target / "results.json"),
            "report": str(target / "report.md"),
            "summary": s.model_dump(mode="json")}
