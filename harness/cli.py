"""The ``harness`` command: thin commands over the library. Results go to stdout or files; progress and logs to
stderr; a HarnessError becomes one line on stderr and its exit code (2 for bad input), never a traceback."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from .errors import HarnessError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Evaluate RAG retrievers: metrics you can trust and a verdict per query.")


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


class Format(str, Enum):
    json = "json"
    tsv = "tsv"


@app.command()
def run(config: Path = typer.Argument(..., help="experiment YAML"),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder (default: the config's output, "
                                                                      "else reports/<name>/)"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress or log lines"),
        force: bool = typer.Option(False, "--force", help="also write into a non-empty folder harness did not write, "
                                                          "or over another run's outputs; files harness did not "
                                                          "write are never deleted or overwritten")) -> None:
    """Run an experiment and write results.json, run.trec, run.chunks.trec, per_query.csv and report.md.

    Only files harness wrote are replaced (listed in .harness-output); a folder it did not write needs --force.

    Example: harness run configs/demo-bm25.yaml --out reports/demo-bm25
    """
    from .config import load_config
    from .experiment import run_experiment
    from .interrupt import MESSAGE, Terminated, exit_code, ignore_further
    from .outdir import open_output
    from .report import write_outputs

    log = (lambda m: None) if quiet else _err
    try:
        cfg = load_config(config)
        target = out or cfg.output_dir()
        origin = "--out" if out else (f"{config}: output:" if cfg.output else None)
        # Opened (locked, checked) before the run: a folder harness may not write is refused before the work.
        with open_output(target, run=cfg.name, force=force, origin=origin) as folder:
            if cfg.sweep:
                from .sweep import run_sweep
                board = run_sweep(cfg, folder, progress=not quiet, log=log)
            else:
                result = run_experiment(cfg, progress=not quiet, log=log)
                write_outputs(result, folder)
    except (KeyboardInterrupt, Terminated) as exc:  # every cleanup above has run by now
        ignore_further()
        _err(MESSAGE)
        # SystemExit, not typer.Exit: it passes through typer and main() untouched, so nothing prints a second line
        raise SystemExit(exit_code(exc)) from None
    if cfg.sweep:
        if not quiet:
            tied = ", ".join(r["run"] for r in board["runs"][1:] if r["tied_with_best"])
            _err(f"best: {board['best']}; statistically tied with it: {tied or 'none'}")
        print(target / "leaderboard.md")
        return
    s = result["summary"]
    if not quiet:
        shown = ", ".join(f"{m} {v:.4f}" for m, v in list(s["chunk"].items())[:4] if v is not None)
        _err(f"chunk level: {shown}")
        _err("verdicts: " + ", ".join(f"{k} {n}" for k, n in s["verdicts"]["counts"].items() if n))
    print(target / "report.md")


def _install_signal_handlers() -> None:
    """SIGTERM raises like Ctrl-C, so every cleanup path runs before the exit. The CLI only: never at import."""
    from .interrupt import install

    install()


@app.command()
def validate(config: Path = typer.Argument(..., help="experiment YAML")) -> None:
    """Check a config and every file it names (corpus, golden set against the corpus) without running.

    Example: harness validate configs/demo-bm25.yaml
    """
    from .config import load_config
    from .errors import GoldSetError
    from .experiment import prepare

    cfg = load_config(config)
    prepared = prepare(cfg, log=_err)
    if prepared.problems:
        raise GoldSetError(f"{config}: the golden set does not match the corpus",
                           [p.message for p in prepared.problems])
    print(f"{config}: ok ({len(prepared.docs)} documents, {len(prepared.chunks)} chunks, "
          f"{len(prepared.gold.queries)} queries)")


NATIVE_GOLD = (".jsonl", ".yaml", ".yml")


def _load_qrels(path: Path):
    from .goldset import read_qrels_file, _read_native
    from .runtable import Qrels
    from .textfile import base_suffix

    if base_suffix(path) in NATIVE_GOLD:
        raw = _read_native(path)
        return Qrels.from_dict({q.query_id: {j.doc_id: j.grade for j in q.relevant} for q in raw})
    from . import fast_trec

    if path.is_file():
        fast = fast_trec.read_qrels(path)
        if fast is not None:
            return fast
    return Qrels.from_dict(read_qrels_file(path))


@app.command("eval")
def eval_(qrels: Path = typer.Argument(..., help="TREC qrels, BEIR qrels TSV, or a native golden set (.jsonl)"),
          run_file: Path = typer.Argument(..., metavar="RUN", help="TREC run file or JSONL run"),
          metric: List[str] = typer.Option([], "--metric", "-m", help="metric name (repeat); default set if none"),
          fmt: Format = typer.Option(Format.json, "--format", help="json or tsv"),
          per_query: bool = typer.Option(False, "--per-query", help="tsv: add a row per query"),
          trec_compat: bool = typer.Option(False, "--trec-compat", help="reproduce trec_eval -c exactly"),
          order: str = typer.Option("score", "--order", help="score (trec_eval order) or rank (trust ranks)"),
          query_policy: str = typer.Option("exclude", "--query-policy",
                                           help="queries with no relevant doc: exclude or zero")) -> None:
    """Evaluate a run produced by any system against judgments.

    Example: harness eval qrels.txt run.trec -m ndcg@10 -m rr@10 --format json
    """
    from . import fast_trec
    from .metrics import evaluate
    from .metricspec import DEFAULT_METRICS
    from .runfiles import JSON_RUN, read_run
    from .textfile import base_suffix

    both = None
    if (qrels.is_file() and run_file.is_file() and base_suffix(qrels) not in NATIVE_GOLD
            and base_suffix(run_file) not in JSON_RUN):
        both = fast_trec.read_qrels_and_run(qrels, run_file)  # one pass over both files' doc ids
    judgments, run = both if both is not None else (_load_qrels(qrels), read_run(run_file))
    table = evaluate(judgments, run, metric or list(DEFAULT_METRICS),
                     query_policy=query_policy, order=order, trec_compat=trec_compat)
    if fmt == Format.json:
        print(json.dumps({"mean": table.mean(), "per_query": table.per_query(), "conventions": table.conventions,
                          "counts": table.counts}, indent=2))
        return
    for name, value in table.mean().items():
        print(f"{name}\tall\t{'n/a' if value is None else f'{value:.6f}'}")
    if per_query:
        for qid, values in table.per_query().items():
            for name, value in values.items():
                print(f"{name}\t{qid}\t{value:.6f}")


@app.command()
def explain(source: Path = typer.Argument(..., help="a results.json, or an experiment YAML with --query"),
            query_id: Optional[str] = typer.Argument(None, help="query id (with a results.json)"),
            query: Optional[str] = typer.Option(None, "--query", help="ad-hoc query text (with a config)"),
            doc: Optional[str] = typer.Option(None, "--doc", help="the document that should be found"),
            quote: Optional[str] = typer.Option(None, "--quote", help="the evidence text inside --doc"),
            fmt: str = typer.Option("rich", "--format", help="rich, json or md")) -> None:
    """Explain one query down to the chunk: evidence, window, verdict, BM25 term contributions.

    Example: harness explain reports/demo-bm25/results.json q16
    Example: harness explain configs/demo-bm25.yaml --query "how do I rotate the API key?" --doc api-keys
    """
    from .errors import InputError
    from .explain import explain_live, explain_saved, print_rich, to_markdown

    if source.suffix == ".json":
        from .report import load_results
        if not query_id:
            raise InputError("give a query id after the results.json, e.g. harness explain results.json q17")
        ex = explain_saved(load_results(source), query_id)
    else:
        from .config import load_config
        if not query:
            raise InputError("with a config, give --query \"...\" (and optionally --doc and --quote)")
        ex = explain_live(load_config(source), query, doc, quote)
    if fmt == "json":
        print(json.dumps(ex, indent=2, ensure_ascii=False))
    elif fmt == "md":
        print(to_markdown(ex), end="")
    else:
        print_rich(ex)


@app.command()
def compare(results: List[Path] = typer.Argument(..., help="two or more results.json files"),
            baseline: Optional[str] = typer.Option(None, "--baseline", help="run name (default: the first)"),
            metric: List[str] = typer.Option([], "--metric", "-m", help="e.g. ndcg@10, chunk.recall@5 (repeat)"),
            test: str = typer.Option("randomization", "--test", help="randomization | ttest | bootstrap | wilcoxon"),
            correction: str = typer.Option("holm", "--correction", help="holm | bonferroni | none"),
            fmt: str = typer.Option("table", "--format", help="table (rich), md or json")) -> None:
    """Paired comparison with CIs, corrected p-values, win/tie/loss and verdict transitions.

    Example: harness compare reports/demo-bm25/results.json reports/demo-hybrid/results.json -m ndcg@10
    """
    from .compare import compare_runs, to_markdown
    from .report import load_results

    result = compare_runs([load_results(p) for p in results], list(metric), baseline=baseline, test=test,
                          correction=correction)
    for w in result["warnings"]:
        _err(f"warning: {w}")
    if fmt == "json":
        print(json.dumps(result, indent=2))
    elif fmt == "md":
        print(to_markdown(result), end="")
    else:
        from .compare import print_table
        print_table(result)


@app.command()
def gate(results: Path = typer.Argument(..., help="the candidate's results.json"),
         rules: Path = typer.Option(..., "--rules", help="rules YAML (see configs/gates.yaml)"),
         baseline: Optional[Path] = typer.Option(None, "--baseline", help="results.json to check regressions against"),
         summary: Optional[Path] = typer.Option(None, "--summary", help="write a Markdown summary here"),
         junit: Optional[Path] = typer.Option(None, "--junit", help="write JUnit XML here (one test case per rule)")) -> None:
    """Pre-release gate: exit 0 when every rule holds, 1 when any fails, 2 for bad input.

    Example: harness gate reports/demo-bm25/results.json --rules configs/gates.yaml --junit gate.xml
    """
    from .atomic import write_text
    from .gates import evaluate_gates, junit_xml, load_rules, summary_markdown
    from .report import load_results

    candidate = load_results(results)
    outcome = evaluate_gates(candidate, load_rules(rules), load_results(baseline) if baseline else None)
    md = summary_markdown(candidate["name"], outcome)
    print(md, end="")
    if summary:
        write_text(summary, md)
    if junit:
        write_text(junit, junit_xml(candidate["name"], outcome))
    if not all(r.passed for r in outcome):
        raise typer.Exit(1)


@app.command()
def report(results: List[Path] = typer.Argument(..., help="one results.json, or several for a comparison"),
           out: Path = typer.Option(..., "--out", "-o", help="the HTML file to write"),
           metric: List[str] = typer.Option([], "--metric", "-m", help="comparison metrics (repeat)")) -> None:
    """Build the self-contained HTML report for one run or a comparison of several.

    Example: harness report reports/demo-bm25/results.json -o demo.html
    """
    from .atomic import write_text
    from .html_report import render
    from .report import load_results

    loaded = [load_results(p) for p in results]
    if len(loaded) == 1:
        from .explain import texts_for
        from .config import parse_config
        try:
            _, chunks = texts_for(parse_config(loaded[0]["config"], str(results[0])))
            texts = [{c.chunk_id: c.text for c in chunks}]
        except HarnessError as exc:  # the corpus moved: the report still renders, without snippets
            _err(f"warning: chunk texts not loaded ({exc})")
            texts = [{}]
        html_text = render(loaded, texts)
    else:
        from .compare import compare_runs
        html_text = render(loaded, comparison=compare_runs(loaded, list(metric)))
    write_text(out, html_text)
    print(out)


@app.command()
def cache(action: str = typer.Argument(..., help="info or clear"),
          cache_dir: Path = typer.Option(Path(".harness-cache"), "--dir", help="cache folder")) -> None:
    """Show or clear the embedding and token-embedding caches.

    Example: harness cache info
    """
    from .cache import ArrayCache
    from .errors import InputError

    store = ArrayCache(cache_dir)
    if action == "info":
        info = store.info()
        if not info:
            print(f"{cache_dir}: empty")
        for kind, stats in info.items():
            print(f"{kind}\t{stats['entries']} entries\t{stats['mb']:.1f} MB")
    elif action == "clear":
        store.clear()
        print(f"{cache_dir}: cleared")
    else:
        raise InputError(f"unknown cache action {action!r}; choose info or clear")


def main() -> None:
    _install_signal_handlers()
    try:
        # standalone_mode=False returns a command's exit code (typer.Exit) instead of exiting: pass it on.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except HarnessError as exc:
        _err(f"error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _err("interrupted: nothing half-written was left behind")
        sys.exit(130)
    except Exception as exc:  # click's usage errors
        import click
        if isinstance(exc, click.exceptions.Exit):
            sys.exit(exc.exit_code)
        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(2)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(130)
        raise


if __name__ == "__main__":
    main()
