"""Paths and variables in a config: ``${VAR}`` replaced from the environment, relative paths resolved against the
config file's folder when it is read, and written relative again (a sweep's best.yaml beside its outputs)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable

from ..core.schema import EnvText
from ..text.stopwords import BUILTIN as STOPWORD_LISTS


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _interpolate(node: Any, path: str, problems: list[str]) -> Any:
    if isinstance(node, str) and _ENV.fullmatch(node) and node[2:-1] in os.environ:
        return EnvText(os.environ[node[2:-1]])  # a number setting reads it as the number it spells
    if isinstance(node, str):
        def sub(m: re.Match) -> str:
            if m[1] not in os.environ:
                problems.append(f"{path or '<root>'}: environment variable ${{{m[1]}}} is not set")
                return m[0]
            return os.environ[m[1]]
        return _ENV.sub(sub, node)
    if isinstance(node, dict):
        return {k: _interpolate(v, f"{path}.{k}" if path else str(k), problems) for k, v in node.items()}
    if isinstance(node, list):
        return [_interpolate(v, f"{path}.{i}", problems) for i, v in enumerate(node)]
    return node


def _absolute(value: str, base: Path, where: str, problems: list[str]) -> str:
    try:
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p).resolve())
    except (RuntimeError, ValueError, OSError) as exc:  # ~nouser/..., an embedded NUL byte, a loop of links
        problems.append(f"{where}: {value!r} is not a usable path ({exc})")
        return value


def _map_paths(data: dict, fn: Callable[[str, str], str]) -> None:
    """Replace every path value of a config mapping (in place) by ``fn(value, key_path)``: the one list of which keys
    are paths, used to make them absolute when a config is read and relative when one is written (best.yaml)."""
    def fix(section: dict | None, key: str, where: str) -> None:
        if isinstance(section, dict) and isinstance(section.get(key), str):
            section[key] = fn(section[key], f"{where}.{key}" if where else key)
    fix(data.get("corpus"), "path", "corpus")
    for key in ("path", "queries", "evidence"):
        fix(data.get("goldset"), key, "goldset")
        fix(data.get("select_on"), key, "select_on")
    fix(data.get("chunking"), "tokenizer", "chunking")
    cutoff = data.get("cutoff")
    if isinstance(cutoff, dict) and isinstance(cutoff.get("tokenizer"), str) and cutoff["tokenizer"] != "words":
        fix(cutoff, "tokenizer", "cutoff")

    def fix_retriever(node: Any, where: str) -> None:
        if not isinstance(node, dict):
            return
        for key in ("path", "model"):
            value = node.get(key)
            if not isinstance(value, str) or ":" in value.split("/")[0]:
                continue  # bundled:..., hub:... and URLs are names, not paths
            # a model is a path only when it looks like one; 'path' always is
            if key == "path" or value.startswith((".", "/", "~")):
                node[key] = fn(value, f"{where}.{key}")
        tokenizer = node.get("tokenizer")
        if isinstance(tokenizer, dict) and isinstance(tokenizer.get("stopwords"), str) \
                and tokenizer["stopwords"] not in STOPWORD_LISTS:  # any other text is a file of stopwords
            tokenizer["stopwords"] = fn(tokenizer["stopwords"], f"{where}.tokenizer.stopwords")
        stage = node.get("stage")
        if isinstance(stage, dict) and isinstance(stage.get("model"), str) and stage["model"].startswith((".", "/", "~")):
            stage["model"] = fn(stage["model"], f"{where}.stage.model")
        children = node.get("children")
        for i, child in enumerate(children if isinstance(children, list) else []):
            fix_retriever(child, f"{where}.children.{i}")
        fix_retriever(node.get("child"), f"{where}.child")
    fix_retriever(data.get("retriever"), "retriever")


def _resolve_paths(data: dict, base: Path, problems: list[str]) -> None:
    _map_paths(data, lambda value, where: _absolute(value, base, where, problems))
    # An output folder is where the outputs go, like --out and the default reports/<name>/: from the current folder
    # (where harness runs), not the config's; the inputs above are found beside the config.
    if isinstance(data.get("output"), str):
        data["output"] = _absolute(data["output"], Path.cwd(), "output", problems)


def relative_paths(data: dict, base: Path) -> dict:
    """A resolved config (``ExperimentConfig.resolved()``) with every path relative to the folder ``base``, so a
    config written there (best.yaml) runs wherever that folder is copied with its inputs beside it. Each starts
    with ``./`` or ``../``: a bare ``my-model`` would be read as a model name, not a folder."""
    def rel(value: str, where: str) -> str:
        if not os.path.isabs(value):
            return value
        out = os.path.relpath(value, os.path.abspath(base))
        return out if out.startswith("..") else f"./{out}"
    data = json.loads(json.dumps(data))
    _map_paths(data, rel)
    return data
