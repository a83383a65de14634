"""The options several commands share, defined once: the same flags, help text and choices wherever they appear.

Choices come from the registries they describe (metric families and aliases from harness.metrics.spec, tests and
corrections from harness.stats.compare, retriever kinds from harness.retrievers, verdict kinds from
harness.diagnostics.verdicts), never typed into help text, so a new choice shows up in --help and in usage errors by itself.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable

import typer
from typer.core import TyperCommand, TyperGroup


def choices(name: str, values: Iterable[str]) -> type[Enum]:
    """A str Enum over ``values``, in their order: typer makes it a choice, so a typo is a usage error (exit 2)
    naming every choice, never a silent default."""
    return Enum(name, [(v, v) for v in values], type=str)  # type: ignore[return-value]


# One meaning per format name, whichever command prints it.
FORMATS = {
    "table": "aligned columns for a terminal",
    "json": "one JSON document, for programs",
    "md": "Markdown",
    "tsv": "tab-separated lines, for programs",
    "path": "the path of the written report, one line",
}
# Old names still accepted (with a warning on stderr), so scripts written against them keep working.
DEPRECATED_FORMATS = {"rich": "table"}


def format_choices(name: str, *names: str) -> type[Enum]:
    unknown = [n for n in names if n not in FORMATS and n not in DEPRECATED_FORMATS]
    assert not unknown, f"undeclared format names {unknown}: declare them in FORMATS"
    return choices(name, names)


def format_option(default: Enum) -> Any:
    """``--format``: the choices are the members of ``default``'s enum, each described as in FORMATS."""
    described = "; ".join(f"{m.value}: {FORMATS[m.value]}" if m.value in FORMATS
                          else f"{m.value}: deprecated name of {DEPRECATED_FORMATS[m.value]}" for m in type(default))
    return typer.Option(default, "--format", help=f"output format ({described})")


def canonical_format(value: Enum, warn: Callable[[str], None]) -> str:
    """The format's current name; an old name is accepted with a warning (stderr: stdout stays the output)."""
    new = DEPRECATED_FORMATS.get(value.value)
    if new is None:
        return value.value
    warn(f"warning: --format {value.value} is deprecated; use --format {new}")
    return new


def _metric_help() -> str:
    from ..metrics.spec import ALIASES, FAMILIES  # light: the declarations only

    aliases = sorted({k for k, family in ALIASES.items() if k != family})
    # No square brackets: typer's help reads them as rich markup and drops them.
    return ("metric name, repeat for several: a family with optional (param=value) and @k, e.g. ndcg@10, "
            "precision(rel=2)@5, ap; "
            f"families: {', '.join(sorted(FAMILIES))}; aliases accepted (any case): {', '.join(aliases)}, and "
            "trec_eval's P_5, ndcg_cut_10. A results.json has two levels: chunk.recall@5 (a bare name is doc.)")


def metric_option(default_text: str) -> Any:
    """``-m/--metric``, repeatable; ``default_text`` names what is evaluated when none is given."""
    return typer.Option([], "--metric", "-m", metavar="METRIC", help=_metric_help(), show_default=default_text)


def out_option(what: str, *, required: bool = False, default_text: str | None = None) -> Any:
    """``-o/--out``: where a command writes; missing parent folders are created."""
    return typer.Option(... if required else None, "--out", "-o", metavar="PATH",
                        help=f"where to write: {what} (missing folders are created)",
                        show_default=default_text or False)


def cache_dir_option(*old_names: str) -> Any:
    """``--cache-dir``: the embedding cache; default ``$HARNESS_CACHE_DIR``, else the user's cache folder."""
    old = f" ({', '.join(old_names)} is its old name)" if old_names else ""
    return typer.Option(None, "--cache-dir", *old_names, metavar="DIR", help=f"the embedding cache folder{old}",
                        show_default="$HARNESS_CACHE_DIR, else ~/.cache/harness")


def set_option() -> Any:
    """``--set KEY.PATH=VALUE`` (repeatable): a config value changed for this run, validated like the file."""
    return typer.Option([], "--set", metavar="KEY.PATH=VALUE",
                        help="change a config value for this run, e.g. --set retriever.k1=0.9 --set cutoff.k=10 "
                             "(read as YAML, as if written in the file; repeatable)")


