"""``kind: langchain``, ``kind: llamaindex``, ``kind: haystack``: the retriever a team already built with its
framework, named by ``factory: module:function`` (``path:`` the folder of the team's code), evaluated as it is.

The factory returns the framework's retriever: LangChain a ``BaseRetriever`` (anything with ``batch`` or
``invoke``), LlamaIndex a retriever (``retrieve``) or a query engine holding one (``.retriever``), Haystack a
component or a pipeline whose output has ``documents``. It is called with the ``options:`` as keyword arguments,
plus ``chunks=`` (harness's chunks: ids, document ids, spans, text) and ``documents=`` (the corpus) when it has
parameters of those names, so the same config can compare "our chunking, their store" with "their whole pipeline".

Harness calls the retriever as the framework's users do: LangChain's ``batch`` over a batch of queries, LlamaIndex
``retrieve`` and Haystack ``run`` per query, with the depth it was built with (``set_depth: true`` sets the run's
where the retriever keeps one: LangChain ``k`` or ``search_kwargs['k']``, LlamaIndex ``similarity_top_k``, Haystack's
``top_k`` input). Every returned document is
placed on the corpus through the hit contract (``framework_docs``). A framework's exception is one line naming the
factory; ``on_error: skip`` leaves the query out of the run (listed as absent) instead of stopping it. The retriever
is not shipped to Ray workers: each actor calls the factory again."""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Literal, Mapping, Sequence

from pydantic import Field, JsonValue, field_validator

from ..core.errors import ConfigError, RetrieverError, crash_line, guarded_call
from ..core.schema import Strict
from ..core.types import Chunk, Document, Hit, Query, RankedList
from .base import BuildContext, RetrieverKind, register
from .framework_docs import Corpus, Returned, haystack_doc, langchain_doc, llamaindex_node, returned_hit, scored
from .python import _TARGET, load_target
from .ranking import rank_distinct
from .vectorstore import need

# What each kind needs installed (the extra of the same name) before the factory is called.
MODULES = {"langchain": "langchain_core", "llamaindex": "llama_index.core", "haystack": "haystack"}


class FrameworkConfig(Strict):
    kind: Literal["langchain", "llamaindex", "haystack"]
    factory: str = Field(description="module:function returning the framework's retriever")
    path: Path | None = None
    """a folder to import the factory's module from (relative to the config)"""
    options: dict[str, JsonValue] = Field(default_factory=dict)
    """keyword arguments of the factory"""
    chunk_id_key: str | None = "chunk_id"
    """the metadata key holding a harness chunk id (null: not used)"""
    doc_id_key: str | None = "doc_id"
    """the metadata key holding the corpus document id (null: not used)"""
    score_key: str | None = "score"
    """langchain: the metadata key of a score the retriever put there (else the list order ranks)"""
    set_depth: bool = False
    """set the retriever's depth (k, search_kwargs.k, similarity_top_k; Haystack's top_k input) to the run's
    depth; default: the retriever answers with the depth it was built with, as it does for its users"""
    query_input: str = "query"
    """haystack: the input the query text goes to (component.input for a pipeline, e.g. text_embedder.text)"""
    top_k_input: str | None = "top_k"
    """haystack: the input the depth goes to (e.g. retriever.top_k; null: not passed)"""
    output: str | None = None
    """haystack pipeline: the component whose documents are the answer (default: the one output with documents)"""
    on_error: Literal["fail", "skip"] = "fail"
    """fail: a query the framework raised on stops the run; skip: the query is left out of the run (absent)"""

    @field_validator("factory")
    @classmethod
    def _factory(cls, factory: str) -> str:
        if not _TARGET.match(factory):
            raise ValueError(f"{factory!r}: expected module:function, e.g. my_rag:build_retriever")
        return factory

    def check_installed(self) -> None:
        need(MODULES[self.kind], self.kind)

    def preflight(self, where: str) -> list[str]:
        if self.path is not None and not self.path.is_dir():
            return [f"{where}.path: {self.path}: folder not found"]
        try:
            load_target(SimpleNamespace(target=self.factory, path=self.path))
        except ConfigError as exc:
            return [f"{where}.factory: {str(exc).splitlines()[0]}"]
        return []


