"""Publishing a run's outputs is all or nothing, and a file harness wrote that someone changed since is not silently
replaced (docs/formats.md, "What a run writes"; harness/io/outdir.py, harness/io/outmarker.py).

A rename that fails is simulated by patching os.replace (a test cannot rely on chattr +i): the previous outputs stay
byte for byte, the error is one line naming the file and the reason, exit 2, and no staging or backup is left."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clihelp import ROOT, assert_input_error, demo_config, harness, snapshot

MARKER = ".harness-output"


def marker(folder: Path) -> dict:
    return json.loads((folder / MARKER).read_text())


def leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.name == ".harness-lock" or p.name.startswith(".harness-staging-"))


def outputs(folder: Path) -> dict[str, str]:
    """``snapshot`` without harness's transient entries (taken while a run holds the folder)."""
    return {k: v for k, v in snapshot(folder).items() if not k.startswith((".harness-lock", ".harness-staging-"))}


def run_ok(tmp: Path, *args) -> None:
    proc = harness("run", "cfg.yaml", "--out", "d", "-q", *args, cwd=tmp)
    assert proc.returncode == 0, proc.stderr


def failing_replace(monkeypatch, should_fail) -> None:
    """os.replace raising EPERM (what chattr +i gives) for the renames ``should_fail(src, dst)`` picks."""
    real = os.replace

    def replace(src, dst, **kw):
        if should_fail(Path(os.path.abspath(src)), Path(os.path.abspath(dst))):  # the CLI passes --out as given
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(src), None, str(dst))
        return real(src, dst, **kw)

    monkeypatch.setattr(os, "replace", replace)


# --- 1. a failing rename leaves the previous outputs, not a mix of two runs ---------------------------------------

@pytest.mark.parametrize("side,expect", [("dst", "cannot move results.json into place"),
                                         ("src", "cannot move the previous results.json aside")],
                         ids=["moving-in", "moving-aside"])
def test_a_failing_rename_keeps_the_previous_outputs(tmp_path: Path, monkeypatch, side: str, expect: str) -> None:
    demo_config(tmp_path)
    run_ok(tmp_path)
    out = tmp_path / "d"
    (out / "mine.txt").write_text("the user's\n")
    before = snapshot(out)
    staged = lambda path: ".harness-staging-" in str(path) and path.parent.name == "files"  # noqa: E731
    failing_replace(monkeypatch, lambda src, dst: dst == out / "results.json" and staged(src) if side == "dst"
                    else src == out / "results.json")
    proc = harness("run", "cfg.yaml", "--out", "d", "-q", "--set", "cutoff.k=3", cwd=tmp_path)
    monkeypatch.undo()
    assert_input_error(proc, f"--out d: {expect}: Operation not permitted; the previous outputs are as they were")
    assert [line for line in proc.stderr.splitlines() if not line.startswith("warning:")] == \
        [f"error: --out d: {expect}: Operation not permitted; the previous outputs are as they were"]
    assert snapshot(out) == before and marker(out)["complete"] is True
    assert not leftovers(out)


def publish(folder: Path, files: dict[str, str], run: str = "t", force: bool = False, *, replace=None,
            monkeypatch=None) -> None:
    """``files`` staged and published as a run's outputs; ``replace`` (with ``monkeypatch``): what ``os.replace``
    does once they are staged, while they are published."""
    from harness.io.outdir import open_output

    with open_output(folder, run=run, force=force) as out:
        with out.publish() as stage:
            for rel, text in files.items():
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                (stage / rel).write_text(text)
            if replace is not None:
                monkeypatch.setattr(os, "replace", replace)


FIRST = {"a.txt": "first a\n", "gone.txt": "only the first run\n", "sub/b.txt": "first b\n"}
SECOND = {"a.txt": "second a\n", "sub/b.txt": "second b\n", "new/c.txt": "only the second run\n"}


def first_run(tmp: Path) -> Path:
    folder = tmp / "d"
    publish(folder, FIRST)
    (folder / "sub" / "mine.txt").write_text("the user's, inside harness's subfolder\n")
    return folder


