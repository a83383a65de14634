"""Helpers for table-driven CLI tests: run ``harness`` as a user would and check the error contract.

The contract (README, "Errors"): bad input exits 2 with one located line per problem, never a traceback; a data-safety
case must leave every file that existed before the command exactly as it was.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
_PYTHONPATH_AT_START = os.environ.get("PYTHONPATH")


def harness(*args, cwd: Path | str = ROOT, env: dict | None = None, timeout: float = 300,
            input: str | None = None, fresh: bool = False) -> subprocess.CompletedProcess:
    """``harness ARGS`` as the user runs it, text output captured: exit code, stdout and stderr.

    In this interpreter by default (cli.main's own code path: run_app's error boundary, exit codes, the same
    streams), since a fresh interpreter costs 0.5-1 s of imports per call and the suite makes hundreds.
    ``fresh=True`` (or ``HARNESS_TEST_SUBPROCESS=1`` for every call) runs ``python -m harness.cli.main`` in a new
    interpreter instead: for what only a process shows (signals, import-time environment, the interpreter's exit)."""
    # PYTHONPATH set by the test (plugins installed in a temp folder) only takes effect in a new interpreter.
    moved = os.environ.get("PYTHONPATH") != _PYTHONPATH_AT_START
    if fresh or env or moved or os.environ.get("HARNESS_TEST_SUBPROCESS") == "1":
        return harness_process(*args, cwd=cwd, env=env, timeout=timeout, input=input)
    return harness_inprocess(*args, cwd=cwd, input=input)


def harness_process(*args, cwd: Path | str = ROOT, env: dict | None = None, timeout: float = 300,
                    input: str | None = None) -> subprocess.CompletedProcess:
    """``harness ARGS`` in a fresh interpreter (the package of this checkout), text output captured."""
    full_env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=full_env, timeout=timeout, input=input)


# The warning filters of a plain `python` (no -W, not in a test runner): what a user's run prints as warnings.
_PLAIN_FILTERS = [("default", None, DeprecationWarning, "__main__", 0),
                  ("ignore", None, DeprecationWarning, None, 0),
                  ("ignore", None, PendingDeprecationWarning, None, 0),
                  ("ignore", None, ImportWarning, None, 0),
                  ("ignore", None, ResourceWarning, None, 0)]


def _stream() -> io.TextIOWrapper:
    # Bytes underneath (a command may write sys.stdout.buffer), not a terminal, as a pipe to a subprocess is.
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue().decode("utf-8", errors="replace")
    return raw.replace("\r\n", "\n").replace("\r", "\n")  # subprocess's text mode: universal newlines


def harness_inprocess(*args, cwd: Path | str = ROOT, input: str | None = None) -> subprocess.CompletedProcess:
    """``python -m harness.cli.main ARGS`` without the new interpreter: cli.main minus the SIGTERM handler (a process
    setting), in ``cwd``, with its own stdin/stdout/stderr and plain Python's warning filters; the environment,
    cwd and streams are restored after. An exception the CLI lets through prints a traceback and exits 1, as the
    interpreter does."""
    from harness.cli.main import app
    from harness.cli.boundary import run_app

    argv = ["harness", *map(str, args)]
    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd(), dict(os.environ))
    out, err = _stream(), _stream()
    code = 0
    try:
        os.chdir(cwd)
        sys.argv = argv
        sys.stdin = io.StringIO(input or "")
        sys.stdout, sys.stderr = out, err
        with warnings.catch_warnings():
            warnings.filters[:] = list(_PLAIN_FILTERS)
            warnings.showwarning = _show_warning
            try:
                run_app(app)
            except SystemExit as exc:
                code = _exit_status(exc.code, err)
            except BaseException:  # KeyboardInterrupt included: what the interpreter does with it
                traceback.print_exc(file=err)
                code = 1
    finally:
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
        os.chdir(saved[4])
        os.environ.clear()
        os.environ.update(saved[5])
    return subprocess.CompletedProcess(argv, code, _text(out), _text(err))


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _exit_status(code, err) -> int:
    """The status sys.exit(code) gives a process: None 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=err)
    return 1


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) with a hash of its bytes: compare before and after."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p.relative_to(root))] = "link:" + os.readlink(p)
            else:
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def assert_no_traceback(proc: subprocess.CompletedProcess) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert "Traceback (most recent call last)" not in stream, stream


def assert_input_error(proc: subprocess.CompletedProcess, *fragments: str, code: int = 2) -> None:
    """Exit ``code`` (2: bad input), no traceback, and stderr names every fragment (a file, a key path, a line)."""
    assert_no_traceback(proc)
    assert proc.returncode == code, f"exit {proc.returncode}, stderr:\n{proc.stderr}\nstdout:\n{proc.stdout}"
    for fragment in fragments:
        assert fragment in proc.stderr, f"{fragment!r} not in stderr:\n{proc.stderr}"


@dataclass(frozen=True)
class Case:
    """One row of a table-driven test: set up files in a temp folder, run a command, check the outcome.

    ``setup(tmp) -> list of args`` writes what the case needs and returns the command's arguments;
    ``expect`` are fragments stderr must contain; ``code`` the exit code; ``keep`` names folders (relative to
    tmp) whose every pre-existing file must survive byte for byte."""

    id: str
    setup: Callable[[Path], Sequence]
    expect: tuple[str, ...] = ()
    code: int = 2
    keep: tuple[str, ...] = ()
    check: Callable[[Path, subprocess.CompletedProcess], None] | None = field(default=None)


def run_case(case: Case, tmp: Path) -> subprocess.CompletedProcess:
    args = case.setup(tmp)
    before = {k: snapshot(tmp / k) for k in case.keep}
    proc = harness(*args, cwd=tmp)
    expect = tuple(f.format(tmp=tmp) for f in case.expect)
    assert_input_error(proc, *expect, code=case.code)
    for k in case.keep:
        after = snapshot(tmp / k)
        lost = {f for f in before[k] if before[k][f] != after.get(f)}
        assert not lost, f"{case.id}: files changed or lost under {k}: {sorted(lost)}"
    if case.check:
        case.check(tmp, proc)
    return proc


DEMO = ROOT / "goldsets" / "demo"


def demo_config(tmp: Path, name: str = "cfg.yaml", **overrides) -> Path:
    """A copy of the demo BM25 config in ``tmp`` pointing at the bundled demo data; ``overrides`` are raw YAML
    lines appended (later keys are not allowed to repeat earlier ones, so pass only keys not in the base)."""
    base = (f"name: t\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\n"
            f"chunking: {{strategy: sentences, size: 2}}\n"
            f"goldset: {{path: {DEMO / 'goldset.jsonl'}}}\n")
    body = base + "".join(f"{k}: {v}\n" for k, v in overrides.items())
    if "retriever" not in overrides:
        body += "retriever: {kind: bm25, backend: fast}\n"
    path = tmp / name
    path.write_text(body)
    return path
