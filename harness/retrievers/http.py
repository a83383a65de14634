"""``kind: http``: a retrieval service of the team's own, queried live, one request per query.

By default it POSTs ``{"query": TEXT, "k": DEPTH}`` to ``url`` and reads ``{"hits": [...]}`` whose items use the
external JSONL run's hit fields, so ``{kind: http, url: ...}`` is enough for a service that speaks that. Other
services: ``method: GET`` with templated ``params``, a templated JSON ``body``, ``headers`` whose secrets come from
environment variables (``headers_env``: the variable's name, never its value, is in the file; results.json echoes
the config, so a secret written in the config would end up there), and a ``response`` path mapping.

Requests run ``concurrency`` at a time with a ``timeout_s``; 429, 5xx, timeouts and connection errors are retried
``retries`` times with exponential backoff (a numeric Retry-After is honoured, capped). A query whose request
failed is never scored as an empty answer: with ``on_error: fail`` (default) the run stops with one line per failed
query; with ``skip`` the query is absent from the run (``answered_query_ids``), which the counted rule lists under
``absent_from_run``, and ``request_report()`` puts every request (status, attempts, latency) in results.json.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping, Sequence

from pydantic import AfterValidator, Field, JsonValue, field_validator, model_validator

from ..core.errors import ConfigError, RetrieverError
from ..core.schema import Strict
from ..core.types import Chunk, Document, Query, RankedList
from ..io.jsonl import loads
from .urls import service_url_problem
from .base import BuildContext, RetrieverKind, register
from .contract import shown_lines
from .http_transport import BodyTooLarge, Failed, TimedOut, Unreachable, transport
from .live_hits import HitMapping, hits_of
from .ranking import rank_distinct

_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Headers that carry credentials: only from the environment (headers_env), never as text in the config.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"})
_PLACEHOLDER = re.compile(r"\{(query|k|query_id)\}")
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0
# Connection failures in a row, before the service has answered anything, that mean it is down: the run stops with
# one line, whatever on_error says (a downed service cost 20 s of retries and a line per query).
DOWN_AFTER = 3


class ServiceDown(Exception):
    """The service never answered: ``DOWN_AFTER`` connections in a row failed before any response."""


def url_problem(url: str) -> str | None:
    return service_url_problem(url, "an http(s) URL", "e.g. http://localhost:8000/search",
                               "put them in headers_env (headers from environment variables)")


def checked_url(url: str) -> str:
    """``url`` for a config validator: a ValueError when it is not an http(s) URL fit for a config."""
    why = url_problem(url)
    if why:
        raise ValueError(why)
    return url


def uses_query(template: Any) -> bool:
    """Whether a request template (a string, or dicts and lists of them) has ``{query}`` anywhere in it."""
    if isinstance(template, str):
        return "{query}" in template
    if isinstance(template, dict):
        return any(uses_query(v) for v in template.values())
    if isinstance(template, list):
        return any(uses_query(v) for v in template)
    return False


def render(template: Any, query: Query, k: int) -> Any:
    """The template with ``{query}``, ``{k}``, ``{query_id}`` filled in. A string that is exactly ``{k}`` becomes
    the number; other placeholders are replaced as text (only these three: other braces stay as written)."""
    if isinstance(template, str):
        if template == "{k}":
            return k
        # One pass, so braces inside the query text itself are never read as placeholders.
        values = {"query": query.text, "k": str(k), "query_id": query.query_id}
        return _PLACEHOLDER.sub(lambda m: values[m[1]], template)
    if isinstance(template, dict):
        return {key: render(v, query, k) for key, v in template.items()}
    if isinstance(template, list):
        return [render(v, query, k) for v in template]
    return template


class EnvHeader(Strict):
    env: str
    prefix: str = ""  # e.g. "Bearer "


# The transport settings http and the search engines share, defined once. Each kind's config declares them at its
# own place in its field order instead of inheriting them: a base class's fields would come first and so change the
# order of every dump of the config. (The lambdas look the checks up when called: they are defined further down.)
Headers = Annotated[dict[str, str], AfterValidator(lambda v: _no_secret_headers(v)),
                    Field(default_factory=dict, description="constant headers (no secrets)")]
HeadersEnv = Annotated[dict[str, EnvHeader | str], AfterValidator(lambda v: _env_names(v)),
                       Field(default_factory=dict, description="header -> environment variable (or {env, prefix})")]
Concurrency = Annotated[int, Field(4, ge=1, le=256, description="requests in flight")]
TimeoutS = Annotated[float, Field(10.0, gt=0, le=3600, description="seconds before a request times out")]
Retries = Annotated[int, Field(2, ge=0, le=20, description="retries on 408, 429, 5xx, timeouts and connection errors")]
BackoffS = Annotated[float, Field(0.5, ge=0, le=60, description="seconds before retry n: backoff_s x 2^n (a numeric "
                                                                "Retry-After is honoured, at most 30 s)")]
OnError = Annotated[Literal["fail", "skip"], Field("fail", description="a query whose request failed: fail stops the "
                                                                       "run listing each; skip leaves it absent, named")]
# A response past this is refused (an error of that query) after reading no more than it: a service answering 100 MB
# a query took a run to 1.1 GB.
MAX_RESPONSE_MB = 16
MaxResponseMB = Annotated[float, Field(MAX_RESPONSE_MB, gt=0, le=4096,
                                       description="the largest response body read, in megabytes")]


class LiveConfig(Strict):
    """What the configs of live kinds share besides their transport fields (which each subclass declares, see
    above): the preflight and the engine."""

    def preflight(self, where: str) -> list[str]:
        return env_problems(self.headers_env, f"{where}.headers_env")

    def engine(self, mapping: HitMapping, documents: Mapping[str, Document]) -> "HttpEngine":
        return HttpEngine(expand_headers(self.headers, self.headers_env), mapping, concurrency=self.concurrency,
                          timeout_s=self.timeout_s, retries=self.retries, backoff_s=self.backoff_s,
                          documents=documents, max_response_mb=getattr(self, "max_response_mb", MAX_RESPONSE_MB))


class HttpConfig(LiveConfig):
    kind: Literal["http"] = "http"
    url: str
    """the service's URL (http or https)"""
    method: Literal["POST", "GET"] = "POST"
    """POST with body, or GET with params"""
    body: JsonValue = Field(default_factory=lambda: {"query": "{query}", "k": "{k}"},
                            description="POST: the JSON body; {query}, {k}, {query_id} are filled in")
    params: dict[str, str] = Field(default_factory=lambda: {"query": "{query}", "k": "{k}"},
                                   description="GET: the query string parameters, templated like body")
    headers: Headers
    headers_env: HeadersEnv
    response: HitMapping = HitMapping()
    """where the hits are in a response, and each hit's fields in a hit"""
    max_response_mb: MaxResponseMB
    concurrency: Concurrency
    timeout_s: TimeoutS
    retries: Retries
    backoff_s: BackoffS
    on_error: OnError

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        return checked_url(url)

    @model_validator(mode="after")
    def _template_uses_query(self) -> "HttpConfig":
        unused = "params" if self.method == "POST" else "body"
        if unused in self.model_fields_set:  # it would never be sent: the request is not what the config says
            raise ValueError(f"{unused}: is not sent with method: {self.method} (POST sends body:, GET sends "
                             f"params:); drop it or change the method")
        template, key = (self.body, "body") if self.method == "POST" else (self.params, "params")
        if not uses_query(template):
            raise ValueError(f"{key} never uses {{query}}: every query would send the same request")
        return self


