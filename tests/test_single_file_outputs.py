"""Single-file outputs (goldset build/pool/merge/check -o, report -o, gate --summary/--junit, harness init) never
replace a file that appeared while the command ran (unless --force), publish files that belong together all or none,
and leave nothing behind when a write fails: no temporary file, no empty folder made for it, no half a project.

Found by a tester (2026-12): a file created at the output path while the command ran was overwritten without --force;
`goldset build -o --unresolved --force` could leave a new golden set beside the old list of its unresolved answers and
blamed -o for the --unresolved file; `harness init` on a full disk left a half project it then refused to complete;
a failed write left the empty folders made for it."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import pytest

from clihelp import assert_input_error, demo_config, harness
from harness.io import files
from harness.core.errors import OutputAppeared

DOCS = {"a": "Orbit Drive runs on Windows 10 or later.", "b": "Passwords must be at least 12 characters long."}
APPEARED = "appeared while harness ran; not replaced (your file is kept; the output is not written)"


def _answers(tmp: Path) -> tuple[Path, Path]:
    """An answers file with one located answer and one missing (so --unresolved lists one)."""
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    src = tmp / "answers.jsonl"
    src.write_text(json.dumps({"id": "q1", "query": "os?", "answers": ["Windows 10 or later"]}) + "\n"
                   + json.dumps({"id": "q2", "query": "price?", "answers": ["6 dollars"]}) + "\n")
    return src, corpus


def _build(tmp: Path, *extra) -> list:
    src, corpus = _answers(tmp)
    return ["goldset", "build", "--from", src, "--corpus", corpus, *extra]


def _leftovers(folder: Path) -> list[str]:
    """Temporary or kept-aside files a write may have left (they start with a dot)."""
    return sorted(p.name for p in folder.rglob(".*"))


def _appear_during(monkeypatch, module, name: str, path: Path, text: str = "theirs\n") -> None:
    """``module.name`` also creates ``path`` (another program's file) when the command calls it, mid-run."""
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


def _full_disk_at(monkeypatch, call: int) -> None:
    """The ``call``-th fsync of a finished file fails as a full disk does (ENOSPC)."""
    real, calls = os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == call:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)


# ---- the no-clobber publish itself ---------------------------------------------------------------------------------

