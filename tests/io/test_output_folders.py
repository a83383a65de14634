"""Output folders never lose a user's data, and an interrupted run leaves nothing behind.

Rules under test (docs/formats.md, "What a run writes"; harness/io/outdir.py): harness replaces only files it wrote (listed in
the folder's .harness-output marker), refuses any other non-empty folder unless --force, never overwrites or
deletes a file it did not write (not even with --force), never writes outside the output folder, allows one run
per folder at a time, and on SIGINT/SIGTERM exits 130/143 with nothing half-written left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clihelp import DEMO, ROOT, Case, assert_no_traceback, demo_config, harness, run_case, snapshot

# the PNG charts are files a run writes and a rerun replaces: every test here draws them
pytestmark = pytest.mark.charts

# the report's charts as PNG files beside it (the demo golden set has the tags difficulty and topic)
PLOTS = {"plot_recall_ndcg.png", "plot_precision.png", "plot_first_rank.png", "plot_verdicts_by_difficulty.png",
         "plot_verdicts_by_topic.png"}
OUTPUTS = {"results.json", "run.trec", "run.chunks.trec", "qrels.chunks.trec", "hits.parquet", "per_query.csv",
           "report.md", "report.html"} | PLOTS
MESSAGE = "interrupted: nothing half-written was left behind"


def marker(folder: Path) -> dict:
    return json.loads((folder / ".harness-output").read_text())


def leftovers(folder: Path) -> list[str]:
    """harness's transient entries (lock, staging folders) anywhere under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.name == ".harness-lock" or p.name.startswith(".harness-staging-"))


