"""`harness eval`'s outputs: one MetricTable as JSON, TSV, Markdown or a terminal table.

JSON and TSV are for programs (full precision in JSON, 6 decimals in TSV as trec_eval-style tools expect); Markdown
and the terminal table are for people (4 decimals). Per-query values appear only when asked for: a million-query
run should not print a million rows by default."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, TextIO

from .fmt import fixed, plural

if TYPE_CHECKING:
    from ..metrics.engine import MetricTable


def to_json(table: "MetricTable", per_query: bool) -> str:
    data = {"mean": table.mean()}
    if per_query:
        data["per_query"] = table.per_query()
    data.update(conventions=table.conventions, counts=table.counts)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_tsv(table: "MetricTable", per_query: bool) -> str:
    """``metric<TAB>all<TAB>mean`` lines, then ``metric<TAB>query<TAB>value`` (trec_eval -q's layout)."""
    lines = [f"{name}\tall\t{fixed(value, 6)}" for name, value in table.mean().items()]
    if per_query:
        lines += [f"{name}\t{qid}\t{fixed(value, 6)}"
                  for qid, values in table.per_query().items() for name, value in values.items()]
    return "".join(line + "\n" for line in lines)


def _over(table: "MetricTable") -> str:
    counts = table.counts
    return f"means over {counts['evaluated_queries']} of {plural(counts['judged_queries'], 'judged query', 'judged queries')}"


def to_markdown(table: "MetricTable", per_query: bool) -> str:
    from .outputs import md  # the one escaping helper for Markdown cells

    means = table.mean()
    out = ["| metric | mean |", "|---|---|"]
    out += [f"| {md(name)} | {fixed(value)} |" for name, value in means.items()]
    out += ["", _over(table).capitalize() + "."]
    if per_query:  # "counted": whether the row enters the means above (no: a query without relevant documents)
        out += ["", "| query | " + " | ".join(md(n) for n in means) + " | counted |",
                "|---" * (len(means) + 2) + "|"]
        out += [f"| {md(qid)} | " + " | ".join(fixed(v) for v in values.values()) + f" | {_yes(counted)} |"
                for (qid, values), counted in zip(table.per_query().items(), table.included.tolist())]
    return "\n".join(out) + "\n"


def print_table(table: "MetricTable", per_query: bool, file: TextIO | None = None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    file = file or sys.stdout
    # A pipe gets rich's 80 columns otherwise; the table takes only the width it needs.
    console = Console(file=file, width=None if file.isatty() else 160, highlight=False)
    means = table.mean()
    summary = Table()
    summary.add_column("metric")
    summary.add_column("mean", justify="right")
    for name, value in means.items():
        summary.add_row(Text(name), fixed(value))  # Text: an id like "[b]" is shown, not read as markup
    console.print(summary)
    console.print(_over(table).capitalize() + ".", markup=False)
    if per_query:
        rows = Table()
        rows.add_column("query")
        for name in means:
            rows.add_column(Text(name), justify="right")
        rows.add_column("counted")
        for (qid, values), counted in zip(table.per_query().items(), table.included.tolist()):
            rows.add_row(Text(qid), *(fixed(v) for v in values.values()), _yes(counted))
        console.print(rows)


def _yes(counted: bool) -> str:
    return "yes" if counted else "no"


def coverage_warnings(counts: dict) -> list[str]:
    """What a user should know about a run that misses judged queries: the means still follow trec_eval's rules
    (absent queries score 0), but a run of the wrong topics or with renamed query ids would otherwise pass quietly."""
    judged, absent = counts["judged_queries"], counts["absent_from_run"]
    unjudged = counts["unjudged_run_queries"]
    if judged and absent == judged:
        return [f"the run and the qrels have no query in common ({plural(judged, 'judged query', 'judged queries')}, "
                f"{plural(unjudged, 'run query', 'run queries')} with no judgments): every judged query scores 0"]
    if absent:
        listed = counts["absent_from_run_query_ids"]
        shown = ", ".join(listed[:10]) + (f" and {len(listed) - 10} more" if len(listed) > 10 else "")
        verb = "is absent from the run and scores 0" if absent == 1 else "are absent from the run and score 0"
        return [f"{absent} of {judged} judged queries {verb}: {shown}"]  # absent < judged here: judged >= 2
    return []
