"""The ``harness`` command: thin commands over the library. Results go to stdout or files; progress and logs to
stderr; a HarnessError becomes one line on stderr and its exit code (2 for bad input), never a traceback."""

from __future__ import annotations

import functools
import json
import math
import os
import sys

# NumPy asks the kernel for transparent huge pages on every large array unless told not to. Where THP is "madvise"
# (common), each fresh 2 MB page is then compacted and zeroed on first touch: reading a 10M-line run spent 2-3.7 s
# of system time there, 1.3-1.5 s without. Set before NumPy is first imported; a user's own setting wins.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
from pathlib import Path
from typing import Callable, List, Optional

import typer

from .boundary import WRITING, guard_std_streams, pipe_boundary, run_app
from .cache import cache_command
from .compare import compare_command, gate_command, report_command
from .options import (
    Executor,
    HelpCommand,
    HelpGroup,
    cache_dir_option,
    canonical_format,
    choices,
    executor_option,
    format_choices,
    format_option,
    metric_option,
    out_option,
    quiet_libraries,
    quiet_option,
    registry_help,
    retriever_kinds,
    run_summary_json,
    set_option,
    verdict_kinds,
    with_executor,
)
from ..metrics.join import ORDERS
from ..metrics.spec import DEFAULT_METRICS
from ..metrics.table import QUERY_POLICIES
from ..render.fmt import plural
from ..render.calibration import text_line as calibration_line
from ..render.summary import means_line
from ..render.stages import lost_counts_line

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, cls=HelpGroup,
                  help="Evaluate RAG retrievers: metrics you can trust and a verdict per query.")


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def command(name: Optional[str] = None, *, cls: Optional[type] = None) -> Callable:
    """``app.command`` with the closed-pipe boundary: `harness eval ... | head -1` is how pipes end, not an error."""
    def register(fn: Callable) -> Callable:
        @functools.wraps(fn)  # typer reads the signature, type hints and docstring through __wrapped__
        def guarded(*args, **kwargs):
            with pipe_boundary():
                return fn(*args, **kwargs)
        return app.command(name, cls=cls or HelpCommand)(guarded)
    return register


