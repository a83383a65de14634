"""Interruption: SIGTERM raises like Ctrl-C does, so every ``finally`` and cleanup path runs before the exit, and a
short critical section (moving finished files into place, removing a staging folder) can hold both signals back
until it is done. Only the CLI installs the handlers; importing the library changes no signal handling.

A CLI process has two stages. While the command works, a signal raises (``KeyboardInterrupt``, ``Terminated``) and
the command leaves with ``MESSAGE``: nothing of its result is out. Once its result starts going out (its outputs
published, its first byte of stdout written, or it returned: ``finish``), nothing is left that a signal could stop
short of cutting the result in half, so the handlers only record it: the result goes out whole, and the process then
ends with 128 + the signal and ``LATE``, not ``MESSAGE`` (the outputs were replaced: "nothing half-written" would
read as "the previous outputs are as they were"). The status is still the signal's: a Ctrl-C or a supervisor's
SIGTERM that came as the command finished stops a script or a job as any other does. A handler that raised there
was seen to end in a traceback from ``atexit`` or ``threading._shutdown``, in a death by SIGINT with exit 0 or no
word, or in stdout written twice (the exception left a write done but not counted, and the buffer went out again)."""

from __future__ import annotations

import _thread
import atexit
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, NoReturn

MESSAGE = "interrupted: nothing half-written was left behind"
LATE = "interrupted: the command had already finished; nothing was cut short"


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread. A SystemExit (exit status 128 + 15), so no ``except Exception`` swallows
    it, and a command that does not catch it still exits 143 without a traceback."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


_HELD = (signal.SIGINT, signal.SIGTERM)


class _Process:
    """What the CLI's handlers know of the signals so far (one per process, made by ``install``)."""

    def __init__(self, program: bool) -> None:
        # This process is the harness command (the console script, python -m harness.cli.main), not a program of the
        # user's that called cli.main(): only then is a late signal held to the exit and the exit status ours.
        self.program = program
        # The first signal a handler raised for. Library code can swallow the exception: a Ctrl-C or SIGTERM that
        # lands inside pyarrow's lazy import of pandas was seen turned into an AttributeError, or lost with the run
        # going on to publish. ``raise_if_received`` acts on it again.
        self.raised: int | None = None
        self.holding = 0  # open ``deferred`` blocks
        self.held: int | None = None  # the first signal they hold
        self.done = False  # ``finish`` was called
        self.late: int | None = None  # the first signal that came after it, acted on at the exit
        self.status: int | None = None  # the exit status the command chose (``exiting``)
        self.in_hook = False  # in the unraisable hook (``_deliver_again``)


_CLI: _Process | None = None  # None: a library user's process (their handlers, their exits)


