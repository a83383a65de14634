"""The chunking section of a config: which strategy cuts the documents, in what units, how big, with what overlap;
the structure-aware strategies' and the chunking libraries' own settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from ..core.schema import Strict


# A chunk of more units than any document has is the whole document; the bound keeps sizes within int64.
MAX_CHUNK_UNITS = 1_000_000_000


# Strategies that call a chunking library (optional extras); their other keys are the library's own arguments.
LIBRARY_STRATEGIES = ("chonkie", "langchain", "semchunk")
# Strategies whose pieces are cut by the recursive splitter (sections past ``size`` are cut by it too).
RECURSIVE_STRATEGIES = ("recursive", "markdown", "html")
DEFAULT_SEPARATORS = ("\n\n", "\n", " ", "")
NEWER_CHUNKING_KEYS = ("separators", "prepend_headings", "chunker", "options")


class ChunkingConfig(Strict):
    strategy: Literal["none", "tokens", "sentences", "paragraphs", "markdown", "html", "recursive",
                      "chonkie", "langchain", "semchunk"] = "none"
    """how documents are cut: none (a chunk per document), tokens (windows of size words or tokenizer tokens),
    sentences or paragraphs (size of them a chunk), markdown (by heading), html (by section), recursive (separators
    in order), or a library's splitter (chonkie, langchain, semchunk): docs/chunking.md"""
    size: int = Field(200, ge=1, le=MAX_CHUNK_UNITS,
                      description="words/tokens per chunk (tokens), sentences/paragraphs per chunk, or the largest "
                                  "chunk in `unit`s (recursive, markdown and html sections)")
    overlap: int = Field(0, ge=0, le=MAX_CHUNK_UNITS)
    """units that consecutive chunks share; smaller than size"""
    unit: Literal["words", "tokenizer", "characters"] = "words"
    """what size and overlap count: whitespace words, tokens of chunking.tokenizer, or characters"""
    tokenizer: Path | None = None
    """unit tokenizer: the tokenizer.json whose tokens are counted"""
    include_title: bool = True
    """index each chunk with its document's title before its text (spans and evidence still refer to the text alone)"""
    separators: list[str] | None = Field(None, description="recursive, markdown, html: the separators tried in "
                                                           "order (default: blank line, newline, space, character)")
    prepend_headings: bool = Field(False, description="markdown, html: prefix each chunk's index text with its "
                                                      "heading path")
    chunker: str | None = Field(None, description="chonkie, langchain: the library's chunker class")
    options: dict[str, Any] = Field({}, description="chonkie, langchain, semchunk: the library's own arguments "
                                                    "(any other key of the chunking section goes here)")

    @model_validator(mode="before")
    @classmethod
    def _library_arguments(cls, data: Any) -> Any:
        """``{strategy: chonkie, chunker: TokenChunker, chunk_size: 256}``: the keys the harness does not know are
        the library's arguments, passed to it verbatim (so the config reads as the team's own code)."""
        if isinstance(data, dict) and data.get("strategy") in LIBRARY_STRATEGIES:
            extra = {k: v for k, v in data.items() if k not in cls.model_fields}
            if extra:
                given = data.get("options")
                options = dict(given) if isinstance(given, dict) else {}
                data = {k: v for k, v in data.items() if k not in extra} | {"options": options | extra}
        return data

    @model_validator(mode="after")
    def _check(self) -> "ChunkingConfig":
        library = self.strategy in LIBRARY_STRATEGIES
        if self.overlap >= self.size and self.strategy != "none" and not library:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        if self.unit == "tokenizer" and self.tokenizer is None and not library:
            raise ValueError("unit 'tokenizer' needs tokenizer: <path to a tokenizer.json>")
        if self.unit == "characters" and self.strategy not in RECURSIVE_STRATEGIES:
            raise ValueError(f"unit 'characters' is for strategies {', '.join(RECURSIVE_STRATEGIES)}, "
                             f"not {self.strategy}")
        if self.separators is not None and (not self.separators or any(not isinstance(s, str) for s in self.separators)):
            raise ValueError("separators: give a non-empty list of strings (\"\" splits between characters)")
        if self.options and not library:
            raise ValueError(f"options are a chunking library's arguments (strategies {', '.join(LIBRARY_STRATEGIES)}); "
                             f"strategy {self.strategy} takes none")
        if self.strategy in ("chonkie", "langchain") and not self.chunker:
            raise ValueError(f"strategy {self.strategy} needs chunker: <the library's chunker class>")
        return self

    def idle_fields(self) -> list[str]:
        """The fields this strategy does not read, whatever their values."""
        structure = ["separators", "prepend_headings", "chunker", "options"]
        if self.strategy == "none":
            return ["size", "overlap", "unit", "tokenizer"] + structure
        if self.strategy in LIBRARY_STRATEGIES:
            return ["size", "overlap", "unit", "separators", "prepend_headings"] + \
                (["chunker"] if self.strategy == "semchunk" else [])
        tokenizer = ["tokenizer"] if self.unit != "tokenizer" else []
        if self.strategy in RECURSIVE_STRATEGIES:
            return tokenizer + (["prepend_headings"] if self.strategy == "recursive" else []) + ["chunker", "options"]
        if self.strategy != "tokens":
            return ["unit", "tokenizer"] + structure
        return tokenizer + structure

    def unused(self) -> list[str]:
        """The settings given that this strategy does not read (a user who set them expects them to act)."""
        given = self.settings_given()
        reads_unit = self.strategy == "tokens" or self.strategy in RECURSIVE_STRATEGIES

        def why(field: str) -> str:
            return f"unit {self.unit}" if field == "tokenizer" and reads_unit else f"strategy {self.strategy}"
        return [f"chunking.{f}: has no effect with {why(f)}" for f in self.idle_fields() if f in given]
