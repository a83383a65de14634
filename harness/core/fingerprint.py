"""Short content fingerprints of JSON-able values: the one rule for config hashes, corpus and golden-set
fingerprints and the query-id fingerprint that compare and the results.json loader check."""

from __future__ import annotations

import hashlib
import json
from itertools import islice
from typing import Iterable


def fingerprint(obj, *, ascii_only: bool = False) -> str:
    """The first 16 hex digits of sha256 over canonical JSON (keys sorted). ``ascii_only`` escapes non-ASCII text,
    as config hashes always have (kept so hashes of existing results stay comparable)."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=ascii_only)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint_of_items(items: Iterable, *, batch: int = 10_000) -> str:
    """``fingerprint(list(items))``, hashed ``batch`` items at a time: a golden set of 1M queries is never one
    JSON text (nor one list) in memory."""
    digest, items, sep = hashlib.sha256(b"["), iter(items), b""
    while part := list(islice(items, batch)):
        digest.update(sep + json.dumps(part, sort_keys=True, ensure_ascii=False)[1:-1].encode())
        sep = b", "
    digest.update(b"]")
    return digest.hexdigest()[:16]


def document_fingerprint(text: str) -> str:
    """A document's text fingerprint: ``run`` records one per judged document (results.json
    ``goldset.judged_documents``) so ``harness goldset check --against`` can tell which documents changed."""
    return fingerprint(text)
