"""The command line's one error boundary: what reaches the user when a command does not simply succeed.

A HarnessError becomes `error: <message>` and its exit code (2 for bad input); click's usage errors their
`Usage:`/`Error:` lines and exit 2; Ctrl-C exit 130; a closed stdout pipe (`harness eval ... | head -1`) a quiet
exit 0, since that is how pipes end. Never a traceback for any of them."""

from __future__ import annotations

import errno
import io
import os
import sys
from contextlib import contextmanager
from typing import Iterator, NoReturn

import typer

from ..core.errors import HarnessError
from ..core import interrupt

STDOUT = "standard output"  # how an OSError of WholeWrites names the file it could not write
# OSErrors that are the machine's answer (space, quota, names, permissions, files in the way), not the program's
# mistake: one line naming the path. Any other OSError is a bug and keeps its traceback.
WRITING = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
_ENVIRONMENT = WRITING | {errno.ENAMETOOLONG, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.EEXIST,
                           errno.ENOENT, errno.EIO, errno.EMFILE, errno.ENFILE, errno.ELOOP, errno.ETXTBSY}


class WholeWrites(io.RawIOBase):
    """A file descriptor whose writes go out whole or raise. CPython's buffered stdout drops the rest of a short
    write without a word (a full disk under `harness eval ... > out.json` left 64 KiB of JSON and exit 0): writing
    every byte with ``os.write`` makes the full disk an ``OSError`` the boundary reports."""

    def __init__(self, fd: int, first_write=None):
        super().__init__()
        self._fd = fd
        self._first_write = first_write  # called once, before the first byte goes out

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data) -> int:
        if self._first_write is not None:
            self._first_write()
            self._first_write = None
        view, done = memoryview(data).cast("B"), 0
        try:
            while done < len(view):
                done += os.write(self._fd, view[done:])
        except OSError as exc:
            if exc.errno in WRITING:  # named for the user (a closed pipe stays a BrokenPipeError)
                raise OSError(exc.errno, exc.strerror, STDOUT) from None
            raise
        return done


class Diagnostics(WholeWrites):
    """stderr's descriptor: when its reader goes away (`harness run ... 2>&1 | head -1`), the rest of the progress
    and warnings go to devnull and the command goes on. A closed stderr used to end the command as a closed stdout
    does, quietly with exit 0: a run stopped before it wrote its outputs and said it succeeded."""

    def write(self, data) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:
            _drop(self._fd)
            return len(memoryview(data).cast("B"))


def _drop(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def guard_std_streams() -> None:
    """Point ``sys.stdout`` at a ``WholeWrites`` of its descriptor and ``sys.stderr`` at a ``Diagnostics`` of its,
    keeping their encoding and buffering (the CLI only, when they are real files or pipes). The first byte of stdout
    is the command's result going out: from there a signal no longer cuts it short (``_result_goes_out``)."""
    for name, raw in (("stdout", lambda fd: WholeWrites(fd, _result_goes_out)), ("stderr", Diagnostics)):
        old = getattr(sys, name)
        try:
            fd = old.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        old.flush()
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw(fd)), encoding=old.encoding, errors=old.errors,
                                            line_buffering=old.line_buffering, write_through=name == "stderr"))


def _result_goes_out() -> None:
    """stdout is written whole or not at all: before its first byte a signal stops the command with nothing out
    (one whose exception was swallowed too); from it on, a signal waits for the rest (``interrupt.finish``). A
    handler raising between a write and its count was seen to send the same bytes twice."""
    interrupt.raise_if_received()
    interrupt.finish()


class _PipeClosed(Exception):
    """stdout's reader went away. Not an OSError: typer turns an EPIPE OSError into exit 1 before run_app sees it."""


@contextmanager
def pipe_boundary() -> Iterator[None]:
    """Around each command's body: a closed pipe, however it surfaced, leaves as _PipeClosed."""
    try:
        yield
    except BrokenPipeError:
        raise _PipeClosed() from None
    except SystemExit as exc:
        # rich handles a closed pipe itself: stdout pointed at devnull, then SystemExit(1). Same event.
        if exc.code == 1 and _stdout_is_devnull():
            raise _PipeClosed() from None
        raise


def _stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError):  # no real stdout (captured in tests): not rich's redirect
        return False


def _drop_stdout() -> None:
    """Point stdout at devnull, so the interpreter's last flush of what is buffered for it cannot raise again
    (Python's docs, signal module, "Note on SIGPIPE")."""
    _drop(sys.stdout.fileno())


def _pipe_closed() -> NoReturn:
    """Exit 0, quietly."""
    _drop_stdout()
    sys.exit(0)


