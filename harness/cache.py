"""Content-addressed caches of arrays (embeddings, token embeddings), written atomically and checksummed.

A key is a hash of everything that determines the content (model identity, settings, chunk texts). Arrays are
stored with ``np.savez`` and loaded with ``allow_pickle=False``: nothing executable is ever read back. A file whose
checksum does not match is rebuilt with a warning, never trusted."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from .atomic import write_bytes


def cache_key(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, (list, tuple)):
            for item in part:
                h.update(str(item).encode("utf-8"))
                h.update(b"\0")
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\1")
    return h.hexdigest()[:32]


class ArrayCache:
    def __init__(self, root: Path, log: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.log = log or (lambda m: print(m, file=sys.stderr))

    def _paths(self, kind: str, key: str) -> tuple[Path, Path]:
        base = self.root / kind / key
        return base.with_suffix(".npz"), base.with_suffix(".sha256")

    def load(self, kind: str, key: str) -> dict[str, np.ndarray] | None:
        data_path, sum_path = self._paths(kind, key)
        if not data_path.exists():
            return None
        try:
            data = data_path.read_bytes()
            expected = sum_path.read_text().strip()
        except OSError:
            expected, data = "", b""
        if hashlib.sha256(data).hexdigest() != expected:
            self.log(f"warning: cache file {data_path} is corrupt or incomplete; rebuilding it")
            data_path.unlink(missing_ok=True)
            sum_path.unlink(missing_ok=True)
            return None
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}

    def save(self, kind: str, key: str, arrays: dict[str, np.ndarray]) -> None:
        data_path, sum_path = self._paths(kind, key)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        data = buf.getvalue()
        # The checksum goes last: a crash between the two writes leaves a file that fails its check.
        sum_path.unlink(missing_ok=True)
        write_bytes(data_path, data)
        write_bytes(sum_path, hashlib.sha256(data).hexdigest().encode())

    def get_or_build(self, kind: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        found = self.load(kind, key)
        if found is not None:
            return found
        arrays = build()
        self.save(kind, key, arrays)
        return arrays

    def info(self) -> dict[str, dict[str, float]]:
        out = {}
        if self.root.is_dir():
            for kind in sorted(p for p in self.root.iterdir() if p.is_dir()):
                files = list(kind.glob("*.npz"))
                out[kind.name] = {"entries": len(files), "mb": sum(f.stat().st_size for f in files) / 1e6}
        return out

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
