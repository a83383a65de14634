"""Hits from a live source (an HTTP service, a search engine, a Python function) as ``Hit`` objects.

A source returns JSON-like items; a small path mapping says where each of the external JSONL run's hit fields is
(``chunk_id``, or ``doc_id`` + ``start``/``end``, or ``doc_id`` + ``text``, and ``score``). Paths are dotted keys,
optionally starting with ``$.`` (``$.results``, ``payload.text``, ``_source.doc_id``, ``items.0.hits``). The hits
are then placed on the run's chunks by ``contract.HitPlacer`` like every retriever's, so an unplaceable hit is
reported, never invented. A response that does not fit the mapping is a problem naming the path, never zero hits.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Mapping, Optional

from pydantic import field_validator

from ..core.schema import Strict
from ..core.types import Document, Hit

_PATH = re.compile(r"^(\$|(\$\.)?[A-Za-z_@][\w@\-]*(\.([A-Za-z_@][\w@\-]*|[0-9]+))*)$")
_MISSING = object()


def path_problem(path: str) -> str | None:
    if not isinstance(path, str) or not _PATH.match(path):
        return (f"{path!r} is not a path: use dotted keys, optionally after '$.', e.g. '$.results', 'payload.text', "
                f"'_source.doc_id' (list positions as numbers: 'items.0')")
    return None


def get_path(value: Any, path: str) -> Any:
    """The value at ``path`` in ``value``, or ``_MISSING``."""
    if path == "$":
        return value
    for part in path.removeprefix("$.").split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def checked_path(value: str | None) -> str | None:
    """A hit-field path as given, or ValueError saying why it is not one (``path_problem``); ``None`` passes."""
    if value is not None:
        why = path_problem(value)
        if why:
            raise ValueError(why)
    return value


class HitMapping(Strict):
    """Where the hits are in a response and where each hit field is in one hit (``null``: the field is not used)."""

    hits: str = "$.hits"
    """the path of the list of hits in a response ($.hits, $.data.results)"""
    chunk_id: Optional[str] = "chunk_id"
    """the path of a hit's chunk id (null: not used)"""
    doc_id: Optional[str] = "doc_id"
    """the path of a hit's document id (null: not used)"""
    start: Optional[str] = "start"
    """the path of a hit's span start (null: not used)"""
    end: Optional[str] = "end"
    """the path of a hit's span end (null: not used)"""
    text: Optional[str] = "text"
    """the path of a hit's text, located in its document (null: not used)"""
    score: str = "score"
    """the path of a hit's score"""

    @field_validator("hits", "chunk_id", "doc_id", "start", "end", "text", "score")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return checked_path(value)


def hits_of(response: Any, mapping: HitMapping, documents: Mapping[str, Document]) -> tuple[list[Hit], str | None]:
    """The hits of one response, or ``([], why)`` naming the first path that does not fit."""
    items = get_path(response, mapping.hits)
    if items is _MISSING:
        return [], f"the response has no {mapping.hits!r} (response.hits in the config says where the hits are)"
    if not isinstance(items, list):
        return [], f"{mapping.hits!r} is {type(items).__name__}, expected a list of hits"
    hits = []
    for i, item in enumerate(items):
        hit = hit_of(item, mapping, documents)
        if isinstance(hit, str):
            return [], f"hit {i} of {mapping.hits!r}: {hit}"
        hits.append(hit)
    return hits, None


def _field(item: Any, path: str | None) -> Any:
    if path is None:
        return None
    value = get_path(item, path)
    return None if value is _MISSING else value


def _short(value: Any) -> str:
    """A value for a message: an integer of 400 digits shown by its first ones."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def hit_of(item: Any, mapping: HitMapping, documents: Mapping[str, Document]) -> Hit | str:
    """One item as a ``Hit`` (rank 0: ranks are given by ``rank_hits``), or why it cannot be one."""
    score = get_path(item, mapping.score)
    if score is _MISSING:
        return f"no score at {mapping.score!r}"
    score = _score(score)
    if isinstance(score, tuple):
        return f"score {score[0]} at {mapping.score!r} is not {score[1]}"
    chunk_id, doc_id = _field(item, mapping.chunk_id), _field(item, mapping.doc_id)
    start, end, text = _field(item, mapping.start), _field(item, mapping.end), _field(item, mapping.text)
    if chunk_id is not None and not isinstance(chunk_id, (str, int)) or isinstance(chunk_id, bool):
        return f"chunk id {chunk_id!r} is not a string"
    if doc_id is not None and not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
        return f"doc id {doc_id!r} is not a string"
    chunk_id = "" if chunk_id is None else str(chunk_id)
    doc_id = "" if doc_id is None else str(doc_id)
    if not chunk_id and not doc_id:
        return f"neither a chunk id (at {mapping.chunk_id!r}) nor a doc id (at {mapping.doc_id!r})"
    # As the external run: given offsets go to placement as they are (a bad one is reported there); a document
    # named alone is its whole text as one span.
    span = (-1, -1) if start is None and end is None else (-1 if start is None else start, -1 if end is None else end)
    doc = documents.get(doc_id)
    if not chunk_id and span == (-1, -1) and text is None and doc is not None:
        span = (0, len(doc.text))
    return Hit(chunk_id, doc_id, score, 0, span[0], span[1], text)


def _score(value: Any) -> float | tuple[str, str]:
    """A hit's score as a float, or what is wrong with it. Any real number is one: JSON's int and float, and a
    Python retriever's NumPy scalars (np.float32, np.int64), converted by ``float``; not a bool, a string, NaN or
    an infinity (nor an int too large to be a float, as JSON reads 1 followed by 400 zeros): then (the value
    shown, what it is not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return _short(value), "a number"
    try:
        score = float(value)
    except (OverflowError, ValueError, TypeError):
        score = math.inf
    if not math.isfinite(score):
        return _short(value), "a finite number"
    return score
