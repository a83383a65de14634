"""The one check of a service's address given in a config (an http retriever's ``url:``, a Qdrant server's)."""

from __future__ import annotations

from urllib.parse import urlsplit


def service_url_problem(url: object, what: str, example: str, secrets: str) -> str | None:
    """Why ``url`` is not ``what`` (an http(s) URL with a host, no spaces, a port in 1-65535, no credentials:
    ``secrets`` says where they go instead), also as urllib3 parses it where it is installed (httpx's and
    qdrant-client's parser: what it refuses raised a traceback at the first request); None when it is one. The URL
    is never repeated: it may hold a password."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        port = parts.port if parts is not None else None  # read here: a port past 65535 raises only when read
    except ValueError:
        return f"its port is not in 1-65535; {example}"
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        return f"not {what} (http or https, a host, no spaces); {example}"
    if port == 0:
        return f"its port is not in 1-65535; {example}"
    if parts.username or parts.password:
        return f"the URL must not carry credentials: {secrets}"
    try:
        from urllib3.util import parse_url
    except ImportError:
        return None
    try:
        parse_url(url)
    except ValueError as exc:
        return f"not {what} ({type(exc).__name__}); {example}"
    return None
