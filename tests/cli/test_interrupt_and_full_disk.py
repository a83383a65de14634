"""What a tester's interrupt and full-disk walk found (2026-12-04): a full disk under `harness eval ... > out.json`
left 64 KiB of JSON and exit 0 (CPython's buffered stdout drops the rest of a short write); a full disk while a
run wrote its outputs, a traceback; SIGTERM outside `run`, exit 143 and not a word; a Ctrl-C while the command line
was still loading, a KeyboardInterrupt traceback. Each runs what the user ran, in a fresh process where the process
is what is tested."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clihelp import ROOT, assert_input_error, assert_no_traceback, demo_config, harness

INTERRUPTED = "interrupted: nothing half-written was left behind"


def _files(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "q.txt", tmp_path / "r.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(2000)))
    run.write_text("".join(f"q{i} Q0 d{j} {r} {100 - r} s\n" for i in range(2000) for r, j in enumerate(range(i, i + 20), 1)))
    return qrels, run


def _python(code: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=120)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_under_stdout_is_one_line_and_exit_2_not_a_truncated_file(tmp_path):
    qrels, run = _files(tmp_path)
    code = f"import sys; sys.argv = ['harness', 'eval', {str(qrels)!r}, {str(run)!r}, '--per-query']\n" \
           "from harness.cli.entry import main; main()"
    with open("/dev/full", "w") as full:
        proc = _python(code, stdout=full)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2 and "error: standard output: cannot write (No space left on device)" in proc.stderr


def test_a_full_disk_while_a_run_writes_its_outputs_names_the_folder(tmp_path, monkeypatch):
    import harness.render.outputs as outputs

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs, "write_run_files", full)
    out = tmp_path / "out"
    proc = harness("run", demo_config(tmp_path), "--out", out, "-q")
    assert_input_error(proc, f"{out}: cannot write the outputs (No space left on device)")
    assert not out.exists()  # the folder it made is gone with the staging


def test_sigterm_in_a_command_that_does_not_say_so_itself_is_the_interrupted_line(tmp_path):
    qrels, run = _files(tmp_path)
    proc = _python(f"""
        import os, signal, sys
        import harness.metrics.streamed as streamed
        scored = streamed.evaluate_files
        def terminated(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill` would, while eval reads the run
            return scored(*args, **kwargs)
        streamed.evaluate_files = terminated
        sys.argv = ["harness", "eval", {str(qrels)!r}, {str(run)!r}]
        from harness.cli.entry import main
        main()
        """)
    assert_no_traceback(proc)
    assert proc.returncode == 143 and INTERRUPTED in proc.stderr, proc.stderr


@pytest.mark.parametrize("raised, code", [("KeyboardInterrupt()", 130), ("Terminated()", 143)])
def test_an_interrupt_while_the_command_line_loads_is_the_interrupted_line(raised, code):
    """The console script installs the handlers before it imports the command line (NumPy, typer, ...)."""
    proc = _python(f"""
        import sys
        from harness.core.interrupt import Terminated
        class Interrupting:
            def find_spec(self, name, path, target=None):
                if name == "harness.cli.main":
                    raise {raised}
        sys.meta_path.insert(0, Interrupting())
        sys.argv = ["harness", "--version"]
        from harness.cli.entry import main
        main()
        """)
    assert_no_traceback(proc)
    assert proc.returncode == code and INTERRUPTED in proc.stderr, proc.stderr


def test_the_console_script_is_the_entry_module():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'harness = "harness.cli.entry:main"' in text
    assert "numpy" not in _python("import sys, harness; print(sorted(sys.modules))").stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["eval", "QRELS", "RUN"]])
def test_a_full_disk_under_a_small_output_is_the_same_one_line(tmp_path, args):
    """A review: output smaller than the buffer failed at the boundary's flush, was reported, and then failed again
    in the interpreter's own exit flush: a traceback and exit 120."""
    qrels, run = _files(tmp_path)
    argv = [str(qrels) if a == "QRELS" else str(run) if a == "RUN" else a for a in args]
    code = f"import sys; sys.argv = ['harness', *{argv!r}]\nfrom harness.cli.entry import main; main()"
    with open("/dev/full", "w") as full:
        proc = _python(code, stdout=full)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == 2 and "error: standard output: cannot write (No space left on device)" in proc.stderr


def test_a_closed_stderr_does_not_stop_a_run(tmp_path):
    """A review: `harness run cfg 2>&1 | head -1` stopped the run at its first progress line after head left and
    exited 0 with no outputs. Progress and warnings to a closed stderr are dropped; the run writes its outputs."""
    out = tmp_path / "out"
    code = (f"import sys; sys.argv = ['harness', 'run', {str(demo_config(tmp_path))!r}, '--out', {str(out)!r}]\n"
            "from harness.cli.entry import main; main()")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    proc.stderr.close()  # the reader is gone before the first line
    assert proc.wait(timeout=120) == 0
    assert (out / "results.json").is_file() and (out / "report.html").is_file()
