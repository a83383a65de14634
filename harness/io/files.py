"""Atomic writes: a crash or Ctrl-C never leaves a half-written file that a later run trusts.

A file is written to a temporary file beside it and renamed into place. ``replace=False`` publishes only where nothing
is: a command that refused an existing file when it started must not replace one that appeared while it ran. Several
files that belong together (a golden set and its list of unresolved answers) are staged, then published all or none.

Whole output folders are handled by ``outdir`` (ownership marker, lock, staging inside the folder)."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, Sequence

from ..core.errors import InputError, OutputAppeared


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str, *, replace: bool = True) -> None:
    write_bytes(path, text.encode("utf-8"), replace=replace)


def write_bytes(path: Path, data: bytes, *, replace: bool = True) -> None:
    with atomic_open(path, "wb", replace=replace) as fh:
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
def atomic_open(path: Path, mode: str = "w", *, replace: bool = True) -> Iterator[IO]:
    """A file to stream ``path`` into (``mode`` "w": UTF-8 text, "wb": bytes): it is put at ``path``, complete, when
    the block ends normally; when it raises, the temporary file and the folders made for it are removed. A path that
    is not a regular file (``not_replaceable``) is refused before anything is written: every writer's last line of
    defence, whatever its own checks. ``replace=False``: a file found at ``path`` when publishing is kept and
    ``OutputAppeared`` raised (for callers that refused an existing file when they started, unless forced)."""
    staged = Staged.begin(path, replace)
    try:
        with staged.open(mode) as fh:
            yield fh
        staged.publish()
    except OSError as exc:
        staged.discard()
        if exc.filename is None and exc.errno is not None:  # a write's error names no file: this one (the CLI says it)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        staged.discard()
        raise


def write_together(files: Sequence[tuple[Path, bytes, bool]]) -> None:
    """Files that belong together, ``(path, data, replace)`` each, written all or none: each is staged (written
    complete beside its path), then they are published together (``publish_together``). A failure at any step leaves
    no temporary file, and an OSError names the file it was for (``filename``)."""
    staged: list[Staged] = []
    try:
        for path, data, replace in files:
            try:
                staged.append(stage(path, data, replace=replace))
            except OSError as exc:  # (mkstemp names the folder, a write nothing): the file it was for
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        for item in reversed(staged):
            item.discard()
        raise
    publish_together(staged)


def stage(path: Path, data: bytes, *, replace: bool = True) -> Staged:
    """``data`` written, complete, to a temporary file beside ``path``: ``publish_together`` puts it in place."""
    staged = Staged.begin(path, replace)
    try:
        with staged.open("wb") as fh:
            fh.write(data)
    except BaseException:
        staged.discard()
        raise
    return staged


def publish_together(files: Sequence[Staged]) -> None:
    """Publish staged files all or none: when one cannot be put in place (a file appeared there, a permission), those
    already published are undone (the file each replaced is put back, a new one removed) and every temporary file
    is removed. Ctrl-C and SIGTERM wait until this is done, so an interrupt never leaves a mismatched set; once the
    set is in place, the command's result is out and a signal no longer stops it (``interrupt.publishing``). An
    OSError names the file that could not be published (``filename``); ``OutputAppeared`` does too (``path``)."""
    from ..core.interrupt import publishing

    with publishing():
        done: list[tuple[Staged, Path | None]] = []
        try:
            for staged in files:
                previous = None
                try:
                    previous = staged.keep_previous()
                    staged.publish()
                except BaseException as exc:
                    if previous is not None:
                        previous.unlink(missing_ok=True)
                    if isinstance(exc, OSError):  # named by the file it was for, not by its temporary file
                        raise OSError(exc.errno, exc.strerror, str(staged.path)) from exc
                    raise
                done.append((staged, previous))
        except BaseException:
            for staged, previous in reversed(done):
                staged.unpublish(previous)
            for staged in reversed(files):  # the last first: a folder the first made may hold the others' files
                staged.discard()
            raise
        for _, previous in done:
            if previous is not None:
                previous.unlink(missing_ok=True)


class Staged:
    """A temporary file beside ``path`` (in the folder it will be renamed in, so the rename is atomic) and the
    folders made for it, which are removed again when the write fails: a failed write leaves nothing behind."""

    def __init__(self, path: Path, tmp: Path, folders: list[Path], replace: bool):
        self.path, self.tmp, self.folders, self.replace = path, tmp, folders, replace
        self.fd: int | None = None

    @classmethod
    def begin(cls, path: Path, replace: bool) -> Staged:
        _refuse_special(path)
        folders = make_folders(path.parent)
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        except BaseException:
            remove_folders(folders)
            raise
        staged = cls(path, Path(tmp), folders, replace)
        staged.fd = fd
        return staged

    @contextmanager
    def open(self, mode: str) -> Iterator[IO]:
        fd, self.fd = self.fd, None
        os.chmod(self.tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report should be as readable as any file
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())

    def publish(self) -> None:
        _refuse_special(self.path)  # checked at the start too; this narrows a race to the rename itself
        if self.replace:
            os.replace(self.tmp, self.path)
        else:
            _publish_new(self.tmp, self.path)

    def keep_previous(self) -> Path | None:
        """A second name for the file ``publish`` will replace (None: none is there, or it may not replace), so
        ``unpublish`` can put it back: a hard link, else a copy where the filesystem has no hard links."""
        if not self.replace or not os.path.lexists(self.path):
            return None
        kept = self.path.parent / f".{self.path.name}.{secrets.token_hex(4)}.previous"
        try:
            os.link(self.path, kept)
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            shutil.copy2(self.path, kept)
        return kept

    def unpublish(self, previous: Path | None) -> None:
        """Undo ``publish``: the previous file back at ``path`` (or none, as before). A failure leaves the previous
        file under its second name rather than lose it."""
        try:
            if previous is not None:
                os.replace(previous, self.path)
            else:
                self.path.unlink(missing_ok=True)
        except OSError:
            pass

    def discard(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.tmp.unlink(missing_ok=True)
        remove_folders(self.folders)


def _refuse_special(path: Path) -> None:
    problem = not_replaceable(path)
    if problem:
        raise InputError(f"{path}: {problem}")


def make_folders(folder: Path) -> list[Path]:
    """``folder`` and its missing parents made; returns those this call made, deepest first (``remove_folders``)."""
    missing = []
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    made: list[Path] = []
    try:
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                if not d.is_dir():
                    raise
                continue  # made by another process meanwhile: not ours to remove
            made.append(d)
    except BaseException:
        remove_folders(made[::-1])
        raise
    return made[::-1]


def remove_folders(folders: Sequence[Path]) -> None:
    """Remove folders ``make_folders`` made (deepest first) while they are empty: what another program has put in
    one meanwhile stays, with the folders above it."""
    for d in folders:
        try:
            d.rmdir()
        except OSError:
            return


# os.link's errors on a filesystem without hard links (FAT, exFAT, many network shares): EPERM on Linux's vfat
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK, errno.EXDEV}


def _publish_new(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` to ``path`` only if nothing is there, atomically: a hard link fails with EEXIST where
    os.replace would silently replace what another program (or a second harness) put there."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OutputAppeared(path) from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        _rename_new(tmp, path)
        return
    os.unlink(tmp)


def _rename_new(tmp: Path, path: Path) -> None:
    """``_publish_new`` where the filesystem has no hard links."""
    if os.name == "nt":
        try:
            os.rename(tmp, path)  # Windows' rename never replaces a file
        except FileExistsError:
            raise OutputAppeared(path) from None
        return
    if _rename_noreplace(tmp, path):
        return
    # Neither: a check right before the rename leaves a window of microseconds instead of the whole run.
    if os.path.lexists(path):
        raise OutputAppeared(path)
    os.replace(tmp, path)


def _rename_noreplace(tmp: Path, path: Path) -> bool:
    """Linux's renameat2(RENAME_NOREPLACE): True when renamed; False where libc or the filesystem lacks it."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl
        return False
    at_fdcwd, rename_noreplace = -100, 1
    if renameat2(at_fdcwd, os.fsencode(tmp), at_fdcwd, os.fsencode(path), rename_noreplace) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        raise OutputAppeared(path)
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(path))


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
    except OSError as exc:  # InputError: exit 2, as every write the machine refuses (cli_boundary.WRITING)
        raise InputError(f"{tempfile.gettempdir()}: cannot write {what} to a temporary file "
                           f"({exc.strerror or exc}); set TMPDIR to a folder with more room") from exc
