"""The retriever seam: a small batch-first protocol, a registry of kinds, and ``build_retriever``.

A retriever is built from its config section, ``index``-ed once over the chunks, then asked for the top ``k``
chunks of a batch of queries. Results come back in query order, hits by descending score with ranks 1..n.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, ValidationError

from ..core.errors import ConfigError
from ..core.types import Chunk, Query, RankedList


@runtime_checkable
class Retriever(Protocol):
    def index(self, chunks: Sequence[Chunk]) -> None: ...

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]: ...


@dataclass(frozen=True)
class BuildContext:
    """What a factory may need beyond its own config: where caches live, whether to show progress."""

    cache_dir: Path = Path(".harness-cache")
    progress: bool = True
    extras: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RetrieverKind:
    name: str
    config_model: type[BaseModel]
    factory: Callable[[Any, BuildContext], Retriever]
    summary: str


REGISTRY: dict[str, RetrieverKind] = {}


def register(kind: RetrieverKind) -> None:
    REGISTRY[kind.name] = kind


def _load_builtin_kinds() -> None:
    # Each module registers its kind; heavy libraries (torch, faiss) are imported only when a retriever is built.
    from . import bm25, compose, dense, external  # noqa: F401


def kinds() -> list[str]:
    _load_builtin_kinds()
    return sorted(REGISTRY)


def validate_retriever_config(section: dict, prefix: tuple = ("retriever",)) -> list[str]:
    """Every problem of a retriever section (children included), as 'key.path: message' lines."""
    from ..config.schema import format_validation_error

    _load_builtin_kinds()
    where = ".".join(str(p) for p in prefix)
    kind = section.get("kind")
    if kind is None:
        return [f"{where}.kind: required key is missing; registered kinds: {', '.join(sorted(REGISTRY))}"]
    if not isinstance(kind, str) or kind not in REGISTRY:
        return [f"{where}.kind: unknown retriever kind {kind!r}; registered kinds: {', '.join(sorted(REGISTRY))}"]
    model = REGISTRY[kind].config_model
    problems: list[str] = []
    try:
        model.model_validate(section)
    except ValidationError as exc:
        problems += [p for p in format_validation_error(exc, model, prefix)
                     if not _is_child_path(p, prefix)]
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


def parse_retriever_config(section: dict) -> BaseModel:
    _load_builtin_kinds()
    problems = validate_retriever_config(section)
    if problems:
        raise ConfigError("invalid retriever config", problems)
    return REGISTRY[section["kind"]].config_model.model_validate(section)


def build_retriever(section: dict, context: BuildContext | None = None) -> Retriever:
    """Build a retriever from its config section through the registry (composites build children the same way)."""
    cfg = parse_retriever_config(section)
    return REGISTRY[section["kind"]].factory(cfg, context or BuildContext())
