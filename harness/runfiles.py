"""Read runs produced elsewhere: TREC run files and JSONL runs, into the engine's columnar form.

Malformed lines are errors naming the file and line; nothing is skipped. A TREC run whose columns are separated by
single spaces or single tabs (what run writers produce) is read by ``fast_trec``; any other is split whole in C
here, and only to find the line of a problem does this go line by line. Names ending in ``.gz`` are gunzipped."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from . import fast_trec
from .errors import RunFileError
from .runtable import ColumnarRun, _offsets
from .textfile import base_suffix, read_utf8


def _intern(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted vocabulary, codes into it). Fixed-width numpy strings sort in C, in code-point order: the same
    order as Python's str comparison, which trec_eval's byte-wise tie rule needs for UTF-8 ids."""
    vocab, codes = np.unique(np.array(values, dtype=str), return_inverse=True)
    return vocab.astype(object), codes.astype(np.int64)


def _locate_trec_problem(path: Path, text: str) -> RunFileError:
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            return RunFileError(f"{path}:{lineno}: expected 6 columns (qid Q0 docno rank score tag), got {len(parts)}")
        try:
            float(parts[4])
        except ValueError:
            return RunFileError(f"{path}:{lineno}: score {parts[4]!r} is not a number")
        try:
            int(parts[3])
        except ValueError:
            return RunFileError(f"{path}:{lineno}: rank {parts[3]!r} is not a whole number")
    return RunFileError(f"{path}: malformed run file")


def read_trec_run(path: Path) -> ColumnarRun:
    if not path.is_file():
        raise RunFileError(f"{path}: run file not found")
    fast = fast_trec.read_run(path)
    if fast is not None:
        return fast
    text = read_utf8(path, RunFileError)
    tokens = text.split()
    n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if len(tokens) != 6 * n_lines:
        # Blank lines are allowed; anything else that breaks the 6-column shape is reported by line.
        text = "\n".join(line for line in text.splitlines() if line.strip())
        tokens = text.split()
        if len(tokens) != 6 * (text.count("\n") + (1 if text else 0)):
            raise _locate_trec_problem(path, text)
    # np.fromstring parses numbers in C; it stops early (fewer values) or warns on a malformed one.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            scores = np.fromstring(" ".join(tokens[4::6]), dtype=np.float64, sep=" ")
            ranks = np.fromstring(" ".join(tokens[3::6]), dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning):
            raise _locate_trec_problem(path, text) from None
    n_hits = len(tokens) // 6
    if len(scores) != n_hits or len(ranks) != n_hits:
        raise _locate_trec_problem(path, text)
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
    return ColumnarRun(query_vocab, _offsets(lengths), doc_vocab, dcodes, scores, ranks)


def read_jsonl_run(path: Path) -> ColumnarRun:
    """``{"query_id": ..., "hits": [{"doc_id": ..., "score": ...}, ...]}`` per line."""
    if not path.is_file():
        raise RunFileError(f"{path}: run file not found")
    lists: dict[str, list[tuple[str, float]]] = {}
    ranks: dict[str, list[int]] = {}
    problems = []
    for lineno, line in enumerate(read_utf8(path, RunFileError).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid = str(row["query_id"])
            hits = row["hits"]
            pairs = [(str(h["doc_id"]), float(h["score"])) for h in hits]
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: not valid JSON ({exc.msg})")
            continue
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"{path}:{lineno}: expected {{'query_id': ..., 'hits': [{{'doc_id': ..., 'score': "
                            f"number}}]}} ({type(exc).__name__}: {exc})")
            continue
        if qid in lists:
            problems.append(f"{path}:{lineno}: query {qid!r} appears twice")
            continue
        lists[qid] = pairs
        ranks[qid] = list(range(1, len(pairs) + 1))
    if problems:
        raise RunFileError(f"{path}: {len(problems)} problem(s) in the run", problems[:50])
    return ColumnarRun.from_lists(lists, ranks=ranks)


JSON_RUN = (".jsonl", ".json")


def read_run(path: Path) -> ColumnarRun:
    if base_suffix(path) in JSON_RUN:
        return read_jsonl_run(path)
    return read_trec_run(path)