def quiet_option(what: str = "no progress bars or log lines") -> Any:
    """``--quiet``/``-q``: the command's own progress and the libraries' (see ``quiet_libraries``)."""
    return typer.Option(False, "--quiet", "-q", help=f"{what} (the model's own included); warnings and errors "
                                                       "still show")


def quiet_libraries() -> None:
    """``-q`` silences the libraries' own progress bars and logs too (transformers' "Loading weights", tqdm bars):
    they read these variables when they start, so they are set before any of them is imported. The CLI only."""
    import os

    import warnings

    for name, value in (("TQDM_DISABLE", "1"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
                        ("TRANSFORMERS_VERBOSITY", "error"), ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")):
        os.environ.setdefault(name, value)
    # pgserver asks platformdirs for a runtime folder, which warns where XDG_RUNTIME_DIR is unset (containers, CI)
    warnings.filterwarnings("ignore", message=r".*XDG_RUNTIME_DIR")


def run_summary_json(target: Path, outcome: Any) -> dict:
    """What ``run --format json`` prints (the renderer is ``render.summary``)."""
    from ..render.summary import run_summary

    return run_summary(target, outcome)


def retriever_kinds() -> str:
    from ..retrievers import kinds  # imports every kind's config model: only when --help is shown

    return f"Retriever kinds (retriever.kind): {', '.join(kinds())}."


def verdict_kinds() -> str:
    from ..diagnostics.kinds import FLAGS, KINDS

    return f"Verdict kinds, in order of precedence: {', '.join(KINDS)}; flags: {', '.join(FLAGS)}."


def _flags_without_type(params: list) -> list:
    # typer 0.29 shows an on/off flag as `--quiet <bool>`, as if it took a value: a flag takes none.
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class HelpCommand(TyperCommand):
    """Every harness command: flags read as flags in --help; an option of one value given twice is refused."""

    def get_params(self, ctx):  # noqa: ANN001 (click's signature)
        return _flags_without_type(super().get_params(ctx))

    def parse_args(self, ctx, args):  # noqa: ANN001
        _refuse_repeated_values(self, ctx, args)
        return super().parse_args(ctx, args)


def _refuse_repeated_values(command: TyperCommand, ctx: Any, args: list[str]) -> None:
    """click keeps the last of ``--out A --out B`` (or ``--dir A --cache-dir B``, two names of one option) and drops
    the other: input that could mean two things. Repeatable options (``--set``, ``-m``) and flags are not concerned.
    The args are read by click's own parser (``=`` forms, ``--``, short clusters); a usage error it meets is left to
    the real parse, which reports it."""
    from ..core.errors import InputError

    try:
        _, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except Exception:  # noqa: BLE001 (click's usage errors, of either bundled copy: reported by the real parse)
        return
    seen: dict[str, int] = {}
    for param in order:
        if param.param_type_name == "option" and not (param.multiple or param.is_flag or param.count):
            seen[param.name] = seen.get(param.name, 0) + 1
            if seen[param.name] == 2:
                names = " / ".join(param.opts + list(param.secondary_opts))
                raise InputError(f"{names}: given more than once; give it once (only the last would be used)")


class HelpGroup(TyperGroup):
    def get_params(self, ctx):  # noqa: ANN001
        return _flags_without_type(super().get_params(ctx))


def registry_help(*sources: Callable[[], str]) -> type[TyperCommand]:
    """A command class whose --help ends with lines read from the registries when help is shown, not at import
    (the retriever registry loads every kind's module; `harness eval` should not pay for that)."""

    class Command(HelpCommand):
        def format_help(self, ctx, formatter):  # noqa: ANN001 (click's signature)
            base = self.help or ""
            self.help = "\n\n".join([base, *(source() for source in sources)])
            try:
                return super().format_help(ctx, formatter)
            finally:
                self.help = base

    return Command


# Output files named by options (-o, --summary, --junit): every problem found before any work is done.

# What every file harness writes through an output option starts with (within its first KiB): an existing file
# without it is someone else's, and is never overwritten.
SIGNATURES = {
    "html": b'<meta name="generator" content="harness">',
    "report-md": b"# Retrieval report: ",
    "gate-md": b"## Retrieval gate for `",
    "junit": b'<testsuite name="harness gate ',
}
# What each is, for a message about a file of one kind at a path another kind would be written to.
KIND_NAMES = {"html": "an HTML page", "report-md": "a Markdown report", "gate-md": "a gate summary (gate --summary)",
              "junit": "a gate's JUnit XML (gate --junit)"}
REPORT_KINDS = ("html", "report-md")  # what `harness report -o` writes, and a run writes as report.html, report.md


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(1024)
    except OSError:
        return b""


def _written_by_harness(path: Path, kind: str) -> bool:
    return SIGNATURES[kind] in _head(path)


def _not_ours(path: Path) -> str:
    """Why an existing file at an output path is not replaced: what harness wrote it as, if it did."""
    head = _head(path)
    other = next((k for k, signature in SIGNATURES.items() if signature in head), None)
    if other:
        return f"is {KIND_NAMES[other]} harness wrote, not this kind of output; refusing to overwrite it (give another path)"
    return "exists and was not written by harness; refusing to overwrite it (remove it or give another path)"


def _same_file_contents(a: Path, b: Path) -> bool:
    import os

    try:
        if os.path.samefile(a, b):
            return True
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                block = fa.read(1 << 20)
                if block != fb.read(1 << 20):
                    return False
                if not block:
                    return True
    except OSError:
        return False


def _run_output_problem(path: Path, kind: str | None, reporting: list[Path] | None) -> str | None:
    """Why ``path``, a file a run wrote into its output folder (its marker lists it), may not be written, or None.
    Only `harness report` rewrites one, and only a report of the run that folder holds (its results.json, the same
    bytes) into an unchanged file: anything else would leave the folder mixing two runs, or lose the user's edits."""
    from ..io import outmarker

    found = outmarker.owner(path)
    if found is None:
        return None
    folder, marker, rel = found
    shown = path
    for _ in rel.split("/"):
        shown = shown.parent  # the folder as the user named it
    held = f"run '{marker.run}' (written {marker.written_at})"
    if reporting is None or kind not in REPORT_KINDS:
        return (f"is {rel}, an output of {held} listed in {shown / outmarker.MARKER}; refusing to overwrite it "
                f"(give another path)")
    recorded = marker.stamps.get(rel)
    if path.is_file() and recorded is not None and not outmarker.unchanged(path, recorded):
        return (f"{rel} of {held} was changed since harness wrote it; not replaced (move it away to keep it, or "
                f"give another path)")
    results = (Path(rel).parent / "results.json").as_posix()
    same = (len(reporting) == 1 and results in marker.files
            and (results not in marker.stamps or outmarker.unchanged(folder / results, marker.stamps[results]))
            and _same_file_contents(reporting[0], folder / results))
    if same:
        return None
    what = "this report compares several runs" if len(reporting) > 1 else f"{reporting[0]} is not its results.json"
    return (f"{shown} holds the outputs of {held}, and {rel} is that run's; {what}: write this report elsewhere (a "
            f"new file name, or another folder), so the folder keeps one run's outputs")


def run_output_problem(path: Path) -> str | None:
    """Why ``path`` may not be written by a command that writes no report (gate, goldset): a run's output folder
    lists it as one of that run's files. The same words as ``output_problems`` says them."""
    return _run_output_problem(path, None, None)


def output_problems(outputs: dict[str, Path | None], inputs: list[Path],
                    kinds: dict[str, str] | None = None, reporting: list[Path] | None = None) -> list[str]:
    """One line per output option that cannot be written as given, found before any work is done. A missing parent
    folder is created when the file is written; a path that is a folder, lies under a file, is one of the
    command's own input files, is an existing file harness did not write (``kinds``: option -> a SIGNATURES
    key), or is a file a run wrote into its output folder (only a report of that run, ``reporting`` the
    results.json files reported, replaces one) is refused: overwriting it would lose the user's data or mix two
    runs' outputs in one folder."""
    import os

    from ..io.files import not_replaceable

    problems, seen = [], {}
    input_ids = {p.resolve(): p for p in inputs if p.exists()}
    for option, path in outputs.items():
        if path is None:
            continue
        where = f"{option} {path}"
        special = not_replaceable(path)
        if special:
            problems.append(f"{where}: {special}")
            continue
        kind = (kinds or {}).get(option)
        if path.resolve() not in input_ids:
            run_output = _run_output_problem(path, kind, reporting)
            if run_output:
                problems.append(f"{where}: {run_output}")
                continue
        if kind and path.is_file() and path.resolve() not in input_ids and not _written_by_harness(path, kind):
            problems.append(f"{where}: {_not_ours(path)}")
            continue
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if ancestor.exists() and not ancestor.is_dir():
            problems.append(f"{where}: {ancestor} is a file, not a folder")
            continue
        if not os.access(ancestor, os.W_OK | os.X_OK):
            problems.append(f"{where}: cannot write into {ancestor} (permission denied)")
            continue
        resolved = path.resolve()
        if resolved in input_ids:
            problems.append(f"{where}: is the input {input_ids[resolved]}; refusing to overwrite it")
        elif resolved in seen:
            problems.append(f"{where}: the same file as {seen[resolved]}")
        seen.setdefault(resolved, option)
    return problems


def write_output(option: str, path: Path, text: str, *, replace: bool = True, kind: str | None = None) -> None:
    """``text`` written atomically to ``path``, named by ``option`` in any error. ``replace=False`` for a path that
    was free when the command checked it: a file that appeared there meanwhile is kept. ``kind`` (a SIGNATURES key):
    a file that is there when publishing must still be one harness wrote."""
    write_outputs_together([(option, path, text, replace, kind)])


def write_outputs_together(items: list[tuple[str, Path, str, bool, str | None]]) -> None:
    """Outputs of one command (``(option, path, text, replace, kind)`` each, as ``write_output`` takes them)
    published all or none: gate's --summary and --junit describe one verdict, and an interrupt or a failure between
    them must not leave one new and the other old."""
    from ..core.errors import InputError, OutputAppeared
    from ..io.files import write_together
    from ..io.outmarker import restamp

    outputs = "the output is" if len(items) == 1 else "the outputs are"
    for option, path, _, replace, kind in items:
        if replace and kind and path.is_file() and not _written_by_harness(path, kind):
            raise InputError(f"{option} {path}: changed while harness ran and was not written by harness; not "
                             f"replaced (your file is kept; {outputs} not written)")
    option_of = {str(path): option for option, path, *_ in items}
    try:
        write_together([(path, text.encode("utf-8"), replace) for _, path, text, replace, _ in items])
    except OutputAppeared as exc:
        raise OutputAppeared(exc.path, option_of.get(str(exc.path))) from None
    except OSError as exc:  # checked up front; this is a race or a full disk: still one line, no traceback
        where = f"{option_of[exc.filename]} {exc.filename}" if exc.filename in option_of else "the outputs"
        raise InputError(f"{where}: cannot write: {exc.strerror or exc}"
                         + (" (none of them was written)" if len(items) > 1 else "")) from None
    for _, path, *_ in items:
        restamp(path)  # a report rewritten in a run's folder is still harness's own there, not the user's edit


def free_outputs(outputs: dict[str, Path | None]) -> dict[str, bool]:
    """Per output option, whether its path was free (nothing there) when checked: such a path is written with
    ``write_output(..., replace=False)``, so a file that appears there while the command runs is kept."""
    import os

    return {option: path is not None and not os.path.lexists(path) for option, path in outputs.items()}


# Where `harness run` retrieves (harness.executors); the config's executor: section says the rest (address, workers).
Executor = choices("Executor", ("local", "ray"))


def executor_option() -> Any:
    return typer.Option(None, "--executor", help="where retrieval runs: local (this process) or ray (a local or "
                                                 "existing Ray cluster); overrides the config's executor.kind",
                        show_default="the config's executor.kind, else local")


def with_executor(config: Any, kind: Enum | None) -> Any:
    """``config`` with ``executor.kind`` set from ``--executor`` (unchanged without it)."""
    if kind is None:
        return config
    return config.model_copy(update={"executor": config.executor.model_copy(update={"kind": kind.value})})
