"""The chunking libraries teams ship (chonkie, langchain-text-splitters, semchunk), called as the team calls them.

Each adapter builds the library's own chunker from the config's arguments and returns its chunks as
``(start, end, text)`` with the library's own offsets; ``chunking`` checks every one against the document text, so
a chunk whose text is not the document's at its offsets is an error, never a silently shifted span.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..config.schema import ChunkingConfig
from ..core.errors import ConfigError, MissingDependencyError

EXTRA = "pip install 'rag-harness[chunkers]'"
Piece = tuple[int, int, str]
Chunker = Callable[[str], list[Piece]]
PACKAGES = {"chonkie": "chonkie", "langchain": "langchain_text_splitters", "semchunk": "semchunk"}


def _import(strategy: str):
    import importlib

    try:
        return importlib.import_module(PACKAGES[strategy])
    except ImportError:
        raise MissingDependencyError(f"chunking strategy {strategy} needs the {strategy} package: {EXTRA}") from None


def _reason(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _refused(where: str, what: str, options: dict, exc: BaseException) -> ConfigError:
    shown = ", ".join(f"{k}={v!r}" for k, v in options.items()) or "no arguments"
    return ConfigError(f"{where}: {what} refused {shown} ({_reason(exc)})")


def _tokenizer(cfg: ChunkingConfig, where: str):
    """The config's tokenizer.json as a ``tokenizers.Tokenizer`` (padding and truncation off), or None."""
    if cfg.tokenizer is None:
        return None
    from .analysis import TokenCounter

    return TokenCounter(str(cfg.tokenizer), where=f"{where}.tokenizer")._tokenizer


def _class(module, name: str | None, where: str, base: type | None, suffix: str, label: str) -> type:
    choices = sorted(n for n in dir(module) if n.endswith(suffix) and isinstance(getattr(module, n), type)
                     and (base is None or issubclass(getattr(module, n), base)) and getattr(module, n) is not base)
    if name not in choices:
        raise ConfigError(f"{where}.chunker: {name!r} is not a {label} chunker with offsets; choose one of "
                          f"{', '.join(choices)}")
    return getattr(module, name)


def _chonkie(cfg: ChunkingConfig, where: str) -> Chunker:
    module = _import("chonkie")
    base = getattr(module, "BaseChunker", None)
    cls = _class(module, cfg.chunker, where, base, "Chunker", "chonkie")
    options = dict(cfg.options)
    tokenizer = _tokenizer(cfg, where)
    if tokenizer is not None and "tokenizer" in inspect.signature(cls).parameters:
        options.setdefault("tokenizer", tokenizer)
    try:
        chunker = cls(**options)
    except Exception as exc:  # a library's refusal has no common type (TypeError, ValueError, its own errors)
        raise _refused(where, f"chonkie {cfg.chunker}", cfg.options, exc) from None

    def chunk(text: str) -> list[Piece]:
        return [(c.start_index, c.end_index, c.text) for c in chunker.chunk(text)]
    return chunk


def _langchain(cfg: ChunkingConfig, where: str) -> Chunker:
    module = _import("langchain")
    cls = _class(module, cfg.chunker, where, module.TextSplitter, "", "langchain-text-splitters")
    options: dict[str, Any] = dict(cfg.options)
    if options.get("add_start_index") is False:
        raise ConfigError(f"{where}.add_start_index: false leaves the chunks without offsets; leave it out "
                          f"(the harness sets it)")
    options["add_start_index"] = True  # the only way a LangChain splitter tells where its chunks are
    tokenizer = _tokenizer(cfg, where)
    if tokenizer is not None:
        options.setdefault("length_function", lambda t: len(tokenizer.encode(t, add_special_tokens=False).ids))
    try:
        splitter = cls(**options)
    except Exception as exc:
        raise _refused(where, f"langchain {cfg.chunker}", cfg.options, exc) from None

    def chunk(text: str) -> list[Piece]:
        out = []
        for d in splitter.create_documents([text]):
            start = d.metadata.get("start_index", -1)
            out.append((start, start + len(d.page_content), d.page_content))
        return out
    return chunk


def _semchunk(cfg: ChunkingConfig, where: str) -> Chunker:
    module = _import("semchunk")
    tokenizer = _tokenizer(cfg, where)
    # No tokenizer.json: whitespace words, the harness's own default unit.
    counter = tokenizer if tokenizer is not None else (lambda t: len(t.split()))
    build = set(inspect.signature(module.chunkerify).parameters) - {"tokenizer_or_token_counter"}
    made = {k: v for k, v in cfg.options.items() if k in build}
    call = {k: v for k, v in cfg.options.items() if k not in build}
    if "offsets" in call:
        raise ConfigError(f"{where}.offsets: leave it out (the harness asks semchunk for offsets)")
    try:
        chunker = module.chunkerify(counter, **made)
        if not call.keys() <= set(inspect.signature(chunker.__call__).parameters):
            bad = sorted(call.keys() - set(inspect.signature(chunker.__call__).parameters))
            raise TypeError(f"unexpected keyword argument(s) {', '.join(bad)}")
    except Exception as exc:
        raise _refused(where, "semchunk", cfg.options, exc) from None

    def chunk(text: str) -> list[Piece]:
        texts, offsets = chunker(text, offsets=True, **call)
        return [(s, e, t) for t, (s, e) in zip(texts, offsets)]
    return chunk


ADAPTERS = {"chonkie": _chonkie, "langchain": _langchain, "semchunk": _semchunk}


def library_chunker(cfg: ChunkingConfig, where: str = "chunking") -> Chunker:
    """The library's chunker for ``cfg``; a refused argument is a ConfigError naming ``where``, and so is a chunk
    call that the library refuses (some check their arguments only when they first chunk)."""
    chunk = ADAPTERS[cfg.strategy](cfg, where)
    label = f"{cfg.strategy} {cfg.chunker}" if cfg.chunker and cfg.strategy != "semchunk" else cfg.strategy

    def checked(text: str) -> list[Piece]:
        try:
            return chunk(text)
        except (TypeError, ValueError) as exc:
            raise _refused(where, label, cfg.options, exc) from None
    return checked
