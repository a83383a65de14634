"""The retriever seam: the protocol, what a factory is given (``BuildContext``), the registry of kinds (built-in,
registered from code, or from a package entry point), and the two contracts a retriever's output must keep.

The retriever contract: ``index(chunks)`` once, then ``retrieve(queries, k)`` returns one ``RankedList`` per query
in input order, at most ``k`` hits each, by score descending with ties by chunk id descending (trec_eval's rule;
``ranking.rank_hits`` makes such lists), ranks 1..n. ``check_output`` enforces it on every batch, ties aside: a
hit's final chunk id is known only once it is placed, so placement puts ties in order (built-in kinds already are).

The hit contract: every hit names a chunk the run knows: by chunk id, or by doc id + ``[start, end)`` (a span that
is not one of the corpus's chunks becomes a chunk of that span, judged by evidence overlap like any other), or by
text found exactly once in its document. ``HitPlacer`` places hits; one it cannot place is a ``HitProblem`` naming
the query, the value and why, never an invented chunk or a silent zero.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..core.errors import ConfigError, RetrieverError
from ..core.types import Chunk, Document, Hit, Query, RankedList
from .ranking import rank_hits

MAX_SHOWN = 20  # problems listed in one error or warning; the rest are counted
ENTRY_POINT_GROUP = "harness.retrievers"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@runtime_checkable
class Retriever(Protocol):
    def index(self, chunks: Sequence[Chunk]) -> None: ...

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]: ...


@dataclass(frozen=True)
class BuildContext:
    """What a factory may need beyond its own config: where caches live, whether to show progress, the corpus's
    documents by id (read-only: a retriever that places hits in documents reads them, never changes them), and
    what the run does with hits it cannot place."""

    cache_dir: Path = Path(".harness-cache")
    progress: bool = True
    documents: Mapping[str, Document] = field(default_factory=lambda: MappingProxyType({}))
    # The run's ``retriever_hits.unplaceable``: a retriever that reads hits from a file may report them by line.
    unplaceable: str = "fail"

    def __post_init__(self) -> None:
        if not isinstance(self.documents, MappingProxyType):
            object.__setattr__(self, "documents", MappingProxyType(dict(self.documents)))


# ---- the registry -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RetrieverKind:
    name: str
    config_model: type  # a pydantic model; ``kind`` is stripped before validation unless the model declares it
    factory: Callable[[Any, BuildContext], Retriever]
    summary: str = ""
    # Who registered it: "harness", a module, or an entry point; named in errors, not part of the kind's identity.
    origin: str = field(default="harness", compare=False)

    @property
    def builtin(self) -> bool:
        return self.origin == "harness"


REGISTRY: dict[str, RetrieverKind] = {}


def register(kind: RetrieverKind) -> None:
    """Add a kind; registering the same kind again is a no-op, another kind under a taken name an error."""
    from pydantic import BaseModel

    if not isinstance(kind.name, str) or not _NAME.match(kind.name):
        raise ConfigError(f"retriever kind name {kind.name!r}: use letters, digits, '_', '.', '-' "
                          f"(a YAML config names it as retriever.kind)")
    if not (isinstance(kind.config_model, type) and issubclass(kind.config_model, BaseModel)):
        raise ConfigError(f"retriever kind {kind.name!r}: config_model must be a pydantic model class, got "
                          f"{kind.config_model!r}")
    if not callable(kind.factory):
        raise ConfigError(f"retriever kind {kind.name!r}: factory must be callable (config, BuildContext) -> "
                          f"retriever, got {kind.factory!r}")
    taken = REGISTRY.get(kind.name)
    if taken is not None and taken != kind:
        raise ConfigError(f"retriever kind {kind.name!r} is already registered (by {taken.origin}); "
                          f"choose another name")
    REGISTRY[kind.name] = kind


def register_retriever(name: str, config_model: type, factory: Callable[[Any, BuildContext], Retriever],
                       summary: str = "") -> RetrieverKind:
    """Register a third-party retriever kind: configs then select it with ``retriever: {kind: <name>, ...}``,
    validated by ``config_model`` (a pydantic model); ``factory(config, BuildContext)`` builds it."""
    _load_builtin_kinds()  # a built-in name is taken whatever the import order
    kind = RetrieverKind(name, config_model, factory, summary, getattr(factory, "__module__", None) or "user code")
    register(kind)
    return kind


def _load_builtin_kinds() -> None:
    # Each module registers its kind; heavy libraries (torch, faiss) are imported only when a retriever is built.
    from . import bm25, compose, dense, external  # noqa: F401


@cache
def plugin_problems() -> tuple[str, ...]:
    """Load the built-in kinds and every ``harness.retrievers`` entry point (once per process). An entry point
    names a ``RetrieverKind`` or a callable that registers kinds (it may also return one). A plugin that fails to
    load does not stop runs that do not use it: its problem is shown where kinds are listed."""
    from importlib.metadata import entry_points

    _load_builtin_kinds()
    problems = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        origin = f"entry point {ep.name} = {ep.value}"
        before = set(REGISTRY)
        try:
            obj = ep.load()
            if isinstance(obj, RetrieverKind):
                obj = RetrieverKind(obj.name, obj.config_model, obj.factory, obj.summary, origin)
            elif callable(obj):
                obj = obj()
                for name in set(REGISTRY) - before:  # errors name the entry point: it says which package
                    REGISTRY[name] = replace(REGISTRY[name], origin=origin)
            else:
                problems.append(f"{origin}: expected a RetrieverKind or a callable that registers one, got "
                                f"{type(obj).__name__}")
            if isinstance(obj, RetrieverKind) and REGISTRY.get(obj.name) != obj:
                register(RetrieverKind(obj.name, obj.config_model, obj.factory, obj.summary, origin))
        except Exception as exc:  # a broken plugin is reported, not a crash of every command
            problems.append(f"{origin}: cannot be loaded ({type(exc).__name__}: {exc})"[:300])
    return tuple(problems)


def kinds() -> list[str]:
    plugin_problems()
    return sorted(REGISTRY)


def _unknown_kind(where: str, message: str) -> list[str]:
    return [f"{where}.kind: {message}; registered kinds: {', '.join(kinds())}"] + \
        [f"{where}.kind: (not registered) {p}" for p in plugin_problems()]


def _own_fields(model: type, section: dict) -> dict:
    return section if "kind" in model.model_fields else {k: v for k, v in section.items() if k != "kind"}


def validate_retriever_config(section: dict, prefix: tuple = ("retriever",)) -> list[str]:
    """Every problem of a retriever section (children included), as 'key.path: message' lines."""
    from pydantic import ValidationError

    from ..core.schema import format_validation_error

    plugin_problems()
    where = ".".join(str(p) for p in prefix)
    kind = section.get("kind")
    if kind is None:
        return _unknown_kind(where, "required key is missing")
    if not isinstance(kind, str) or kind not in REGISTRY:
        return _unknown_kind(where, f"unknown retriever kind {kind!r}")
    model = REGISTRY[kind].config_model
    problems: list[str] = []
    try:
        model.model_validate(_own_fields(model, section))
    except ValidationError as exc:
        problems += [p for p in format_validation_error(exc, model, prefix) if not _is_child_path(p, prefix)]
    from .compose import child_problems  # weight/depth belong to the parent, not the child's own model

    if "children" in model.model_fields and isinstance(section.get("children"), list):
        for i, child in enumerate(section["children"]):
            problems += child_problems(child, kind, prefix + ("children", i))
    if "child" in model.model_fields and isinstance(section.get("child"), dict):
        problems += child_problems(section["child"], kind, prefix + ("child",))
    return problems


def _is_child_path(problem: str, prefix: tuple) -> bool:
    # Children are validated by their own kind's model; the parent's generic dict check adds nothing.
    head = ".".join(str(p) for p in prefix)
    return problem.startswith(f"{head}.children.") or problem.startswith(f"{head}.child.")


def parse_retriever_config(section: dict):
    problems = validate_retriever_config(section)
    if problems:
        raise ConfigError("invalid retriever config", problems)
    model = REGISTRY[section["kind"]].config_model
    return model.model_validate(_own_fields(model, section))


def build_retriever(section: dict, context: BuildContext | None = None) -> Retriever:
    """Build a retriever from its config section through the registry (composites build children the same way)."""
    cfg = parse_retriever_config(section)
    kind = REGISTRY[section["kind"]]
    return kind.factory(cfg, context or BuildContext())


# ---- the retriever contract -------------------------------------------------------------------------------------

def check_output(kind: str, queries: Sequence[Query], lists: Sequence[RankedList], k: int) -> None:
    """Raise ``RetrieverError`` naming ``kind`` unless ``lists`` keep the retriever contract for ``queries``.
    One pass over the hits: cheap next to making them."""
    problems: list[str] = []
    if not isinstance(lists, (list, tuple)) or len(lists) != len(queries):
        n = len(lists) if isinstance(lists, (list, tuple)) else type(lists).__name__
        problems.append(f"returned {n} ranked lists for {len(queries)} queries (one per query, in query order)")
        lists = []
    for q, ranked in zip(queries, lists):
        if len(problems) > MAX_SHOWN:
            break
        if not isinstance(ranked, RankedList) or ranked.query_id != q.query_id:
            got = ranked.query_id if isinstance(ranked, RankedList) else type(ranked).__name__
            problems.append(f"query {q.query_id!r}: got the list of {got!r} in its place (lists come back in "
                            f"query order)")
            continue
        if len(ranked.hits) > k:
            problems.append(f"query {q.query_id!r}: {len(ranked.hits)} hits, asked for at most {k}")
        prev: Hit | None = None
        for i, h in enumerate(ranked.hits, 1):
            why = _hit_violation(h, i, prev)
            if why:
                problems.append(f"query {q.query_id!r}, rank {i}: {why}")
                break
            prev = h
    if problems:
        shown = problems[:MAX_SHOWN] + ([f"... and more"] if len(problems) > MAX_SHOWN else [])
        raise RetrieverError(f"retriever.kind {kind!r}: its output breaks the retriever contract (one list per "
                             f"query in query order, at most k hits each, by score descending, ranks 1..n; "
                             f"ranking.rank_hits makes such lists)", shown)


def _hit_violation(h: Hit, i: int, prev: Hit | None) -> str | None:
    if not isinstance(h, Hit):
        return f"expected a Hit, got {type(h).__name__}"
    if not isinstance(h.score, numbers.Real) or isinstance(h.score, bool) or math.isnan(h.score):
        return f"score {h.score!r} is not a number"
    if h.rank != i:
        return f"rank {h.rank!r} where {i} belongs (ranks are 1..n in list order)"
    if not isinstance(h.chunk_id, str) or not isinstance(h.doc_id, str):
        return f"chunk_id and doc_id must be strings, got {h.chunk_id!r} and {h.doc_id!r}"
    if prev is not None and h.score > prev.score:
        return f"score {h.score!r} is higher than rank {i - 1}'s ({prev.score!r}): hits come by score descending"
    return None


# ---- the hit contract ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HitProblem:
    """A hit no chunk of the run can be found for: its query, rank, the offending value and why."""

    query_id: str
    rank: int
    reason: str  # unknown_chunk, unknown_document, bad_span, text_not_found, ambiguous_text, mismatch, unlocated
    message: str  # names the offending value

    def line(self) -> str:
        return f"query {self.query_id!r}, rank {self.rank}: {self.message}"

    def to_dict(self) -> dict:
        return {"query_id": self.query_id, "rank": self.rank, "reason": self.reason, "message": self.message}


class HitPlacer:
    """Places hits on the run's chunks. Spans that are not the chunker's become chunks (``adopted``), so the run
    judges them like any other. Holds no state beyond the chunks it has adopted for this run."""

    def __init__(self, chunks: Sequence[Chunk], documents: Mapping[str, Document], include_title: bool = True):
        self.by_id = {c.chunk_id: c for c in chunks}
        self.documents = documents
        self.include_title = include_title
        self.adopted: dict[str, Chunk] = {}
        self._by_span: dict[tuple[str, int, int], Chunk] | None = None

    def chunk(self, h: Hit) -> Chunk | tuple[str, str]:
        """The chunk ``h`` names, or ``(reason, message)``."""
        known = self.by_id.get(h.chunk_id) or self.adopted.get(h.chunk_id)
        if known is not None:
            if h.doc_id and h.doc_id != known.doc_id:
                return "mismatch", (f"chunk {h.chunk_id!r} belongs to document {known.doc_id!r}, the hit names "
                                    f"{h.doc_id!r}")
            if (h.start, h.end) not in ((-1, -1), (known.start, known.end)):
                return "mismatch", (f"chunk {h.chunk_id!r} spans {known.start}..{known.end}, the hit says "
                                    f"{h.start}..{h.end}")
            return known
        if not h.doc_id:
            if h.chunk_id:
                return "unknown_chunk", (f"chunk {h.chunk_id!r} is not a chunk of this corpus, and the hit names no "
                                         f"document to place a span or text in")
            return "unlocated", "the hit names no chunk id and no document"
        doc = self.documents.get(h.doc_id)
        if doc is None:
            return "unknown_document", f"document {h.doc_id!r} is not in the corpus"
        if h.text is not None and not isinstance(h.text, str):
            return "unlocated", f"hit text {h.text!r} is not a string"
        if (h.start, h.end) != (-1, -1):
            if not (_offset(h.start) and _offset(h.end) and 0 <= h.start < h.end <= len(doc.text)):
                return "bad_span", (f"span {h.start!r}..{h.end!r} is outside document {h.doc_id!r} "
                                    f"(0..{len(doc.text)}) or empty")
            if h.text is not None and doc.text[h.start:h.end] != h.text:
                return "mismatch", (f"hit text {h.text[:50]!r} is not the text of document {h.doc_id!r} at "
                                    f"{h.start}..{h.end}")
            return self._at(doc, int(h.start), int(h.end))
        if h.text is not None:
            at = doc.text.find(h.text) if h.text else -1
            if at < 0:
                return "text_not_found", f"hit text {h.text[:50]!r} not found in document {h.doc_id!r}"
            again = doc.text.find(h.text, at + 1)
            if again >= 0:  # two places: which one the retriever meant is a guess, so it is not made
                return "ambiguous_text", (f"hit text {h.text[:50]!r} occurs more than once in document "
                                          f"{h.doc_id!r} (at {at} and {again}); give start and end")
            return self._at(doc, at, at + len(h.text))
        if h.chunk_id:
            return "unknown_chunk", f"chunk {h.chunk_id!r} is not a chunk of this corpus and has no span or text"
        return "unlocated", f"the hit names document {h.doc_id!r} but no chunk id, span or text in it"

    def _at(self, doc: Document, start: int, end: int) -> Chunk:
        if self._by_span is None:
            self._by_span = {(c.doc_id, c.start, c.end): c for c in self.by_id.values()}
        chunk = self._by_span.get((doc.doc_id, start, end))
        if chunk is None:
            chunk = Chunk.of_span(doc, start, end, self.include_title)
            chunk = self.adopted.setdefault(chunk.chunk_id, chunk)
        return chunk

    def place(self, ranked: RankedList) -> tuple[RankedList, list[HitProblem], int]:
        """``ranked`` with every hit on its chunk, the hits that could not be placed (dropped) and how many hits
        named a chunk an earlier hit already named (dropped: a chunk is ranked once, at its best). A list that
        needed nothing comes back as it was; a changed one is re-ranked by the tie rule over the final ids (scores
        are already descending: only ties move)."""
        problems: list[HitProblem] = []
        out: list[Hit] = []
        seen: set[str] = set()
        changed, duplicates = False, 0
        for h in ranked.hits:
            if out and h.score == out[-1].score and (h.chunk_id > out[-1].chunk_id or not h.chunk_id):
                changed = True  # a tie out of the rule's order (or not yet named by its id): re-rank below
            c = self.chunk(h)
            if isinstance(c, tuple):
                problems.append(HitProblem(ranked.query_id, h.rank, *c))
                changed = True
                continue
            if c.chunk_id in seen:
                duplicates += 1
                changed = True
                continue
            seen.add(c.chunk_id)
            if (h.chunk_id, h.doc_id, h.start, h.end, h.text) != (c.chunk_id, c.doc_id, c.start, c.end, None) \
                    or type(h.score) is not float:
                h = Hit(c.chunk_id, c.doc_id, float(h.score), h.rank, c.start, c.end)
                changed = True
            out.append(h)
        return (rank_hits(ranked.query_id, out) if changed else ranked), problems, duplicates


def _offset(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class HitReport:
    """The hits a run dropped (``retriever_hits.unplaceable: skip``): counted, with the first ones listed."""

    skipped: int = 0
    queries: int = 0
    by_reason: Mapping[str, int] = field(default_factory=dict)
    duplicates: int = 0
    examples: tuple[HitProblem, ...] = ()

    @classmethod
    def of(cls, problems: Sequence[HitProblem], duplicates: int) -> "HitReport":
        by_reason: dict[str, int] = {}
        for p in problems:
            by_reason[p.reason] = by_reason.get(p.reason, 0) + 1
        return cls(len(problems), len({p.query_id for p in problems}), by_reason, duplicates,
                   tuple(problems[:MAX_SHOWN]))

    def to_dict(self, policy: str) -> dict:
        return {"unplaceable": policy, "skipped": self.skipped, "queries": self.queries,
                "by_reason": dict(self.by_reason), "duplicates": self.duplicates,
                "examples": [p.to_dict() for p in self.examples]}


def shown(problems: Sequence[HitProblem]) -> list[str]:
    """At most MAX_SHOWN lines, then how many more."""
    return shown_lines([p.line() for p in problems[:MAX_SHOWN + 1]], len(problems))


def shown_lines(lines: Sequence[str], total: int | None = None) -> list[str]:
    total = len(lines) if total is None else total
    return list(lines[:MAX_SHOWN]) + ([f"... and {total - MAX_SHOWN} more"] if total > MAX_SHOWN else [])