def _no_hard_links(monkeypatch):
    def link(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(files.os, "link", link)


def _no_rename_noreplace(monkeypatch):
    _no_hard_links(monkeypatch)
    monkeypatch.setattr(files, "_rename_noreplace", lambda tmp, path: False)


@pytest.mark.parametrize("filesystem", [lambda mp: None, _no_hard_links, _no_rename_noreplace],
                         ids=["hard-link", "renameat2", "check-then-rename"])
def test_a_file_that_appears_meanwhile_is_kept(tmp_path, monkeypatch, filesystem):
    filesystem(monkeypatch)
    out = tmp_path / "out.txt"
    with pytest.raises(OutputAppeared, match="appeared while harness ran"):
        with files.atomic_open(out, replace=False) as fh:
            fh.write("ours\n")
            out.write_text("theirs\n")
    assert out.read_text() == "theirs\n" and _leftovers(tmp_path) == []
    # Nothing there: written, whichever way the filesystem allows
    fresh = tmp_path / "fresh.txt"
    files.write_text(fresh, "ours\n", replace=False)
    assert fresh.read_text() == "ours\n" and _leftovers(tmp_path) == []


def test_two_writers_of_one_path_one_wins_the_other_is_told(tmp_path):
    out = tmp_path / "gold.jsonl"
    with pytest.raises(OutputAppeared):
        with files.atomic_open(out, replace=False) as second:
            second.write("second\n")
            with files.atomic_open(out, replace=False) as first:
                first.write("first\n")
    assert out.read_text() == "first\n" and _leftovers(tmp_path) == []


def test_replace_true_still_replaces(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    files.write_text(out, "new\n")
    assert out.read_text() == "new\n"


# ---- bug 1: commands that refused an existing file at the start -----------------------------------------------------

def test_goldset_build_keeps_a_file_that_appeared_meanwhile(tmp_path, monkeypatch):
    import harness.gold.build as build

    out = tmp_path / "gold.jsonl"
    _appear_during(monkeypatch, build, "build_goldset", out)
    proc = harness(*_build(tmp_path, "-o", out), cwd=tmp_path)
    assert_input_error(proc, f"-o {out}: {APPEARED}")
    assert out.read_text() == "theirs\n" and _leftovers(tmp_path) == []


def test_goldset_build_force_replaces_a_file_that_appeared(tmp_path, monkeypatch):
    import harness.gold.build as build

    out = tmp_path / "gold.jsonl"
    _appear_during(monkeypatch, build, "build_goldset", out)
    proc = harness(*_build(tmp_path, "-o", out, "--force"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # one answer missing: listed, exit 1
    assert json.loads(out.read_text().splitlines()[0])["id"] == "q1"


def test_goldset_merge_and_check_fix_keep_a_file_that_appeared(tmp_path, monkeypatch):
    import harness.gold.merge as merging
    import harness.gold.repair as repair

    src, corpus = _answers(tmp_path)
    gold = tmp_path / "gold.jsonl"
    assert harness("goldset", "build", "--from", src, "--corpus", corpus, "-o", gold).returncode == 1
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("query_id,query,doc_id,chunk_id,text,grade,quote\n")
    merged = tmp_path / "merged.jsonl"
    _appear_during(monkeypatch, merging, "merge", merged)
    assert_input_error(harness("goldset", "merge", gold, sheet, "-o", merged), f"-o {merged}: {APPEARED}")
    assert merged.read_text() == "theirs\n"
    fixed = tmp_path / "fixed.jsonl"
    _appear_during(monkeypatch, repair, "repaired_rows", fixed)
    proc = harness("goldset", "check", gold, "--corpus", corpus, "--fix", fixed)
    assert_input_error(proc, f"--fix {fixed}: {APPEARED}")
    assert fixed.read_text() == "theirs\n" and _leftovers(tmp_path) == []


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    proc = harness("run", demo_config(tmp), "--out", tmp / "r", "-q", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return tmp / "r" / "results.json"


def test_report_keeps_a_file_that_appeared_meanwhile(run, tmp_path, monkeypatch):
    import harness.render.html as html

    out = tmp_path / "report.html"
    _appear_during(monkeypatch, html, "render", out)
    assert_input_error(harness("report", run, "-o", out), f"--out {out}: {APPEARED}")
    assert out.read_text() == "theirs\n" and _leftovers(tmp_path) == []


def test_report_replaces_its_own_report_but_not_a_file_put_in_its_place(run, tmp_path, monkeypatch):
    import harness.render.html as html

    out = tmp_path / "report.html"
    assert harness("report", run, "-o", out).returncode == 0
    assert harness("report", run, "-o", out).returncode == 0  # harness's own report: replaced, as before
    _appear_during(monkeypatch, html, "render", out)  # the user saves their own file there meanwhile
    assert_input_error(harness("report", run, "-o", out), f"--out {out}: changed while harness ran")
    assert out.read_text() == "theirs\n" and _leftovers(tmp_path) == []


def test_gate_keeps_files_that_appeared_meanwhile(run, tmp_path, monkeypatch):
    import harness.stats.gates as gates

    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - "doc.ndcg@10 >= 0.0"\n')
    summary, junit = tmp_path / "gate.md", tmp_path / "out" / "gate.xml"
    _appear_during(monkeypatch, gates, "evaluate_gates", summary)
    proc = harness("gate", run, "--rules", rules, "--summary", summary, "--junit", junit)
    assert_input_error(proc, f"--summary {summary}: {APPEARED}")
    assert summary.read_text() == "theirs\n" and not junit.exists()  # one verdict: both files or neither
    monkeypatch.undo()
    _appear_during(monkeypatch, gates, "evaluate_gates", junit)
    proc = harness("gate", run, "--rules", rules, "--junit", junit)
    assert_input_error(proc, f"--junit {junit}: {APPEARED}")
    assert junit.read_text() == "theirs\n" and _leftovers(tmp_path) == []


def test_pool_keeps_a_file_that_appeared_meanwhile(run, tmp_path, monkeypatch):
    import harness.gold.pool as pooling

    out = tmp_path / "sheet.csv"
    _appear_during(monkeypatch, pooling, "pool", out)
    assert_input_error(harness("goldset", "pool", run, "--depth", 3, "-o", out), f"-o {out}: {APPEARED}")
    assert out.read_text() == "theirs\n" and _leftovers(tmp_path) == []


# ---- bug 2: a golden set and its --unresolved list are published together ---------------------------------------------

def _old_pair(tmp: Path) -> tuple[Path, Path]:
    gold, unres = tmp / "gold.jsonl", tmp / "unres.jsonl"
    gold.write_text("old gold\n")
    unres.write_text("old unresolved\n")
    return gold, unres


def test_a_failed_second_file_puts_the_first_back(tmp_path, monkeypatch):
    gold, unres = _old_pair(tmp_path)
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst) == unres:
            raise PermissionError(errno.EACCES, "Permission denied", str(src))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(files.os, "replace", replace)
    proc = harness(*_build(tmp_path, "-o", gold, "--unresolved", unres, "--force"), cwd=tmp_path)
    assert_input_error(proc, f"--unresolved {unres}: cannot write: Permission denied (none of the files was written)")
    assert f"-o {unres}" not in proc.stderr
    assert (gold.read_text(), unres.read_text()) == ("old gold\n", "old unresolved\n")
    assert _leftovers(tmp_path) == []


def test_a_full_disk_on_the_second_file_names_it_and_writes_neither(tmp_path, monkeypatch):
    gold, unres = _old_pair(tmp_path)
    _full_disk_at(monkeypatch, 2)
    proc = harness(*_build(tmp_path, "-o", gold, "--unresolved", unres, "--force"), cwd=tmp_path)
    assert_input_error(proc, f"--unresolved {unres}: cannot write: No space left on device")
    assert (gold.read_text(), unres.read_text()) == ("old gold\n", "old unresolved\n")
    assert _leftovers(tmp_path) == []


def test_an_unresolved_file_that_appeared_meanwhile_stops_both(tmp_path, monkeypatch):
    import harness.gold.build as build

    gold, unres = tmp_path / "gold.jsonl", tmp_path / "unres.jsonl"
    _appear_during(monkeypatch, build, "build_goldset", unres)
    proc = harness(*_build(tmp_path, "-o", gold, "--unresolved", unres), cwd=tmp_path)
    assert_input_error(proc, f"--unresolved {unres}: {APPEARED}")
    assert not gold.exists() and unres.read_text() == "theirs\n" and _leftovers(tmp_path) == []


def test_an_interrupt_while_publishing_waits_for_the_pair(tmp_path, monkeypatch):
    """Ctrl-C between the two renames is held until both are in place: the pair is the new one, and the command
    then exits as interrupted."""
    gold, unres = _old_pair(tmp_path)
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst) == gold:
            os.kill(os.getpid(), signal.SIGINT)  # arrives after the first rename starts
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(files.os, "replace", replace)
    # Ctrl-C as an interactive process has it (a shell's background job, the suite run with &, starts ignoring it)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = harness(*_build(tmp_path, "-o", gold, "--unresolved", unres, "--force"), cwd=tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert proc.returncode == 130, proc.stderr
    assert json.loads(gold.read_text().splitlines()[0])["id"] == "q1"
    assert json.loads(unres.read_text())["query_id"] == "q2"
    assert _leftovers(tmp_path) == []


def test_an_interrupt_while_writing_publishes_neither(tmp_path, monkeypatch):
    gold, unres = _old_pair(tmp_path)
    real, calls = os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    proc = harness(*_build(tmp_path, "-o", gold, "--unresolved", unres, "--force"), cwd=tmp_path)
    assert proc.returncode == 130, proc.stderr
    assert (gold.read_text(), unres.read_text()) == ("old gold\n", "old unresolved\n")
    assert _leftovers(tmp_path) == []


# ---- bug 3: harness init writes its project whole or not at all -----------------------------------------------------

def test_init_on_a_full_disk_leaves_nothing_and_can_be_run_again(tmp_path, monkeypatch):
    project = tmp_path / "new" / "eval"
    _full_disk_at(monkeypatch, 2)
    proc = harness("init", project, cwd=tmp_path)
    assert_input_error(proc, f"{project}: cannot write the starter project: No space left on device")
    assert list(tmp_path.iterdir()) == []  # the folders it made are gone too
    monkeypatch.undo()
    proc = harness("init", project, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in project.iterdir()) == ["corpus.jsonl", "gates.yaml", "goldset.jsonl",
                                                          "harness.yaml"]


def test_init_into_an_existing_folder_keeps_the_folder_and_its_files(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine\n")
    _full_disk_at(monkeypatch, 3)
    assert_input_error(harness("init", tmp_path, cwd=tmp_path), "No space left on device")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and (tmp_path / "notes.txt").read_text() == "mine\n"


def test_init_keeps_a_file_that_appeared_meanwhile_and_writes_none(tmp_path, monkeypatch):
    project = tmp_path / "eval"
    real, calls = files.Staged.publish, []

    def publish(self):
        calls.append(self.path)
        if len(calls) == 3:
            self.path.write_text("theirs\n")
        return real(self)

    monkeypatch.setattr(files.Staged, "publish", publish)
    proc = harness("init", project, cwd=tmp_path)
    assert_input_error(proc, f"{calls[2]}: appeared while harness init ran; not replaced")
    assert [p.name for p in project.iterdir()] == [calls[2].name] and calls[2].read_text() == "theirs\n"


# ---- bug 4: a failed write removes the folders made for it ---------------------------------------------------------

def test_a_failed_write_removes_the_folders_it_made(tmp_path, monkeypatch):
    _full_disk_at(monkeypatch, 1)
    out = tmp_path / "newdir" / "sub" / "gold.jsonl"
    proc = harness(*_build(tmp_path, "-o", out), cwd=tmp_path)
    assert_input_error(proc, f"-o {out}: cannot write: No space left on device")
    assert not (tmp_path / "newdir").exists()


def test_folders_that_existed_or_got_other_files_stay(tmp_path):
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError):
        with files.atomic_open(tmp_path / "kept" / "a" / "b" / "out.txt") as fh:
            fh.write("x")
            (tmp_path / "kept" / "a" / "theirs.txt").write_text("theirs\n")  # another program's file, meanwhile
            raise RuntimeError("the writer failed")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["kept", "kept/a",
                                                                                 "kept/a/theirs.txt"]


def test_gate_writes_its_summary_and_junit_together(run, tmp_path, monkeypatch):
    """--summary and --junit describe one verdict: a failure publishing the second leaves neither (and an earlier
    pair of files as it was)."""
    import errno

    import harness.io.files as files

    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - "doc.ndcg@10 >= 0.0"\n')
    summary, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    assert harness("gate", run, "--rules", rules, "--summary", summary, "--junit", junit).returncode == 0
    before = summary.read_text(), junit.read_text()
    publish = files.Staged.publish

    def failing(self):
        if self.path == junit:
            raise OSError(errno.EIO, "Input/output error")
        return publish(self)

    monkeypatch.setattr(files.Staged, "publish", failing)
    rules.write_text('rules:\n  - "doc.ndcg@10 >= 0.5"\n')
    proc = harness("gate", run, "--rules", rules, "--summary", summary, "--junit", junit)
    assert_input_error(proc, f"--junit {junit}: cannot write: Input/output error (none of them was written)")
    assert (summary.read_text(), junit.read_text()) == before and _leftovers(tmp_path) == []


def test_goldset_commands_never_write_over_a_run_output(run, tmp_path):
    """README: no command but `report` writes over a file a run's marker lists; --force does not change that (the
    next run into the folder would stop: changed since harness wrote it). The same words as gate --summary."""
    import shutil

    from harness.cli.goldset import _out_ok
    from harness.core.errors import InputError

    folder = tmp_path / "r"
    shutil.copytree(run.parent, folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    gold = folder.parent / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q1", "query": "x", "relevant": []}) + "\n")
    sheet = tmp_path / "s.csv"
    sheet.write_text("query_id,doc_id,grade\n")
    held = "an output of run 't' (written "
    proc = harness("goldset", "pool", folder / "results.json", "-o", folder / "per_query.csv", "--force")
    assert_input_error(proc, f"-o {folder / 'per_query.csv'}: is per_query.csv, {held}")
    for option in ("-o", "--fix"):
        with pytest.raises(InputError, match=r"is report\.md, an output of run 't' .*refusing to overwrite it"):
            _out_ok(folder / "report.md", [gold], True, option)
    proc = harness("goldset", "merge", gold, sheet, "-o", folder / "report.md", "--force")
    assert proc.returncode == 2, proc.stderr
    proc = harness("goldset", "check", gold, "--corpus", gold, "--fix", folder / "report.md", "--force")
    assert proc.returncode == 2, proc.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.parametrize("command", ["merge", "check", "build", "unresolved"])
def test_golden_set_outputs_are_jsonl(command, tmp_path):
    """As pool's sheet path: a golden set written to out.md would be JSONL that readers take for another format."""
    src, corpus = _answers(tmp_path)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q1", "query": "x", "relevant": []}) + "\n")
    sheet = tmp_path / "s.csv"
    sheet.write_text("query_id,doc_id,grade\n")
    args, option = {
        "merge": (["goldset", "merge", gold, sheet, "-o", "out.md"], "-o"),
        "check": (["goldset", "check", gold, "--corpus", corpus, "--fix", "out.md"], "--fix"),
        "build": (_build(tmp_path, "-o", "out.md"), "-o"),
        "unresolved": (_build(tmp_path, "-o", "g.jsonl", "--unresolved", "out.md"), "--unresolved"),
    }[command]
    proc = harness(*args, cwd=tmp_path)
    assert_input_error(proc, f"{option} out.md: written as JSONL")
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "g.jsonl").exists()
