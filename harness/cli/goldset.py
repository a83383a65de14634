"""``harness goldset ...``: build, check, repair, pool, merge and describe golden sets (harness.goldset). A typer
sub-app attached to the main command line in cli/main.py. Exit codes: 0 all good, 1 something needs a person (labels
not valid, answers not located, conflicts), 2 bad input."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Callable, List, Optional

import typer

from .boundary import pipe_boundary
from .options import (
    HelpCommand,
    HelpGroup,
    choices,
    format_choices,
    format_option,
    metric_option,
    out_option,
    run_output_problem,
    write_output,
)
from ..core.errors import InputError
from ..io.files import not_replaceable

goldset_app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, cls=HelpGroup,
                          help="Build, check, repair and grow golden sets.\n\nExample: harness goldset check "
                               "goldset.jsonl --corpus corpus.jsonl --against old_corpus.jsonl --fix fixed.jsonl")
CheckFormat = format_choices("CheckFormat", "table", "json")
StatsFormat = format_choices("StatsFormat", "table", "json")
CorpusFormat = choices("CorpusFormat", ("jsonl", "beir", "folder"))
PoolOrder = choices("PoolOrder", ("rank", "rbp"))  # harness.gold.pool.POOL_ORDERS (not imported: --help stays light)


def command(name: str) -> Callable:
    """``goldset_app.command`` with the closed-pipe boundary (as cli.command)."""
    def register(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def guarded(*args, **kwargs):
            with pipe_boundary():
                return fn(*args, **kwargs)
        return goldset_app.command(name, cls=HelpCommand)(guarded)
    return register


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _out_ok(path: Path, inputs: list[Path], force: bool, option: str = "-o") -> None:
    """An output file may not be an input, a folder, or (without --force) an existing file: a golden set or a
    judging sheet someone filled in is never overwritten by accident."""
    resolved = path.resolve()
    if any(resolved == p.resolve() for p in inputs if p.exists()):
        raise InputError(f"{option} {path}: is one of the inputs; refusing to overwrite it (give another path)")
    special = not_replaceable(path)
    if special:  # --force or not: a link, a device or a pipe is never replaced
        raise InputError(f"{option} {path}: {special}")
    held = run_output_problem(path)
    if held:  # --force or not: a file a run's marker lists is that run's (the next run into the folder would stop)
        raise InputError(f"{option} {path}: {held}")
    if path.exists() and not force:
        raise InputError(f"{option} {path}: exists; refusing to overwrite it (give another path, or --force)")


def _force_option() -> bool:
    return typer.Option(False, "--force", help="overwrite the output file if it exists")


def _before(against: Optional[Path]):
    from ..gold.check import Before
    from ..gold.sources import read_corpus

    if against is None:
        return None
    from ..io.outmarker import MARKER
    from ..result.read import load_result, results_path

    if against.is_dir() and (against / MARKER).is_file() and results_path(against) != against:
        against = results_path(against)  # a run's output folder: its results.json, as every results reader takes it
    if against.suffix == ".json":  # a run's results.json: the fingerprints of the documents it judged
        return Before(fingerprints=load_result(against).goldset.judged_documents)
    if not against.exists():
        raise InputError(f"--against {against}: not found (an old corpus, or a results.json)")
    return Before(docs=read_corpus(against))


def _before_covers(against: Path, before, raw) -> None:
    """``--against`` must know the golden set's documents: a results.json of a run over another golden set, or a
    corpus without them, would say nothing changed (every label valid). None known: an error; some: a warning."""
    judged = sorted({j.doc_id for q in raw for j in q.relevant})
    known = before.docs if before.docs is not None else before.fingerprints or {}
    unknown = [d for d in judged if d not in known]
    if judged and len(unknown) == len(judged):
        what = "the run judged" if before.docs is None else "the old corpus has"
        raise InputError(f"--against {against}: {what} none of the {len(judged)} documents this golden set judges "
                         f"(a run over another golden set, or another corpus?); whether they changed cannot be told")
    if unknown:
        _err(f"warning: --against {against}: {len(unknown)} of the {len(judged)} judged documents are not in it "
             f"(e.g. {', '.join(map(repr, unknown[:5]))}): whether they changed is unknown; checked against the "
             f"current corpus only")


@command("check")
def check(gold: Path = typer.Argument(..., metavar="GOLD", help="the golden set (native JSONL/YAML, or a BEIR folder)"),
          corpus: Path = typer.Option(..., "--corpus", help="the current corpus (JSONL, folder, BEIR folder)"),
          against: Optional[Path] = typer.Option(None, "--against", help="what the corpus was: the old corpus, or "
                                                                          "a results.json of a run on it"),
          fix: Optional[Path] = typer.Option(None, "--fix", metavar="OUT", help="write a repaired golden set here: "
                                             "only unambiguous re_anchorable labels are changed"),
          force: bool = _force_option(),
          fmt: CheckFormat = format_option(CheckFormat.table)) -> None:
    """Classify every label: valid, re_anchorable, split, orphaned or stale. Exit 1 when any is not valid.

    Example: harness goldset check goldset.jsonl --corpus corpus.jsonl --against old.jsonl --fix fixed.jsonl
    """
    from ..gold.check import check_goldset, counts
    from ..gold.repair import repaired_rows
    from ..gold.sources import check_gold_path, read_corpus, read_gold, write_gold

    if fix is not None:
        _out_ok(fix, [gold, corpus] + ([against] if against else []), force, "--fix")
        check_gold_path(fix, "--fix")
    raw = read_gold(gold)
    docs = read_corpus(corpus)
    before = _before(against)
    if before is not None:
        _before_covers(against, before, raw)
    labels = check_goldset(raw, docs, before)
    tally = counts(labels)
    fixed, conflicts = [], []
    if fix is not None:
        rows, fixed, conflicts = repaired_rows(raw, labels, docs)
        write_gold(fix, rows, [gold], option="--fix", replace=force)
    if fmt.value == "json":
        print(json.dumps({"labels": [lab.to_dict() for lab in labels], "counts": tally}, ensure_ascii=False,
                         indent=2))
    else:
        for lab in labels:
            if lab.status != "valid":
                print(f"{lab.status}\t{lab.query_id}\t{lab.doc_id}\t{lab.detail}")
        print(", ".join(f"{s}: {n}" for s, n in tally.items()))
    if fix is not None:
        for line in conflicts:
            _err(f"conflict: {line}")
        left = len(labels) - tally["valid"] - len(fixed)
        _err(f"{fix}: {len(fixed)} label(s) re-anchored; {left} left for a person (listed above)")
    if tally["valid"] != len(labels):
        raise typer.Exit(1)


@command("build")
def build(source: Path = typer.Option(..., "--from", help="answers JSONL: {id, query, answers: \\[text], doc?, grade?, "
                                                          "tags?} a line; an answer in several spans: a list of its "
                                                          "parts' texts (part i: evidence group 'part i')"),
          corpus: Path = typer.Option(..., "--corpus", help="the corpus the answers are located in"),
          corpus_format: Optional[CorpusFormat] = typer.Option(None, "--format", help="the corpus format (default: "
                                                               "inferred: a file is jsonl, a folder with corpus.jsonl "
                                                               "beir, another folder folder)"),
          out: Path = out_option("the golden set (native JSONL)", required=True),
          unresolved: Optional[Path] = typer.Option(None, "--unresolved", metavar="FILE", help="also write every "
                                                    "ambiguous or missing answer, with its places, as JSONL"),
          force: bool = _force_option()) -> None:
    """A golden set from question/answer pairs or quotes, each answer located as an evidence span.

    An answer found in several places is placed where its passage matches the question best, when it clearly
    wins (BM25; the margin is recorded). Exit 1 when some answer is ambiguous or missing: listed on stderr, never
    guessed, and out of the golden set.

    Example: harness goldset build --from answers.jsonl --corpus corpus.jsonl -o goldset.jsonl
    """
    from ..gold.build import build_goldset, read_answers, tally
    from ..gold.rank import MIN_MARGIN
    from ..gold.sources import check_gold_path, read_corpus, write_golds

    _out_ok(out, [source, corpus], force)
    check_gold_path(out, "-o")
    if unresolved is not None:
        if unresolved.resolve() == out.resolve():
            raise InputError(f"--unresolved {unresolved}: the same file as -o; give another path")
        _out_ok(unresolved, [source, corpus], force, "--unresolved")
        check_gold_path(unresolved, "--unresolved")
    docs = read_corpus(corpus, corpus_format.value if corpus_format else None)
    rows, outcomes = build_goldset(read_answers(source, docs), docs)
    listed = [o for o in outcomes if o.how in ("ambiguous", "missing")]
    # Published together: a golden set beside another run's list of its unresolved answers would mislead
    write_golds([("-o", out, rows)] + ([("--unresolved", unresolved, [o.to_dict() for o in listed])]
                                       if unresolved is not None else []), [source, corpus], replace=force)
    for o in listed[:50]:
        places = ", ".join(f"{d}@{m.start}..{m.end}" for d, m in o.places[:5])
        margin = f" (its passages: margin {o.margin:.2f}, below {MIN_MARGIN})" if o.margin is not None else ""
        _err(f"{o.where}: query {o.query_id!r}: answer {o.answer[:60]!r} {o.how}{margin}" +
             (f": {places}" if places else ""))
    if len(listed) > 50:
        _err(f"... and {len(listed) - 50} more" + ("" if unresolved else " (--unresolved FILE lists them all)"))
    left_out = len({o.query_id for o in outcomes}) - len(rows)
    _err(f"{out}: {len(rows)} queries; answers: " + ", ".join(f"{k} {n}" for k, n in tally(outcomes).items()) +
         (f"; {left_out} queries left out (none of their answers placed)" if left_out else ""))
    if listed:
        raise typer.Exit(1)


@command("pool")
def pool(results: List[Path] = typer.Argument(..., metavar="RESULTS", help="one or more results.json files (or the folders runs wrote)"),
         depth: int = typer.Option(10, "--depth", min=1, help="pool the top DEPTH hits of each run"),
         out: Path = out_option("the judging sheet: .csv or .jsonl", required=True),
         corpus: Optional[Path] = typer.Option(None, "--corpus", help="the corpus for the chunk texts (default: the "
                                               "first run's config's corpus)"),
         order: PoolOrder = typer.Option(PoolOrder.rank, "--order", help="rank: by query, then best rank; rbp: what "
                                         "to judge first, highest priority first: the RBP weight of the document's "
                                         "rank in each run's document list summed over the runs, sum of "
                                         "(1-p) p^(rank-1) (trectools' rbp pooling); the sheet gets a priority "
                                         "column"),
         rbp_p: Optional[float] = typer.Option(None, "--rbp-p", help="RBP's persistence p for --order rbp, "
                                               "0 < p < 1 [default: 0.8]"),
         force: bool = _force_option()) -> None:
    """The unjudged hits in the top DEPTH of the runs, with query and chunk text, for a person to grade.

    Example: harness goldset pool reports/demo-bm25/results.json --depth 10 -o to_judge.csv

    Example: harness goldset pool runs/bm25 runs/dense --depth 20 --order rbp -o to_judge.csv
    """
    from ..result.read import load_result, results_path
    from ..gold import pool as pooling
    from ..gold.sources import read_corpus

    results = [results_path(p) for p in results]  # a run's folder: its results.json
    pooling.check_sheet_path(out, "-o")
    if rbp_p is not None and order.value != "rbp":
        raise InputError(f"--rbp-p {rbp_p}: p weighs the ranks of --order rbp only; add --order rbp")
    p = pooling.RBP_P if rbp_p is None else rbp_p
    if bad := pooling.rbp_problem(p):
        raise InputError(f"--rbp-p: {bad}")
    _out_ok(out, list(results) + ([corpus] if corpus else []), force)
    loaded = [load_result(p) for p in results]
    # The files the runs were made from are inputs too (--force or not): the corpus read here, and each run's golden
    # set, which the judged sheet is merged into next
    made_from = [Path(section["path"]) for r in loaded for key in ("corpus", "goldset")
                 if isinstance(section := r.config.as_dict().get(key), dict) and isinstance(section.get("path"), str)
                 and section["path"]]
    _out_ok(out, made_from, force=True)
    if corpus is None:
        cfg = loaded[0].config.as_dict().get("corpus")
        if not isinstance(cfg, dict) or not isinstance(cfg.get("path"), str) or not cfg["path"]:
            raise InputError(f"{results[0]}: its config names no corpus; give --corpus PATH")
        corpus = Path(cfg["path"])
        docs = read_corpus(corpus, cfg.get("format") if cfg.get("format") in ("jsonl", "beir", "folder") else None)
    else:
        docs = read_corpus(corpus)
    missing = pooling.missing_documents(loaded, docs, depth)
    if missing:
        raise InputError(f"{corpus}: {len(missing)} pooled document(s) are not in this corpus (the runs' corpus?)",
                         [f"document {d!r}" for d in missing[:20]])
    rows = pooling.pool(loaded, docs, depth, order=order.value, rbp_p=p)
    write_output("-o", out, pooling.sheet_text(out, rows), replace=force)
    for gap in pooling.window_gaps(loaded):
        share = gap.unjudged / gap.window_hits if gap.window_hits else 0.0
        _err(f"{gap.run}: {gap.unjudged} of {gap.window_hits} hits in the context windows are unjudged ({share:.0%}), "
             f"in {gap.queries_with_unjudged} queries")
    _err(f"{out}: {len(rows)} (query, chunk) rows to judge from the top {depth} of {len(loaded)} run(s)"
         + (f", highest RBP priority first (p = {p})" if order.value == "rbp" else ""))


@command("merge")
def merge(gold: Path = typer.Argument(..., metavar="GOLD", help="the golden set"),
          sheet: Path = typer.Argument(..., metavar="SHEET", help="a judged sheet from harness goldset pool (.csv or .jsonl)"),
          out: Path = out_option("the merged golden set (native JSONL)", required=True),
          force: bool = _force_option()) -> None:
    """Fold a judged sheet back into the golden set: grades and evidence quotes. Exit 1 on conflicts (listed).

    Documents the golden set judges and the sheet grades again: how many, and Cohen's kappa of the two rounds.

    Example: harness goldset merge goldset.jsonl to_judge.csv -o goldset.v2.jsonl
    """
    from ..gold.merge import merge as fold, read_sheet
    from ..gold.sources import check_gold_path, read_gold, write_gold

    _out_ok(out, [gold, sheet], force)
    check_gold_path(out, "-o")
    raw = read_gold(gold)
    judged, unjudged = read_sheet(sheet, {q.query_id: q for q in raw})
    rows, report = fold(raw, judged, unjudged)
    write_gold(out, rows, [gold, sheet], replace=force)
    for line in report.conflicts:
        _err(f"conflict: {line}")
    if report.agreement.pairs:
        from ..gold.agreement import agreement_line

        _err(agreement_line(report.agreement))
    _err(f"{out}: {report.added} judgment(s) added (with {report.new_quotes} evidence quote(s)), "
         f"{report.evidence_added} evidence quote(s) added to judgments it had, {report.unjudged_rows} row(s) not "
         f"judged yet, {len(report.conflicts)} conflict(s)")
    if report.new_quotes or report.evidence_added:  # merge has no corpus: where the quotes are is not checked here
        _err(f"check the quotes against the corpus: harness goldset check {out} --corpus CORPUS")
    if report.conflicts:
        raise typer.Exit(1)


@command("stats")
def stats(gold: Path = typer.Argument(..., metavar="GOLD", help="the golden set"),
          results: Optional[Path] = typer.Option(None, "--results", help="a results.json: the minimum detectable "
                                                 "effect from its per-query variance"),
          metric: List[str] = metric_option("ndcg@10 when the run has it, else its first metric"),
          fmt: StatsFormat = format_option(StatsFormat.table)) -> None:
    """Queries, judgments per query, grades, evidence coverage, slices, and the minimum detectable effect.

    Example: harness goldset stats goldset.jsonl --results reports/demo-bm25/results.json
    """
    from ..gold.sources import read_gold
    from ..gold.stats import detectable_effect, goldset_stats
    from ..render.goldset_stats import stats_lines

    if metric and results is None:
        raise InputError("--metric needs --results (the run whose per-query variance is used)")
    if len(metric) > 1:
        raise InputError(f"--metric: give one metric for the detectable effect, got {len(metric)}")
    raw = read_gold(gold)
    summary = goldset_stats(raw)
    if results is not None:
        from ..core.fingerprint import fingerprint_of_items
        from ..result.read import load_result

        run = load_result(results)
        if run.goldset.query_ids_fingerprint != fingerprint_of_items(sorted(q.query_id for q in raw)):
            raise InputError(f"--results {results}: a run over other queries than {gold} ({run.goldset.queries} "
                             f"queries, against {len(raw)}); the detectable effect would be another golden set's")
        summary["power"] = detectable_effect(run, metric[0] if metric else None)
    if fmt.value == "json":
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        print("\n".join(stats_lines(summary)))
