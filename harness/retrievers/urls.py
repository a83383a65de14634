"""The one check of a service's address given in a config (an http retriever's ``url:``, a Qdrant server's)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from ..core.schema import CREDENTIALS

# A query parameter whose name says it carries a credential (api_key, access_token, X-Amz-Signature, client_secret,
# password, sig...): the URL goes into results.json and the reports, so it is refused as user:pass@ is.
# Judged word by word (api_key, apiKey, X-Amz-Signature), so keywords= or author= are not taken for one.
_SECRET_WORDS = {"password", "passwd", "pwd", "pass", "signature", "sig", "credential", "credentials", "auth",
                 "authorization", "secret", "token", "key"}
_SECRET_ENDS = ("apikey", "accesskey", "token", "secret", "password")  # accesstoken, clientsecret


def _looks_secret(name: str) -> bool:
    words = re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDS) for w in words)


def secret_params(query: str) -> list[str]:
    """The names of the query parameters of ``query`` (a URL's part after ``?``) that look like credentials."""
    return sorted({name for name, _ in parse_qsl(query, keep_blank_values=True) if _looks_secret(name)})


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
        return f"the URL {CREDENTIALS}: {secrets}"
    named = secret_params(parts.query)
    if named:  # the parameter's name only: its value is the secret
        return f"the URL {CREDENTIALS} (query parameter {', '.join(named)}): {secrets}"
    try:
        from urllib3.util import parse_url
    except ImportError:
        return None
    try:
        parse_url(url)
    except ValueError as exc:
        return f"not {what} ({type(exc).__name__}); {example}"
    return None