class FrameworkRetriever:
    def __init__(self, config: FrameworkConfig, context: BuildContext):
        self.config = config
        self.kind = config.kind
        self.documents: Mapping[str, Document] = context.documents
        self.corpus = Corpus(context.documents)
        self.where = f"retriever.kind {config.kind!r} ({config.factory})"
        self.factory = load_target(SimpleNamespace(target=config.factory, path=config.path))
        self.retriever: Any = None
        self.duplicates_dropped = 0
        self._answered: list[str] = []
        self._failed: list[str] = []
        self._latency: dict[str, float] = {}
        self._list_order = self._framework_scores = 0

    def __reduce__(self):
        # The framework's objects (clients, models, locks) are not shipped: a Ray actor rebuilds from the config.
        raise TypeError(f"{self.where} is rebuilt from its config where it runs")

    def _guard(self, step: str, call: Callable[[], Any]) -> Any:
        return guarded_call(call, f"{self.where} failed in {step}", RetrieverError)

    # ---- the retriever protocol ----

    def index(self, chunks: Sequence[Chunk]) -> None:
        need(MODULES[self.kind], self.kind)
        params = _parameters(self.factory)
        given = dict(self.config.options)
        if "chunks" in params:
            given["chunks"] = list(chunks)
        if "documents" in params:
            given["documents"] = list(self.documents.values())
        self.retriever = self._guard("the factory", lambda: self.factory(**given))
        problem = _not_a_retriever(self.kind, self.retriever)
        if problem:
            raise RetrieverError(f"{self.where}: the factory returned {type(self.retriever).__name__}, {problem}")

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        if k <= 0 or not queries:
            return [RankedList(q.query_id, ()) for q in queries]
        if self.config.set_depth:
            _set_depth(self.retriever, k)
        answers = self._answers(queries, k)
        out = []
        for q in queries:
            if q.query_id not in answers:
                out.append(RankedList(q.query_id, ()))
                continue
            self._answered.append(q.query_id)
            out.append(self._ranked(q, answers[q.query_id], k))
        return out

    def _answers(self, queries: Sequence[Query], k: int) -> dict[str, list[Returned]]:
        texts = [q.text for q in queries]
        if self.kind == "langchain" and callable(getattr(self.retriever, "batch", None)):
            try:
                lists = self.retriever.batch(texts)
                if isinstance(lists, list) and len(lists) == len(queries):
                    return {q.query_id: self._read(q, docs) for q, docs in zip(queries, lists)}
                raise RetrieverError(f"{self.where}: batch() returned {type(lists).__name__} for {len(queries)} "
                                     f"queries (one list of documents per query)")
            except RetrieverError:
                raise
            except Exception as exc:  # which query failed is found by asking one at a time
                if self.config.on_error == "fail" and len(queries) == 1:
                    raise RetrieverError(f"{self.where} failed for query {queries[0].query_id!r}: "
                                         f"{crash_line(exc)}") from exc
        answers = {}
        for q in queries:
            t0 = time.perf_counter()
            try:
                raw = self._one(q.text, k)
            except Exception as exc:
                if self.config.on_error == "fail":
                    raise RetrieverError(f"{self.where} failed for query {q.query_id!r}: {crash_line(exc)} "
                                         f"(on_error: skip leaves such queries out of the run)") from exc
                self._failed.append(f"query {q.query_id!r}: {crash_line(exc)}")
                continue
            self._latency[q.query_id] = (time.perf_counter() - t0) * 1000
            answers[q.query_id] = self._read(q, raw)
        return answers

    def _one(self, text: str, k: int) -> Any:
        r, c = self.retriever, self.config
        if self.kind == "langchain":
            return r.invoke(text)
        if self.kind == "llamaindex":
            target = r if callable(getattr(r, "retrieve", None)) and not hasattr(r, "query") else r.retriever
            return target.retrieve(text)
        data: dict = {}
        given = [(c.query_input, text)] + ([(c.top_k_input, k)] if c.set_depth and c.top_k_input else [])
        for name, value in given:
            head, _, tail = name.partition(".")
            if tail:
                data.setdefault(head, {})[tail] = value
            else:
                data[head] = value
        is_pipeline = callable(getattr(r, "add_component", None))
        return _haystack_documents(r.run(data) if is_pipeline else r.run(**data), c.output)

    def _read(self, q: Query, docs: Any) -> list[Returned]:
        if not isinstance(docs, (list, tuple)):
            raise RetrieverError(f"{self.where}: for query {q.query_id!r} the retriever returned "
                                 f"{type(docs).__name__}, not a list of documents")
        if self.kind == "langchain":
            return [langchain_doc(d, self.config.score_key) for d in docs]
        if self.kind == "llamaindex":
            return [llamaindex_node(d) for d in docs]
        return [haystack_doc(d) for d in docs]

    def _ranked(self, q: Query, returned: list[Returned], k: int) -> RankedList:
        scores, own = scored(returned)
        if returned:
            self._framework_scores += own
            self._list_order += not own
        c = self.config
        hits = []
        for r, s in zip(returned, scores):
            hit = returned_hit(r, s, c.chunk_id_key, c.doc_id_key, self.corpus)
            if isinstance(hit, str):  # reported by the contract as unplaceable, as every kind's
                hit = Hit("", "", s, 0, -1, -1, r.text if isinstance(r.text, str) else None)
            hits.append(hit)
        ranked, dropped = rank_distinct(q.query_id, hits, k)
        self.duplicates_dropped += dropped
        return ranked

    # ---- what the run reads after retrieval ----

    @property
    def answered_query_ids(self) -> Callable[[], list[str]] | None:
        """With ``on_error: skip``, the queries the framework answered: one it raised on is absent from the run.
        With ``fail`` every query is answered or the run stops (and on Ray the actors answer: this object knows
        nothing of them), so there is nothing to say."""
        if self.config.on_error != "skip":
            return None
        return lambda: list(self._answered)

    def query_latencies_ms(self) -> dict[str, float]:
        return dict(self._latency)  # per query where called per query; a batch's time is shared by its queries

    def info(self) -> dict:
        counted = {} if self._answered else {"note": "the queries were answered by Ray actors' copies: "
                                                     "their counts are not here"}
        return {**counted, "framework": self.kind, "factory": self.config.factory,
                "retriever": type(self.retriever).__name__ if self.retriever is not None else None,
                "calls": "batch" if self.kind == "langchain" and callable(getattr(self.retriever, "batch", None))
                else "per query",
                "queries_ranked_by_framework_scores": self._framework_scores,
                "queries_ranked_by_list_order": self._list_order,
                "on_error": self.config.on_error, "failed": len(self._failed), "failures": self._failed[:20]}


