"""Typed errors. The CLI turns each into a one-line message and an exit code, never a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class InputError(HarnessError):
    """Bad user input (config, corpus, golden set, run file): exit code 2.

    ``problems`` holds every problem found, so users fix them all in one pass."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        full = message if not self.problems else message + "\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(full)


class ConfigError(InputError):
    pass


class CorpusError(InputError):
    pass


class GoldSetError(InputError):
    pass


class RunFileError(InputError):
    pass


class MetricError(InputError):
    pass


class RetrieverError(InputError):
    """A retriever's output breaks the retriever or hit contract (``harness.retrievers.contract``); names the kind."""


class OutputAppeared(InputError):
    """A file that was not there when the command checked its output path appeared there before the output was
    published (another program, a second harness writing the same path): it is kept, and the output is dropped."""

    def __init__(self, path, option: str | None = None):
        self.path, self.option = path, option
        where = f"{option} {path}" if option else f"{path}"
        super().__init__(f"{where}: appeared while harness ran; not replaced (your file is kept; the output is not "
                         f"written)")


class MissingDependencyError(HarnessError):
    """An optional dependency is not installed; the message names the install command."""

    exit_code = 2


def crash_line(exc: BaseException) -> str:
    """A crash of code harness runs but did not write (a plugin, a user's function) in one line: its type, its
    message, and the file and line it was raised at."""
    import traceback

    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} (at {frame.filename}:{frame.lineno})"


def own_exit(exc: BaseException) -> bool:
    """``exc`` is an exit user code raised of its own (``sys.exit()``, ``raise SystemExit``, or a
    ``KeyboardInterrupt`` with no Ctrl-C behind it), not a signal: a failure of that code, never the end of the
    command. Without the CLI's handlers (a library user's process) a ``KeyboardInterrupt`` may be their Ctrl-C and
    is left as it is."""
    from . import interrupt

    if isinstance(exc, interrupt.Terminated):
        return False
    if isinstance(exc, SystemExit):
        return True
    return isinstance(exc, KeyboardInterrupt) and interrupt._CLI is not None and interrupt.received() is None


def exit_line(exc: BaseException) -> str:
    """An own exit of user code in words: ``called sys.exit(3)`` or ``raised KeyboardInterrupt``, and where."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    what = f"called sys.exit({exc.code!r})" if type(exc) is SystemExit else f"raised {type(exc).__name__}"
    return what + (f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else "")


def guarded_call(call, failed: str, error: type[HarnessError] = HarnessError):
    """``call()``, with a crash of code harness does not own (a plugin's, a user's function) raised as one ``error``
    line, ``failed`` (what failed, and where) then ``crash_line``; harness's own errors and interrupts pass as they
    are. User code that exits of its own (``own_exit``) fails the same way, with exit status 2: a ``sys.exit(0)`` in
    a retriever must not end a CI job green with no output."""
    try:
        return call()
    except (HarnessError, MemoryError):
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        if not own_exit(exc):
            raise
        raise (error if error.exit_code == 2 else InputError)(f"{failed}: {exit_line(exc)}") from None
    except Exception as exc:
        raise error(f"{failed}: {crash_line(exc)}") from exc