def count_renames(tmp: Path, monkeypatch) -> int:
    """How many os.replace calls publishing SECOND over FIRST makes once the files are staged."""
    calls = []
    real = os.replace
    folder = first_run(tmp / "count")
    publish(folder, SECOND, replace=lambda s, d, **kw: (calls.append(d), real(s, d, **kw))[1],
            monkeypatch=monkeypatch)
    monkeypatch.undo()
    assert (folder / "a.txt").read_text() == "second a\n"
    return len(calls)


def test_every_step_of_publishing_can_fail_and_leaves_the_previous_outputs(tmp_path: Path, monkeypatch) -> None:
    """Fail the 1st, 2nd, ... rename of the publishing (moving aside, moving in, the marker): each time the folder is
    byte for byte what the first run and the user left, including the marker, with no new folder and no leftovers."""
    from harness.core.errors import InputError

    total = count_renames(tmp_path, monkeypatch)
    assert total >= 2 * len(SECOND) + 2  # aside, in, two markers: every one of them is a step tried below
    real = os.replace
    for k in range(total):
        folder = first_run(tmp_path / f"k{k}")
        before = snapshot(folder)
        calls = []

        def replace(src, dst, **kw):
            calls.append(dst)
            if len(calls) == k + 1:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real(src, dst, **kw)

        with pytest.raises(InputError) as caught:
            publish(folder, SECOND, replace=replace, monkeypatch=monkeypatch)
        monkeypatch.undo()
        message = str(caught.value)
        assert "\n" not in message and "Input/output error; the previous outputs are as they were" in message, k
        assert snapshot(folder) == before, f"step {k + 1} of {total}: {message}"
        assert not (folder / "new").exists() and not leftovers(folder), k


def test_when_putting_back_fails_too_the_marker_says_incomplete(tmp_path: Path, monkeypatch) -> None:
    """The worst case (a move in fails, then moving an earlier one back fails): no mix is passed off as complete,
    and the next run replaces every file either run wrote."""
    from harness.core.errors import InputError

    folder = first_run(tmp_path)
    real = os.replace
    moved_in: list[Path] = []

    def replace(src, dst, **kw):
        src, dst = Path(src), Path(dst)
        if dst == folder / "sub" / "b.txt" and ".harness-staging-" in str(src):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if src == folder / "a.txt" and "files" in dst.parts and folder / "a.txt" in moved_in:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))  # the undo of a.txt's move in
        if dst == folder / "a.txt":
            moved_in.append(dst)
        return real(src, dst, **kw)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(InputError) as caught:
        publish(folder, SECOND)
    monkeypatch.undo()
    assert str(caught.value) == (f"{folder}: cannot move sub/b.txt into place: Input/output error; the previous "
                                 f"outputs could not all be put back (a.txt: Operation not permitted), so "
                                 f"{MARKER} says complete: false and the next run replaces them")
    m = marker(folder)
    assert m["complete"] is False and set(m["files"]) == set(FIRST) | set(SECOND) and m["written"] == {}
    assert not leftovers(folder)
    publish(folder, SECOND)  # the next run: every file either run wrote is replaced or removed; the user's stays
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == \
        [MARKER, "a.txt", "new/c.txt", "sub/b.txt", "sub/mine.txt"]


def test_ctrl_c_while_publishing_waits_for_the_new_complete_set(tmp_path: Path, monkeypatch) -> None:
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's default handler in this process")
    real = os.replace
    for k in (0, 3, 6):
        folder = first_run(tmp_path / f"k{k}")
        calls = []

        def replace(src, dst, **kw):
            calls.append(dst)
            if len(calls) == k + 1:
                os.kill(os.getpid(), signal.SIGINT)
            return real(src, dst, **kw)

        with pytest.raises(KeyboardInterrupt):
            publish(folder, SECOND, replace=replace, monkeypatch=monkeypatch)
        monkeypatch.undo()
        got = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
        assert {k: v for k, v in got.items() if k != MARKER} == {**SECOND, "sub/mine.txt": got["sub/mine.txt"]}
        assert marker(folder)["complete"] is True and not leftovers(folder)


