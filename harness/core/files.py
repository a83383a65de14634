"""Atomic writes: a crash or Ctrl-C never leaves a half-written file that a later run trusts.

Whole output folders are handled by ``outdir`` (ownership marker, lock, staging inside the folder)."""

from __future__ import annotations

import os
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


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO]:
    """A file to stream ``path`` into (``mode`` "w": UTF-8 text, "wb": bytes): it replaces ``path``, complete, when
    the block ends normally, and is removed when it raises."""
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
        from .errors import HarnessError

        raise HarnessError(f"{tempfile.gettempdir()}: cannot write {what} to a temporary file "
                           f"({exc.strerror or exc}); set TMPDIR to a folder with more room") from exc
