"""What a tester's signal-timing walk found (2026-12-05): a Ctrl-C or SIGTERM just after a command printed its result
ended in a traceback from an exit function or ``threading._shutdown`` with exit 0, in a death by SIGINT with no
word, in stdout written twice, or in "nothing half-written was left behind" after the new outputs were published.

Each test sends the signal from inside the process at the exact moment (a wrapped ``os.write``, a rename, an exit
function), in a fresh interpreter where the process is what is tested: none sleeps or races."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clihelp import ROOT, assert_no_traceback, demo_config, harness

INTERRUPTED = "interrupted: nothing half-written was left behind"
LATE = "interrupted: the command had already finished; nothing was cut short"
SIGNALS = [("SIGINT", 130), ("SIGTERM", 143)]


def _cli(args, before: str = "") -> subprocess.CompletedProcess:
    """``harness ARGS`` through the console script's entry, after ``before`` (a patch that sends the signal)."""
    code = textwrap.dedent(before) + (f"\nimport sys\nsys.argv = ['harness', *{[str(a) for a in args]!r}]\n"
                                      "from harness.cli.entry import main\nmain()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


def _after_first_stdout_write(signal_name: str) -> str:
    """The signal sent right after the first write to stdout returns: its handler runs inside ``os.kill``, between
    the write and the moment the writer counts it (where the tester's signals landed)."""
    return f"""
        import os, signal
        real_write, sent = os.write, []
        def write(fd, data):
            n = real_write(fd, data)
            if fd == 1 and not sent:
                sent.append(fd)
                os.kill(os.getpid(), signal.{signal_name})
            return n
        os.write = write
        """


def _assert_late(proc: subprocess.CompletedProcess, code: int) -> None:
    assert_no_traceback(proc)
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == LATE and INTERRUPTED not in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("run")
    proc = harness("run", demo_config(tmp), "--out", tmp / "out", "-q", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    (tmp / "rules.yaml").write_text("rules: ['doc.ndcg@10 >= 0.1']\n")
    return tmp / "out" / "results.json"


def _gate(results: Path, *extra) -> list:
    return ["gate", results, "--rules", results.parent.parent / "rules.yaml", *extra]


def test_a_signal_just_after_run_printed_its_path_leaves_the_outputs_and_the_line(tmp_path):
    """The tester's `harness run` case: the outputs are published and the path printed once; exit 130 says the
    Ctrl-C came, the line says it stopped nothing (it used to say nothing half-written, or print the path twice)."""
    out = tmp_path / "out"
    proc = _cli(["run", demo_config(tmp_path), "--out", out, "-q"], _after_first_stdout_write("SIGINT"))
    _assert_late(proc, 130)
    assert proc.stdout == f"{out / 'report.html'}\n"
    assert (out / "results.json").is_file() and (out / "report.html").is_file()


@pytest.mark.parametrize("signal_name, code", SIGNALS)
def test_a_signal_between_a_stdout_write_and_its_count_does_not_send_it_twice(results, signal_name, code):
    """The tester's `harness gate` case: 14 of 15 printed the verdict twice (the exception left the write done but
    not counted, and the buffer went out again at the exit)."""
    whole = harness(*_gate(results))
    assert whole.returncode == 0 and whole.stdout.startswith("## Retrieval gate"), whole.stderr
    proc = _cli(_gate(results), _after_first_stdout_write(signal_name))
    _assert_late(proc, code)
    assert proc.stdout == whole.stdout


@pytest.mark.parametrize("signal_name, code", SIGNALS)
def test_a_signal_held_while_the_outputs_are_published_is_late_not_nothing_half_written(results, tmp_path,
                                                                                       signal_name, code):
    """A signal held until gate's --summary and --junit are in place: they are the new ones, so the command ends as
    a late signal ends it, with its verdict printed once, not as one that left the previous outputs."""
    summary, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    proc = _cli(_gate(results, "--summary", summary, "--junit", junit), f"""
        import os, signal
        from harness.io import files
        real = files.Staged.publish
        def publish(self):
            os.kill(os.getpid(), signal.{signal_name})  # held: the renames are done first
            return real(self)
        files.Staged.publish = publish
        """)
    _assert_late(proc, code)
    assert proc.stdout.startswith("## Retrieval gate") and proc.stdout.count("## Retrieval gate") == 1
    assert summary.read_text() == proc.stdout and junit.is_file()


def test_an_interrupted_command_sends_none_of_what_it_had_printed(results, tmp_path):
    """gate prints its verdict, then writes --summary: interrupted before the summary is published, the command
    stops with nothing of its result out, stdout included (the verdict used to go out with the interrupted line)."""
    summary = tmp_path / "gate.md"
    proc = _cli(_gate(results, "--summary", summary), """
        import os, signal
        from harness.io import files
        real = files.stage
        def stage(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)
            return real(*args, **kwargs)
        files.stage = stage
        """)
    assert_no_traceback(proc)
    assert proc.returncode == 130 and proc.stderr.strip().splitlines()[-1] == INTERRUPTED, proc.stderr
    assert proc.stdout == "" and not summary.exists()


@pytest.mark.parametrize("where", ["atexit", "threading"])
@pytest.mark.parametrize("signal_name, code", SIGNALS)
def test_a_signal_in_the_interpreters_shutdown_is_late_not_a_traceback(where, signal_name, code):
    """The tester's tracebacks: "Exception ignored in atexit callback ... KeyboardInterrupt" (logging's shutdown)
    and "Exception ignored in: <module 'threading'> ... assert tlock.locked()", each with exit 0."""
    register = "atexit.register" if where == "atexit" else "threading._register_atexit"
    proc = _cli(["--version"], f"""
        import atexit, os, signal, threading
        from harness.core.interrupt import install
        install()  # first, as the console script does: its exit function then runs after this one
        {register}(os.kill, os.getpid(), signal.{signal_name})
        """)
    _assert_late(proc, code)
    assert proc.stdout.startswith("harness ") and proc.stdout.count("harness ") == 1


def test_a_signal_raised_inside_a_weakref_callback_still_stops_the_command(tmp_path):
    """The tester's sweep case: the handler's KeyboardInterrupt raised inside a weakref callback (Python can only
    print "Exception ignored in ..." and drop it), and the command went on. It is delivered again, silently, and
    stops the command's work."""
    qrels, run, went_on = tmp_path / "q.txt", tmp_path / "r.trec", tmp_path / "went-on"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 1.0 s\n")
    proc = _cli(["eval", qrels, run], f"""
        import signal, time, weakref
        import harness.metrics.streamed as streamed
        real = streamed.evaluate_files
        class Thing:
            pass
        def evaluate_files(*args, **kwargs):
            thing = Thing()
            ref = weakref.ref(thing, lambda r: signal.raise_signal(signal.SIGINT))  # the handler runs in the callback
            del thing
            for _ in range(500):  # the command's work: the interrupt comes in a few milliseconds, not 5 s
                time.sleep(0.01)
            open({str(went_on)!r}, "w").close()
            return real(*args, **kwargs)
        streamed.evaluate_files = evaluate_files
        """)
    assert_no_traceback(proc)
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == 130 and proc.stderr.strip() == INTERRUPTED, proc.stderr
    assert proc.stdout == "" and not went_on.exists()


def test_a_signal_while_deferred_swaps_handlers_leaves_both_handlers_in_place():
    """deferred used to swap both handlers for its own, one after the other: a SIGTERM between the two swaps left
    Ctrl-C on the swapped-in handler, which only noted it, for the rest of the run; under the CLI's handlers it
    now swaps nothing. A library user's handlers are swapped, and put back however the block ends."""
    proc = _python("""
        import os, signal
        from harness.core import interrupt
        real, sent = signal.signal, []
        def swap(signum, handler):
            previous = real(signum, handler)
            if signum == signal.SIGINT and not sent:  # right after the first swap
                sent.append(signum)
                os.kill(os.getpid(), signal.SIGTERM)
            return previous
        signal.signal = swap
        def theirs(signum, frame):
            raise RuntimeError("their SIGTERM handler")
        real(signal.SIGTERM, theirs)
        real(signal.SIGINT, signal.default_int_handler)  # (a shell's background job starts with Ctrl-C ignored)
        try:
            with interrupt.deferred():
                pass
        except RuntimeError:
            pass
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.getsignal(signal.SIGTERM) is theirs)
        interrupt.install()
        sent.clear()
        try:
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
        except interrupt.Terminated:
            print("terminated after the block")
        print(not sent, signal.getsignal(signal.SIGINT) is signal.getsignal(signal.SIGTERM) is interrupt._on_signal)
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            print("ctrl-c raises")
        """)
    assert proc.stdout.split("\n") == ["True True", "terminated after the block", "True True", "ctrl-c raises", ""], \
        proc.stdout + proc.stderr


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=60)


def test_a_program_that_calls_the_cli_keeps_its_handlers_and_its_exit_status(tmp_path):
    """cli.main() called by a program of the user's (not the console script): once the command is over, Ctrl-C
    raises in that program again and its own exit status stands. A review found one in-process call made every later
    signal a 'late' one and the process's exit status the command's: a pytest session with a failing test exited 0."""
    proc = _python("""
        import os, signal, sys, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whoever launched the suite
        from harness.cli.main import main
        sys.argv = ["harness", "--version"]
        try:
            main()
        except SystemExit as exc:
            print("exit", exc.code)
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler,
              signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            print("ctrl-c raises")
        sys.exit(3)
        """)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.split("\n")[1:] == ["exit 0", "True True", "ctrl-c raises", ""], proc.stdout + proc.stderr
    tests = tmp_path / "test_calls_main.py"
    tests.write_text("import sys\nimport pytest\nfrom harness.cli.main import main\n\n"
                     "def test_version(monkeypatch):\n    monkeypatch.setattr(sys, 'argv', ['harness', '--version'])\n"
                     "    with pytest.raises(SystemExit):\n        main()\n\n"
                     "def test_fails():\n    assert False\n")
    session = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert session.returncode == 1 and "1 failed, 1 passed" in session.stdout, session.stdout + session.stderr