def _parameters(factory: Callable) -> set[str]:
    try:
        return set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return set()


def _not_a_retriever(kind: str, obj: Any) -> str | None:
    has = lambda name: callable(getattr(obj, name, None))  # noqa: E731
    if kind == "langchain" and not (has("batch") or has("invoke")):
        return "not a LangChain retriever (no invoke or batch)"
    if kind == "llamaindex" and not (has("retrieve") or has("query") and has_retriever(obj)):
        return "not a LlamaIndex retriever (no retrieve) or a query engine holding one (.retriever)"
    if kind == "haystack" and not has("run"):
        return "not a Haystack component or pipeline (no run)"
    return None


def has_retriever(obj: Any) -> bool:
    return callable(getattr(getattr(obj, "retriever", None), "retrieve", None))


def _set_depth(r: Any, k: int) -> None:
    """The run's depth on the retriever, where it keeps one; a retriever that refuses keeps its own."""
    for name in ("k", "similarity_top_k", "top_k"):
        if isinstance(getattr(r, name, None), int) and not isinstance(getattr(r, name), bool):
            try:
                setattr(r, name, k)
            except Exception:  # noqa: BLE001 - a frozen model: its own depth stands (hits are cut at k anyway)
                pass
    kwargs = getattr(r, "search_kwargs", None)
    if isinstance(kwargs, dict):
        kwargs["k"] = k
    inner = getattr(r, "retriever", None)
    if inner is not None and inner is not r and not callable(getattr(r, "batch", None)):
        _set_depth(inner, k)  # a LlamaIndex query engine's retriever


def _haystack_documents(out: Any, output: str | None) -> Any:
    if not isinstance(out, dict):
        raise TypeError(f"run() returned {type(out).__name__}, not a dict of outputs")
    if "documents" in out:
        return out["documents"]
    if output is not None:
        if output not in out or "documents" not in (out[output] or {}):
            raise TypeError(f"the pipeline's output has no {output}.documents (it has {sorted(out)})")
        return out[output]["documents"]
    named = [name for name, value in out.items() if isinstance(value, dict) and "documents" in value]
    if len(named) != 1:
        raise TypeError(f"the pipeline's outputs {sorted(out)} have {len(named)} 'documents'; name one with output:")
    return out[named[0]]["documents"]


class LangChainConfig(FrameworkConfig):
    kind: Literal["langchain"] = "langchain"


class LlamaIndexConfig(FrameworkConfig):
    kind: Literal["llamaindex"] = "llamaindex"


class HaystackConfig(FrameworkConfig):
    kind: Literal["haystack"] = "haystack"


register(RetrieverKind("langchain", LangChainConfig, FrameworkRetriever,
                       "a LangChain retriever (invoke/batch) your factory builds"))
register(RetrieverKind("llamaindex", LlamaIndexConfig, FrameworkRetriever,
                       "a LlamaIndex retriever or query engine your factory builds"))
register(RetrieverKind("haystack", HaystackConfig, FrameworkRetriever,
                       "a Haystack component or pipeline (documents output) your factory builds"))
