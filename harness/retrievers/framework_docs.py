"""What LangChain, LlamaIndex and Haystack return, read as the hit contract's hits.

Each framework's document becomes a ``Returned`` (text, metadata, a start offset the splitter recorded, a score, and
a source-document id the framework tracks), and ``returned_hit`` turns it into a ``Hit`` placed by the contract:
by the chunk id in its metadata (``chunk_id_key``), else by the start offset in its document (``doc_id_key``, or the
framework's own source id when it names a document of the corpus) when the text there is the returned text, else by
its text in that document, else by its text anywhere in the corpus when it occurs in one place only. Nothing here
imports a framework: the objects are read by their attributes."""

from __future__ import annotations

import bisect
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..core.types import Document, Hit


@dataclass(frozen=True)
class Returned:
    text: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    start: int | None = None
    end: int | None = None
    score: float | None = None
    source_id: str | None = None


def _real(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None


def langchain_doc(doc: Any, score_key: str | None) -> Returned:
    """A LangChain ``Document``: ``page_content``, ``metadata`` (``start_index`` from ``add_start_index=True``);
    a score only where the retriever put one in the metadata."""
    meta = dict(getattr(doc, "metadata", None) or {})
    return Returned(getattr(doc, "page_content", None), meta, _int(meta.get("start_index")), None,
                    _real(meta.get(score_key)) if score_key else None, None)


def llamaindex_node(item: Any) -> Returned:
    """A LlamaIndex ``NodeWithScore`` (or a bare node): the node's text, metadata, ``start_char_idx`` /
    ``end_char_idx`` and ``ref_doc_id``, and the score beside it."""
    node = getattr(item, "node", item)
    text = getattr(node, "text", None)
    if text is None and callable(getattr(node, "get_content", None)):
        text = node.get_content()
    return Returned(text, dict(getattr(node, "metadata", None) or {}), _int(getattr(node, "start_char_idx", None)),
                    _int(getattr(node, "end_char_idx", None)), _real(getattr(item, "score", None)),
                    getattr(node, "ref_doc_id", None))


def haystack_doc(doc: Any) -> Returned:
    """A Haystack ``Document``: ``content``, ``meta`` (``split_idx_start`` and ``source_id`` from its
    ``DocumentSplitter``), ``score``."""
    meta = dict(getattr(doc, "meta", None) or {})
    return Returned(getattr(doc, "content", None), meta, _int(meta.get("split_idx_start")), None,
                    _real(getattr(doc, "score", None)), meta.get("source_id"))


class Corpus:
    """Finds a returned text in the one document that holds it, when the document is not named: one search of
    the whole corpus joined by a separator no text contains."""

    SEP = "\x00"

    def __init__(self, documents: Mapping[str, Document]):
        self.documents = documents
        self._joined: str | None = None
        self._starts: list[int] = []
        self._ids: list[str] = []

    def locate(self, text: str) -> tuple[str, int] | str:
        """(doc id, offset) of ``text``, or why it cannot be said."""
        if self._joined is None:
            parts, at = [], 0
            for doc_id, doc in self.documents.items():
                self._starts.append(at)
                self._ids.append(doc_id)
                parts.append(doc.text)
                at += len(doc.text) + 1
            self._joined = self.SEP.join(parts)
        if not text or self.SEP in text:
            return "the document's text is empty"
        at = self._joined.find(text)
        if at < 0:
            return f"text {text[:50]!r} is in no document of the corpus"
        again = self._joined.find(text, at + 1)
        if again >= 0:
            return (f"text {text[:50]!r} occurs more than once in the corpus (at least twice); put the document id "
                    f"in its metadata (doc_id_key)")
        i = bisect.bisect_right(self._starts, at) - 1
        return self._ids[i], at - self._starts[i]


def returned_hit(r: Returned, score: float, chunk_id_key: str | None, doc_id_key: str | None,
                 corpus: Corpus) -> Hit | str:
    """The hit ``r`` stands for (rank 0: ranks come from ``rank_hits``), or why it names nothing of the corpus."""
    meta = r.metadata
    chunk_id = meta.get(chunk_id_key) if chunk_id_key else None
    doc_id = meta.get(doc_id_key) if doc_id_key else None
    doc_id = None if doc_id is None else str(doc_id)
    if doc_id is None and r.source_id is not None and str(r.source_id) in corpus.documents:
        doc_id = str(r.source_id)  # the framework's source document, when the factory kept the corpus's ids
    if chunk_id is not None:
        return Hit(str(chunk_id), doc_id or "", score, 0)
    text = r.text if isinstance(r.text, str) else None
    if doc_id is None:
        if text is None:
            return f"neither {chunk_id_key!r} nor {doc_id_key!r} in its metadata, and no text"
        found = corpus.locate(text)
        if isinstance(found, str):
            return found
        doc_id, at = found
        return Hit("", doc_id, score, 0, at, at + len(text))
    doc = corpus.documents.get(doc_id)
    if doc is not None and r.start is not None:
        end = r.end if r.end is not None else (r.start + len(text) if text is not None else None)
        # The splitter's offset, where the document's text there is the returned text (it is the document the
        # framework split); else the text decides.
        if end is not None and 0 <= r.start < end <= len(doc.text) and (text is None or doc.text[r.start:end] == text):
            return Hit("", doc_id, score, 0, r.start, end)
    return Hit("", doc_id, score, 0, -1, -1, text)


def scored(returned: Sequence[Returned]) -> tuple[list[float], bool]:
    """The scores to rank by, and whether they are the framework's: its own when every document has one and they
    never rise down the list (the framework's order is the ranking), else the list order (n, n-1, ..., 1)."""
    given = [r.score for r in returned]
    if given and all(s is not None for s in given) and all(a >= b for a, b in zip(given, given[1:])):
        return [float(s) for s in given], True
    n = len(returned)
    return [float(n - i) for i in range(n)], not given
