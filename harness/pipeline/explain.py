"""What ``harness explain`` and ``harness report`` need besides a Result: one ad-hoc query run through a config's
retriever and judged like a golden-set query (``adhoc``), and the texts a saved result's views show
(``saved_texts``). Loading and running live here; ``render.explain`` only shapes and prints what these return."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

from ..config.schema import ExperimentConfig, parse_config
from ..core.errors import HarnessError, InputError
from ..result.model import Result
from ..core.types import GoldSet, Judgment, Query, Span
from ..executors.retrieval import query_coverage, retrieve_all
from ..retrievers import BuildContext, build_retriever
from .assemble import build_result, prepare
from .levels import Coverage


@dataclass(frozen=True)
class AdHoc:
    """One ad-hoc query's Result (query id ``adhoc``), the texts of the corpus it ran over, and for BM25 each window
    chunk's matching terms with their score contributions."""

    result: Result
    chunk_text: Mapping[str, str]
    doc_text: Mapping[str, str]
    contributions: Mapping[str, Mapping[str, float]] | None


def _corpus_texts(config: ExperimentConfig) -> tuple[dict[str, str], dict[str, str]]:
    """(chunk texts, document texts) of the corpus the config names, chunked as the run chunked it."""
    from ..text.chunking import chunk_documents
    from ..io.documents import load_corpus

    docs = load_corpus(config.corpus)
    chunks = chunk_documents(docs, config.chunking)
    return {c.chunk_id: c.text for c in chunks}, {d.doc_id: d.text for d in docs}


def saved_texts(result: Result, where: str, warn: Callable[[str], None] | None = None
                ) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """(chunk texts, document texts) for a saved result's views: (None, None) when the result carries its own
    (windows, what outranked the evidence, the evidence itself). A results.json written before results carried texts
    has them from the corpus its config names; a corpus that cannot be loaded then is raised, or with ``warn`` is a
    warning and no texts (the report renders without)."""
    if result.chunks is not None:  # the texts the result carries (#13): the corpus is not read again
        return None, None
    try:
        return _corpus_texts(parse_config(result.config.as_dict(), where))
    except HarnessError as exc:
        if warn is None:
            raise
        warn(f"warning: chunk texts not loaded ({exc})")
        return {}, {}


def adhoc(config: ExperimentConfig, query: str, doc: str | None, quote: str | None, *,
          cache_dir: Path | None = None) -> AdHoc:
    """Run the config's retriever for one ad-hoc query, judged against ``doc`` (and ``quote``) if given."""
    prepared = prepare(config, log=lambda m: None)
    docs = {d.doc_id: d for d in prepared.docs}
    judgments, problems = (), []
    if quote and not doc:
        raise InputError("--quote: give the document it is in with --doc")
    if doc:
        spans = ()
        # What the user typed is checked, not diagnosed: a typo would otherwise read as a golden-set error, exit 0.
        if doc not in docs:
            near = difflib.get_close_matches(doc, list(docs), n=3)
            raise InputError(f"--doc {doc!r}: not a document of the corpus {config.corpus.path}"
                             + (f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""))
        if quote:
            at = docs[doc].text.find(quote)
            if at < 0:
                raise InputError(f"--quote: not found in document {doc!r} (quotes must match its text exactly)")
            spans = (Span(at, at + len(quote)),)
        judgments = (Judgment("adhoc", doc, 1, spans),)
    gold = GoldSet("adhoc", (Query("adhoc", query),), judgments)
    prepared = replace(prepared, gold=gold, problems=problems)
    context = BuildContext(progress=False, documents=docs, unplaceable=config.unplaceable(),
                           **({"cache_dir": cache_dir} if cache_dir else {}))
    retriever = build_retriever(config.retriever, context)
    got = retrieve_all(retriever, prepared.chunks, gold.queries, config.depth, progress=False,
                       kind=config.retriever["kind"], documents=context.documents,
                       unplaceable=config.unplaceable(), include_title=config.chunking.include_title)
    lists = got.lists
    coverage = Coverage(*query_coverage(retriever, gold.queries))  # an external run has no answer for an ad-hoc query
    result = build_result(replace(prepared, chunks=got.chunks), lists, got.timings, coverage, got.hits)
    contributions = None
    if hasattr(retriever, "term_contributions"):
        position = {c.chunk_id: i for i, c in enumerate(prepared.chunks)}
        k = result.queries[0].effective_k
        contributions = {h.chunk_id: retriever.term_contributions(query, position[h.chunk_id])
                         for h in lists[0].hits[:k]}
    return AdHoc(result, {c.chunk_id: c.text for c in prepared.chunks}, {d.doc_id: d.text for d in prepared.docs},
                 contributions)
