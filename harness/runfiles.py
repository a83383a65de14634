"""Read runs produced elsewhere: TREC run files and JSONL runs, into the engine's columnar form.

Malformed lines are errors naming the file and line; nothing is skipped. The TREC reader splits the whole file
in C and only falls back to a line-by-line pass to find the line of a problem."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .errors import RunFileError
from .runtable import ColumnarRun, _offsets


def _intern(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted vocabulary, codes into it) for a list of strings."""
    table: dict[str, int] = {}
    codes = np.fromiter((table.setdefault(v, len(table)) for v in values), dtype=np.int64, count=len(values))
    vocab = np.array(list(table), dtype=object)
    order = np.argsort(vocab)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return vocab[order], rank[codes]


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
    text = path.read_text(encoding="utf-8")
    tokens = text.split()
    lines = text.splitlines()
    n_lines = len(lines) - lines.count("")
    if len(tokens) != 6 * n_lines:
        raise _locate_trec_problem(path, text)
    try:
        scores = np.array(tokens[4::6], dtype=np.float64)
        ranks = np.array(tokens[3::6], dtype=np.int64)
    except ValueError:
        raise _locate_trec_problem(path, text) from None
    query_vocab, qcodes = _intern(tokens[0::6])
    doc_vocab, dcodes = _intern(tokens[2::6])
    # Group hits by query; a file that lists each query's lines together (the usual case) needs no sort.
    if len(qcodes) > 1 and not (np.diff(qcodes) != 0).sum() == len(query_vocab) - 1:
        order = np.argsort(qcodes, kind="stable")
        qcodes, dcodes, scores, ranks = qcodes[order], dcodes[order], scores[order], ranks[order]
    else:
        # Contiguous blocks: renumber queries in order of appearance so codes are non-decreasing.
        if len(qcodes):
            starts = np.flatnonzero(np.r_[True, qcodes[1:] != qcodes[:-1]])
            query_vocab = query_vocab[qcodes[starts]]
            qcodes = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(qcodes)]))
    lengths = np.bincount(qcodes, minlength=len(query_vocab))
    return ColumnarRun(query_vocab, _offsets(lengths), doc_vocab, dcodes, scores, ranks)


def read_jsonl_run(path: Path) -> ColumnarRun:
    """``{"query_id": ..., "hits": [{"doc_id": ..., "score": ...}, ...]}`` per line."""
    if not path.is_file():
        raise RunFileError(f"{path}: run file not found")
    lists: dict[str, list[tuple[str, float]]] = {}
    ranks: dict[str, list[int]] = {}
    problems = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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


def read_run(path: Path) -> ColumnarRun:
    if path.suffix in (".jsonl", ".json"):
        return read_jsonl_run(path)
    return read_trec_run(path)
