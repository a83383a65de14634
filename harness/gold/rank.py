"""Choosing among the places an answer was found (``goldset build``): by how well the passage around each place
matches the question, scored with the project's own BM25 over those passages, and only when the best clearly wins.

The passage of a place is the sentence(s) its span overlaps (``text.analysis.sentence_spans``). The passages are a
small corpus of their own, so the BM25 is BM25+ with delta 0: its idf, log((N + 1) / n), stays positive with two
passages (okapi's is 0 or floored there), and delta 0 adds no constant to every passage, so scores compare as
ratios. The margin is ``1 - second / best``: the share by which the best passage's score beats the runner-up's.
The best place is taken when the margin is at least ``MIN_MARGIN``; identical passages (a sentence repeated) tie,
margin 0, and stay ambiguous for a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..core.types import Chunk, Document
from ..text.analysis import sentence_spans
from .locate import Match

MIN_MARGIN = 0.25  # the best passage scores at least 4/3 of the runner-up
MAX_PLACES = 50  # an answer found in more places is too common a text to place by its neighbours: left ambiguous
# (rank_bm25 behind it: exact scores; the candidates are a handful of sentences, speed is no concern)
RANKER = {"kind": "bm25", "variant": "plus", "delta": 0.0, "backend": "rank_bm25",
          "tokenizer": {"stopwords": "nltk", "stemmer": "english"}}


@dataclass(frozen=True)
class Ranked:
    """The places' BM25 scores (in the places' order), the chosen place (None: no clear winner) and the margin."""

    scores: tuple[float, ...]
    chosen: int | None
    margin: float


def passage(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentences ``start..end`` overlaps (the whole text when it has no sentence there)."""
    spans = [(s, e) for s, e in sentence_spans(text) if s < end and e > start]
    return (spans[0][0], spans[-1][1]) if spans else (0, len(text))


def rank_places(question: str, places: Sequence[tuple[str, Match]], docs: Mapping[str, Document]) -> Ranked:
    # Lazy: the retrievers stage comes after gold; `goldset build` alone needs BM25 here (no cycle: retrievers
    # never import gold).
    from ..retrievers import build_retriever

    if len(places) > MAX_PLACES:
        return Ranked((), None, 0.0)
    chunks = []
    for i, (doc_id, m) in enumerate(places):
        text = docs[doc_id].text
        s, e = passage(text, m.start, m.end)
        chunks.append(Chunk(f"p{i}", doc_id, s, e, text[s:e], text[s:e]))
    retriever = build_retriever(RANKER)
    retriever.index(chunks)
    scores = tuple(float(x) for x in retriever.scores(question))
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    best, second = scores[order[0]], scores[order[1]]
    margin = 0.0 if best <= 0 else round(1 - second / best, 4)
    return Ranked(scores, order[0] if margin >= MIN_MARGIN else None, margin)