def _tell(text: str) -> None:
    """Print ``text`` on stderr. When stderr's reader has gone (`harness ... 2>&1 >/dev/null | head -1`) there is
    no one to tell: the exit code must still be the error's (2 for bad input; gate's 1 means "a rule failed"), not
    the interpreter's 1 for a BrokenPipeError raised inside the handler."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (BrokenPipeError, ValueError):  # ValueError: stderr already closed
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stderr.fileno())  # so the interpreter's last flush cannot raise again
        except (OSError, ValueError):
            pass


def _click_exceptions() -> tuple[tuple, tuple, tuple]:
    """(usage errors, exits, aborts) of every click the installed typer may raise: typer >= 0.29 raises its own
    bundled copy (typer._click), older typer raises click's. Missing one of them made usage errors tracebacks."""
    usage, exits, aborts = [], [typer.Exit], [typer.Abort]
    try:
        from typer._click import exceptions as bundled
        usage.append(bundled.ClickException)
    except ImportError:
        pass
    try:
        import click
        usage.append(click.ClickException)
        exits.append(click.exceptions.Exit)
        aborts.append(click.exceptions.Abort)
    except ImportError:
        pass
    return tuple(usage), tuple(exits), tuple(aborts)


def run_app(app: typer.Typer) -> NoReturn:
    """Run the command line and exit with what the user should see. However it exits, the command is over then
    (``interrupt.finish``): a signal in the interpreter's shutdown (exit functions, ``threading._shutdown``) is a
    late one, never an exception raised there."""
    try:
        _run_app(app)
    except SystemExit as exc:
        interrupt.exiting(_status(exc))
        raise
    finally:
        interrupt.finish()


def _status(exc: SystemExit) -> int:
    """The process's exit status for ``exc``, as the interpreter reckons it (a message instead of a number: 1)."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def _run_app(app: typer.Typer) -> NoReturn:
    devnull_at_start = _stdout_is_devnull()
    try:
        # standalone_mode=False returns a command's exit code (typer.Exit) instead of exiting: pass it on.
        try:
            code = app(prog_name="harness", standalone_mode=False)
        except SystemExit as exc:
            # rich's closed pipe outside any command's body (`harness --help | head -1`): stdout was pointed at
            # devnull on the way, which a redirect made by the user would have done before we started.
            if exc.code == 1 and not devnull_at_start and _stdout_is_devnull():
                raise _PipeClosed() from None
            raise
        if code == 130:  # typer turns Ctrl-C into exit code 130 itself; what the command printed stays unsent
            interrupt.leave(KeyboardInterrupt())
        _result_goes_out()  # the command returned: its result is complete
        sys.stdout.flush()  # inside the boundary: a closed pipe found by the interpreter's exit flush is noisy
        sys.exit(code if isinstance(code, int) else 0)
    except (_PipeClosed, BrokenPipeError):
        _pipe_closed()
    except HarnessError as exc:
        _tell(f"error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        interrupt.leave(exc)
    except SystemExit as exc:
        if isinstance(exc, interrupt.Terminated):  # SIGTERM in a command that does not say so itself (run does)
            interrupt.leave(exc)
        raise
    except OSError as exc:
        # A full disk, a path too long, a read-only or vanished place: what the machine refused, not a bug. Only
        # when it names the path (an errno alone, EMFILE from a leak or EACCES from a sandbox, keeps its traceback).
        if exc.errno not in _ENVIRONMENT or exc.filename is None:
            raise
        _tell(f"error: {exc.filename}: cannot write ({exc.strerror})" if exc.errno in WRITING else
              f"error: {exc.filename}: {exc.strerror}")
        if exc.filename == STDOUT:  # what is still buffered for it would fail again in the interpreter's exit
            _drop_stdout()
        sys.exit(2)
    except Exception as exc:  # click's usage errors: "Usage: ..." and one "Error: ..." line, exit 2
        usage, exits, aborts = _click_exceptions()
        if isinstance(exc, exits):
            sys.exit(exc.exit_code)
        if isinstance(exc, usage):
            if exc.format_message().strip():  # `harness` alone: typer has printed the help already
                if isinstance(getattr(exc, "message", None), str):  # typer's choices speak through pydantic's prefix
                    exc.message = exc.message.replace("Value error, ", "", 1)
                try:
                    exc.show()
                except BrokenPipeError:
                    _tell("")
            sys.exit(2)
        if isinstance(exc, aborts):
            sys.exit(130)
        signum = interrupt.received()
        if signum is not None:  # the signal's exception turned into another on the way (a library's import)
            interrupt.leave(interrupt.exception_for(signum))
        raise
