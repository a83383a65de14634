"""``kind: elasticsearch`` / ``kind: opensearch``: connect mode against an existing index, without a client library.

Only one endpoint is used: ``POST {url}/{index}/_search`` with ``{"size": k, "query": <template>}``, where the
template's strings get ``{query}`` (and ``{k}``, ``{query_id}``) filled in; the default is a ``match`` on ``field``.
Hits are read from ``hits.hits``: the score from ``_score`` and the hit fields from the mapping (by default
``_source.chunk_id``, ``_source.doc_id``, ``_source.start``/``end``, ``_source.text``). Requests, retries, the
request log and failures work as for ``kind: http``. No server can be started in the test suite, so the tests run
it against a small local HTTP fake that speaks this endpoint.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import Field, JsonValue, field_validator, model_validator

from ..core.schema import Strict
from ..core.types import Query
from .base import BuildContext, RetrieverKind, register
from .http import (BackoffS, Concurrency, Headers, HeadersEnv, LiveConfig, LiveRetriever, OnError, Request, Retries,
                   TimeoutS, checked_url, render, uses_query)
from .live_hits import HitMapping, checked_path

_INDEX = r"^[^\s/\\*?\"<>|,#:]+$"  # Elasticsearch's own rules for index names (lowercase checked by the server)


class SourceFields(Strict):
    """Where each hit field is in one entry of ``hits.hits`` (``null``: not used)."""

    chunk_id: Optional[str] = "_source.chunk_id"
    """where a hit's chunk id is in an entry of hits.hits (null: not used)"""
    doc_id: Optional[str] = "_source.doc_id"
    """where a hit's document id is (null: not used)"""
    start: Optional[str] = "_source.start"
    """where a hit's span start is (null: not used)"""
    end: Optional[str] = "_source.end"
    """where a hit's span end is (null: not used)"""
    text: Optional[str] = None
    """where a hit's text is, located in its document (null: not used)"""
    score: str = "_score"
    """where a hit's score is"""

    @field_validator("chunk_id", "doc_id", "start", "end", "text", "score")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return checked_path(value)


class SearchEngineConfig(LiveConfig):
    kind: Literal["elasticsearch", "opensearch"]
    url: str = "http://localhost:9200"
    """the cluster's URL"""
    index: str
    """the index searched"""
    field: str = Field("text", description="the field the default match query searches")
    query: JsonValue = Field(None, description="the query DSL; default {match: {<field>: '{query}'}}")
    fields: SourceFields = SourceFields()
    """where each hit field is in an entry of hits.hits"""
    headers: Headers
    headers_env: HeadersEnv = Field(description="e.g. Authorization: {env: ES_API_KEY, prefix: 'ApiKey '}")
    concurrency: Concurrency
    timeout_s: TimeoutS
    retries: Retries
    backoff_s: BackoffS
    on_error: OnError

    @field_validator("index")
    @classmethod
    def _index(cls, index: str) -> str:
        if not re.match(_INDEX, index):
            raise ValueError(f"{index!r} is not an index name (no spaces, '/', '\\', '*', '?', '\"', '<', '>', "
                             f"'|', ',', '#', ':')")
        return index

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        return checked_url(url).rstrip("/")

    @model_validator(mode="after")
    def _template(self) -> "SearchEngineConfig":
        if self.query is not None and not (isinstance(self.query, dict) and uses_query(self.query)):
            raise ValueError("query: expected a query DSL mapping that uses '{query}', e.g. "
                             "{match: {text: '{query}'}}")
        return self

    def template(self) -> dict:
        return self.query if self.query is not None else {"match": {self.field: "{query}"}}


class SearchEngineRetriever(LiveRetriever):
    def __init__(self, config: SearchEngineConfig, context: BuildContext):
        f = config.fields
        mapping = HitMapping(hits="$.hits.hits", chunk_id=f.chunk_id, doc_id=f.doc_id, start=f.start, end=f.end,
                             text=f.text, score=f.score)
        super().__init__(config.engine(mapping, context.documents), config.on_error)
        self.config = config
        self.kind = config.kind

    def request(self, query: Query, k: int) -> Request:
        c = self.config
        return Request("POST", f"{c.url}/{c.index}/_search",
                       body={"size": k, "query": render(c.template(), query, k), "_source": True})


for _name in ("elasticsearch", "opensearch"):
    register(RetrieverKind(_name, SearchEngineConfig, SearchEngineRetriever,
                           f"{_name} connect mode: an existing index queried over HTTP (_search, no client library)"))
