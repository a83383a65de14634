"""Render a run's Result: results.json, run.trec, run.chunks.trec and qrels.chunks.trec, hits.parquet (and
chunks.parquet), per_query.csv, report.md, report.html. The large files are streamed into the staging folder (``core.files.atomic_open``).

Numbers are rounded here and only here. Which queries a mean is over is never decided here: each query's
``counted`` flag says it (``metrics.table.included``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

from ..diagnostics.kinds import DRILLED
from ..result import querycolumns
from ..io.files import atomic_open, write_bytes, write_text
from .calibration import markdown_lines as calibration_lines
from .drilldown import Texts, drilldown, snippet, worst_of
from .fmt import at_k_sentence, fmt, md, md_code, md_table, means_sentence, plural  # noqa: F401 (md* re-exported)
from .stages import ladder_md, lost_counts_line

if TYPE_CHECKING:
    from ..io.outdir import OutputFolder
    from ..result.model import Result


def to_json(result: Result | dict) -> str:
    """results.json text, checked against the schema (``harness.result.model``) so nothing unreadable is ever written."""
    from ..result.model import as_result

    return as_result(result).to_json()


def per_query_csv(result: Result) -> str:
    """per_query.csv as text (``write_per_query_csv``)."""
    buf = io.StringIO()
    write_per_query_csv(result, buf)
    return buf.getvalue()


def write_per_query_csv(result: Result, fh) -> None:
    """One row per query; ``counted.doc``/``counted.chunk`` (1 or 0) say whether the row enters that level's means,
    so the mean of the counted rows of a column is the summary's number. Written row by row into ``fh``: a 1M-query
    run's CSV is ~100 MB, which as one string (and its bytes) was the largest thing its writing held."""
    queries = result.queries
    doc_metrics = list(queries[0].metrics.doc) if queries else []
    chunk_metrics = list(queries[0].metrics.chunk) if queries else []
    writer = csv.writer(fh, lineterminator="\n")
    tags = sorted(querycolumns.of(result).tags)  # (the columns know every tag: no pass over the records for it)
    writer.writerow(["query_id", *[f"tag.{t}" for t in tags], "verdict", "flags", "effective_k", "counted.doc",
                     "counted.chunk", *[f"doc.{m}" for m in doc_metrics], *[f"chunk.{m}" for m in chunk_metrics]])
    for q in queries:
        writer.writerow([q.id, *[q.tags.get(t, "") for t in tags], q.verdict.kind, " ".join(q.verdict.flags),
                         q.effective_k, int(q.counted.doc), int(q.counted.chunk),
                         *[repr(q.metrics.doc[m]) for m in doc_metrics],
                         *[repr(q.metrics.chunk[m]) for m in chunk_metrics]])


def _drill_md(q, texts: Texts | None) -> list[str]:
    """One query's drill-down in text: the reason, where the evidence ranked, its text, and what outranked it."""
    d = drilldown(q, texts)
    out = [f"- **{md(q.id)}** “{md(q.text)}”: {md(d.reason)}", f"  - {md(d.headline())}"]
    if d.position:
        out.append(f"  - {md(d.position)}")
    for ev in d.evidence:
        where = "the whole document" if ev.start is None else f"\\[{ev.start}, {ev.end})"
        text = f": “{md(snippet(ev.text, 200))}”" if ev.text is not None else ""
        group = f" (group {md(ev.group)})" if ev.group is not None else ""
        out.append(f"  - gold evidence in {md_code(ev.doc_id)} {where}{group}{text}")
    out += ladder_md(q.verdict.detail)
    if d.kind == "missing_document":
        for g in d.gold_docs:
            rank = f"best rank {g.best_rank}" if g.best_rank is not None else "not retrieved"
            text = f": “{md(snippet(g.text, 200))}”" if g.text is not None else ""
            out.append(f"  - gold document {md_code(g.doc_id)} (grade {md(g.grade)}, {md(rank)}){text}")
    above = d.outranked_by
    if above:
        label = "outranked by" if d.target_rank is not None else "the window holds"
        out.append(f"  - {label}:")
        for r in above[:8]:
            mark = f" ({r.mark})" if r.mark else ""
            text = f" “{md(snippet(r.text, 90))}”" if r.text is not None else ""
            out.append(f"    - {md(r.rank)}. {md_code(r.chunk_id)} score {md(format(r.score, '.3f'))}{md(mark)}{text}")
        hidden = len(above) - 8 + d.more_above
        if hidden > 0:
            out.append(f"    - … and {md(plural(hidden, 'more chunk'))} above the evidence")
    return out


