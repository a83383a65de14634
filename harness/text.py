"""Text analysis shared by chunking, BM25 and token budgets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .errors import ConfigError, MissingDependencyError

# Lucene's EnglishAnalyzer default stop set (what Anserini's BM25 baselines use).
LUCENE_ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
STOPWORD_LISTS = {"none": frozenset(), "english": LUCENE_ENGLISH_STOPWORDS}
STEMMERS = ("none", "english", "porter")

_WORD = re.compile(r"\S+")
# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) and whitespace.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def token_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a token regex, or None. findall() returns tuples for two or more groups (the
    stemmer then fails) and empty tokens for a pattern that matches nothing at all, so both are refused."""
    try:
        regex = re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"not a valid regular expression: {exc}"
    if regex.groups > 1:
        return f"has {regex.groups} capturing groups; use (?:...) for grouping, so each match is one token"
    if regex.fullmatch("") is not None:
        return "matches the empty string, so every text would yield empty tokens (use + rather than *)"
    return None


@dataclass(frozen=True)
class Analyzer:
    """Turns text into index terms: optional lowercasing, a token regex, stopwords, Snowball/Porter stemming."""

    lowercase: bool = True
    pattern: str = r"\w+"
    stopwords: str = "none"
    stemmer: str = "none"

    def __post_init__(self) -> None:
        # Fail when built, not at the first text, so a bad setting is a config error and not a traceback mid-run.
        problems = []
        why = token_pattern_problem(self.pattern) if isinstance(self.pattern, str) else "must be a string"
        if why:
            problems.append(f"pattern {self.pattern!r}: {why}")
        if self.stopwords not in STOPWORD_LISTS:
            problems.append(f"stopwords {self.stopwords!r}: choose one of {', '.join(STOPWORD_LISTS)}")
        if self.stemmer not in STEMMERS:
            problems.append(f"stemmer {self.stemmer!r}: choose one of {', '.join(STEMMERS)}")
        if problems:
            raise ConfigError("invalid tokenizer settings", problems)

    @cached_property
    def _regex(self) -> re.Pattern:
        return re.compile(self.pattern)

    @cached_property
    def _stem(self):
        if self.stemmer == "none":
            return None
        try:
            import Stemmer  # PyStemmer
        except ImportError:  # pragma: no cover - a core dependency
            raise MissingDependencyError("stemming needs PyStemmer: pip install PyStemmer") from None
        return Stemmer.Stemmer(self.stemmer).stemWords

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        tokens = self._regex.findall(text)
        stop = STOPWORD_LISTS[self.stopwords]
        if stop:
            tokens = [t for t in tokens if t not in stop]
        if self._stem is not None:
            tokens = self._stem(tokens)
        return tokens


def word_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WORD.finditer(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans (trailing whitespace excluded); a text with no terminal punctuation is one sentence."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        stripped_end = len(text[:end].rstrip())
        if stripped_end > start:
            spans.append((start, stripped_end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return [(s + (len(text[s:e]) - len(text[s:e].lstrip())), e) for s, e in spans]


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        if text[start:m.start()].strip():
            spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


class TokenCounter:
    """Counts tokens for budgets: ``words`` (whitespace words) or a local Hugging Face ``tokenizer.json``."""

    def __init__(self, spec: str = "words", where: str = "tokenizer"):
        """``where`` names the setting in messages, e.g. ``cfg.yaml: cutoff.tokenizer``."""
        self.spec = spec
        self._tokenizer = None
        if spec != "words":
            path = Path(spec)
            if not path.is_file():
                raise ConfigError(f"{where}: {spec!r}: no such file; expected the path of a tokenizer.json "
                                  f"(or 'words')")
            try:
                from tokenizers import Tokenizer
            except ImportError:
                raise MissingDependencyError("a tokenizer.json needs the tokenizers package: "
                                             "pip install 'rag-harness[dense]'") from None
            try:
                self._tokenizer = Tokenizer.from_file(str(path))
            except Exception as exc:  # tokenizers raises a bare Exception for bad JSON and for a wrong schema
                reason = " ".join(str(exc).split())[:200]
                raise ConfigError(f"{where}: {path} is not a Hugging Face tokenizer.json ({reason})") from None

    def count(self, text: str) -> int:
        if self._tokenizer is None:
            return len(_WORD.findall(text))
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        if self._tokenizer is None:
            return word_spans(text)
        return [tuple(o) for o in self._tokenizer.encode(text, add_special_tokens=False).offsets]
