"""Explain one query down to the chunk: the gold evidence, the window with snippets, where the evidence ranked,
the verdict and its reason, and for BM25 the matching terms and their contributions."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..core.errors import InputError
from .stages import ladder_lines

if TYPE_CHECKING:
    from ..result.model import Result


def _snippet(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def explain_result(result: Result | dict, query_id: str, chunk_text: dict[str, str] | None = None,
                   doc_text: dict[str, str] | None = None,
                   contributions: dict[str, dict[str, float]] | None = None) -> dict:
    """One query of a result explained, as a JSON-ready dict: its gold evidence (the spans the run judged with,
    from the result), its window with snippets, relevant hits past the window, verdict, metrics and counted flags.
    Texts come from the result (kept in it or beside it) unless ``chunk_text``/``doc_text`` give them."""
    from ..result.model import as_result

    result = as_result(result)
    q = result.query(query_id)
    if q is None:
        known = ", ".join(x.id for x in result.queries[:10])
        raise InputError(f"query {query_id!r} is not in this result (first ids: {known})")
    k, hits = q.effective_k, result.hits_of(q)
    if chunk_text is None:
        chunk_text = result.texts_of(h.chunk_id for h in hits[:k])
    evidence = [{"doc_id": g.doc_id, "start": a, "end": b, "whole_document": False,
                 "text": g.evidence_text[i] if g.evidence_text is not None else (doc_text or {}).get(g.doc_id, "")[a:b]}
                for g in q.gold for i, (a, b) in enumerate(g.evidence)]
    # A relevant document judged without spans is evidence as a whole: named, with the text a reader checks it by
    # (its best-ranked chunk, else its start), as the report's drill-down shows it.
    evidence += [{"doc_id": g.doc_id, "start": None, "end": None, "whole_document": True,
                  "text": _whole_document_text(result, hits, g.doc_id, chunk_text, doc_text)}
                 for g in q.gold if g.grade >= 1 and not g.evidence and q.verdict.kind != "goldset_error"]
    window = []
    for h in hits[:k]:
        row = dict(h.model_dump(), snippet=_snippet(chunk_text.get(h.chunk_id, "")))
        if contributions and h.chunk_id in contributions:
            row["terms"] = {t: round(v, 4) for t, v in contributions[h.chunk_id].items() if v > 0}
        window.append(row)
    # Past the window: the relevant chunks, and apart from them the other chunks of a relevant document (the right
    # document, not the evidence: listing them as relevant said 20 of the demo's 46 queries wrong).
    beyond = [{"rank": h.rank, "chunk_id": h.chunk_id, "doc_id": h.doc_id, "score": h.score}
              for h in hits[k:] if h.relevant][:10]
    right_doc = [{"rank": h.rank, "chunk_id": h.chunk_id, "doc_id": h.doc_id, "score": h.score}
                 for h in hits[k:] if h.doc_relevant and not h.relevant][:10]
    return {"query_id": query_id, "query": q.text, "tags": dict(q.tags), "window_size": k,
            "verdict": q.verdict.to_dict(), "evidence": evidence, "window": window, "relevant_beyond_window": beyond,
            "right_document_beyond_window": right_doc,
            "metrics": q.metrics.model_dump(), "counted": q.counted.model_dump()}


def _whole_document_text(result, hits, doc_id: str, chunk_text: dict[str, str], doc_text: dict[str, str] | None) -> str:
    """The text a whole-document judgment is shown by: the document (explain from a config), else its best-ranked
    chunk, else its first chunk the result carries; "" when the result has none of them."""
    if doc_text and doc_id in doc_text:
        return doc_text[doc_id]
    best = next((h for h in hits if h.doc_id == doc_id), None)
    if best is not None:
        text = chunk_text.get(best.chunk_id) or result.texts_of([best.chunk_id]).get(best.chunk_id)
        if text:
            return text
    carried = [(c.start, c.text) for c in (result.chunks or {}).values() if c.doc_id == doc_id]
    return min(carried)[1] if carried else ""


def to_markdown(ex: dict) -> str:
    """Markdown for one explained query; every value from the result is escaped (``report.md``/``md_code``)."""
    from .outputs import md, md_code, md_table

    v = ex["verdict"]
    out = [f"### {md(ex['query_id'])}: “{md(ex['query'])}”", "", f"**{md(v['kind'])}**: {md(v['reason'])}"
           + (f" (flags: {md(', '.join(v['flags']))})" if v["flags"] else ""), ""]
    if ex["evidence"]:
        out.append("Gold evidence:")
        out += [f"- {md_code(e['doc_id'])} {_where_md(e)}: “{md(_snippet(e['text']))}”" for e in ex["evidence"]]
        out.append("")
    if ladder := ladder_lines(v.get("detail", {})):  # a composite retriever's stages (diagnostics.stages)
        out += ["Stages (relevant documents: rank; evidence units: rank):", ""] + [f"- {md(x)}" for x in ladder] + [""]
    out.append(f"Window ({md(ex['window_size'])} chunks):")
    out.append("")
    rows = []
    for h in ex["window"]:
        mark = "evidence" if h["relevant"] else ("right doc" if h["doc_relevant"] else "")
        terms = f" — terms: {', '.join(f'{t} {c:.2f}' for t, c in h['terms'].items())}" if h.get("terms") else ""
        rows.append([h["rank"], f"{h['score']:.3f}", h["chunk_id"], mark, h["snippet"] + terms])
    out += md_table(["rank", "score", "chunk", "relevant", "snippet"], rows)
    for key, title in _BEYOND:
        if ex.get(key):
            out += ["", f"{title}: " + ", ".join(f"{md_code(h['chunk_id'])} at rank {md(h['rank'])}" for h in ex[key])]
    return "\n".join(out) + "\n"


_BEYOND = (("relevant_beyond_window", "Relevant beyond the window"),
           ("right_document_beyond_window", "Other chunks of a relevant document beyond the window"))


def _where_md(e: dict) -> str:
    from .outputs import md

    return "(whole document)" if e.get("whole_document") else f"\\[{md(e['start'])}, {md(e['end'])})"


def print_rich(ex: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    v = ex["verdict"]
    # User text is never parsed as rich markup: a "[/bold]" in a query would raise, "[link=...]" would render.
    console.print(Text.assemble((ex["query_id"], "bold"), ": ", ex["query"]))
    console.print(Text.assemble((v["kind"], "bold magenta"), ": ", v["reason"],
                                f"  flags: {', '.join(v['flags'])}" if v["flags"] else ""))
    for e in ex["evidence"]:
        where = "(whole document)" if e.get("whole_document") else f"[{e['start']},{e['end']})"
        console.print(Text(f"evidence in {e['doc_id']} {where}: {_snippet(e['text'])}", style="green"))
    for line in ladder_lines(v.get("detail", {})):  # a composite retriever's stages
        console.print(Text(line, style="cyan"))
    terms = set(re.findall(r"\w+", ex["query"].lower()))
    table = Table(title=f"window ({ex['window_size']} chunks)")
    for col in ("rank", "score", "chunk", "", "snippet"):
        table.add_column(col)
    for h in ex["window"]:
        snippet = Text(h["snippet"])  # user text is never parsed as markup
        snippet.highlight_words(terms, style="bold yellow", case_sensitive=False)
        mark = "evidence" if h["relevant"] else ("right doc" if h["doc_relevant"] else "")
        if h.get("terms"):
            snippet.append("\n" + ", ".join(f"{t} {c:.2f}" for t, c in h["terms"].items()), style="dim")
        table.add_row(str(h["rank"]), f"{h['score']:.3f}", Text(h["chunk_id"]), mark, snippet)
    console.print(table)
    for key, title in _BEYOND:
        for h in ex.get(key, ()):
            console.print(Text(f"{title[0].lower()}{title[1:]}: {h['chunk_id']} at rank {h['rank']}"))
