"""``--set KEY.PATH=VALUE``: change one value of a config from the command line, validated like the file.

A value is read as YAML (``--set cutoff.k=10`` is the number 10, ``--set metrics=[ndcg@10,recall@100]`` a list,
``--set retriever={kind: dense}`` a mapping), exactly as if it were written in the file at that key path, so a
relative path in a value is relative to the config file's folder, like every input path in the file (``output``,
where the outputs go, is relative to the current folder, like ``--out``). A path goes through
mappings by key and through lists by index (``retriever.children.0.k1=1.2``); a key that does not exist yet is
added, and the config's validation then names it if it is not a config key.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from typing import Any, Sequence

from ..core.errors import ConfigError

OPTION = "--set"


def _path(text: str) -> list[str]:
    return text.split(".")


def apply_overrides(data: Any, overrides: Sequence[str]) -> Any:
    """A copy of ``data`` (the parsed config file) with every override applied in order; every malformed override
    is reported in one ConfigError, each naming the override as typed."""
    from ..io.safeyaml import parse_yaml

    if not overrides:
        return data
    out = copy.deepcopy(data) if data is not None else {}
    problems: list[str] = []
    given: dict[str, str] = {}
    for item in overrides:
        where = f"{OPTION} {item}"
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"{where}: expected KEY.PATH=VALUE, e.g. {OPTION} cutoff.k=10")
            continue
        if key in given:  # as a key given twice in the file: which one was meant is not guessed
            problems.append(f"{where}: {key} is already set by {OPTION} {given[key]}; give each key once")
            continue
        given[key] = item
        parts = _path(key)
        if any(not p for p in parts):
            problems.append(f"{where}: {key!r} has an empty key between dots")
            continue
        try:
            value = parse_yaml(raw, where, ConfigError) if raw.strip() else ""
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        problem = _assign(out, parts, value)
        if problem:
            problems.append(f"{where}: {problem}")
    if problems:
        raise ConfigError(f"{OPTION}: {len(problems)} override(s) could not be applied", problems)
    return out


def _assign(root: Any, parts: list[str], value: Any) -> str | None:
    if not isinstance(root, dict):
        return "the config is not a mapping"
    node: Any = root
    for depth, part in enumerate(parts[:-1]):
        here = ".".join(parts[:depth + 1])
        if isinstance(node, dict):
            if part not in node or node[part] is None:
                node[part] = {}
            node = node[part]
        elif isinstance(node, list):
            index = _index(part, len(node))
            if index is None:
                return f"{here}: {'.'.join(parts[:depth]) or 'the config'} is a list of {len(node)}; use an index 0-{len(node) - 1}"
            node = node[index]
        else:
            return f"{here}: {'.'.join(parts[:depth])} is {_what(node)}, not a mapping or a list"
    last = parts[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list):
        index = _index(last, len(node))
        if index is None:
            return f"{'.'.join(parts)}: {'.'.join(parts[:-1])} is a list of {len(node)}; use an index 0-{len(node) - 1}"
        node[index] = value
    else:
        return f"{'.'.join(parts)}: {'.'.join(parts[:-1])} is {_what(node)}, not a mapping"
    return None


def _index(part: str, size: int) -> int | None:
    if not part.isdigit():
        return None
    index = int(part)
    return index if index < size else None


def _what(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    return f"a {type(value).__name__}"


# What a variant folder's suffix may hold as written: a key path, '=', and a plain value (no ',', which joins them).
_READABLE = re.compile(r"^[A-Za-z0-9_.\-]+=[A-Za-z0-9_.\-]+$")
READABLE_MAX = 60


def variant_suffix(overrides: Sequence[str]) -> str:
    """The part after ``+`` in a ``--set`` run's own folder (``reports/<name>+<suffix>/``): the overrides as typed,
    sorted by key and joined by ',' (``retriever.k1=0.9,cutoff.k=10``) when they are short and plain, else
    ``set-`` and 10 hex digits of their SHA-256. The same overrides always give the same folder, different ones
    never share one (the key path is whole, so ``k1`` of two retrievers stays apart)."""
    items = sorted(_normal(o) for o in overrides)
    joined = ",".join(items)
    if all(_READABLE.match(i) for i in items) and len(joined) <= READABLE_MAX:
        return joined
    return "set-" + hashlib.sha256("\n".join(items).encode()).hexdigest()[:10]


def _normal(item: str) -> str:
    key, _, raw = item.partition("=")
    return f"{key.strip()}={raw.strip()}"


def check_run_name(name: str, option: str = "--name") -> None:
    """A run name given on the command line: one folder name, as a config's ``name:`` is."""
    if "/" in name or "\\" in name or (os.sep in name) or (os.altsep and os.altsep in name):
        raise ConfigError(f"{option} {name}: a run name is one folder name, without a path separator; for another "
                          f"folder, give --out")
    if not RUN_NAME.match(name):
        raise ConfigError(f"{option} {name!r}: expected letters, digits, '_', '.' or '-', starting with a letter or "
                          f"digit (as a config's name:)")


RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
