"""What kind of file a path most likely is, from its first lines: ``harness eval QRELS RUN`` given a run where the
qrels belong (or a corpus, or a results.json) says so in one line instead of a column error per line."""

from __future__ import annotations

import zlib

import json
from pathlib import Path

from .textfile import open_binary

LINES = 20  # enough lines to tell the formats apart, few enough to read in no time
BYTES = 1 << 16

KINDS = {
    "trec-run": "a TREC run (6 columns: query Q0 document rank score tag)",
    "trec-qrels": "TREC qrels (4 columns: query iteration document grade)",
    "beir-qrels": "BEIR qrels (3 columns: query-id corpus-id score)",
    "jsonl-run": "a JSONL run (objects with query_id and score)",
    "golden-set": "a native golden set (JSON lines with query and relevant)",
    "corpus": "a corpus (JSON lines with text and no query)",
}


def _number(text: str, whole: bool = False) -> bool:
    try:
        int(text) if whole else float(text)
    except ValueError:
        return False
    return True


def sniff(path: Path) -> str | None:
    """One of ``KINDS`` when every one of the file's first lines (comments and blanks aside) reads as that kind,
    else None (unknown, unreadable, or mixed: the readers' own errors say more)."""
    try:
        with open_binary(path) as fh:
            head = fh.read(BYTES)
    except (OSError, EOFError, ValueError, zlib.error):  # corrupt .gz data: the reader names it, located
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = [line for line in text.splitlines()[:-1 if len(head) == BYTES else None]
             if line.strip() and not line.lstrip().startswith("#")][:LINES]
    if not lines:
        return None
    kinds = {_kind_of(line, i == 0) for i, line in enumerate(lines)}
    kinds.discard("header")
    return kinds.pop() if len(kinds) == 1 else None


def _kind_of(line: str, first: bool) -> str | None:
    if line.lstrip().startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        if "query_id" in obj and "score" in obj:
            return "jsonl-run"
        if "query" in obj and "relevant" in obj:
            return "golden-set"
        if "text" in obj and "query" not in obj:
            return "corpus"
        return None
    cols = line.split()
    if len(cols) == 6 and _number(cols[3], whole=True) and _number(cols[4]):
        return "trec-run"
    if len(cols) == 4 and _number(cols[3], whole=True):
        return "trec-qrels"
    if len(cols) == 3:
        if first and not _number(cols[2]):
            return "header"  # query-id corpus-id score
        if _number(cols[2]):
            return "beir-qrels"
    return None


QRELS_KINDS = ("trec-qrels", "beir-qrels", "golden-set")
RUN_KINDS = ("trec-run", "jsonl-run")


def wrong_kinds(qrels: Path, run: Path) -> str | None:
    """One line when an argument of ``harness eval`` looks like another kind of file, naming the kind and asking
    whether the two are swapped when they look it; None when neither is recognised as the wrong kind."""
    q, r = sniff(qrels), sniff(run)
    bad_q = q is not None and q not in QRELS_KINDS
    bad_r = r is not None and r not in RUN_KINDS
    if q in RUN_KINDS and r in QRELS_KINDS:
        return (f"QRELS {qrels} looks like {KINDS[q]} and RUN {run} like {KINDS[r]}: are the arguments swapped? "
                f"(harness eval QRELS RUN)")
    if bad_q:
        hint = ": are the arguments swapped? (harness eval QRELS RUN)" if q in RUN_KINDS else ", not judgments"
        return f"QRELS {qrels} looks like {KINDS[q]}{hint}"
    if bad_r:
        hint = ": are the arguments swapped? (harness eval QRELS RUN)" if r in QRELS_KINDS else ", not a run"
        return f"RUN {run} looks like {KINDS[r]}{hint}"
    return None