def _show_version(value: bool) -> None:
    if value:
        from .. import __version__
        print(f"harness {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Evaluate RAG retrievers: metrics you can trust and a verdict per query."""
    from ..render.plots import charts_off

    charts_off()  # a HARNESS_CHARTS that is neither on nor off: exit 2 before any work


# Choices are enums so that a typo is a usage error (exit 2) naming the choices, never a silent default; each is
# built from the registry that owns the names.
EvalFormat = format_choices("EvalFormat", "json", "tsv", "md", "table")
ExplainFormat = format_choices("ExplainFormat", "table", "json", "md", "rich")
RunFormat = format_choices("RunFormat", "path", "json")
Order = choices("Order", ORDERS)
QueryPolicy = choices("QueryPolicy", QUERY_POLICIES)


@command(cls=registry_help(retriever_kinds, verdict_kinds))
def run(config: Path = typer.Argument(..., metavar="CONFIG", help="experiment YAML"),
        out: Optional[Path] = out_option("the output folder", default_text="the config's output, else reports/<name>/; "
                                                                           "with --set, reports/<name>+<the overrides>/"),
        quiet: bool = quiet_option(),
        overrides: List[str] = set_option(),
        name: Optional[str] = typer.Option(None, "--name", metavar="NAME",
                                           help="name this run (results.json's name) and write it to "
                                                "reports/<NAME>/ (beside the config's output: folder, if it has one)"),
        cache_dir: Optional[Path] = cache_dir_option(),
        fmt: RunFormat = format_option(RunFormat.path),
        force: bool = typer.Option(False, "--force", help="also write into a non-empty folder harness did not write, "
                                                          "or over another run's outputs; files harness did not "
                                                          "write are never deleted or overwritten"),
        executor: Optional[Executor] = executor_option()) -> None:
    """Run an experiment and write results.json, run.trec, run.chunks.trec, hits.parquet, per_query.csv, report.md
    and report.html.

    Only files harness wrote are replaced (listed in .harness-output); a folder it did not write needs --force.
    A run with --set writes to its own folder (reports/<name>+<the overrides>/, or --name's), never over the base
    run's, and records its overrides in results.json.

    Example: harness run configs/demo-bm25.yaml --out reports/demo-bm25

    Example: harness run configs/demo-bm25.yaml --set retriever.k1=0.9 --set cutoff.k=10 --format json | jq .summary
    """
    from ..api.runs import named, run_config
    from ..config.schema import load_config
    from ..core.interrupt import Terminated, leave
    from .heap import return_large_frees
    from .runfolder import run_folder

    return_large_frees()  # a run frees large per-batch arrays all along (cli/heap.py; not eval: see there)
    log = (lambda m: None) if quiet else _err
    if quiet:
        quiet_libraries()
    target = None
    try:
        cfg = with_executor(load_config(config, overrides), executor)
        if name is not None:
            cfg = named(cfg, name)
        target, origin = run_folder(cfg, config, out, name, overrides)
        if overrides and not out and not quiet:
            log(f"--set: this variant writes to its own folder {target}/")
        outcome = run_config(cfg, source=str(config), out=target, origin=origin, force=force, progress=not quiet,
                             log=log, warn=_err, cache_dir=cache_dir, overrides=overrides)
    except OSError as exc:
        if exc.errno not in WRITING or target is None:
            raise
        from ..core.errors import InputError  # a full disk or quota while writing: the folder, not "a file"

        raise InputError(f"{target}: cannot write the outputs ({exc.strerror}); the previous outputs, if "
                         f"any, are as they were") from None
    except (KeyboardInterrupt, Terminated) as exc:  # every cleanup above has run by now
        leave(exc)
    if fmt.value == "json":
        print(json.dumps(run_summary_json(target, outcome), indent=2, ensure_ascii=False))
        return
    if cfg.sweep:
        if not quiet:
            tied = ", ".join(r["run"] for r in outcome["runs"][1:] if r["tied_with_best"])
            _err(f"best: {outcome['best']}; statistically tied with it: {tied or 'none'}")
        print(target / "leaderboard.html")  # the page people open (leaderboard.md is beside it)
        return
    s = outcome.summary
    if not quiet:
        for level in ("doc", "chunk"):  # both: a bare metric name means doc level in compare and gate
            _err(means_line(level, s.means(level)))
        _err("verdicts: " + ", ".join(f"{k} {n}" for k, n in s.verdicts.counts.model_dump().items() if n))
        if calibration := calibration_line(s):
            _err(calibration)
        if lost_counts_line(s.verdicts.lost_at):  # a composite retriever's stage attribution
            _err(lost_counts_line(s.verdicts.lost_at))
        _err(f"wrote {target}/ (report.md for a review, results.json for compare and gate)")
    print(target / "report.html")  # the page people open


def _install_signal_handlers(program: bool):
    """SIGTERM raises like Ctrl-C, so every cleanup path runs before the exit. The CLI only: never at import.
    Returns what puts a calling program's own handling back (``interrupt.install``)."""
    from ..core.interrupt import install

    return install(program)


@command(cls=registry_help(retriever_kinds))
def validate(config: Path = typer.Argument(..., metavar="CONFIG", help="experiment YAML"),
             rules: Optional[Path] = typer.Option(None, "--rules", help="also check a gate rules YAML against "
                                                                         "the config's metrics"),
             overrides: List[str] = set_option(),
             cache_dir: Optional[Path] = cache_dir_option(),
             executor: Optional[Executor] = executor_option()) -> None:
    """Everything run checks before retrieving, without retrieving: the config, sweep points, model folders,
    tokenizers, corpus, chunking, golden set against the corpus, and gate rules. Exit 2 on errors; golden-set
    problems that run flags (diagnostics.on_gold_error: flag) are warnings, as in run.

    Example: harness validate configs/demo-bm25.yaml --rules configs/gates.yaml
    """
    from ..config.schema import load_config
    from ..pipeline.assemble import check_before_retrieval
    from ..retrievers.external import PREFLIGHT_LINES

    cfg = with_executor(load_config(config, overrides), executor)
    checked = check_before_retrieval(cfg, source=str(config), rules=rules, log=_err, cache_dir=cache_dir,
                                     sample=True)  # an external run's first lines only: a quick check
    for warning in checked.warnings:
        _err(f"warning: {warning}")
    for path in checked.sampled:  # an ok below says nothing of the lines after these
        _err(f"note: {path}: validate read its first {PREFLIGHT_LINES:,} lines; harness run reads every line")
    p = checked.prepared
    counted = [plural(len(p.docs), "document"), plural(len(p.chunks), "chunk"),
               plural(len(p.gold.queries), "query", "queries")]
    if checked.warnings:
        counted.append(plural(len(checked.warnings), "warning"))
    sweep = f"{plural(checked.points, 'sweep point')}; first: " if cfg.sweep else ""
    print(f"{config}: ok ({sweep}{', '.join(counted)})")


@command("eval")
def eval_(qrels: Path = typer.Argument(..., metavar="QRELS", help="TREC qrels, BEIR qrels TSV, or a native golden set (.jsonl)"),
          run_file: Path = typer.Argument(..., metavar="RUN", help="TREC run file or JSONL run"),
          metric: List[str] = metric_option(", ".join(DEFAULT_METRICS)),
          fmt: EvalFormat = format_option(EvalFormat.json),
          per_query: bool = typer.Option(False, "--per-query", help="also print every query's values (without it: "
                                                                     "means, conventions and counts only)"),
          trec_compat: bool = typer.Option(False, "--trec-compat",
                                           help="reproduce trec_eval 9.0.8 / pytrec_eval with -c: scores compared "
                                                "as float32, every judged query in the means. trec_eval 10 compares "
                                                "scores as doubles: for it, use --query-policy zero"),
          order: Order = typer.Option(Order.score, "--order", help="score: trec_eval's order (score descending, "
                                                                    "ties by doc id descending); rank: trust the ranks"),
          query_policy: Optional[QueryPolicy] = typer.Option(None, "--query-policy", show_default="exclude",
                                                             help="queries with no relevant document: exclude them "
                                                                  "from the means, or count them as 0")) -> None:
    """Evaluate a run produced by any system against judgments.

    TREC files are read as trec_eval 10 reads them: '#' lines are skipped, run columns after the tag ignored.

    Judged queries the run lacks score 0 (as with trec_eval -c), and a warning on stderr counts them.

    Example: harness eval qrels.txt run.trec -m ndcg@10 -m rr@10 --format json

    Example: harness eval qrels.txt run.trec -m P@5 --format tsv --per-query | sort -k3 -n | head
    """
    from ..api.evaluation import evaluate_inputs
    from ..render import evaluation

    if trec_compat and query_policy is QueryPolicy.exclude:  # two options saying opposite things: not guessed
        from ..core.errors import InputError
        raise InputError("--trec-compat counts every judged query in the means (as trec_eval -c, query policy zero); "
                         "--query-policy exclude says the opposite: give one of them")
    table = evaluate_inputs(qrels, run_file, metric or list(DEFAULT_METRICS), trec_compat=trec_compat,
                            query_policy=(query_policy or QueryPolicy.exclude).value, order=order.value)
    for warning in evaluation.coverage_warnings(table.counts):
        _err(f"warning: {warning}")
    from .evalnote import run_folder_note
    said = run_folder_note(run_file, table)
    if said:
        _err(said)
    if fmt.value == "table":
        evaluation.print_table(table, per_query)
        return
    render = {"json": evaluation.to_json, "tsv": evaluation.to_tsv, "md": evaluation.to_markdown}[fmt.value]
    sys.stdout.write(render(table, per_query))


@command(cls=registry_help(verdict_kinds))
def explain(source: Path = typer.Argument(..., metavar="SOURCE", help="a results.json (or the folder its run wrote), or an experiment YAML with --query"),
            query_id: Optional[str] = typer.Argument(None, metavar="QUERY_ID", help="query id (with a results.json)"),
            query: Optional[str] = typer.Option(None, "--query", help="ad-hoc query text (with a config)"),
            doc: Optional[str] = typer.Option(None, "--doc", help="the document that should be found"),
            quote: Optional[str] = typer.Option(None, "--quote", help="the evidence text inside --doc"),
            fmt: ExplainFormat = format_option(ExplainFormat.table),
            cache_dir: Optional[Path] = cache_dir_option(),
            quiet: bool = quiet_option("no progress bars while a config's retriever loads")) -> None:
    """Explain one query down to the chunk: evidence, window, verdict, BM25 term contributions.

    Example: harness explain reports/demo-bm25/results.json q16
    Example: harness explain configs/demo-bm25.yaml --query "how do I rotate the API key?" --doc api-keys
    """
    from ..core.errors import InputError
    from ..render.explain import explain_result, print_rich, to_markdown

    if source.suffix == ".json" or source.is_dir():  # a run's folder stands for its results.json
        from ..render.outputs import load_results
        if not query_id:
            raise InputError(f"give a query id after {source}, e.g. harness explain results.json q17")
        given = [o for o, v in (("--query", query), ("--doc", doc), ("--quote", quote)) if v is not None]
        if given:  # ignoring them would explain something other than what was asked
            raise InputError(f"{', '.join(given)}: only with an experiment YAML; with a results.json give a query id")
        from ..pipeline.explain import saved_texts
        result = load_results(source)
        ex = explain_result(result, query_id, *saved_texts(result, "results.json config"))
    else:
        from ..config.schema import load_config
        if query_id:
            raise InputError(f"query id {query_id!r}: only with a results.json; with a config give --query \"...\"")
        if not query:
            raise InputError("with a config, give --query \"...\" (and optionally --doc and --quote)")
        config = load_config(source)
        if config.sweep:  # which point's retriever would answer is not guessed
            points = math.prod(len(v) if isinstance(v, list) else 1 for v in config.sweep.values())
            raise InputError(f"{source}: sweeps {points} configurations and explain takes one: give the sweep's "
                             "best.yaml, or this config without its sweep: section")
        from ..pipeline.explain import adhoc
        if quiet:
            quiet_libraries()
        got = adhoc(config, query, doc, quote, cache_dir=cache_dir)
        ex = explain_result(got.result, "adhoc", got.chunk_text, got.doc_text, got.contributions)
    shown = canonical_format(fmt, _err)
    if shown == "json":
        print(json.dumps(ex, indent=2, ensure_ascii=False))
    elif shown == "md":
        print(to_markdown(ex), end="")
    else:
        print_rich(ex)


command("compare")(compare_command)
command("gate", cls=registry_help(verdict_kinds))(gate_command)
command("report")(report_command)
command("cache")(cache_command)


@command()
def init(folder: Path = typer.Argument(Path("."), metavar="FOLDER", help="where to write the starter project (created if missing)")
         ) -> None:
    """Write a starter project that runs at once: harness.yaml, corpus.jsonl, goldset.jsonl, gates.yaml.

    Existing files are never replaced: a folder that has any of them is refused.

    Example: harness init my-eval && harness run my-eval/harness.yaml
    """
    from .init import init_project

    written = init_project(folder)
    for path in written:
        print(path)
    _err(f"next: harness run {written[0]}")


from .goldset import goldset_app  # noqa: E402  (the `harness goldset ...` commands, in their own module)

app.add_typer(goldset_app, name="goldset")


def main(program: bool = False) -> None:
    """The command line. ``program``: this process is the harness command (the console script, ``python -m
    harness.cli.main``), whose exit status and late signals are the CLI's to decide; a program that calls ``main()``
    keeps its own signal handling and exit status once the command is over."""
    from ..core.interrupt import Terminated, leave

    restore = _install_signal_handlers(program)
    try:
        guard_std_streams()
        run_app(app)
    except (KeyboardInterrupt, Terminated) as exc:  # one that came outside the boundary's own try
        leave(exc)
    finally:
        if not program:
            restore()


if __name__ == "__main__":
    main(program=True)
