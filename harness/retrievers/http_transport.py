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


class Unreachable(Failed):
    """No connection could be made (refused, no such host, connect timeout): the service is not there, as opposed
    to a service that answered badly."""


class HttpxTransport:
    def __init__(self, httpx, headers: Mapping[str, str], timeout_s: float, concurrency: int):
        self.httpx = httpx
        self.client = httpx.Client(headers=dict(headers), timeout=timeout_s, follow_redirects=False,
                                   limits=httpx.Limits(max_connections=concurrency))

    def send(self, method: str, url: str, body: Any, params: Mapping[str, str] | None) -> Reply:
        try:
            r = self.client.request(method, url, json=body if method == "POST" else None, params=params)
        except (self.httpx.ConnectError, self.httpx.ConnectTimeout) as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from None
        except self.httpx.TimeoutException:
            raise TimedOut() from None
        except self.httpx.HTTPError as exc:
            raise Failed(f"{type(exc).__name__}: {exc}") from None
        return Reply(r.status_code, r.headers.get("retry-after", ""), r.content)

    def close(self) -> None:
        self.client.close()


class UrllibTransport:
    def __init__(self, headers: Mapping[str, str], timeout_s: float):
        self.headers, self.timeout_s = dict(headers), timeout_s

    def send(self, method: str, url: str, body: Any, params: Mapping[str, str] | None) -> Reply:
        import urllib.error
        import urllib.request

        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        data = json.dumps(body).encode() if method == "POST" else None
        req = urllib.request.Request(url, data=data, headers=self.headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return Reply(r.status, r.headers.get("retry-after", ""), r.read())
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.headers.get("retry-after", "") if exc.headers else "", exc.read() or b"")
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


def transport(headers: Mapping[str, str], timeout_s: float, concurrency: int):
    httpx = _httpx()
    headers = {"Content-Type": "application/json", **headers}
    if httpx is not None:
        return HttpxTransport(httpx, headers, timeout_s, concurrency)
    return UrllibTransport(headers, timeout_s)
