"""Helpers for table-driven CLI tests: run ``harness`` as a user would and check the error contract.

The contract (README, "Errors"): bad input exits 2 with one located line per problem, never a traceback; a data-safety
case must leave every file that existed before the command exactly as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent


def harness(*args, cwd: Path | str = ROOT, env: dict | None = None, timeout: float = 300,
            input: str | None = None) -> subprocess.CompletedProcess:
    """``harness ARGS`` in a fresh interpreter (the package of this checkout), text output captured."""
    full_env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "harness.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=full_env, timeout=timeout, input=input)


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
