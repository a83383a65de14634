"""The marker of an output folder, ``.harness-output``: the run that wrote the folder and every file it wrote
(``outdir`` decides what may be replaced)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

MARKER = ".harness-output"
LOCK = ".harness-lock"
STAGING = ".harness-staging-"
MARKER_FORMAT = 1


def internal(name: str) -> bool:
    """harness's own bookkeeping entries: not the user's files, not outputs."""
    return name in (MARKER, LOCK) or name.startswith(STAGING)


@dataclass(frozen=True)
class Marker:
    run: str
    files: frozenset[str]
    written_at: str
    complete: bool


def _valid_rel(rel: object) -> bool:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
        return False
    parts = rel.split("/")
    return all(p not in ("", ".", "..") for p in parts) and not internal(parts[0])


def read_marker(folder: Path) -> tuple[Marker | None, str | None]:
    """(marker, None), (None, None) when there is none, or (None, why it is not a harness marker)."""
    path = folder / MARKER
    if not os.path.lexists(path):
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{MARKER} is not a harness marker ({type(exc).__name__})"
    files = data.get("files") if isinstance(data, dict) else None
    if (not isinstance(data, dict) or data.get("harness_output") != MARKER_FORMAT
            or not isinstance(data.get("run"), str)
            or not isinstance(files, list) or not all(_valid_rel(f) for f in files)):
        return None, f"{MARKER} is not a harness marker (unexpected content)"
    return Marker(data["run"], frozenset(files), str(data.get("written_at", "?")), bool(data.get("complete"))), None


def marker_text(*, run: str, files: frozenset[str], complete: bool, written_at: str, command: str) -> str:
    data = {"harness_output": MARKER_FORMAT, "run": run, "complete": complete, "written_at": written_at,
            "command": command, "files": sorted(files),
            "note": "written by harness: it replaces only the files listed here; anything else is yours"}
    return json.dumps(data, indent=1) + "\n"