def exception_for(signum: int) -> BaseException:
    """What the CLI's handler raises for ``signum``."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _on_signal(signum, frame) -> None:
    cli = _CLI
    if cli.done:
        cli.late = cli.late or signum
        return
    if cli.holding:
        cli.held = cli.held or signum
        return
    cli.raised = cli.raised or signum
    raise exception_for(signum)


_EXIT_HOOKED: list[bool] = []  # ``_at_exit`` registered (once a process)


def install(program: bool = True) -> Callable[[], None]:
    """Make SIGTERM raise ``Terminated`` and Ctrl-C ``KeyboardInterrupt`` for one command (the CLI calls this first;
    a library user keeps their own handling), with a fresh record of its signals. ``program``: this process is the
    harness command, whose exit ``_at_exit`` ends; otherwise (cli.main() called by the user's own program) its
    signals only raise, and the returned function puts the caller's handlers and unraisable hook back."""
    global _CLI
    previous, hook = {s: signal.getsignal(s) for s in _HELD}, sys.unraisablehook
    _CLI = _Process(program)
    if program and not _EXIT_HOOKED:
        _EXIT_HOOKED.append(True)
        atexit.register(_at_exit)  # the first registered runs last: after every other exit function
    if not getattr(hook, "_harness", False):
        sys.unraisablehook = _unraisable_hook(hook)
    for s in _HELD:
        signal.signal(s, _on_signal)

    def restore() -> None:
        global _CLI
        for s, handler in previous.items():
            if handler is not None:  # (None: a handler not set from Python, which cannot be put back from here)
                signal.signal(s, handler)
        sys.unraisablehook, _CLI = hook, None

    return restore


def received() -> int | None:
    """The first signal the CLI's handlers raised for, or None."""
    return _CLI.raised if _CLI is not None else None


def raise_if_received() -> None:
    """Raise again for a signal whose exception was swallowed on the way (see ``_Process.raised``): called before
    anything is published, so an interrupted run never replaces the previous outputs."""
    if _CLI is not None and not _CLI.done and _CLI.raised is not None:
        raise exception_for(_CLI.raised)


def finish() -> None:
    """The command's result is going out: from here a signal is recorded, not raised, and the process ends with
    it once the result is out (``_at_exit``); one that a ``deferred`` block holds becomes such a late signal. For
    the CLI only; nothing in a library user's process."""
    cli = _CLI
    if cli is None or cli.done or not cli.program:
        return
    cli.done = True
    cli.late, cli.held = cli.late or cli.held, None


def exiting(status: int) -> None:
    """The CLI is exiting with ``status``: ``finish``, and the last exit function ends the process with it (or
    with a late signal's) by ``os._exit``. The interpreter's own finalization comes after every exit function and
    puts the default handlers back first, so a signal there killed the process (a death by SIGINT, no word)."""
    finish()
    if _CLI is not None and _CLI.program:
        _CLI.status = status


def exit_code(exc: BaseException) -> int:
    """The shell's convention: 128 + the signal number (SIGINT 130, SIGTERM 143)."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


def leave(exc: BaseException) -> NoReturn:
    """Exit as an interrupted command does once its cleanup has run: ``MESSAGE`` on stderr, 128 + the signal. Under
    load a raising exit was seen (about 1 in 10) to end as a death by SIGINT in the interpreter's shutdown, and a
    second signal could too: ``os._exit`` after ``ignore_further`` leaves nothing for either to do. What the command
    printed is dropped with the process: none of it went out (the first byte out would have called ``finish``), and
    an interrupted command's result is not shown in part. When the process is not the harness command (the CLI run
    inside a test's interpreter, cli.main() called by a program) it raises the SystemExit instead, which ends
    nothing but the command."""
    if _CLI is None or not _CLI.program:
        _say(MESSAGE)
        raise SystemExit(exit_code(exc))
    ignore_further()
    _say(MESSAGE)
    os._exit(exit_code(exc))


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or a full disk: the exit code still says it
        pass


def ignore_further() -> None:
    """Once the cleanup is done and the process is exiting, a second Ctrl-C or SIGTERM must not turn the exit
    status into a death by signal or print a traceback from the interpreter's shutdown."""
    if threading.current_thread() is threading.main_thread():
        for s in _HELD:
            signal.signal(s, signal.SIG_IGN)


def _at_exit() -> None:
    """The last exit function (the first registered): after every other one (Ray's shutdown, logging's, pending
    ``weakref.finalize`` calls), end the process with the status ``exiting`` was given, or with 128 + a signal that
    came once the command had finished: the command's own status would say nothing of it. The standard streams
    are flushed first, as the interpreter would have; a signal from here on is too late to change the status."""
    cli = _CLI
    if cli is None or not cli.program or (cli.status is None and cli.late is None):
        return  # not the CLI's exit (a script that installed the handlers): the interpreter's own
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or a full disk: the status stands
            pass
    if cli.late is not None:
        _say(LATE)
        os._exit(128 + cli.late)
    os._exit(cli.status)


def _unraisable_hook(previous):
    """A handler's exception raised inside a finalizer, a weakref callback or an exit function reaches no code of
    ours: Python prints "Exception ignored in ..." with a traceback and drops it, and the interrupt is lost (seen:
    a weakref callback in the middle of a sweep). Ours are delivered again, silently, to land in the command."""
    def hook(unraisable) -> None:
        exc = unraisable.exc_value
        if _CLI is None or _CLI.raised is None or not isinstance(exc, (KeyboardInterrupt, Terminated)):
            previous(unraisable)
            return
        _deliver_again(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
    hook._harness = True  # (installed once, however many commands run)
    return hook


def _deliver_again(signum: int) -> None:
    """Run the handler for ``signum`` again once the unraisable hook has returned. Tripped here, it would run in
    the hook itself (Python looks for signals after each call) and its exception be dropped there; so another
    thread trips it when ``in_hook`` is cleared, the hook's last step, after which the hook makes no call."""
    cli = _CLI
    cli.in_hook = True

    def deliver() -> None:
        while cli.in_hook:
            time.sleep(0.001)
        _thread.interrupt_main(signum)

    try:
        threading.Thread(target=deliver, name="harness-interrupt", daemon=True).start()
    except RuntimeError:  # no new thread in the interpreter's shutdown: nothing is left to interrupt there
        pass
    cli.in_hook = False


def _ours() -> bool:
    return _CLI is not None and all(signal.getsignal(s) is _on_signal for s in _HELD)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on the first one that came, as it would have.

    Python runs signal handlers only in the main thread, and only there can they be swapped; elsewhere (and when a
    handler was installed outside Python, which cannot be restored) the block runs unprotected."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with (_holding() if _ours() else _swapped()):
        yield


@contextmanager
def publishing() -> Iterator[None]:
    """``deferred``, for the block that puts a command's outputs in place. When it ends normally they are, so
    ``finish``: a signal held meanwhile no longer stops the command, whose result is now complete; when it raises
    (the outputs are as they were), a held signal is raised as ``deferred`` does. A signal whose exception was
    swallowed before the block stops it before anything is published."""
    raise_if_received()
    with deferred():
        yield
        finish()


@contextmanager
def _holding() -> Iterator[None]:
    """``deferred`` with the CLI's handlers: they see the open block and only note the signal. Swapping handlers
    would leave a window between the two swaps in which a signal lands with one handler swapped and not the other."""
    cli = _CLI
    cli.holding += 1
    try:
        yield
    finally:
        cli.holding -= 1
        if cli.holding == 0 and cli.held is not None and not cli.done:
            signum, cli.held = cli.held, None
            cli.raised = cli.raised or signum
            raise exception_for(signum)


@contextmanager
def _swapped() -> Iterator[None]:
    """``deferred`` under handlers that are not the CLI's (a library user's, Python's default)."""
    previous = {s: signal.getsignal(s) for s in _HELD}
    if any(h is None for h in previous.values()):
        yield
        return
    caught: list[int] = []
    try:
        for s in _HELD:  # inside the try: a signal between the two swaps still gets both handlers put back
            signal.signal(s, lambda signum, frame: caught.append(signum))
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
    handler(signum, None)  # default_int_handler raises KeyboardInterrupt; ours raises, or notes a late signal
