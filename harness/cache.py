"""Content-addressed caches of arrays (embeddings, token embeddings), written atomically and checksummed.

A key is a hash of everything that determines the content (model identity, settings, chunk texts). Arrays are
stored with ``np.savez`` and loaded with ``allow_pickle=False``: nothing executable is ever read back. A file whose
checksum does not match is rebuilt with a warning, never trusted.

Long builds (encoding a corpus) are saved shard by shard as they go (``get_or_build_rows``), so an interrupted run
resumes at the first missing shard instead of starting over."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .io.files import write_bytes
from .core.errors import InputError


CACHE_ENV = "HARNESS_CACHE_DIR"


def default_cache_dir() -> Path:
    """Where caches live unless ``--cache-dir`` says otherwise: ``$HARNESS_CACHE_DIR``, else the user's cache folder
    (``$XDG_CACHE_HOME/harness``, ``~/.cache/harness``). Not the current folder: running from another folder must
    find the same embeddings (the cache is content-addressed, so one folder serves every project safely)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "harness"


def check_cache_folder(root: Path) -> None:
    """The cache location must be a folder, or a path where one can be made: checked before any work, so a file
    in its place is an error up front rather than a crash after minutes of encoding."""
    root = Path(root)
    if str(root) == ".":  # `--cache-dir "$UNSET"` reads as "" (Path("") is "."): the current folder
        raise InputError(f"{root}: cannot be used as the cache folder: it is the current folder (an empty "
                         f"--cache-dir?); give the cache's own folder")
    for path in (root, *root.parents):
        if path.is_symlink() and not path.exists():
            raise InputError(f"{root}: cannot be used as the cache folder: {path} is a broken link")
        if not path.exists():
            continue
        if not path.is_dir():
            what = "it is a file" if path == root else f"{path} is a file"
            raise InputError(f"{root}: cannot be used as the cache folder: {what}, not a folder; "
                             f"give a folder (--cache-dir or {CACHE_ENV}), or move the file away")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(f"{root}: cannot be used as the cache folder: {path} is not writable")
        return


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
        check_cache_folder(root)
        self.root = Path(root)
        self.log = log or (lambda m: print(m, file=sys.stderr))
        self._write_failed = False

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
        """Write an entry; a failure (disk full, a file where a folder should be) is a warning, not a crash: the
        arrays are computed and the run goes on without caching them."""
        data_path, sum_path = self._paths(kind, key)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        data = buf.getvalue()
        try:
            # The checksum goes last: a crash between the two writes leaves a file that fails its check.
            sum_path.unlink(missing_ok=True)
            write_bytes(data_path, data)
            write_bytes(sum_path, hashlib.sha256(data).hexdigest().encode())
        except OSError as exc:
            if not self._write_failed:
                self.log(f"warning: cache not written under {self.root} ({exc}); the run continues without it")
            self._write_failed = True

    def get_or_build(self, kind: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        found = self.load(kind, key)
        if found is not None:
            return found
        arrays = build()
        self.save(kind, key, arrays)
        return arrays

    def get_or_build_rows(self, kind: str, key: str, order: Sequence[int], shard_size: int,
                          build: Callable[[np.ndarray], np.ndarray],
                          on_shard: Callable[[int, int], None] | None = None) -> np.ndarray:
        """One array whose rows are built in shards, each saved as soon as it is built: row indices are taken in
        ``order`` (a permutation of the rows), ``shard_size`` at a time, and ``build(indices)`` returns those rows.

        Shards live in ``<kind>/<key>.parts/`` named by the shard size and their number, each checksummed and
        written atomically and holding the row indices it covers; one that is missing, corrupt or covers other
        rows is built again. When every shard is there the whole entry is saved under ``key`` (the same entry
        ``get_or_build`` reads, ``{"vectors": rows}``) and the shards are removed. ``on_shard(rows_done, rows_cached)``
        reports progress: rows done so far, and how many of them were read from shards saved before."""
        found = self.load(kind, key)
        if found is not None:
            return found["vectors"]
        order = np.asarray(order, dtype=np.int64)
        parts_kind = f"{kind}/{key}.parts"
        out, cached = None, 0
        for number, first in enumerate(range(0, len(order), shard_size)):
            rows = order[first:first + shard_size]
            shard_key = f"{shard_size}-{number:06d}"
            shard = self.load(parts_kind, shard_key)
            if shard is None or not np.array_equal(shard.get("rows"), rows):
                shard = {"rows": rows, "vectors": np.asarray(build(rows))}
                self.save(parts_kind, shard_key, shard)
            else:
                cached += len(rows)
            vectors = shard["vectors"]
            if out is None:
                out = np.empty((len(order),) + vectors.shape[1:], dtype=vectors.dtype)
            out[rows] = vectors
            if on_shard is not None:
                on_shard(first + len(rows), cached)
        if out is None:  # no rows at all: the builder says what an empty array of its kind looks like
            out = np.asarray(build(order))
        self.save(kind, key, {"vectors": out})
        if self._paths(kind, key)[1].exists():  # only once the whole entry is safely there (checksum written last)
            shutil.rmtree(self.root / kind / f"{key}.parts", ignore_errors=True)
        return out

    def info(self) -> dict[str, dict[str, float]]:
        out = {}
        if self.root.is_dir():
            for kind in sorted(p for p in self.root.iterdir() if p.is_dir() and any(p.iterdir())):
                files = list(kind.glob("*.npz"))  # (an empty folder is no kind of cache)
                out[kind.name] = {"entries": len(files), "mb": sum(f.stat().st_size for f in files) / 1e6}
        return out

