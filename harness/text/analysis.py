"""Text analysis shared by chunking, BM25 and token budgets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from ..core.errors import ConfigError, MissingDependencyError
from .stopwords import BUILTIN as STOPWORD_LISTS, describe as describe_stopwords
from .stopwords import LUCENE as LUCENE_ENGLISH_STOPWORDS  # noqa: F401  (its name before the lists had a module)

STEMMERS = ("none", "english", "porter")

_WORD = re.compile(r"\S+")
# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) and whitespace; group 1 is the sentence's
# last characters, so its end is known without looking back over the text.
_SENTENCE_END = re.compile(r"([.!?][\"')\]]*)\s+")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_LEADING_SPACE = re.compile(r"\s*")
_NON_SPACE = re.compile(r"\S")


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
    """Turns text into index terms: optional lowercasing, a token regex, stopwords, Snowball/Porter stemming.

    ``stopwords`` is a built-in list's name (``harness.text.stopwords``) or the words themselves (a tuple); they are
    compared with the tokens after lowercasing (so a listed ``How`` drops ``how`` when ``lowercase`` is on), before
    stemming."""

    lowercase: bool = True
    pattern: str = r"\w+"
    stopwords: str | tuple[str, ...] = "none"
    stemmer: str = "none"

    def __post_init__(self) -> None:
        # Fail when built, not at the first text, so a bad setting is a config error and not a traceback mid-run.
        problems = []
        why = token_pattern_problem(self.pattern) if isinstance(self.pattern, str) else "must be a string"
        if why:
            problems.append(f"pattern {self.pattern!r}: {why}")
        if isinstance(self.stopwords, str):
            if self.stopwords not in STOPWORD_LISTS:
                problems.append(f"stopwords {self.stopwords!r}: choose one of {describe_stopwords()}, or give the "
                                f"words (a list)")
        elif not all(isinstance(w, str) for w in self.stopwords):
            problems.append("stopwords: every word must be text")
        if self.stemmer not in STEMMERS:
            problems.append(f"stemmer {self.stemmer!r}: choose one of {', '.join(STEMMERS)}")
        if problems:
            raise ConfigError("invalid tokenizer settings", problems)

    @cached_property
    def stop(self) -> frozenset[str]:
        """The words dropped from the tokens."""
        if isinstance(self.stopwords, str):
            return STOPWORD_LISTS[self.stopwords]
        return frozenset(w.lower() if self.lowercase else w for w in self.stopwords)

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
        stop = self.stop
        if stop:
            tokens = [t for t in tokens if t not in stop]
        if self._stem is not None:
            tokens = self._stem(tokens)
        return tokens


def word_spans(text: str) -> list[tuple[int, int]]:
    starts, ends = word_bounds(text)
    return list(zip(starts.tolist(), ends.tolist()))


# Every Unicode whitespace character: str.isspace, which is also exactly what the regex \s matches (a test checks
# both against every code point). The largest is U+3000.
SPACE_CODE_POINTS = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
                     *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)


@lru_cache(maxsize=1)
def _space_table():
    import numpy as np

    table = np.zeros(0x3002, dtype=bool)  # the last slot stands for every code point above U+3000
    table[list(SPACE_CODE_POINTS)] = True
    table.setflags(write=False)  # cached: one array for the whole process, so no caller may write into it
    return table


def word_bounds(text: str):
    """Start and end offsets of the whitespace-separated words (``\\S+``) as two int64 arrays: a linear pass over the
    code points, about 20 bytes per word instead of a list of tuples (a 50 MB document has millions of words)."""
    import numpy as np

    if text.isascii():
        codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        codes = np.minimum(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32), 0x3001)
    word = ~_space_table()[codes]
    edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans (surrounding whitespace excluded); a text with no terminal punctuation is one sentence.

    Linear in the text: every offset comes from a regex match; no slice of the text is taken per sentence."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        stripped_end = m.end(1)
        if stripped_end > start:
            spans.append((_LEADING_SPACE.match(text, start, stripped_end).end(), stripped_end))
        start = m.end()
    tail_end = len(text.rstrip())
    if tail_end > start:
        spans.append((_LEADING_SPACE.match(text, start, tail_end).end(), tail_end))
    return spans


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Paragraphs between blank lines; linear in the text (the emptiness test searches, never slices)."""
    spans, start = [], 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        if _NON_SPACE.search(text, start, m.start()):
            spans.append((start, m.start()))
        start = m.end()
    tail_end = len(text.rstrip())
    if tail_end > start:
        spans.append((start, tail_end))
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
            # A model's tokenizer.json may save the padding and truncation it was trained with (the bundled model:
            # 128 tokens): counting through them made every text 128 tokens and cut spans after the 128th.
            self._tokenizer.no_padding()
            self._tokenizer.no_truncation()

    def count(self, text: str) -> int:
        if self._tokenizer is None:
            return len(_WORD.findall(text))
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        if self._tokenizer is None:
            return word_spans(text)
        return [tuple(o) for o in self._tokenizer.encode(text, add_special_tokens=False).offsets]


def grouped_spans(starts: np.ndarray, ends: np.ndarray, size: int, overlap: int) -> list[tuple[int, int]]:
    """Group unit spans ``size`` at a time, consecutive groups sharing ``overlap`` units: group i covers units
    i*step .. i*step+size-1 (the last group stops at the last unit, and is the first that reaches it). Computed from
    the first and last unit of each group, so the cost does not grow with ``size``."""
    import numpy as np

    n = len(starts)
    if n == 0:
        return []
    step = size - overlap
    last_first = -(-max(n - size, 0) // step) * step  # the first multiple of step whose group reaches unit n-1
    firsts = np.arange(0, last_first + 1, step)
    lasts = np.minimum(firsts + size, n) - 1
    return list(zip(starts[firsts].tolist(), ends[lasts].tolist()))
