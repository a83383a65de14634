"""Output folders that never lose a user's data.

Rules (README, "What a run writes"):
- harness replaces only files it wrote itself. A folder it wrote holds a marker, ``.harness-output``, naming the
  run and listing every file the run wrote. Any other file in the folder is the user's and is never deleted or
  overwritten, not even with ``force``.
- A missing or empty folder is fine. A non-empty folder without a marker, or one holding another run's outputs,
  is refused unless ``force`` (then harness writes its files beside the others). A path that is a file is refused.
- Nothing is written outside the folder: files are staged in ``DIR/.harness-staging-PID-*/`` and moved into place
  one rename each, when the run is complete. Files the previous run wrote and this one does not are removed.
- One run per folder at a time: ``DIR/.harness-lock`` is held with ``flock`` (the kernel releases it when the
  process dies, however it dies) and names the holder. Staging folders of dead runs are removed by the next run.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterator

from .files import sync_dir, write_text
from .errors import InputError
from .interrupt import deferred, raise_if_received

MARKER = ".harness-output"
LOCK = ".harness-lock"
STAGING = ".harness-staging-"
MARKER_FORMAT = 1


def _internal(name: str) -> bool:
    """harness's own bookkeeping entries: not the user's files, not outputs."""
    return name in (MARKER, LOCK) or name.startswith(STAGING)


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _command() -> str:
    argv = list(sys.argv) or ["python"]
    head = "harness" if argv[0].replace("\\", "/").endswith(("harness/cli.py", "/harness")) else Path(argv[0]).name
    return shlex.join([head, *argv[1:]])


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
    return all(p not in ("", ".", "..") for p in parts) and not _internal(parts[0])


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


def _describe_holder(raw: bytes) -> str:
    try:
        info = json.loads(raw.decode("utf-8"))
        where = "" if info.get("host") in (None, socket.gethostname()) else f" on {info['host']}"
        return f"pid {info['pid']}{where}, `{info['command']}`, since {info['since']}"
    except (ValueError, KeyError, TypeError, AttributeError):
        return "its details are not written yet"


def _lock(folder: Path, where: str) -> int:
    """Hold ``folder/.harness-lock``; the returned descriptor keeps it. Refuse, naming the holder, if held."""
    path = folder / LOCK
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise InputError(f"{where}: cannot lock the folder: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raw = os.pread(fd, 4096, 0)
            os.close(fd)
            raise InputError(f"{where}: in use by another harness run ({_describe_holder(raw)}); wait for it to "
                             f"finish or choose another folder") from None
        except OSError as exc:  # a filesystem without locks: refusing beats two runs mixing their files
            os.close(fd)
            raise InputError(f"{where}: cannot lock the folder: {exc.strerror}") from None
        # The previous holder unlinks the file on release: if it did so after our open, we hold a lock on a file
        # nobody else sees, so open the path again.
        try:
            current = os.stat(path)
            mine = os.fstat(fd)
            same = (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)
        except FileNotFoundError:
            same = False
        if same:
            info = {"pid": os.getpid(), "command": _command(), "since": _now(), "host": socket.gethostname()}
            os.ftruncate(fd, 0)  # a dead holder's details are stale
            os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
            return fd
        os.close(fd)
    raise InputError(f"{where}: cannot lock the folder: other runs keep taking it; try again")


def _unlock(folder: Path, fd: int) -> None:
    # Unlink before closing: a run that opened the old file meanwhile sees it vanish and opens the path again.
    try:
        (folder / LOCK).unlink(missing_ok=True)
    finally:
        os.close(fd)


def _remove_stale_staging(folder: Path) -> None:
    """Only the lock holder stages, so while we hold the lock every other staging folder is a dead run's."""
    for entry in folder.iterdir():
        if entry.name.startswith(STAGING):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _make_folder(path: Path, where: str) -> list[Path]:
    """Create ``path`` and missing parents; return the folders created here, deepest first."""
    if os.path.lexists(path) and not path.is_dir():
        kind = "a broken link" if path.is_symlink() and not path.exists() else "a file"
        raise InputError(f"{where}: is {kind}, not a folder; give a folder for the outputs")
    missing = []
    node = path
    while not os.path.lexists(node) and node != node.parent:
        missing.append(node)
        node = node.parent
    if missing and not node.is_dir():
        raise InputError(f"{where}: cannot create the folder: {node} is a file")
    created = []
    for folder in reversed(missing):
        try:
            folder.mkdir()
            created.append(folder)
        except FileExistsError:  # another run created it meanwhile: theirs, not ours to remove
            if not folder.is_dir():
                raise InputError(f"{where}: cannot create the folder: {folder} is a file") from None
        except OSError as exc:
            for made in reversed(created):
                _rmdir_quietly(made)
            raise InputError(f"{where}: cannot create the folder: {exc.strerror}") from None
    return created[::-1]


def _rmdir_quietly(folder: Path) -> bool:
    try:
        folder.rmdir()
        return True
    except OSError:  # not empty (a file someone put there) or gone: leave it
        return False


def _walk(root: Path) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        out += [(rel_dir / name).as_posix() for name in files]
        out += [(rel_dir / name).as_posix() for name in dirs if (Path(dirpath) / name).is_symlink()]
    return sorted(out)