def _no_secret_headers(headers: dict[str, str]) -> dict[str, str]:
    secret = sorted(h for h in headers if h.lower() in SECRET_HEADERS)
    if secret:
        raise ValueError(f"{', '.join(secret)}: a credential header goes in headers_env (the name of an environment "
                         f"variable), never as text in the config")
    return headers


def _env_names(headers: dict) -> dict:
    for name, spec in headers.items():
        var = spec.env if isinstance(spec, EnvHeader) else spec
        if not _VAR.match(var):
            raise ValueError(f"{name}: {var!r} is not an environment variable name (letters, digits, '_')")
    return headers


def env_problems(headers_env: Mapping[str, "EnvHeader | str"], where: str) -> list[str]:
    return [f"{where}.{name}: environment variable {_var(spec)} is not set (header secrets come from the "
            f"environment)" for name, spec in headers_env.items() if _var(spec) not in os.environ]


def _var(spec: "EnvHeader | str") -> str:
    return spec.env if isinstance(spec, EnvHeader) else spec


def expand_headers(headers: Mapping[str, str], headers_env: Mapping[str, "EnvHeader | str"],
                   where: str = "retriever.headers_env") -> dict[str, str]:
    problems = env_problems(headers_env, where)
    if problems:
        raise ConfigError("missing environment variables for request headers", problems)
    out = dict(headers)
    for name, spec in headers_env.items():
        out[name] = (spec.prefix if isinstance(spec, EnvHeader) else "") + os.environ[_var(spec)]
    return out