def _window_size(result: Result) -> str:
    """"; mean window 150 words, 865 characters": what the window holds, the number chunkers are compared by."""
    cut = result.cutoff
    if cut.mean_window_chars is None or cut.mean_window_tokens is None:
        return ""
    unit = "words" if (cut.token_budget is None or cut.tokenizer in (None, "words")) else "tokens"
    return f"; mean window {cut.mean_window_tokens:.0f} {unit}, {cut.mean_window_chars:.0f} characters"


def markdown(result: Result | dict, worst: int = 5, texts: Texts | dict | None = None) -> str:
    """report.md. Every value from the result goes through ``md`` (text) or ``md_code`` (ids), never raw.
    ``texts``: chunk (and document) texts for the worst queries' drill-downs (a dict is chunk texts by id)."""
    from ..result.model import as_result

    result = as_result(result)
    texts = texts if isinstance(texts, Texts) else Texts(texts or result.chunk_text)
    s = result.summary
    g, c, cut = result.goldset, result.corpus, result.cutoff
    out = [f"# Retrieval report: {md(result.name)}", ""]
    out.append(f"Golden set **{md(g.name)}** ({md(g.queries)} queries, {md(g.judgments)} judgments); "
               f"corpus of {md(c.documents)} documents in {md(c.chunks)} chunks; retriever "
               f"{md_code(result.config.retriever.kind)}; window {md(cut.describe)} (mean effective k "
               f"{md(format(cut.mean_effective_k, '.2f'))}{md(_window_size(result))}), depth {md(cut.depth)}.")
    out.append("")
    out.append("## Metrics")
    names = list(s.doc)
    out += md_table(["metric", "doc level", "chunk level"], [[n, fmt(s.doc[n]), fmt(s.chunk.get(n))] for n in names])
    if at_k := at_k_sentence(result):
        out += ["", md(at_k)]
    cd, cc = s.counts.doc, s.counts.chunk
    out.append("")
    out.append(md(means_sentence(result, "doc")) + " " + md(means_sentence(result, "chunk")))
    if cd.absent_from_run or cd.unjudged_run_queries:
        out.append("")
        out.append(f"The run lacks {md(cd.absent_from_run)} judged quer{'y' if cd.absent_from_run == 1 else 'ies'}"
                   + (f" ({md(', '.join(cd.absent_from_run_query_ids[:10]))})" if cd.absent_from_run else "")
                   + f" (scored 0) and holds {md(cd.unjudged_run_queries)} quer"
                   f"{'y' if cd.unjudged_run_queries == 1 else 'ies'} the golden set does not have (ignored).")
    if result.latency is not None:  # results written before latency was recorded have none
        lat = result.latency
        out.append("")
        out.append(f"Latency per query: p50 {md(format(lat.p50_ms, '.1f'))} ms, p95 {md(format(lat.p95_ms, '.1f'))} ms, "
                   f"max {md(format(lat.max_ms, '.1f'))} ms; {md(format(lat.queries_per_s, '.1f'))} queries/s "
                   f"(measured {md(lat.measured)}).")
    if result.requests is not None and result.requests.failed:
        r = result.requests
        out.append("")
        out.append(f"Requests failed for {md(r.failed)} of {md(r.sent)} queries (on_error: {md(r.on_error)}; absent "
                   f"from the run): {md(', '.join(r.failed_query_ids[:10]))}.")
    out.append("")
    out.append(f"Nothing relevant in the window: {md(plural(cd.nothing_found_in_window, 'query', 'queries'))} at doc level, "
               f"{md(cc.nothing_found_in_window)} at chunk level (report MRR with this share).")
    v = s.verdicts
    counts, shares = v.counts.model_dump(), v.shares.model_dump()
    out += ["", "## Verdicts", ""]
    out += md_table(["verdict", "queries", "share"], [[k, counts[k], f"{shares[k]:.0%}"] for k in counts])
    out.append("")
    out.append("Flags: " + md(", ".join(f"{f} {n}" for f, n in v.flags.model_dump().items())) +
               f". Missing documents: {md(v.by_where.beyond_cutoff)} beyond the cutoff "
               f"({md(v.by_where.near_cutoff)} just past it), {md(v.by_where.not_retrieved)} not retrieved"
               + (f", {md(v.by_where.absent_from_run)} absent from the run" if v.by_where.absent_from_run else "")
               + ".")
    if lost_counts_line(v.lost_at):
        out += ["", md(lost_counts_line(v.lost_at))]
    for tag, values in v.by_slice.items():
        out += ["", f"### By {md(tag)}", ""]
        rows = {val: c.model_dump() for val, c in values.items()}
        kinds = [k for k in counts if any(c[k] for c in rows.values())]
        out += md_table([tag, *kinds], [[val, *[c[k] for k in kinds]] for val, c in sorted(rows.items())])
    if v.advice:
        out += ["", "## Advice", ""] + [f"- {md(a)}" for a in v.advice]
    out += calibration_lines(s)
    out += ["", "## Worst queries", ""]
    kinds = querycolumns.of(result)  # only each kind's records are read (a large run's are spooled)
    for kind in DRILLED:  # the failing kinds with evidence to show (diagnostics.kinds)
        code = kinds.kind_names.index(kind) if kind in kinds.kind_names else -1
        total, rows = worst_of((result.queries[i] for i in (kinds.kinds == code).nonzero()[0].tolist()), kind, worst)
        if not total:
            continue
        order = "by first relevant rank, not retrieved last" if kind == "missing_document" else "worst first"
        out += [f"### {md(kind)} ({total}, {order})", ""]
        for q in rows:  # a large run keeps a selection of hits here: the others are in hits.parquet
            out += _drill_md(result.with_hits(q), texts) + [""]
    out += ["## Conventions", ""] + [f"- **{md(k)}**: {md(val)}" for k, val in result.conventions.items()]
    out += ["", f"Config hash {md_code(result.config_hash)}, harness {md(result.harness_version)}, "
                f"created {md(result.created_at)}."]
    return "\n".join(out) + "\n"


