"""``harness cache info|clear``: the embedding caches (``harness.cache``), shown or removed."""

from __future__ import annotations

import os
import re
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .options import cache_dir_option
from ..render.fmt import megabytes, plural

# What ArrayCache.save writes (KIND/KEY.npz and KEY.sha256, KEY = 32 hex digits; an interrupted encode's shards in
# KIND/KEY.parts/SIZE-NUMBER.npz|sha256) and atomic writes' temp files.
_ENTRY = re.compile(r"^(?:[0-9a-f]{32}\.(?:npz|sha256)|\..+\.tmp)$")
_SHARD = re.compile(r"^(?:\d+-\d{6}\.(?:npz|sha256)|\..+\.tmp)$")
_SHARD_FOLDER = re.compile(r"^[0-9a-f]{32}\.parts$")


class CacheAction(str, Enum):
    info = "info"
    clear = "clear"


def _is_cache_file(root: Path, path: Path) -> bool:
    if path.parent.parent == root:
        return bool(_ENTRY.match(path.name))
    return (path.parent.parent.parent == root and bool(_SHARD_FOLDER.match(path.parent.name))
            and bool(_SHARD.match(path.name)))


def _not_cache_files(root: Path, enough: int = 6) -> list[Path]:
    """The first ``enough`` files (or links) under ``root`` the cache did not write: the walk stops there (``/``
    given by mistake was a walk of the whole disk before the refusal)."""
    found = []
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_dir() and not _is_cache_file(root, path):
            found.append(path)
            if len(found) == enough:
                break
    return sorted(found)


def _refuse_foreign(source: str, cache_dir: Path, done: str) -> None:
    """A folder holding anything the cache did not write (a --cache-dir typo pointing at a project or home folder)
    is no cache: said, whatever the action."""
    foreign = _not_cache_files(cache_dir) if cache_dir.is_dir() else []
    if foreign:
        from ..core.errors import InputError

        shown = ", ".join(str(p.relative_to(cache_dir)) for p in foreign[:5])
        raise InputError(f"{source} {cache_dir}: not a harness cache (it holds {shown}"
                         f"{' and more' if len(foreign) > 5 else ''}){done}")


def cache_command(action: CacheAction = typer.Argument(..., metavar="ACTION", help="info or clear"),
                  cache_dir: Optional[Path] = cache_dir_option("--dir")) -> None:
    """Show or clear the embedding and token-embedding caches.

    Example: harness cache info --cache-dir ~/.cache/harness
    """
    from ..cache import CACHE_ENV, ArrayCache, default_cache_dir
    from ..core.errors import InputError

    # (messages name where the folder came from: the option, the environment variable, or the default)
    source = "--cache-dir" if cache_dir else CACHE_ENV if os.environ.get(CACHE_ENV) else "the default cache folder"
    cache_dir = cache_dir or default_cache_dir()
    if str(cache_dir) == ".":  # `--cache-dir "$UNSET"` reads as "": the current folder
        raise InputError(f"{source} {cache_dir}: the current folder is not a cache folder (an empty value?); "
                         f"give the cache's own folder")
    for path in (cache_dir, *cache_dir.parents):  # the nearest existing part: a file there is no cache folder
        if path.exists():
            if not path.is_dir():
                raise InputError(f"{source} {cache_dir}: {'is' if path == cache_dir else f'{path} is'} a file, "
                                 f"not a cache folder")
            break
    if action == CacheAction.info:
        _refuse_foreign(source, cache_dir, "")
        info = ArrayCache(cache_dir).info() if cache_dir.exists() else {}
        # Where the cache is comes first, absolute, and why there: a user looking for the embeddings finds them.
        where = source.removeprefix("the default cache folder").strip() or "the default: $XDG_CACHE_HOME/harness " \
            "or ~/.cache/harness"
        print(f"{cache_dir.absolute()}{': empty' if not info else ''} (from {where})")
        for kind, stats in info.items():
            print(f"{kind}\t{plural(stats['entries'], 'entry', 'entries')}\t{megabytes(stats['mb'])}")
        return
    # Remove only what the cache wrote: its files and the folders they leave empty, never the folder itself nor a
    # folder of yours, empty or not.
    _refuse_foreign(source, cache_dir, "; nothing was deleted")
    entries = [p for p in cache_dir.rglob("*") if p.is_file() and not p.is_symlink()] if cache_dir.is_dir() else []
    if not entries:
        print(f"{cache_dir}: no cache entries there; nothing to clear")
        return
    failed: list[str] = []
    for entry in entries:
        try:
            entry.unlink()
        except OSError as exc:  # another user's file in a shared cache, a read-only mount
            failed.append(f"{entry}: {exc.strerror or exc}")
    for folder in sorted({p.parent for p in entries}, key=lambda p: len(p.parts), reverse=True):
        try:
            while folder != cache_dir and not any(folder.iterdir()):  # a .parts folder, then its kind's folder
                folder.rmdir()
                folder = folder.parent
        except OSError:
            pass  # a folder that stays is harmless: its files are gone (or listed below)
    if failed:
        raise InputError(f"{source} {cache_dir}: {len(failed)} of {len(entries)} cache files could not be "
                         f"removed", failed[:10] + ([f"... and {len(failed) - 10} more"] if len(failed) > 10 else []))
    print(f"{cache_dir}: cleared {plural(len(entries), 'file')}")
