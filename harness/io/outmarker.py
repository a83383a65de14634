"""The marker of an output folder, ``.harness-output``: the run that wrote the folder, every file it wrote, and each
file's size and modification time as harness left it (and a small file's content hash), so that a file edited since
(notes appended to report.md) is told apart from harness's own and is not silently replaced (``outdir``). A large
file is known by size and time only: a run's hits.parquet can be gigabytes, and reading it again at every run would
cost more than the run.

A marker written before sizes and times were recorded has no ``written`` entry: its files count as unchanged, as
they always did. ``written`` was added without a new format number, so older harness versions still read the marker.
"""

from __future__ import annotations

import hashlib
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

Stamp = tuple[int, int, "str | None"]  # (size in bytes, st_mtime_ns, sha256 of a file up to HASHED_UP_TO) of a file
# A file this small also records its content's hash: a copy (cp -r, an artifact download, a checkout) gives every
# file a new modification time, and the hash tells that apart from an edit. Larger files (hits.parquet, a large
# run's results.json) are not read again for it: size and time only.
HASHED_UP_TO = 32 << 20


def internal(name: str) -> bool:
    """harness's own bookkeeping entries: not the user's files, not outputs."""
    return name in (MARKER, LOCK) or name.startswith(STAGING)


def stamp(path: Path) -> Stamp | None:
    """What the marker records of the file at ``path`` (a link is not followed); None when it is not a regular file."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns, _digest(path) if st.st_size <= HASHED_UP_TO else None


def unchanged(path: Path, recorded: Stamp) -> bool:
    """Whether the file at ``path`` is still what harness wrote: the same size, and the same modification time or,
    when the time moved (a copy), the same content."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size != recorded[0]:
        return False
    if st.st_mtime_ns == recorded[1]:
        return True
    return recorded[2] is not None and _digest(path) == recorded[2]


def _digest(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def owner(path: Path) -> "tuple[Path, Marker, str] | None":
    """The output folder whose marker lists ``path`` as a file a run wrote (the nearest such folder above it: a
    sweep's marker lists its runs' files, ``run/report.html``), that marker, and the file's name in it; None when no
    marker lists it."""
    path = Path(os.path.abspath(path))
    folder = path.parent
    while True:
        if os.path.lexists(folder / MARKER):
            marker, _ = read_marker(folder)
            rel = path.relative_to(folder).as_posix()
            if marker is not None and rel in marker.files:
                return folder, marker, rel
        if folder.parent == folder:
            return None
        folder = folder.parent


def restamp(path: Path) -> None:
    """``path``, rewritten by harness (``report -o`` into a run's folder), recorded anew in the marker of the folder
    that lists it (``owner``): the next run must not take harness's own rewrite for the user's edit. Nothing happens
    in a folder a run is writing (its lock), or when no marker lists it."""
    from .files import write_text

    found = owner(path)
    if found is None:
        return
    folder, _, rel = found
    marker_path = folder / MARKER
    if os.path.lexists(folder / LOCK) or not marker_path.is_file() or marker_path.is_symlink():
        return
    try:
        data = json.loads(marker_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return
    if not isinstance(data, dict) or rel not in (data.get("files") or ()) or not isinstance(data.get("written"), dict):
        return
    recorded = stamp(path)
    if recorded is None:
        return
    data["written"][rel] = _entry(recorded)
    try:
        write_text(marker_path, json.dumps(data, indent=1) + "\n")
    except OSError:
        return  # the output itself is written; the next run asks for --force at worst


def _entry(recorded: Stamp) -> dict:
    size, mtime_ns, digest = recorded
    return {"size": size, "mtime_ns": mtime_ns, **({"sha256": digest} if digest else {})}


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
            digest = entry.get("sha256")
            out[rel] = (values[0], values[1], digest if isinstance(digest, str) and len(digest) == 64 else None)
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
            "written": {rel: _entry(stamps[rel]) for rel in sorted(stamps)},
            "note": "written by harness: it replaces only the files listed here, and one whose size, or time and "
                    "content, differ from 'written' only with --force; anything else is yours"}
    return json.dumps(data, indent=1) + "\n"