@dataclass
class RequestRecord:
    """One query's request: its last HTTP status (None: no response), attempts, wall time, and why it failed."""

    query_id: str
    status: int | None
    attempts: int
    latency_ms: float
    error: str | None = None
    duplicates: int = 0  # repeated items dropped from the answer (hit_problems.duplicates; not in the log)

    def to_dict(self) -> dict:
        return {"query_id": self.query_id, "status": self.status, "attempts": self.attempts,
                "latency_ms": round(self.latency_ms, 3), "error": self.error}


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    body: Any = None
    params: Mapping[str, str] | None = None


class HttpEngine:
    """Sends requests with the config's concurrency, timeout, retries and backoff; maps responses to hits.
    Requests are sent by threads (a live service's latency is I/O, not CPU), one per concurrent request."""

    def __init__(self, headers: Mapping[str, str], mapping: HitMapping, *, concurrency: int, timeout_s: float,
                 retries: int, backoff_s: float, documents: Mapping[str, Document],
                 max_response_mb: float = MAX_RESPONSE_MB):
        self.mapping, self.documents = mapping, documents
        self.concurrency, self.retries, self.backoff_s = concurrency, retries, backoff_s
        self.max_response_mb = max_response_mb
        # httpx if installed, else urllib
        self.transport = transport(headers, timeout_s, concurrency, int(max_response_mb * (1 << 20)))
        self._lock = threading.Lock()
        self._answered = False  # some request got an HTTP response: from then on, failures are per query
        self._refused = 0  # connection failures in a row before that
        self._down: str | None = None  # why the service is taken as down (the url and the error)

    def close(self) -> None:
        self.transport.close()

    def run(self, requests: Sequence[tuple[Query, Request]], k: int) -> list[tuple[RankedList | None, RequestRecord]]:
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, max(len(requests), 1)))
        try:
            results = list(pool.map(lambda qr: self._one(qr[0], qr[1], k), requests))
        except ServiceDown:
            pool.shutdown(wait=False, cancel_futures=True)
            raise RetrieverError(f"the retrieval service cannot be reached: {self._down} ({DOWN_AFTER} "
                                 f"connection attempts in a row failed before any answer; is it running?)") from None
        except BaseException:
            # Ctrl-C or SIGTERM (or an error) while requests are in flight: leave at once. A ``with`` block would
            # wait for every request sent (a hanging service held Ctrl-C for its whole timeout); the ones queued
            # are cancelled, and the threads of those in flight end with their request or with the process.
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        return results

    def _connect_failed(self, url: str, error: str) -> None:
        with self._lock:
            if self._answered:
                return
            self._refused += 1
            if self._refused >= DOWN_AFTER and self._down is None:
                self._down = f"{url}: {error}"
        if self._down:
            raise ServiceDown()

    def _one(self, query: Query, req: Request, k: int) -> tuple[RankedList | None, RequestRecord]:
        t0 = time.perf_counter()
        status, error, response = None, None, None
        attempts = 0
        for attempt in range(self.retries + 1):
            attempts = attempt + 1
            wait = self.backoff_s * (2 ** attempt)
            if self._down:
                raise ServiceDown()
            try:
                r = self.transport.send(req.method, req.url, req.body, req.params)
            except TimedOut:
                status, error = None, "timed out"
            except BodyTooLarge:  # the same answer again would be as large: not retried
                status, error = None, (f"the response body is larger than the {self.max_response_mb:g} MB limit "
                                       f"(retriever.max_response_mb)")
                break
            except Unreachable as exc:
                status, error = None, f"request failed ({exc})"
                self._connect_failed(req.url, str(exc))
            except Failed as exc:
                status, error = None, f"request failed ({exc})"
            else:
                self._answered = True
                status = r.status
                if status == 200:
                    response, error = r, None
                    break
                error = f"HTTP {status}" + (f": {r.text[:120]!r}" if r.content else "")
                if status not in RETRY_STATUS:
                    break
                if r.retry_after.replace(".", "", 1).isdigit():  # the server says when: honoured, capped
                    wait = min(float(r.retry_after), MAX_RETRY_AFTER_S)
            if attempt < self.retries:
                time.sleep(wait)
        ranked, dropped = None, 0
        if response is not None:
            try:
                data = loads(response.content)
            except (ValueError, RecursionError) as exc:
                error = f"the response is not JSON ({type(exc).__name__}: {str(exc)[:80]})"
            else:
                hits, why = hits_of(data, self.mapping, self.documents)
                if why:
                    error = why
                else:
                    ranked, dropped = rank_distinct(query.query_id, hits, k)
        return ranked, RequestRecord(query.query_id, status, attempts, (time.perf_counter() - t0) * 1000, error,
                                     dropped)