class OutputFolder:
    """An output folder opened for one run by ``open_output``: locked, checked, and the files its previous run
    wrote known. ``publish()`` stages a complete set of outputs and moves them in."""

    def __init__(self, path: Path, run: str, where: str, previous: frozenset[str]):
        self.path = path
        self.run = run
        self.where = where
        self._previous = previous

    @contextmanager
    def publish(self) -> Iterator[Path]:
        """Yield an empty staging folder to write every output into. When the block ends normally, the staged
        files replace the previous run's (files it wrote that this run does not are removed) and the marker is
        rewritten; when it raises, nothing in the output folder has changed. The staging folder is removed."""
        stage: Path | None = None
        try:
            with deferred():  # a signal held here is raised inside the try, so the staging folder is removed
                stage = Path(tempfile.mkdtemp(dir=self.path, prefix=f"{STAGING}{os.getpid()}-"))
            files = stage / "files"
            files.mkdir()
            yield files
            raise_if_received()  # a signal whose exception a library swallowed still stops the run before it publishes
            with deferred():  # a few renames: an interruption waits for them, so no mix of two runs is left
                self._commit(stage, files)
        finally:
            if stage is not None:
                with deferred():
                    shutil.rmtree(stage, ignore_errors=True)

    def _commit(self, stage: Path, files: Path) -> None:
        new = _walk(files)
        problems = self._blockers(new)
        if problems:
            raise InputError(f"{self.where}: harness would overwrite what it did not write; move these away or "
                             f"choose another folder", problems)
        new_set = frozenset(new)
        # Until the last step the marker lists both runs' files, so an interruption nothing can stop (power loss,
        # SIGKILL) still leaves every file harness wrote listed as its own, for the next run to replace.
        self._write_marker(stage, self._previous | new_set, complete=False)
        for rel in new:
            dest = self.path / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(files / rel, dest)
        for rel in sorted(self._previous - new_set):
            self._remove_own(rel)
        self._write_marker(stage, new_set, complete=True)
        sync_dir(self.path)
        self._previous = new_set

    def _blockers(self, new: list[str]) -> list[str]:
        """Every place where writing ``new`` would overwrite something harness did not write, or leave the folder
        through a link. One line each."""
        problems: dict[str, None] = {}
        for rel in new:
            parts = rel.split("/")
            node = self.path
            for i, part in enumerate(parts):
                node = node / part
                sub = "/".join(parts[:i + 1])
                if not os.path.lexists(node):
                    break
                if i < len(parts) - 1:
                    if node.is_symlink():
                        problems[f"{sub}: is a link; harness writes {rel} only inside the output folder"] = None
                    elif not node.is_dir():
                        problems[f"{sub}: is a file; harness writes {rel} there"] = None
                    continue
                if node.is_symlink() or not node.is_file():
                    problems[f"{sub}: is a {'link' if node.is_symlink() else 'folder'}; harness writes a file "
                             f"there"] = None
                elif rel not in self._previous:
                    problems[f"{sub}: exists and harness did not write it"] = None
        return list(problems)

    def _remove_own(self, rel: str) -> None:
        """Remove a file the previous run wrote, then the folders it leaves empty; never follow a link."""
        parts = rel.split("/")
        node = self.path
        for part in parts[:-1]:
            node = node / part
            if node.is_symlink() or not node.is_dir():
                return
        target = node / parts[-1]
        if target.is_symlink() or not target.is_file():
            return  # the user put something else there: theirs
        target.unlink()
        folder = target.parent
        while folder != self.path and _rmdir_quietly(folder):
            folder = folder.parent

    def _write_marker(self, stage: Path, files: frozenset[str], *, complete: bool) -> None:
        data = {"harness_output": MARKER_FORMAT, "run": self.run, "complete": complete, "written_at": _now(),
                "command": _command(), "files": sorted(files),
                "note": "written by harness: it replaces only the files listed here; anything else is yours"}
        tmp = stage / "marker.json"  # staged inside the folder, so nothing is ever written beside it
        write_text(tmp, json.dumps(data, indent=1) + "\n")
        os.replace(tmp, self.path / MARKER)


def _check_owner(path: Path, run: str, force: bool, where: str) -> frozenset[str]:
    """The files the previous run wrote here (which this run may replace or remove); refuse a folder that is not
    ours unless ``force``."""
    marker, problem = read_marker(path)
    if marker is not None:
        if marker.run != run and not force:
            raise InputError(f"{where}: holds the outputs of run '{marker.run}' (written {marker.written_at}), not "
                             f"'{run}'; pass --force to replace them (files harness did not write are kept), or "
                             f"choose another folder")
        return marker.files
    others = sorted(e.name for e in path.iterdir() if not _internal(e.name))
    if (others or problem) and not force:
        what = problem or f"no {MARKER}"
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise InputError(f"{where}: not empty ({shown or MARKER}) and not written by harness ({what}); choose a new "
                         f"or empty folder, or pass --force to write harness's files beside these (files harness "
                         f"did not write are never deleted or overwritten)")
    return frozenset()


@contextmanager
def open_output(path: Path, *, run: str, force: bool = False, origin: str | None = None) -> Iterator[OutputFolder]:
    """Open ``path`` as the output folder of run ``run``: create it if missing, lock it, remove dead runs' staging,
    and check that harness may write there. On exit the lock is released and a folder created here that is still
    empty (the run failed or was interrupted) is removed. ``origin`` names where the path came from in messages
    (``--out``, ``cfg.yaml: output``)."""
    where = f"{origin} {path}" if origin else str(path)
    created: list[Path] = []
    fd: int | None = None
    try:
        with deferred():  # a signal held here is raised inside the try, so the cleanup below runs
            created = _make_folder(path, where)
            fd = _lock(path, where)
        _remove_stale_staging(path)
        yield OutputFolder(path, run, where, _check_owner(path, run, force, where))
    finally:
        with deferred():
            try:
                if fd is not None:
                    try:
                        _remove_stale_staging(path)
                    finally:
                        _unlock(path, fd)
            finally:
                for folder in created:
                    if not _rmdir_quietly(folder):
                        break
