"""``kind: python``: a retriever written as plain Python, named ``module:function`` or ``module:Class``.

- ``module:function``: ``function(texts: list[str], k: int) -> list[list[hit]]``, one list per query text.
- ``module:Class``: ``Class(**options)``; ``index(chunks)`` is called once if it has one (``core.types.Chunk``:
  ``chunk_id``, ``doc_id``, ``text``, ...), then ``retrieve(texts, k)`` as the function above.

A hit is a mapping with the external JSONL run's hit fields (``chunk_id``, or ``doc_id`` + ``start``/``end``, or
``doc_id`` + ``text``, and ``score``) or an object with those attributes; it is placed on the run's chunks like
every retriever's hit. ``path`` (a folder, relative to where harness runs) is searched first for the module, so an
adapter can live beside the config. docs/retrievers.md shows LangChain and LlamaIndex adapters.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import Field, JsonValue, field_validator

from ..core.errors import ConfigError, RetrieverError, exit_line, guarded_call, own_exit
from ..core.schema import Strict
from ..core.types import Chunk, Document, Query, RankedList
from .base import BuildContext, RetrieverKind, register
from .live_hits import HitMapping, hit_of
from .ranking import rank_distinct

_TARGET = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
_FIELDS = ("chunk_id", "doc_id", "start", "end", "text", "score")


class PythonConfig(Strict):
    kind: Literal["python"] = "python"
    target: str = Field(description="module:function or module:Class")
    path: Path | None = None
    """a folder to import target from (relative to the config)"""
    options: dict[str, JsonValue] = Field(default_factory=dict, description="keyword arguments of Class(...)")

    @field_validator("target")
    @classmethod
    def _target(cls, target: str) -> str:
        if not _TARGET.match(target):
            raise ValueError(f"{target!r}: expected module:function or module:Class, e.g. my_adapters:search")
        return target

    def preflight(self, where: str) -> list[str]:
        if self.path is not None and not self.path.is_dir():
            return [f"{where}.path: {self.path}: folder not found"]
        try:
            load_target(self)
        except ConfigError as exc:
            return [f"{where}.target: {line}" for line in [str(exc).split("\n")[0]]]
        return []


def load_target(config: PythonConfig) -> Any:
    module_name, attr = config.target.split(":")
    added = config.path is not None and str(config.path.resolve()) not in sys.path
    if added:
        sys.path.insert(0, str(config.path.resolve()))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"module {module_name!r} cannot be imported ({exc}); give path: the folder it is in"
                          ) from None
    except Exception as exc:  # user code failing at import: one line naming it
        raise ConfigError(f"module {module_name!r} failed to import ({type(exc).__name__}: {exc})") from None
    except (SystemExit, KeyboardInterrupt) as exc:
        if not own_exit(exc):
            raise
        raise ConfigError(f"module {module_name!r} failed to import: it {exit_line(exc)}") from None
    finally:
        if added:
            sys.path.remove(str(config.path.resolve()))
    target = getattr(module, attr, None)
    if target is None:
        raise ConfigError(f"module {module_name!r} has no {attr!r}")
    if inspect.isclass(target):
        if not callable(getattr(target, "retrieve", None)):
            raise ConfigError(f"class {config.target!r} has no retrieve(texts, k) method")
    elif not callable(target):
        raise ConfigError(f"{config.target!r} is not a function or class")
    return target


def _as_item(hit: Any) -> Any:
    if isinstance(hit, Mapping):
        return hit
    return {f: getattr(hit, f) for f in _FIELDS if getattr(hit, f, None) is not None}


class PythonRetriever:
    def __init__(self, config: PythonConfig, context: BuildContext):
        self.config = config
        self.documents: Mapping[str, Document] = context.documents
        target = load_target(config)
        if inspect.isclass(target):
            self.obj = self._user("__init__", lambda: target(**config.options))
            self.call = self.obj.retrieve
        else:
            if config.options:
                raise ConfigError("retriever.options: only a class takes options (a function gets texts and k)")
            self.obj, self.call = None, target
        self.mapping = HitMapping(hits="$")
        self.duplicates_dropped = 0  # repeated hits dropped before the cut at depth (results.json hit_problems)

    def _user(self, step: str, call):
        """User code's crash as one line naming the target, the step and where it failed (not a traceback of
        harness: the kind is built in, the code is not)."""
        return guarded_call(call, f"retriever.kind 'python' ({self.config.target}) failed in {step}", RetrieverError)

    def index(self, chunks: Sequence[Chunk]) -> None:
        if self.obj is not None and callable(getattr(self.obj, "index", None)):
            self._user("index", lambda: self.obj.index(list(chunks)))

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        lists = self._user("retrieve", lambda: self.call([q.text for q in queries], k))
        where = f"retriever.kind 'python' ({self.config.target})"
        if not isinstance(lists, (list, tuple)) or len(lists) != len(queries):
            n = len(lists) if isinstance(lists, (list, tuple)) else type(lists).__name__
            raise RetrieverError(f"{where}: returned {n} lists for {len(queries)} query texts (one list of hits per "
                                 f"text, in order)")
        out, problems = [], []
        for q, hits in zip(queries, lists):
            if not isinstance(hits, (list, tuple)):
                problems.append(f"query {q.query_id!r}: expected a list of hits, got {type(hits).__name__}")
                continue
            placed = []
            for i, h in enumerate(hits):
                hit = hit_of(_as_item(h), self.mapping, self.documents)
                if isinstance(hit, str):
                    problems.append(f"query {q.query_id!r}, hit {i}: {hit}")
                    break
                placed.append(hit)
            ranked, dropped = rank_distinct(q.query_id, placed, k)  # repeats dropped before the cut, counted
            self.duplicates_dropped += dropped
            out.append(ranked)
        if problems:
            raise RetrieverError(f"{where}: hits that are not hits (a mapping or object with chunk_id or doc_id, "
                                 f"and score)", problems[:20])
        return out


register(RetrieverKind("python", PythonConfig, PythonRetriever,
                       "your own Python retriever: module:function or module:Class (index/retrieve)"))