class LiveRetriever:
    """What http and the search engines share: a request per query, a request log, failures by policy."""

    kind = "http"

    def __init__(self, engine: HttpEngine, on_error: str):
        self.engine, self.on_error = engine, on_error
        self.log: list[RequestRecord] = []

    def request(self, query: Query, k: int) -> Request:  # pragma: no cover - each kind says how it asks
        raise NotImplementedError

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Nothing to index: the service has its own index (connect mode). Hits are placed on these chunks by
        the run, like every retriever's."""

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        results = self.engine.run([(q, self.request(q, k)) for q in queries], k)
        self.log += [rec for _, rec in results]
        failed = [rec for _, rec in results if rec.error]
        if failed and self.on_error == "fail":
            self.engine.close()
            raise RetrieverError(f"retriever.kind {self.kind!r}: the request failed for {len(failed)} of "
                                 f"{len(queries)} queries in this batch (on_error: fail; set on_error: skip to "
                                 f"evaluate without them, listed as absent from the run)",
                                 shown_lines([f"query {r.query_id!r}: {r.error} after {r.attempts} attempt(s)"
                                              for r in failed]))
        return [ranked if ranked is not None else RankedList(q.query_id, ()) for q, (ranked, _) in
                zip(queries, results)]

    # ---- what the run reads after retrieval ----

    @property
    def duplicates_dropped(self) -> int:
        """Repeated items the service sent, dropped before the cut at depth (results.json hit_problems)."""
        return sum(r.duplicates for r in self.log)

    def answered_query_ids(self) -> list[str]:
        """The queries whose request succeeded: the others are absent from the run, never an empty answer."""
        return [r.query_id for r in self.log if not r.error]

    def query_latencies_ms(self) -> dict[str, float]:
        return {r.query_id: r.latency_ms for r in self.log}

    def request_report(self) -> dict:
        failed = [r for r in self.log if r.error]
        return {"on_error": self.on_error, "sent": len(self.log), "failed": len(failed),
                "retried": sum(r.attempts > 1 for r in self.log),
                "failed_query_ids": [r.query_id for r in failed], "log": [r.to_dict() for r in self.log]}


class HttpRetriever(LiveRetriever):
    kind = "http"

    def __init__(self, config: HttpConfig, context: BuildContext):
        super().__init__(config.engine(config.response, context.documents), config.on_error)
        self.config = config

    def request(self, query: Query, k: int) -> Request:
        c = self.config
        if c.method == "GET":
            return Request("GET", c.url, params={key: str(render(v, query, k)) for key, v in c.params.items()})
        return Request("POST", c.url, body=render(c.body, query, k))


register(RetrieverKind("http", HttpConfig, HttpRetriever,
                       "a live retrieval service over HTTP (one request per query; retries, request log)"))
