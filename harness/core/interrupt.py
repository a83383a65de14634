"""Interruption: SIGTERM raises like Ctrl-C does, so every ``finally`` and cleanup path runs before the exit, and a
short critical section (moving finished files into place, removing a staging folder) can hold both signals back
until it is done. Only the CLI installs the SIGTERM handler; importing the library changes no signal handling."""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, NoReturn

MESSAGE = "interrupted: nothing half-written was left behind"


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread. A SystemExit (exit status 128 + 15), so no ``except Exception`` swallows
    it, and a command that does not catch it still exits 143 without a traceback."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


# The signals the CLI's handlers have raised for, process-wide as the handlers are. Library code can swallow the
# exception a handler raises: a Ctrl-C or SIGTERM that lands inside pyarrow's lazy import of pandas was seen turned
# into an AttributeError, or lost with the run going on to publish. ``raise_if_received`` acts on it again.
_RECEIVED: list[int] = []


def _raise_terminated(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise Terminated()


def _raise_interrupt(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise KeyboardInterrupt


def install() -> None:
    """Make SIGTERM raise ``Terminated`` and Ctrl-C ``KeyboardInterrupt``, each remembered (the CLI calls this once;
    a library user keeps their own handling)."""
    signal.signal(signal.SIGTERM, _raise_terminated)
    signal.signal(signal.SIGINT, _raise_interrupt)


def received() -> int | None:
    """The first signal the CLI's handlers raised for, or None."""
    return _RECEIVED[0] if _RECEIVED else None


def raise_if_received() -> None:
    """Raise again for a signal whose exception was swallowed on the way (see ``_RECEIVED``): called before
    anything is published, so an interrupted run never replaces the previous outputs."""
    first = received()
    if first is not None:
        raise Terminated() if first == signal.SIGTERM else KeyboardInterrupt()


def exit_code(exc: BaseException) -> int:
    """The shell's convention: 128 + the signal number (SIGINT 130, SIGTERM 143)."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


_HELD = (signal.SIGINT, signal.SIGTERM)


def leave(exc: BaseException) -> NoReturn:
    """Exit as an interrupted command does once its cleanup has run: ``MESSAGE`` on stderr, 128 + the signal. Under
    load a raising exit was seen (about 1 in 10) to end as a death by SIGINT in the interpreter's shutdown, and a
    second signal could too: ``os._exit`` after ``ignore_further`` leaves nothing for either to do. The CLI only."""
    ignore_further()
    for stream, text in ((sys.stderr, MESSAGE + "\n"), (sys.stdout, "")):
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or a full disk: the exit code still says it
            pass
    os._exit(exit_code(exc))


def ignore_further() -> None:
    """Once the cleanup is done and the process is exiting, a second Ctrl-C or SIGTERM must not turn the exit
    status into a death by signal or print a traceback from the interpreter's shutdown."""
    if threading.current_thread() is threading.main_thread():
        for s in _HELD:
            signal.signal(s, signal.SIG_IGN)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on the first one that came, as it would have.

    Python runs signal handlers only in the main thread, and only there can they be swapped; elsewhere (and when a
    handler was installed outside Python, which cannot be restored) the block runs unprotected."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in _HELD}
    if any(h is None for h in previous.values()):
        yield
        return
    caught: list[int] = []
    for s in _HELD:
        signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if caught:
            _deliver(caught[0], previous[caught[0]])


def _deliver(signum: int, handler) -> None:
    if handler is signal.SIG_IGN:
        return
    if handler is signal.SIG_DFL:
        os.kill(os.getpid(), signum)  # the default action (terminate), now that the block is done
        return
    handler(signum, None)  # default_int_handler raises KeyboardInterrupt; ours raises Terminated