@pytest.mark.parametrize("fail", [False, True], ids=["moves-succeed", "a-move-fails"])
def test_sigterm_while_publishing_leaves_one_complete_set(tmp_path: Path, fail: bool) -> None:
    """SIGTERM in a process with the CLI's handlers, sent in the middle of the moves: it waits for them, and the
    folder holds the new complete set, or the previous one when a move fails, never a mix; exit 143."""
    folder = first_run(tmp_path)
    before = snapshot(folder)
    script = f"""
import errno, os, signal
from pathlib import Path
from harness.core.interrupt import install
from harness.io.outdir import open_output
install()
folder = Path({str(folder)!r})
real, calls = os.replace, []
def replace(src, dst, **kw):
    calls.append(dst)
    if len(calls) == 4:
        os.kill(os.getpid(), signal.SIGTERM)
    if {fail} and Path(dst) == folder / "new" / "c.txt":
        raise OSError(errno.EIO, "Input/output error")
    return real(src, dst, **kw)
try:
    with open_output(folder, run="t") as out:
        with out.publish() as stage:
            for rel, text in {SECOND!r}.items():
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                (stage / rel).write_text(text)
            os.replace = replace
except Exception as exc:
    print("error:", exc)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 143, proc.stdout + proc.stderr
    if fail:
        assert snapshot(folder) == before
    else:
        assert (folder / "a.txt").read_text() == "second a\n" and (folder / "new" / "c.txt").is_file()
        assert not (folder / "gone.txt").exists() and marker(folder)["complete"] is True
    assert not leftovers(folder)


# --- 2. a file harness wrote and someone changed since is not silently replaced -----------------------------------

NOTES = "\n## My notes\n\nq12 fails because the chunk splits the table.\n"


def test_an_edited_output_is_refused_before_the_run_and_kept(tmp_path: Path) -> None:
    demo_config(tmp_path)
    run_ok(tmp_path)
    run_ok(tmp_path)  # an unchanged folder is rerun without --force
    out = tmp_path / "d"
    with (out / "report.md").open("a") as fh:
        fh.write(NOTES)
    before = snapshot(out)
    proc = harness("run", "cfg.yaml", "--out", "d", "-q", cwd=tmp_path)
    assert_input_error(proc, "report.md: changed since harness wrote it; --force replaces it")
    assert [line for line in proc.stderr.splitlines() if not line.startswith("warning:")] == [
        "error: --out d: files harness wrote were changed since; move them away to keep them, or pass --force to "
        "replace them", "  - report.md: changed since harness wrote it; --force replaces it"]
    assert snapshot(out) == before and (out / "report.md").read_text().endswith(NOTES) and not leftovers(out)

    run_ok(tmp_path, "--force")  # the user's word: replace it
    assert not (out / "report.md").read_text().endswith(NOTES)
    run_ok(tmp_path)  # and the folder is harness's again


def test_the_marker_records_size_and_mtime_of_every_file(tmp_path: Path) -> None:
    demo_config(tmp_path)
    run_ok(tmp_path)
    out = tmp_path / "d"
    m = marker(out)
    assert sorted(m["written"]) == sorted(m["files"])
    import hashlib

    for rel, entry in m["written"].items():
        st = os.lstat(out / rel)
        digest = hashlib.sha256((out / rel).read_bytes()).hexdigest()  # (every demo output is under HASHED_UP_TO)
        assert entry == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}, rel


def test_a_marker_without_sizes_and_times_still_works(tmp_path: Path) -> None:
    """Folders written before the marker recorded them: their files count as unchanged, and are replaced."""
    demo_config(tmp_path)
    run_ok(tmp_path)
    out = tmp_path / "d"
    old = marker(out)
    del old["written"]
    (out / MARKER).write_text(json.dumps(old, indent=1) + "\n")
    with (out / "report.md").open("a") as fh:
        fh.write(NOTES)
    run_ok(tmp_path)
    assert not (out / "report.md").read_text().endswith(NOTES) and set(marker(out)["written"]) == set(old["files"])


def test_malformed_entries_count_as_unknown() -> None:
    from harness.io.outmarker import _stamps

    files = frozenset({"a", "b", "c", "d"})
    raw = {"a": {"size": 3, "mtime_ns": 5}, "b": {"size": "3", "mtime_ns": 5}, "c": [3, 5], "d": {"size": True,
           "mtime_ns": 5}, "elsewhere": {"size": 1, "mtime_ns": 1}}
    assert _stamps(raw, files) == {"a": (3, 5, None)}
    assert _stamps({"a": {"size": 3, "mtime_ns": 5, "sha256": "x"}}, files) == {"a": (3, 5, None)}  # not a digest
    assert _stamps(["a"], files) == {}


def _refused_publish(folder: Path, staged: dict[str, str], edits: dict[str, str]):
    """A run that stages ``staged`` while ``edits`` are written into its folder, whose publish is refused: (the
    error, the folder's outputs as they were when the run came to publish)."""
    from harness.core.errors import InputError
    from harness.io.outdir import open_output

    with pytest.raises(InputError) as caught:
        with open_output(folder, run="t") as out:
            with out.publish() as stage:
                for name, text in staged.items():
                    (stage / name).write_text(text)
                for name, text in edits.items():
                    (folder / name).write_text(text)
                before = outputs(folder)
    return caught.value, before


def test_a_changed_file_the_run_would_remove_is_refused_too(tmp_path: Path) -> None:
    from harness.core.errors import InputError

    folder = first_run(tmp_path)
    error, before = _refused_publish(folder, {"a.txt": "second a\n"},
                                     {"gone.txt": "only the first run, and my edit\n"})
    assert error.problems == ["gone.txt: changed since harness wrote it; --force removes it"]
    assert snapshot(folder) == before and not leftovers(folder)
    with pytest.raises(InputError) as caught:  # known at once when opening, before the run says what it writes
        publish(folder, SECOND)
    assert caught.value.problems == ["gone.txt: changed since harness wrote it; --force replaces it"]
    publish(folder, SECOND, force=True)
    assert not (folder / "gone.txt").exists() and (folder / "sub" / "mine.txt").is_file()


def test_a_file_changed_while_the_run_works_is_refused_when_publishing(tmp_path: Path) -> None:
    """Checked when the folder is opened (before the work) and again before the first rename (a run takes minutes);
    a clash with a file harness did not write is reported in the same list."""
    folder = first_run(tmp_path)
    error, before = _refused_publish(folder, {"a.txt": "second a\n", "theirs.txt": "harness's\n"},
                                     {"a.txt": "edited during the run\n", "theirs.txt": "the user's\n"})
    assert str(error).splitlines()[0].endswith("harness would overwrite what it did not write; move these "
                                               "away or choose another folder")
    assert error.problems == ["theirs.txt: exists and harness did not write it",
                              "a.txt: changed since harness wrote it; --force replaces it"]
    assert snapshot(folder) == before and not leftovers(folder)


def test_another_runs_folder_with_force_replaces_its_changed_files(tmp_path: Path) -> None:
    """--force already means "replace another run's outputs"; a changed one among them is replaced as well."""
    folder = first_run(tmp_path)
    (folder / "a.txt").write_text("edited\n")
    publish(folder, SECOND, run="other", force=True)
    assert (folder / "a.txt").read_text() == "second a\n" and marker(folder)["run"] == "other"


def test_harness_rewriting_a_report_in_the_folder_or_a_copy_of_the_folder_is_not_an_edit(tmp_path: Path) -> None:
    """A review: `harness report results.json -o out/report.html` made the next run refuse the folder, and so did a
    copy of it (cp -r gives every file a new time). The marker follows harness's own rewrite; a small file whose time
    moved but whose content did not is unchanged; an edit is still refused."""
    import shutil

    cfg, out = demo_config(tmp_path), tmp_path / "out"
    assert harness("run", cfg, "--out", out, "-q").returncode == 0
    assert harness("report", out / "results.json", "-o", out / "report.html").returncode == 0
    again = harness("run", cfg, "--out", out, "-q")
    assert again.returncode == 0, again.stderr
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, copy_function=shutil.copy)  # contents, not times (cp -r)
    into_copy = harness("run", cfg, "--out", copy, "-q")
    assert into_copy.returncode == 0, into_copy.stderr
    with open(copy / "report.md", "a") as fh:
        fh.write("my notes\n")
    assert_input_error(harness("run", cfg, "--out", copy, "-q"), "report.md: changed since harness wrote it")
    assert "my notes" in (copy / "report.md").read_text()
