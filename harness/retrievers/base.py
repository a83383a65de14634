"""The retriever seam: the protocol, what a factory is given (``BuildContext``), and the registry of kinds (built-in,
registered from code with ``register_retriever``, or from a package entry point in the group ``harness.retrievers``).
What a retriever's output must be is in ``contract``.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..core.errors import ConfigError, exit_line, own_exit
from ..core.types import Chunk, Document, Query, RankedList

ENTRY_POINT_GROUP = "harness.retrievers"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@runtime_checkable
class Retriever(Protocol):
    """Every retriever: ``index`` once, then ``retrieve`` batches (the contract is in ``contract``).

    What a run also asks of a retriever that has it (each looked up by name, all optional):
    - ``close()``: release what it holds (a server it started, a temporary folder, a client); after the run, also
      when the run failed, on the driver and in every Ray actor.
    - ``info() -> dict``: what it reports about its search, for results.json ``retriever_info`` (ANN recall).
    - ``request_report() -> dict``, ``query_latencies_ms() -> {query_id: ms}``: a live service's request log and
      its own per-query latency (``executors.latency`` times batches otherwise).
    - ``answered_query_ids() -> list``: a retriever replaying answers made elsewhere (external, http) names the
      queries it answered; golden-set queries it did not are warned about and score 0.
    - ``retrieve_indexed(queries, k) -> contract.IndexedLists``: the same lists as positions in the chunks it
      indexed (BM25's fast path; checked as columns, no Hit objects).
    - ``shards(n) -> list``: n retrievers each over a contiguous slice of the index, scoring as the whole would
      (``executor.shards``).
    - ``term_contributions(query_text, chunk_index) -> {term: score}``: ``harness explain``'s BM25 terms.
    - ``loosely_placed``, ``duplicates_dropped``: hits placed only after normalising text, and repeats dropped
      before the cut at depth, counted in results.json ``hit_problems``.
    - ``children`` / ``child``: a composite's parts (hybrid, reranked), searched for all of the above."""

    def index(self, chunks: Sequence[Chunk]) -> None: ...

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]: ...


@dataclass(frozen=True)
class BuildContext:
    """What a factory may need beyond its own config: where caches live, whether to show progress, the corpus's
    documents by id (read-only: a retriever that places hits in documents reads them, never changes them), and
    what the run does with hits it cannot place."""

    cache_dir: Path = field(default_factory=lambda: _default_cache_dir())
    progress: bool = True
    documents: Mapping[str, Document] = field(default_factory=lambda: MappingProxyType({}))
    # The run's ``retriever_hits.unplaceable``: a retriever that reads hits from a file may report them by line.
    unplaceable: str = "fail"

    def __post_init__(self) -> None:
        if not isinstance(self.documents, MappingProxyType):
            object.__setattr__(self, "documents", MappingProxyType(dict(self.documents)))


def _default_cache_dir() -> Path:
    from ..cache import default_cache_dir

    return default_cache_dir()


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
    """Add a kind; registering the same kind again is a no-op, and so is re-registering from the same origin (it
    replaces); another kind under a taken name is an error."""
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
    # The same code registering again (a re-run notebook cell, a reloaded module) replaces its own kind.
    if taken is not None and taken != kind and not (taken.origin == kind.origin and not taken.builtin):
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


BUILTIN_MODULES = ("bm25", "compose", "dense", "external", "qdrant", "pgvector", "lancedb", "http", "python",
                   "search_engine", "tantivy", "chroma", "milvus", "frameworks")


def _load_builtin_kinds() -> None:
    # Each module registers its kind on import, as a plugin does; loaded by name, so the registry does not depend on
    # its kinds (they depend on it). Heavy libraries (torch, faiss) are imported only when a retriever is built.
    for name in BUILTIN_MODULES:
        importlib.import_module(f"{__package__}.{name}")


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
        except (SystemExit, KeyboardInterrupt) as exc:  # nor is one that exits of its own while loading
            if not own_exit(exc):
                raise
            problems.append(f"{origin}: cannot be loaded (it {exit_line(exc)})"[:300])
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
    nested = getattr(model, "nested_problems", None)  # a composite kind checks its children's sections itself
    if nested is not None:
        problems += nested(section, kind, prefix)
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
