"""Atomic writes: a crash or Ctrl-C never leaves a half-written file that a later run trusts.

Whole output folders are handled by ``outdir`` (ownership marker, lock, staging inside the folder)."""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def not_replaceable(path: Path) -> str | None:
    """Why an atomic write must not replace ``path`` whatever else holds (None: it may): renaming a new file over a
    link, a device (/dev/null), a pipe or a socket would destroy what was there, not write into it."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link; give the file it points to (replacing the link would lose it)"
    if stat.S_ISDIR(mode):
        return "is a folder; give a file path"
    if not stat.S_ISREG(mode):
        return "exists and is not a regular file (a device, pipe or socket); give a file path"
    return None


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO]:
    """A file to stream ``path`` into (``mode`` "w": UTF-8 text, "wb": bytes): it replaces ``path``, complete, when
    the block ends normally, and is removed when it raises. A path that is not a regular file (``not_replaceable``)
    is refused before anything is written: every writer's last line of defence, whatever its own checks."""
    problem = not_replaceable(path)
    if problem:
        from .errors import InputError

        raise InputError(f"{path}: {problem}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report should be as readable as any file
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sync_dir(path: Path) -> None:
    """Flush a folder's entries (renames into it) to disk; best effort where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def temp_space(what: str) -> Iterator[None]:
    """An OSError while making or writing a temporary file (a full disk, mostly) as one error naming the folder,
    not a traceback: large runs keep their hits and records in unlinked temp files under TMPDIR."""
    try:
        yield
    except OSError as exc:
        from .errors import InputError  # exit 2, as every write the machine refuses (cli_boundary.WRITING)

        raise InputError(f"{tempfile.gettempdir()}: cannot write {what} to a temporary file "
                           f"({exc.strerror or exc}); set TMPDIR to a folder with more room") from exc
