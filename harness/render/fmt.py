"""Formatting at the edge: numbers and counted nouns as people read them. Nothing upstream rounds or pluralises."""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..result.model import Result


def e(value) -> str:
    """The one HTML escaping helper: any value as HTML text, safe inside a quoted attribute too."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


# Characters that start HTML, an entity, a link, code, emphasis or a table cell; '<' except before '=', a space or a
# digit, which open no tag, comment or autolink (a rule's "<= 0.5" stays as written); '_' only where it could open
# or close emphasis (CommonMark never does so inside a word, so snake_case ids stay readable).
_MD_SPECIAL = re.compile(r"[\\`*\[\]&|]|<(?![=\s0-9]|$)|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md(value) -> str:
    """Any value as inert Markdown text on one line: newlines become spaces and the special characters are
    backslash-escaped, so ``<script>`` shows as text and a ``|`` stays inside its table cell."""
    return _MD_SPECIAL.sub(lambda m: "\\" + m[0], " ".join(str(value).splitlines()))


def md_code(value, in_table: bool = False) -> str:
    """A value as a Markdown code span on one line: the fence is longer than any backtick run inside (CommonMark),
    so the value cannot close it, and HTML in it shows as text. In a table, ``|`` is escaped (GFM reads ``\\|``
    inside code spans in cells as a literal pipe)."""
    text = " ".join(str(value).splitlines())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def md_table(headers: list, rows: list[list]) -> list[str]:
    """A Markdown table; every cell, headers included, goes through ``md``."""
    return ["| " + " | ".join(md(h) for h in headers) + " |", "|" + "---|" * len(headers)] + [
        "| " + " | ".join(md(c) for c in row) + " |" for row in rows]


def plural(n: int, one: str, many: str | None = None) -> str:
    """``plural(1, "query", "queries")`` -> "1 query"; ``plural(2, "query", "queries")`` -> "2 queries".

    ``many`` defaults to ``one + "s"``; irregular ones (query -> queries) are passed."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def fixed(value: float | None, digits: int = 4) -> str:
    """A mean or a per-query value with ``digits`` decimals; ``n/a`` where no query has relevant gold."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def megabytes(mb: float) -> str:
    """A size already in megabytes (10^6 bytes), to one decimal: ``12.3 MB``."""
    return f"{mb:.1f} MB"


def fmt(value, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def means_sentence(result: Result, level: str) -> str:
    """"means over N of M queries" at one level, and why each query not counted is not, from the summary counts
    (which match the ``counted`` flags: the schema checks it)."""
    c = result.summary.level_counts(level)
    parts, unanswerable = [], getattr(c, "unanswerable_queries", 0)
    if c.excluded_goldset_error:
        parts.append(f"{c.excluded_goldset_error} with a golden-set error excluded "
                     f"({_some(c.excluded_goldset_error_query_ids, c.excluded_goldset_error)})")
    if unanswerable:
        parts.append(f"{unanswerable} marked answerable: false excluded (judged for abstention: "
                     f"{_some(c.unanswerable_query_ids, unanswerable)})")
    if c.no_relevant_queries:
        what = ("counted as 0" if c.evaluated_queries + c.excluded_goldset_error + unanswerable
                == c.judged_queries else "excluded")
        parts.append(f"{c.no_relevant_queries} with no relevant {'document' if level == 'doc' else 'chunk'} {what} "
                     f"({_some(c.no_relevant_query_ids, c.no_relevant_queries)})")
    return (f"{level} level: means over {c.evaluated_queries} of {c.judged_queries} queries"
            + (f"; {'; '.join(parts)}" if parts else "") + ".")


def _some(ids: list[str], total: int, shown: int = 10) -> str:
    """The first ``shown`` of ``total`` ids, and how many more there are."""
    return ", ".join(ids[:shown]) + (f" and {total - shown:,} more" if total > shown else "")


def at_k_sentence(result: Result) -> str:
    """Why a doc-level @N and @window can differ with N equal to the window (hit@5 0.77 against hit@window 0.75 at
    k=5): "" unless the doc level shows both kinds."""
    import re

    names = list(result.summary.doc)
    fixed_k = sorted({int(m.group(1)) for n in names if (m := re.search(r"@(\d+)$", n))})
    if not fixed_k or not any(n.endswith("@window") for n in names):
        return ""
    n = result.cutoff.k if result.cutoff.k in fixed_k else fixed_k[0]
    return (f"At doc level, @{n} counts the top {n} distinct documents; @window counts the documents of the "
            f"window's chunks (fewer when a document has several chunks there), so they can differ at k={n}.")
