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


def guarded_call(call, failed: str, error: type[HarnessError] = HarnessError):
    """``call()``, with a crash of code harness does not own (a plugin's, a user's function) raised as one ``error``
    line, ``failed`` (what failed, and where) then ``crash_line``; harness's own errors and interrupts pass as they
    are."""
    try:
        return call()
    except (HarnessError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        raise error(f"{failed}: {crash_line(exc)}") from exc
