"""What ``harness run --format json`` prints on stdout: where the outputs are and the numbers of the summary (the
same means as results.json, report.md and compare: one computation), for ``jq`` and scripts; and the means line
``harness run`` prints on stderr in its table form."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .fmt import fixed


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


def means_line(level: str, means: Mapping[str, float | None], shown: int = 4) -> str:
    """``doc level: ndcg@10 0.4321, ...``: the first ``shown`` metrics of one level that have a mean (none when no
    query was counted there)."""
    values = ", ".join(f"{m} {fixed(v)}" for m, v in list(means.items())[:shown] if v is not None)
    return f"{level} level: {values or 'no query counted'}"
