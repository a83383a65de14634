"""Render the canonical result dict: results.json, run.trec, run.chunks.trec, per_query.csv, report.md.

Numbers are rounded here and only here."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import write_text

if TYPE_CHECKING:
    from .outdir import OutputFolder


def fmt(value, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def to_json(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if not k.startswith("_")}, indent=2, ensure_ascii=False)


def per_query_csv(result: dict) -> str:
    buf = io.StringIO()
    queries = result["queries"]
    doc_metrics = list(queries[0]["metrics"]["doc"]) if queries else []
    chunk_metrics = list(queries[0]["metrics"]["chunk"]) if queries else []
    writer = csv.writer(buf, lineterminator="\n")
    tags = sorted({t for q in queries for t in q["tags"]})
    writer.writerow(["query_id", *[f"tag.{t}" for t in tags], "verdict", "flags", "effective_k",
                     *[f"doc.{m}" for m in doc_metrics], *[f"chunk.{m}" for m in chunk_metrics]])
    for q in queries:
        writer.writerow([q["id"], *[q["tags"].get(t, "") for t in tags], q["verdict"]["kind"],
                         " ".join(q["verdict"]["flags"]), q["effective_k"],
                         *[repr(q["metrics"]["doc"][m]) for m in doc_metrics],
                         *[repr(q["metrics"]["chunk"][m]) for m in chunk_metrics]])
    return buf.getvalue()


def _table(headers: list[str], rows: list[list]) -> list[str]:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + [
        "| " + " | ".join(esc(c) for c in row) + " |" for row in rows]


def markdown(result: dict, worst: int = 5) -> str:
    s = result["summary"]
    out = [f"# Retrieval report: {result['name']}", ""]
    out.append(f"Golden set **{result['goldset']['name']}** ({result['goldset']['queries']} queries, "
               f"{result['goldset']['judgments']} judgments); corpus of {result['corpus']['documents']} documents in "
               f"{result['corpus']['chunks']} chunks; retriever `{result['config']['retriever'].get('kind')}`; "
               f"window {result['cutoff']['describe']} (mean effective k "
               f"{result['cutoff']['mean_effective_k']:.2f}), depth {result['cutoff']['depth']}.")
    out.append("")
    out.append("## Metrics")
    names = list(s["doc"])
    out += _table(["metric", "doc level", "chunk level"], [[n, fmt(s["doc"][n]), fmt(s["chunk"].get(n))] for n in names])
    cd, cc = s["counts"]["doc"], s["counts"]["chunk"]
    out.append("")
    out.append(f"Means over {cd['evaluated_queries']} of {cd['judged_queries']} queries; "
               f"{cd['no_relevant_queries']} with no relevant document excluded"
               + (f" ({', '.join(cd['no_relevant_query_ids'][:10])})" if cd["no_relevant_query_ids"] else "")
               + f". Nothing relevant in the window: {cd['nothing_found_in_window']} queries at doc level, "
               f"{cc['nothing_found_in_window']} at chunk level (report MRR with this share).")
    v = s["verdicts"]
    out += ["", "## Verdicts", ""]
    out += _table(["verdict", "queries", "share"], [[k, v["counts"][k], f"{v['shares'][k]:.0%}"] for k in v["counts"]])
    out.append("")
    out.append("Flags: " + ", ".join(f"{f} {n}" for f, n in v["flags"].items()) +
               f". Missing documents: {v['by_where']['beyond_cutoff']} beyond the cutoff "
               f"({v['by_where']['near_cutoff']} just past it), {v['by_where']['not_retrieved']} not retrieved.")
    for tag, values in v["by_slice"].items():
        out += ["", f"### By {tag}", ""]
        kinds = [k for k in v["counts"] if any(c[k] for c in values.values())]
        out += _table([tag, *kinds], [[val, *[c[k] for k in kinds]] for val, c in sorted(values.items())])
    if v["advice"]:
        out += ["", "## Advice", ""] + [f"- {a}" for a in v["advice"]]
    out += ["", "## Worst queries", ""]
    for kind in ("goldset_error", "missing_document", "wrong_chunk", "buried_evidence"):
        rows = [q for q in result["queries"] if q["verdict"]["kind"] == kind]
        if not rows:
            continue
        rows.sort(key=lambda q: (q["metrics"]["chunk"].get("rr@window", 0), q["id"]))
        out += [f"### {kind} ({len(rows)})", ""]
        for q in rows[:worst]:
            out.append(f"- **{q['id']}** “{q['text']}”: {q['verdict']['reason']}")
            for h in q["hits"][: max(q["effective_k"], 1)][:5]:
                mark = "evidence" if h["relevant"] else ("right doc" if h["doc_relevant"] else "")
                out.append(f"  - {h['rank']}. `{h['chunk_id']}` score {h['score']:.3f} {mark}")
        out.append("")
    out += ["## Conventions", ""] + [f"- **{k}**: {val}" for k, val in result["conventions"].items()]
    out += ["", f"Config hash `{result['config_hash']}`, harness {result['harness_version']}, "
                f"created {result['created_at']}."]
    return "\n".join(out) + "\n"


def write_outputs(result: dict, out_dir: Path | OutputFolder, *, force: bool = False) -> Path:
    """Write every output of a run into ``out_dir`` (see ``outdir``: harness replaces only files it wrote, and the
    files appear when all are written). A Path is opened (locked, checked) here; the CLI passes a folder it opened
    before the run, so a folder that cannot be written is refused before minutes of work."""
    from .outdir import OutputFolder, open_output

    if not isinstance(out_dir, OutputFolder):
        with open_output(out_dir, run=result["name"], force=force) as folder:
            return write_outputs(result, folder)
    with out_dir.publish() as stage:
        write_run_files(result, stage)
    return out_dir.path


def write_run_files(result: dict, folder: Path) -> None:
    """The files of one run, written plainly into ``folder`` (a staging folder: ``write_outputs`` or a sweep)."""
    run = result["_run"]
    write_text(folder / "results.json", to_json(result))
    write_text(folder / "run.trec", run.to_trec("doc"))
    write_text(folder / "run.chunks.trec", run.to_trec("chunk"))
    write_text(folder / "per_query.csv", per_query_csv(result))
    write_text(folder / "report.md", markdown(result))
    from .html_report import render
    write_text(folder / "report.html", render([result], [result.get("_chunk_text", {})]))


def load_results(path: Path) -> dict:
    from .errors import InputError

    if not path.is_file():
        raise InputError(f"{path}: results file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}): a results.json written by harness run?") from None
    if not isinstance(data, dict) or "queries" not in data or "summary" not in data:
        raise InputError(f"{path}: not a harness results.json (no 'queries'/'summary')")
    return data