def run_ok(tmp: Path, *args) -> subprocess.CompletedProcess:
    proc = harness("run", *args, "-q", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return proc


def sweep_config(tmp: Path, sizes: list[int], k1s: list[float] = (1.2,), name: str = "cfg.yaml") -> Path:
    return demo_config(tmp, name, sweep=f"{{chunking.size: {list(sizes)}, retriever.k1: {list(k1s)}}}")


def renamed_config(tmp: Path, run_name: str) -> Path:
    path = tmp / f"{run_name}.yaml"
    path.write_text(demo_config(tmp).read_text().replace("name: t\n", f"name: {run_name}\n"))
    return path


# --- setups: each writes what the case needs under tmp and returns the command's arguments ------------------------

def foreign_folder(tmp: Path, *extra) -> list:
    (tmp / "d" / "src").mkdir(parents=True)
    (tmp / "d" / "src" / "a.py").write_text("print('mine')\n")
    (tmp / "d" / "notes.txt").write_text("my notes\n")
    demo_config(tmp)
    return ["run", "cfg.yaml", "--out", "d", *extra]


def foreign_folder_with_report(tmp: Path) -> list:
    args = foreign_folder(tmp, "--force")
    (tmp / "d" / "report.md").write_text("# my own report, not harness's\n")
    return args


def config_output(value: str):
    def setup(tmp: Path) -> list:
        (tmp / "project").mkdir()
        (tmp / "project" / "keep.txt").write_text("unrelated\n")
        demo_config(tmp / "project", output=value)
        return ["run", "project/cfg.yaml"]
    return setup


def output_is_the_corpus(tmp: Path) -> list:
    (tmp / "data").mkdir()
    shutil.copy(DEMO / "corpus.jsonl", tmp / "data" / "corpus.jsonl")
    (tmp / "cfg.yaml").write_text(
        f"name: t\ncorpus: {{path: data/corpus.jsonl}}\nchunking: {{strategy: sentences, size: 2}}\n"
        f"goldset: {{path: {DEMO / 'goldset.jsonl'}}}\nretriever: {{kind: bm25, backend: fast}}\n"
        f"output: data/corpus.jsonl\n")
    return ["run", "cfg.yaml"]


def out_is_a_file(tmp: Path) -> list:
    demo_config(tmp)
    (tmp / "notes.txt").write_text("mine\n")
    return ["run", "cfg.yaml", "--out", "notes.txt"]


def out_under_a_file(tmp: Path) -> list:
    return out_is_a_file(tmp)[:-1] + ["notes.txt/sub"]


def other_runs_folder(tmp: Path, *extra) -> list:
    run_ok(tmp, demo_config(tmp), "--out", "d")
    (tmp / "d" / "mine.txt").write_text("added by the user\n")
    return ["run", renamed_config(tmp, "other"), "--out", "d", *extra]


def own_folder_rerun(tmp: Path) -> list:
    run_ok(tmp, demo_config(tmp), "--out", "d")
    (tmp / "d" / "notes.md").write_text("added by the user\n")
    (tmp / "d" / "extra").mkdir()
    (tmp / "d" / "extra" / "x.csv").write_text("1,2\n")
    (tmp / "inode").write_text(str((tmp / "d" / "results.json").stat().st_ino))
    return ["run", "cfg.yaml", "--out", "d"]


def sweep_rerun_with_new_grid(tmp: Path) -> list:
    run_ok(tmp, sweep_config(tmp, [1, 2]), "--out", "d")
    old_point = tmp / "d" / "t-size_2-k1_1.2"
    assert (old_point / "results.json").is_file()
    (old_point / "mine.txt").write_text("the user's file inside a run folder\n")
    (tmp / "d" / "top.txt").write_text("the user's file beside the runs\n")
    sweep_config(tmp, [1, 4])
    return ["run", "cfg.yaml", "--out", "d"]


def empty_folder(tmp: Path) -> list:
    (tmp / "d").mkdir()
    return ["run", demo_config(tmp), "--out", "d"]


def missing_nested(tmp: Path) -> list:
    return ["run", demo_config(tmp), "--out", "a/b/c"]


def dead_runs_leftovers(tmp: Path) -> list:
    run_ok(tmp, demo_config(tmp), "--out", "d")
    dead = 2 ** 22 + 12345  # above Linux's default pid_max: no such process
    (tmp / "d" / ".harness-lock").write_text(json.dumps({"pid": dead, "command": "harness run x", "since": "then"}))
    junk = tmp / "d" / f".harness-staging-{dead}-abc" / "files"
    junk.mkdir(parents=True)
    (junk / "results.json").write_text("half-written")
    return ["run", "cfg.yaml", "--out", "d"]


def failing_run(tmp: Path) -> list:
    (tmp / "run.trec").write_text("q1 Q0 nodoc 1 1.0 x\n")  # fails while running, after the folder was opened
    return ["run", demo_config(tmp, retriever="{kind: external, path: run.trec}"), "--out", "new/sub"]


# --- checks ---------------------------------------------------------------------------------------------------------

def untouched_foreign(tmp: Path, proc) -> None:
    assert sorted(os.listdir(tmp / "d")) == ["notes.txt", "src"]


def force_adopted(tmp: Path, proc) -> None:
    d = tmp / "d"
    assert set(marker(d)["files"]) == OUTPUTS and marker(d)["complete"] is True
    assert set(os.listdir(d)) == OUTPUTS | {"src", "notes.txt", ".harness-output"}


def nothing_written(tmp: Path, proc) -> None:
    d = tmp / "d"
    assert not (d / "results.json").exists() and not (d / ".harness-output").exists() and not leftovers(d)


def no_siblings(tmp: Path, proc) -> None:
    assert sorted(os.listdir(tmp / "data")) == ["corpus.jsonl"]
    assert sorted(os.listdir(tmp)) == ["cfg.yaml", "data"]


def other_run_replaced(tmp: Path, proc) -> None:
    d = tmp / "d"
    assert marker(d)["run"] == "other" and set(marker(d)["files"]) == OUTPUTS
    assert json.loads((d / "results.json").read_text())["name"] == "other"
    assert (d / "mine.txt").read_text() == "added by the user\n"


def rerun_replaced(tmp: Path, proc) -> None:
    d = tmp / "d"
    assert (d / "results.json").stat().st_ino != int((tmp / "inode").read_text())  # a new file moved in
    assert (d / "notes.md").read_text() == "added by the user\n" and (d / "extra" / "x.csv").read_text() == "1,2\n"
    assert set(marker(d)["files"]) == OUTPUTS and not leftovers(d)


def sweep_replaced(tmp: Path, proc) -> None:
    d = tmp / "d"
    runs = ["t-size_1-k1_1.2", "t-size_4-k1_1.2"]
    tops = {"leaderboard.json", "leaderboard.md", "leaderboard.html", "best.yaml",
            "plot_sweep_chunking_size.png", "plot_sweep_retriever_k1.png"}  # the metric against each parameter
    assert set(marker(d)["files"]) == tops | {f"{r}/{f}" for r in runs for f in OUTPUTS}
    # the dropped grid point's files are gone; the file the user put in its folder is not
    assert os.listdir(d / "t-size_2-k1_1.2") == ["mine.txt"]
    assert (d / "top.txt").read_text() == "the user's file beside the runs\n"
    assert set(os.listdir(d)) == tops | set(runs) | {"t-size_2-k1_1.2", "top.txt", ".harness-output"}
    assert {r["run"] for r in json.loads((d / "leaderboard.json").read_text())["runs"]} == set(runs)


def written(folder: str):
    def check(tmp: Path, proc) -> None:
        d = tmp / folder
        assert set(marker(d)["files"]) == OUTPUTS and set(os.listdir(d)) == OUTPUTS | {".harness-output"}
        assert proc.stdout.strip() == str(Path(folder) / "report.html")
    return check


def dead_leftovers_removed(tmp: Path, proc) -> None:
    d = tmp / "d"
    assert not leftovers(d)
    assert json.loads((d / "results.json").read_text())["name"] == "t"


def no_folder_left(tmp: Path, proc) -> None:
    assert not (tmp / "new").exists()


CASES = [
    Case("foreign-folder-refused", foreign_folder, ("--out d:", "not empty (notes.txt, src)",
                                                    "not written by harness", "--force"),
         keep=("d",), check=untouched_foreign),
    Case("foreign-folder-force-keeps-user-files", lambda t: foreign_folder(t, "--force"), code=0, keep=("d",),
         check=force_adopted),
    Case("force-never-overwrites-a-user-file", foreign_folder_with_report,
         ("--out d: harness would overwrite what it did not write", "report.md: exists and harness did not write it"),
         keep=("d",), check=nothing_written),
    Case("config-output-is-its-parent", config_output(".."), ("project/cfg.yaml: output:", "not empty",
                                                              "not written by harness"), keep=(".",)),
    # output: resolves from the folder harness runs in (issue 35), as --out does: "." is that folder, not the config's
    Case("config-output-is-the-current-folder", config_output("."), ("project/cfg.yaml: output:",
                                                                     "not empty (project)"), keep=(".",)),
    Case("config-output-is-the-corpus-file", output_is_the_corpus, ("cfg.yaml: output:", "data/corpus.jsonl: is a "
                                                                                         "file, not a folder"),
         keep=(".",), check=no_siblings),
    Case("out-is-a-file", out_is_a_file, ("--out notes.txt: is a file, not a folder",), keep=(".",)),
    Case("out-under-a-file", out_under_a_file, ("--out notes.txt/sub: cannot create the folder", "is a file"),
         keep=(".",)),
    Case("another-runs-folder-refused", other_runs_folder, ("--out d: holds the outputs of run 't'", "not 'other'",
                                                            "--force"), keep=("d",)),
    Case("another-runs-folder-force", lambda t: other_runs_folder(t, "--force"), code=0, check=other_run_replaced),
    Case("rerun-replaces-own-files-keeps-added-ones", own_folder_rerun, code=0, check=rerun_replaced),
    Case("sweep-rerun-removes-dropped-points", sweep_rerun_with_new_grid, code=0, check=sweep_replaced),
    Case("empty-folder", empty_folder, code=0, check=written("d")),
    Case("missing-nested-folder", missing_nested, code=0, check=written("a/b/c")),
    Case("dead-runs-lock-and-staging-cleaned", dead_runs_leftovers, code=0, check=dead_leftovers_removed),
    Case("failed-run-leaves-no-folder", failing_run, ("run.trec:1",), keep=(".",), check=no_folder_left),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_output_folder_rules(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


# --- interruption and concurrency: real signals to a real `harness run` ---------------------------------------------

def start_slow_sweep(tmp: Path, out: str) -> subprocess.Popen:
    """A 12-point sweep (tens of seconds), started as a user would; returns once it is staging into ``out``."""
    cfg = sweep_config(tmp, [1, 2, 3], [0.6, 0.9, 1.2, 1.5], name="slow.yaml")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # A shell that ignores SIGINT for background jobs passes that on; a user's terminal does not.
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main", "run", str(cfg), "--out", out, "-q"], cwd=tmp,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".harness-staging-") for p in (tmp / out).glob(".*")):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the sweep never started staging: exit {proc.poll()}\n{proc.communicate()[1]}")
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_signal_leaves_previous_outputs_intact(tmp_path: Path, signum: int, code: int) -> None:
    run_ok(tmp_path, sweep_config(tmp_path, [2], name="slow.yaml"), "--out", "d")  # the previous outputs
    (tmp_path / "d" / "mine.txt").write_text("the user's\n")
    before = snapshot(tmp_path / "d")
    proc = start_slow_sweep(tmp_path, "d")
    assert leftovers(tmp_path / "d")  # the lock and the staging folder exist while it runs
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert_no_traceback(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == MESSAGE and err.count(MESSAGE) == 1 and out == ""
    assert snapshot(tmp_path / "d") == before and not leftovers(tmp_path / "d")


def test_second_run_on_a_busy_folder_names_the_holder(tmp_path: Path) -> None:
    first = start_slow_sweep(tmp_path, "d")
    try:
        second = harness("run", demo_config(tmp_path), "--out", "d", "-q", cwd=tmp_path)
    finally:
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=60)
    assert_no_traceback(second)
    assert second.returncode == 2, second.stderr
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]  # (warnings may precede)
    assert len(errors) == 1 and errors[0].startswith("error: --out d: in use by another harness run"), second.stderr
    assert f"(pid {first.pid}, `harness run {tmp_path / 'slow.yaml'} --out d -q`, since " in second.stderr
    assert first.returncode == 143 and err.count(MESSAGE) == 1
    assert not (tmp_path / "d").exists()  # the interrupted run had created it; nothing of it is left


def test_killed_run_leftovers_are_removed_by_the_next_run(tmp_path: Path) -> None:
    proc = start_slow_sweep(tmp_path, "d")
    proc.kill()  # SIGKILL: no cleanup can run
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert leftovers(tmp_path / "d") != []  # what SIGKILL leaves
    run_ok(tmp_path, demo_config(tmp_path), "--out", "d")
    assert not leftovers(tmp_path / "d")
    assert set(os.listdir(tmp_path / "d")) == OUTPUTS | {".harness-output"}


# --- the pieces, as a library user meets them ------------------------------------------------------------------------

def test_library_import_leaves_signal_handling_alone() -> None:
    code = ("import signal, harness, harness.cli.main, harness.io.outdir, harness.render.outputs, harness.pipeline.sweep; "
            "print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.stdout.strip() == "True", proc.stderr


def test_deferred_holds_ctrl_c_until_the_block_is_done() -> None:
    from harness.core.interrupt import deferred

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's default handler in this process")
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # without the deferral, KeyboardInterrupt would be raised here
            steps.append("finished")
    assert steps == ["finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_open_output_removes_the_folder_it_created_when_the_run_fails(tmp_path: Path) -> None:
    from harness.io.outdir import open_output

    with pytest.raises(RuntimeError):
        with open_output(tmp_path / "a" / "b", run="t") as folder:
            with folder.publish() as stage:
                (stage / "results.json").write_text("{}")
                raise RuntimeError("the run failed")
    assert os.listdir(tmp_path) == []


def test_write_outputs_into_a_foreign_folder_is_refused_as_a_library_call(tmp_path: Path) -> None:
    from harness.core.errors import InputError
    from harness.io.outdir import open_output

    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(InputError, match=r"not empty \(mine.txt\) and not written by harness"):
        with open_output(tmp_path, run="t"):
            pass
    assert os.listdir(tmp_path) == ["mine.txt"]


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_a_library_swallowed_still_stops_the_publish(tmp_path: Path, signum: int, code: int) -> None:
    """A signal whose exception library code swallows (seen: inside pyarrow's lazy import of pandas) is acted on
    before the outputs are moved in: the previous run's files stay, nothing is staged, the exit is the signal's."""
    script = f"""
import os, signal, sys
from pathlib import Path
from harness.core.interrupt import install
from harness.io.outdir import open_output
install()
with open_output(Path({str(tmp_path / "d")!r}), run="t") as folder:
    with folder.publish() as stage:
        (stage / "results.json").write_text("second")
        try:
            os.kill(os.getpid(), {int(signum)})
            import time; time.sleep(0.2)
        except BaseException:
            pass  # what a library that catches everything does
        print("swallowed", flush=True)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    first = subprocess.run([sys.executable, "-c", script.replace('os.kill(os.getpid(), ', 'print(').replace(
        "import time; time.sleep(0.2)", "pass")], env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    before = snapshot(tmp_path / "d")
    got = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert got.stdout == "swallowed\n"
    assert -got.returncode == signum or got.returncode == code, got.stderr
    assert snapshot(tmp_path / "d") == before and not leftovers(tmp_path / "d")