def write_outputs(result: Result, out_dir: Path | OutputFolder, *, force: bool = False) -> Path:
    """Write every output of a run into ``out_dir`` (see ``outdir``: harness replaces only files it wrote, and the
    files appear when all are written). A Path is opened (locked, checked) here; the CLI passes a folder it opened
    before the run, so a folder that cannot be written is refused before minutes of work."""
    from ..io.outdir import OutputFolder, open_output

    if not isinstance(out_dir, OutputFolder):
        with open_output(out_dir, run=result.name, force=force) as folder:
            return write_outputs(result, folder)
    with out_dir.publish() as stage:
        write_run_files(result, stage)
    return out_dir.path


def write_run_files(result: Result, folder: Path) -> None:
    """The files of one run, written plainly into ``folder`` (a staging folder: ``write_outputs`` or a sweep)."""
    from ..hits.parquet import write_chunks, write_hits

    run = result.run
    with atomic_open(folder / "results.json") as fh:
        result.write_json(fh)
    with atomic_open(folder / "run.trec") as fh:
        fh.writelines(run.trec_lines("doc"))
    with atomic_open(folder / "run.chunks.trec") as fh:
        if result.units is None:
            fh.writelines(run.trec_lines("chunk"))
        else:  # the chunk level as scored: evidence units, with qrels.chunks.trec beside it (hits.units)
            from ..hits.units import unit_qrels_lines, unit_run_lines
            fh.writelines(unit_run_lines(run.lists, result.units[0], run.name or "harness"))
    if result.units is not None:
        with atomic_open(folder / "qrels.chunks.trec") as fh:
            fh.writelines(unit_qrels_lines(result.units[1]))
    store = result.hit_source  # the run's hits in memory (io.hitsfile.RunHits)
    write_hits(folder / result.hits_file, store, result.run_id)
    if result.chunks_file:
        write_chunks(folder / result.chunks_file, [store.chunks[c] for c in store.hit_chunk_ids()], result.run_id)
    with atomic_open(folder / "per_query.csv") as fh:
        write_per_query_csv(result, fh)
    write_text(folder / "report.md", markdown(result))
    from . import plots
    from .html import render
    charts = plots.run_charts([result])  # made once: inline SVG in the page, PNG files beside it for slides
    try:
        write_text(folder / "report.html", render([result], [result.chunk_text], charts=charts))
        for chart in charts or []:
            write_bytes(folder / f"{chart.name}.png", chart.png())
    finally:
        plots.close(charts)


def load_results(path: Path) -> Result:
    """A saved results.json, validated by the schema (every problem located)."""
    from ..result.read import load_result

    return load_result(path)
