"""Read runs produced elsewhere: TREC run files and JSONL runs, into the engine's columnar form.

Malformed lines are errors naming the file and line; nothing is skipped but blank lines and ``#`` comment lines.
As in trec_eval 10, columns after the sixth (the tag) are ignored. A TREC run whose columns are separated by single
spaces or single tabs (what run writers produce) is read by ``fast_trec``; any other is read here: split whole in C
when every line has six columns and nothing odd, else (comments, extra columns, odd characters, or to name the line
of a problem) line by line. Names ending in ``.gz`` are gunzipped."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from . import fast_trec
from ..core.errors import RunFileError
from .jsonl import one_document
from ..core.ids import ODD_CHARS, data_lines, has_comment, id_problem, tab_problem
from ..core.runtable import Run, offsets_of
from .textfile import base_suffix, read_utf8, require_file

RUN_SHAPE = "6 columns (qid Q0 docno rank score tag)"
_INT = re.compile(r"[+-]?[0-9]+")


def _intern(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted vocabulary, codes into it). Fixed-width numpy strings sort in C, in code-point order: the same
    order as Python's str comparison, which trec_eval's byte-wise tie rule needs for UTF-8 ids."""
    vocab, codes = np.unique(np.array(values, dtype=str), return_inverse=True)
    return vocab.astype(object), codes.astype(np.int64)


def run_line_problem(line: str, parts: list[str]) -> str | None:
    """What is wrong with the shape or ids of one data line of a TREC run (``parts``: split on ASCII whitespace),
    or None. Every TREC run reader uses it, so they accept and reject the same lines."""
    if len(parts) < 6:
        return f"expected {RUN_SHAPE}, got {len(parts)}"
    return (tab_problem(parts, line, 6, (0, 2)) or id_problem(parts[0], "query id")
            or id_problem(parts[2], "document id"))


def score_problem(text: str) -> str | None:
    # What np.fromstring reads: a decimal float (inf, and a value past a float's range, refused); not Python's extras (underscores, other scripts' digits).
    try:
        value = float(text) if text.isascii() and "_" not in text else None
    except ValueError:
        value = None
    if value is None:
        return f"score {text!r} is not a number"
    if value != value:
        return f"score {text!r} is not a number (a NaN score has no place in a ranking)"
    if value in (np.inf, -np.inf):  # inf, -inf, or a number past a float's range (1e400): never valid JSON
        return f"score {text!r} is not a finite number (an infinite score has no place in a ranking)"
    return None


def _rank_problem(text: str) -> str | None:
    if not _INT.fullmatch(text) or len(text) > 30 or not -2**63 <= int(text) < 2**63:
        return f"rank {text[:40]!r} is not a whole number"
    return None


def _line_problems(path: Path, text: str) -> RunFileError:
    """Every bad line of a run, with its number."""
    problems = []
    for lineno, line, parts in data_lines(text):
        problem = run_line_problem(line, parts) or score_problem(parts[4]) or _rank_problem(parts[3])
        if problem:
            problems.append(f"{path}:{lineno}: {problem}")
    if not problems:
        return RunFileError(f"{path}: malformed run file")
    if whole := one_document(path, "a TREC run (query Q0 document rank score tag a line)"):
        return RunFileError(f"{path}: {whole}")
    shown = problems[:50] + ([f"... and {len(problems) - 50} more"] if len(problems) > 50 else [])
    return RunFileError(f"{path}: {len(problems)} problem(s) in the run", shown)


def _simple_tokens(text: str) -> list[str] | None:
    """All tokens, when every line is blank or has exactly six columns and nothing needs a closer look (comments,
    characters that Python splits on but trec_eval does not, control characters): one split in C."""
    if ODD_CHARS.search(text) or has_comment(text):
        return None
    # Line by line: a total of six per line would also take a 12-column line and a blank one for two lines.
    if any(len(line.split()) not in (0, 6) for line in text.split("\n")):
        return None
    return text.split()


def _line_tokens(path: Path, text: str) -> list[str]:
    """The first six columns of every data line, read line by line."""
    tokens: list[str] = []
    for _, line, parts in data_lines(text):
        if run_line_problem(line, parts):
            raise _line_problems(path, text)
        tokens.extend(parts[:6])
    return tokens


def read_trec_run(path: Path) -> Run:
    require_file(path, "run file", RunFileError)
    fast = fast_trec.read_run(path)
    if fast is not None:
        return fast
    text = read_utf8(path, RunFileError)
    tokens = _simple_tokens(text)
    if tokens is None:
        tokens = _line_tokens(path, text)
    # np.fromstring parses numbers in C; it stops early (fewer values) or warns on a malformed one.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            scores = np.fromstring(" ".join(tokens[4::6]), dtype=np.float64, sep=" ")
            ranks = np.fromstring(" ".join(tokens[3::6]), dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning):
            raise _line_problems(path, text) from None
    n_hits = len(tokens) // 6
    if len(scores) != n_hits or len(ranks) != n_hits or not np.isfinite(scores).all():
        raise _line_problems(path, text)
    doc_vocab, dcodes = _intern(tokens[2::6])
    qids = np.array(tokens[0::6], dtype=str)
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]) if len(qids) else np.zeros(0, np.int64)
    blocks = qids[starts]
    if len(np.unique(blocks)) == len(blocks):
        # Each query's lines are together (the usual case): no sort, queries in order of appearance.
        query_vocab = blocks.astype(object)
        qcodes = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(qids)]))
    else:
        query_vocab, qcodes = _intern(tokens[0::6])
        order = np.argsort(qcodes, kind="stable")
        qcodes, dcodes, scores, ranks = qcodes[order], dcodes[order], scores[order], ranks[order]
    lengths = np.bincount(qcodes, minlength=len(query_vocab))
    return Run(query_vocab, offsets_of(lengths), doc_vocab, dcodes, scores, ranks)


def read_jsonl_run(path: Path) -> Run:
    """A JSONL run (``io.jsonl_run``: a query per line with its hits, or a hit per line) as documents ranked per
    query: ``eval`` judges documents, so every hit must name its ``doc_id``."""
    from .jsonl_run import read_jsonl_hits

    runs = read_jsonl_hits(path, need_doc=True)
    lists = {qid: [(h.doc_id, h.score) for h in hits] for qid, hits in runs.items()}
    ranks = {qid: list(range(1, len(hits) + 1)) for qid, hits in runs.items()}
    return Run.from_checked_lists(lists, ranks=ranks)


JSON_RUN = (".jsonl", ".json")


def read_run(path: Path) -> Run:
    if base_suffix(path) in JSON_RUN:
        return read_jsonl_run(path)
    return read_trec_run(path)
