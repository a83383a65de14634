"""Sending one HTTP request for the live retrievers: httpx when it is installed (connection pooling, HTTP/1.1
keep-alive), else the standard library's urllib. Both give a ``Reply`` or raise ``TimedOut``/``Failed``, so the
retry and error rules in ``http`` are the same whichever is used."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlencode


@dataclass(frozen=True)
class Reply:
    status: int
    retry_after: str
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class TimedOut(Exception):
    pass


class Failed(Exception):
    pass


class BodyTooLarge(Exception):
    """The response body passed the limit (``max_response_mb``); it was not read further."""


def _bounded(chunks, limit: int) -> bytes:
    """The body from its chunks as they arrive, refused once past ``limit`` bytes: memory stays at the limit."""
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        parts.append(chunk)
    return b"".join(parts)


class Unreachable(Failed):
    """No connection could be made (refused, no such host, connect timeout): the service is not there, as opposed
    to a service that answered badly."""


class HttpxTransport:
    def __init__(self, httpx, headers: Mapping[str, str], timeout_s: float, concurrency: int, max_body: int):
        self.httpx, self.max_body = httpx, max_body
        self.client = httpx.Client(headers=dict(headers), timeout=timeout_s, follow_redirects=False,
                                   limits=httpx.Limits(max_connections=concurrency))

    def send(self, method: str, url: str, body: Any, params: Mapping[str, str] | None) -> Reply:
        try:
            with self.client.stream(method, url, json=body if method == "POST" else None, params=params) as r:
                content = _bounded(r.iter_bytes(), self.max_body)
        except (self.httpx.ConnectError, self.httpx.ConnectTimeout) as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from None
        except self.httpx.TimeoutException:
            raise TimedOut() from None
        except self.httpx.HTTPError as exc:
            raise Failed(f"{type(exc).__name__}: {exc}") from None
        return Reply(r.status_code, r.headers.get("retry-after", ""), content)

    def close(self) -> None:
        self.client.close()


class UrllibTransport:
    def __init__(self, headers: Mapping[str, str], timeout_s: float, max_body: int):
        self.headers, self.timeout_s, self.max_body = dict(headers), timeout_s, max_body

    def send(self, method: str, url: str, body: Any, params: Mapping[str, str] | None) -> Reply:
        import urllib.error
        import urllib.request

        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        data = json.dumps(body).encode() if method == "POST" else None
        req = urllib.request.Request(url, data=data, headers=self.headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return Reply(r.status, r.headers.get("retry-after", ""),
                             _bounded(iter(lambda: r.read(1 << 16), b""), self.max_body))
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.headers.get("retry-after", "") if exc.headers else "", exc.read(4096) or b"")
        except (socket.timeout, TimeoutError):
            raise TimedOut() from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (socket.timeout, TimeoutError)):
                raise TimedOut() from None
            if isinstance(exc.reason, (ConnectionRefusedError, socket.gaierror)):
                raise Unreachable(f"URLError: {exc.reason}") from None
            raise Failed(f"URLError: {exc.reason}") from None
        except (OSError, ValueError) as exc:  # a connection reset mid-response, a malformed status line
            raise Failed(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        pass


def _httpx():
    try:
        import httpx
    except ImportError:
        return None
    return httpx


def transport(headers: Mapping[str, str], timeout_s: float, concurrency: int, max_body: int):
    """``max_body``: the most bytes a response body may have (``BodyTooLarge`` past it)."""
    httpx = _httpx()
    headers = {"Content-Type": "application/json", **headers}
    if httpx is not None:
        return HttpxTransport(httpx, headers, timeout_s, concurrency, max_body)
    return UrllibTransport(headers, timeout_s, max_body)
