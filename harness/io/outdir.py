"""Output folders that never lose a user's data.

Rules (docs/formats.md, "What a run writes"):
- harness replaces only files it wrote itself. A folder it wrote holds a marker, ``.harness-output``, naming the
  run and listing every file the run wrote. Any other file in the folder is the user's and is never deleted or
  overwritten, not even with ``force``.
- A missing or empty folder is fine. A non-empty folder without a marker, or one holding another run's outputs,
  is refused unless ``force`` (then harness writes its files beside the others). A path that is a file is refused.
- A file harness wrote and someone changed since (its size or modification time differs from the marker's) is
  neither replaced nor removed unless ``force``.
- Nothing is written outside the folder: files are staged in ``DIR/.harness-staging-PID-*/`` and published when the
  run is complete, all or nothing: the previous run's files are moved aside into the staging folder, the new ones
  moved in, the marker rewritten; a step that fails undoes the ones before it. Files the previous run wrote and this
  one does not are removed.
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
from datetime import datetime
from pathlib import Path
from typing import Iterator

from .files import make_folders, sync_dir, write_text
from ..core.errors import InputError
from ..core.interrupt import deferred, publishing, raise_if_received
from .outmarker import (LOCK, MARKER, STAGING, Marker, Stamp, internal as _internal, marker_text, read_marker, stamp,
                        unchanged)


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _command() -> str:
    argv = list(sys.argv) or ["python"]
    head = "harness" if argv[0].replace("\\", "/").endswith(("harness/cli/main.py", "/harness")) else Path(argv[0]).name
    return shlex.join([head, *argv[1:]])


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
    """Create ``path`` and missing parents (``files.make_folders``); return the folders created here, deepest first."""
    if os.path.lexists(path) and not path.is_dir():
        kind = "a broken link" if path.is_symlink() and not path.exists() else "a file"
        raise InputError(f"{where}: is {kind}, not a folder; give a folder for the outputs")
    node = path
    while not os.path.lexists(node) and node != node.parent:
        node = node.parent
    if node != path and not node.is_dir():
        raise InputError(f"{where}: cannot create the folder: {node} is a file")
    try:
        return make_folders(path)
    except FileExistsError as exc:  # a file another program put there meanwhile
        raise InputError(f"{where}: cannot create the folder: {exc.filename} is a file") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot create the folder: {exc.strerror}") from None


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

    def __init__(self, path: Path, run: str, where: str, previous: frozenset[str],
                 stamps: dict[str, Stamp] | None = None, force: bool = False):
        self.path = path
        self.run = run
        self.where = where
        self._previous = previous
        self._stamps = dict(stamps or {})  # size and mtime of the previous run's files as it left them
        self._force = force

    @contextmanager
    def publish(self) -> Iterator[Path]:
        """Yield an empty staging folder to write every output into. When the block ends normally, the staged
        files replace the previous run's (files it wrote that this run does not are removed) and the marker is
        rewritten, all or nothing; when it raises, nothing in the output folder has changed. The staging folder is
        removed."""
        stage: Path | None = None
        try:
            with deferred():  # a signal held here is raised inside the try, so the staging folder is removed
                stage = Path(tempfile.mkdtemp(dir=self.path, prefix=f"{STAGING}{os.getpid()}-"))
            files = stage / "files"
            files.mkdir()
            yield files
            raise_if_received()  # a signal whose exception a library swallowed still stops the run before it publishes
            new = _walk(files)
            # What the marker records of each new file (a small one's hash read here, before signals are held; a
            # rename keeps size, time and content)
            stamps = {rel: st for rel in new if (st := stamp(files / rel)) is not None}
            # Renames and their undoing: an interruption waits for them, so no mix of two runs is left; once they are
            # done the run's result is out, and a signal no longer stops it (interrupt.publishing)
            with publishing():
                self._commit(stage, files, new, stamps)
        finally:
            if stage is not None:
                with deferred():
                    shutil.rmtree(stage, ignore_errors=True)  # the previous run's files moved aside go with it

    def _commit(self, stage: Path, files: Path, new: list[str], stamps: dict[str, Stamp]) -> None:
        self.refuse_overwrites(new)
        new_set = frozenset(new)
        aside = stage / "previous"
        undo: list[tuple[str, Path, Path]] = []  # renames done (file, from, to), undone last first
        made: list[Path] = []  # folders created in the output folder for the new files
        old_marker = stage / "previous-marker"
        doing = f"write {MARKER}"
        try:
            if os.path.lexists(self.path / MARKER):  # a copy, so a marker is in place at every moment
                shutil.copy2(self.path / MARKER, old_marker, follow_symlinks=False)
            # Until the last step the marker lists both runs' files, so an interruption nothing can stop (power loss,
            # SIGKILL) still leaves every file harness wrote listed as its own, for the next run to replace.
            self._write_marker(stage, self._previous | new_set, {}, complete=False)
            for rel in sorted(self._previous):
                if self._own_file(rel) is not None:
                    doing = f"move the previous {rel} aside"
                    (aside / rel).parent.mkdir(parents=True, exist_ok=True)
                    _rename(rel, self.path / rel, aside / rel, undo)
            for rel in new:
                doing = f"move {rel} into place"
                _make_parents(self.path, rel, made)
                _rename(rel, files / rel, self.path / rel, undo)
            doing = f"write {MARKER}"
            self._write_marker(stage, new_set, stamps, complete=True)
        except BaseException as exc:  # an OSError mostly; anything else is undone as well, then raised as it was
            stuck = self._undo(undo, made, old_marker)
            if not isinstance(exc, OSError):
                raise
            reason = exc.strerror or str(exc)
            if stuck:
                raise InputError(f"{self.where}: cannot {doing}: {reason}; the previous outputs could not all be put "
                                 f"back ({stuck}), so {MARKER} says complete: false and the next run replaces "
                                 f"them") from None
            raise InputError(f"{self.where}: cannot {doing}: {reason}; the previous outputs are as they "
                             f"were") from None
        for rel in sorted(self._previous - new_set):  # moved aside, gone with the staging folder
            _remove_empty_parents(self.path, rel)
        sync_dir(self.path)
        self._previous, self._stamps = new_set, stamps

    def _undo(self, undo: list[tuple[str, Path, Path]], made: list[Path], old_marker: Path) -> str:
        """Put every file back where it was; '' when all went back, else the first that did not and why."""
        stuck = ""
        for rel, src, dst in reversed(undo):
            try:
                os.replace(dst, src)
            except OSError as exc:
                stuck = stuck or f"{rel}: {exc.strerror or exc}"
        for folder in reversed(made):
            _rmdir_quietly(folder)
        if stuck:
            return stuck  # the marker listing both runs' files stays: it is the true state
        try:
            if os.path.lexists(old_marker):
                os.replace(old_marker, self.path / MARKER)
            else:
                (self.path / MARKER).unlink(missing_ok=True)
        except OSError as exc:
            return f"{MARKER}: {exc.strerror or exc}"
        return ""

    def refuse_overwrites(self, new: list[str] | None = None) -> None:
        """Refuse, all problems at once, when publishing ``new`` (None: not known yet) would overwrite what harness
        did not write, or (without force) replace or remove a file harness wrote that was changed since."""
        blockers = self._blockers(new or [])
        changed = [] if self._force else self._changed(None if new is None else frozenset(new))
        if blockers:
            raise InputError(f"{self.where}: harness would overwrite what it did not write; move these away or "
                             f"choose another folder", blockers + changed)
        if changed:
            raise InputError(f"{self.where}: files harness wrote were changed since; move them away to keep them, "
                             f"or pass --force to replace them", changed)

    def _changed(self, new: frozenset[str] | None) -> list[str]:
        """One line for each file the previous run wrote whose size or modification time is no longer what the
        marker recorded (a file without a record is unknown: unchanged). ``new``: the files this run writes (it
        removes the others)."""
        lines = []
        for rel in sorted(self._stamps):
            path = self._own_file(rel)
            if path is not None and not unchanged(path, self._stamps[rel]):
                verb = "removes" if new is not None and rel not in new else "replaces"
                lines.append(f"{rel}: changed since harness wrote it; --force {verb} it")
        return lines

    def _own_file(self, rel: str) -> Path | None:
        """The file ``rel`` the previous run wrote, if it is still a regular file reached without a link; else None
        (gone, or the user put something else there: theirs)."""
        parts = rel.split("/")
        node = self.path
        for part in parts[:-1]:
            node = node / part
            if node.is_symlink() or not node.is_dir():
                return None
        target = node / parts[-1]
        return None if target.is_symlink() or not target.is_file() else target

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

    def _write_marker(self, stage: Path, files: frozenset[str], stamps: dict[str, Stamp], *, complete: bool) -> None:
        text = marker_text(run=self.run, files=files, stamps=stamps, complete=complete, written_at=_now(),
                           command=_command())
        tmp = stage / "marker.json"  # staged inside the folder, so nothing is ever written beside it
        write_text(tmp, text)
        os.replace(tmp, self.path / MARKER)


def _rename(rel: str, src: Path, dst: Path, undo: list[tuple[str, Path, Path]]) -> None:
    os.replace(src, dst)
    undo.append((rel, src, dst))


def _make_parents(root: Path, rel: str, made: list[Path]) -> None:
    """Create the folders ``root/rel`` needs, adding each to ``made`` (no link is followed: blockers refused any)."""
    node = root
    for part in rel.split("/")[:-1]:
        node = node / part
        if not os.path.lexists(node):
            node.mkdir()
            made.append(node)


def _remove_empty_parents(root: Path, rel: str) -> None:
    folder = (root / rel).parent
    while folder != root and not folder.is_symlink() and _rmdir_quietly(folder):
        folder = folder.parent


def _check_owner(path: Path, run: str, force: bool, where: str) -> Marker | None:
    """The previous run's marker (the files it wrote, which this run may replace or remove); refuse a folder that is
    not ours unless ``force``."""
    marker, problem = read_marker(path)
    if marker is not None:
        if marker.run != run and not force:
            raise InputError(f"{where}: holds the outputs of run '{marker.run}' (written {marker.written_at}), not "
                             f"'{run}'; pass --force to replace them (files harness did not write are kept), or "
                             f"choose another folder")
        return marker
    others = sorted(e.name for e in path.iterdir() if not _internal(e.name))
    if (others or problem) and not force:
        what = problem or f"no {MARKER}"
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise InputError(f"{where}: not empty ({shown or MARKER}) and not written by harness ({what}); choose a new "
                         f"or empty folder, or pass --force to write harness's files beside these (files harness "
                         f"did not write are never deleted or overwritten)")
    return None


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
        marker = _check_owner(path, run, force, where)
        out = OutputFolder(path, run, where, marker.files if marker else frozenset(),
                           dict(marker.stamps) if marker else None, force)
        out.refuse_overwrites()  # changed files, before the run's work rather than after it
        yield out
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
