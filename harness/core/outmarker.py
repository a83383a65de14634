"""The marker of an output folder, ``.harness-output``: the run that wrote the folder, every file it wrote, and each
file's size and modification time as harness left it, so that a file edited since (notes appended to report.md) is
told apart from harness's own and is not silently replaced (``outdir``). Size and time, not a hash: a run's
hits.parquet can be gigabytes, and reading it again at every run would cost more than the run.

A marker written before sizes and times were recorded has no ``written`` entry: its files count as unchanged, as
they always did. ``written`` was added without a new format number, so older harness versions still read the marker.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

MARKER = ".harness-output"
LOCK = ".harness-lock"
STAGING = ".harness-staging-"
MARKER_FORMAT = 1

Stamp = tuple[int, int]  # (size in bytes, st_mtime_ns) of a regular file


def internal(name: str) -> bool:
    """harness's own bookkeeping entries: not the user's files, not outputs."""
    return name in (MARKER, LOCK) or name.startswith(STAGING)


def stamp(path: Path) -> Stamp | None:
    """What the marker records of the file at ``path`` (a link is not followed); None when it is not a regular file."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


@dataclass(frozen=True)
class Marker:
    run: str
    files: frozenset[str]
    written_at: str
    complete: bool
    stamps: Mapping[str, Stamp] = field(default_factory=dict)  # a file without one: unknown, counted as unchanged


def _valid_rel(rel: object) -> bool:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
        return False
    parts = rel.split("/")
    return all(p not in ("", ".", "..") for p in parts) and not internal(parts[0])


def _stamps(raw: object, files: frozenset[str]) -> dict[str, Stamp]:
    """The usable entries of ``written``; one that is malformed or names an unlisted file is unknown, not an error."""
    out: dict[str, Stamp] = {}
    for rel, entry in (raw.items() if isinstance(raw, dict) else ()):
        values = (entry.get("size"), entry.get("mtime_ns")) if isinstance(entry, dict) else ()
        if rel in files and len(values) == 2 and all(type(v) is int and v >= 0 for v in values):
            out[rel] = (values[0], values[1])
    return out


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
    listed = frozenset(files)
    return Marker(data["run"], listed, str(data.get("written_at", "?")), bool(data.get("complete")),
                  _stamps(data.get("written"), listed)), None


def marker_text(*, run: str, files: frozenset[str], stamps: Mapping[str, Stamp], complete: bool, written_at: str,
                command: str) -> str:
    data = {"harness_output": MARKER_FORMAT, "run": run, "complete": complete, "written_at": written_at,
            "command": command, "files": sorted(files),
            "written": {rel: {"size": stamps[rel][0], "mtime_ns": stamps[rel][1]} for rel in sorted(stamps)},
            "note": "written by harness: it replaces only the files listed here, and one whose size or modification "
                    "time differs from 'written' only with --force; anything else is yours"}
    return json.dumps(data, indent=1) + "\n"
