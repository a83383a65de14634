"""The verdict kinds, in one table: every reader (the results.json schema, the selection of failing queries shown,
the plots' colours, the HTML's classes, the Markdown report's worst queries, ``--help``) takes them from here, so a
new kind is one row.

Exactly one kind per query, the first that applies in the order of the table (its precedence); flags are added
beside it, any number of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictKind:
    name: str
    failing: bool  # a query a person should look at (report.html and report.md show the worst of each)
    retriever_failure: bool  # the retriever's fault (not the golden set's): what advice and gates speak of
    colour: str  # the plots' fill
    text_colour: str  # report.html's text (darker than the fill, readable on white)
    meaning: str


TABLE = (
    VerdictKind("goldset_error", True, False, "#b42318", "#b42318",
                "the golden set's judgment could not be checked against the corpus (unknown document, quote not "
                "found)"),
    VerdictKind("unanswerable", False, False, "#475467", "#344054",
                "marked answerable: false (its answer is not in the corpus): judged for abstention, not ranked"),
    VerdictKind("no_gold", True, False, "#98a2b3", "#667085", "the query has no relevant document"),
    VerdictKind("missing_document", True, True, "#f04438", "#b42318", "no relevant document in the window"),
    VerdictKind("wrong_chunk", True, True, "#f79009", "#b54708",
                "a relevant document is in the window, but not a chunk holding its evidence"),
    VerdictKind("incomplete", True, True, "#dd2590", "#c11574",
                "the window holds evidence of some of the query's evidence groups, not all"),
    VerdictKind("buried_evidence", True, True, "#7a5af8", "#6941c6",
                "the evidence is in the window, but below the ranks the model reads well (diagnostics.buried_*)"),
    VerdictKind("ok", False, False, "#17b26a", "#17803d", "the evidence is in the window, near the top"),
)

BY_NAME = {k.name: k for k in TABLE}
KINDS = tuple(k.name for k in TABLE)  # in order of precedence
FAILING = tuple(k.name for k in TABLE if k.failing)
RETRIEVER_FAILURES = tuple(k.name for k in TABLE if k.retriever_failure)
COLOURS = {k.name: k.colour for k in TABLE}
# The kinds whose worst queries report.md drills into: a no_gold query has no evidence to show.
DRILLED = tuple(k for k in FAILING if k != "no_gold")
FLAGS = ("partial", "noisy_context", "unjudged_in_window")


def css() -> str:
    """report.html's ``.k-<kind>`` classes, one per kind."""
    return "".join(f".k-{k.name}{{color:{k.text_colour}}}" for k in TABLE)
