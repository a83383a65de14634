"""The inputs and outputs the goldset commands share: a corpus or a golden set named by path alone (format
inferred, or given), and native JSONL golden sets written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from ..config.schema import CorpusConfig, GoldsetConfig
from ..core.errors import GoldSetError, InputError, OutputAppeared
from ..io.files import not_replaceable, write_together
from ..core.types import Document
from .load import RawQuery, read_goldset
from ..io.documents import load_corpus


def corpus_format(path: Path, given: str | None = None) -> str:
    """``given``, else: a folder holding corpus.jsonl is BEIR, another folder a folder corpus, a file JSONL."""
    if given:
        return given
    if path.is_dir():
        return "beir" if (path / "corpus.jsonl").is_file() else "folder"
    return "jsonl"


def read_corpus(path: Path, given: str | None = None) -> dict[str, Document]:
    docs = load_corpus(CorpusConfig(path=path, format=corpus_format(path, given)))
    return {d.doc_id: d for d in docs}


TABULAR = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}


def read_gold(path: Path) -> list[RawQuery]:
    """A native JSONL/YAML golden set, a BEIR folder (queries.jsonl + qrels/test.tsv), or a table (CSV, TSV,
    Parquet: by its extension, with the default columns query_id, query, doc_id, grade, quote, start, end)."""
    cfg = GoldsetConfig(path=path, format="beir" if path.is_dir() else TABULAR.get(path.suffix.lower(), "native"))
    queries = read_goldset(cfg)
    if not queries:  # as `harness run` says of it: a check or statistics of nothing would read as a pass
        raise GoldSetError(f"{path}: the golden set has no queries")
    return queries


def query_row(query: RawQuery, relevant: list[dict]) -> dict:
    row: dict = {"id": query.query_id, "query": query.text, "relevant": relevant}
    if query.tags:
        row["tags"] = dict(query.tags)
    if not query.answerable:
        row["answerable"] = False
    return row


def judgment_row(doc_id: str, grade: int, evidence: Iterable[dict], group: str | None = None) -> dict:
    row: dict = {"doc": doc_id, "grade": grade}
    if group is not None:
        row["group"] = group
    evidence = list(evidence)
    if evidence:
        row["evidence"] = evidence
    return row


def raw_evidence_row(ev) -> dict:
    """An evidence item written back as it was read: a quote, or a span with its recorded text and how it was found."""
    group = {"group": ev.group} if ev.group is not None else {}
    if ev.quote is not None:
        return {"quote": ev.quote, **group}
    return {"start": ev.start, "end": ev.end, **({"text": ev.text} if ev.text is not None else {}), **(ev.found or {}),
            **group}


def raw_query_row(query: RawQuery) -> dict:
    """A loaded query written back unchanged (quotes stay quotes, spans stay spans)."""
    return query_row(query, [judgment_row(j.doc_id, j.grade, map(raw_evidence_row, j.evidence), j.group)
                             for j in query.relevant])


GOLD_SUFFIXES = (".jsonl",)  # what write_gold writes: native JSONL


def check_gold_path(path: Path, option: str) -> None:
    """A golden set (or a list of unresolved answers) is written as native JSONL: a path with another extension
    (``.md``, ``.csv``) would hold JSONL that every reader chooses another parser for (as pool's sheet path)."""
    if path.suffix.lower() not in GOLD_SUFFIXES:
        raise InputError(f"{option} {path}: written as JSONL (a golden set: native JSONL, one query a line); give "
                         f"a .jsonl path")


def write_gold(path: Path, rows: Iterable[dict], inputs: Iterable[Path] = (), *, option: str = "-o",
               replace: bool = True) -> int:
    """Native JSONL, one query a line, written atomically; never over one of the command's inputs. ``replace=False``
    (a path that was free when the command started): a file that appeared there meanwhile is kept."""
    return write_golds([(option, path, rows)], inputs, replace=replace)[0]


def write_golds(outputs: Sequence[tuple[str, Path, Iterable[dict]]], inputs: Iterable[Path] = (), *,
                replace: bool = True) -> list[int]:
    """Several native JSONL files (option, path, rows) that belong together, published all or none: each is written
    to a temporary file first, so a full disk, a file that appeared at one path or an interrupt never leaves one new
    beside another's old version. Returns each file's number of rows."""
    inputs = [Path(p).resolve() for p in inputs]
    for option, path, _ in outputs:
        if path.resolve() in inputs:
            raise InputError(f"{option} {path}: is one of the inputs; refusing to overwrite it (give another path)")
        special = not_replaceable(path)
        if special:
            raise InputError(f"{option} {path}: {special}")
    files, counts = [], []
    for option, path, rows in outputs:
        lines = [json.dumps(r, ensure_ascii=False) for r in rows]
        counts.append(len(lines))
        files.append((path, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"), replace))
    option_of = {str(path): option for option, path, _ in outputs}
    try:
        write_together(files)
    except OutputAppeared as exc:
        raise OutputAppeared(exc.path, option_of.get(str(exc.path))) from None
    except OSError as exc:
        raise InputError(f"{option_of.get(exc.filename, '')} {exc.filename}: cannot write: {exc.strerror or exc}"
                         + (" (none of the files was written)" if len(outputs) > 1 else "")) from None
    return counts
