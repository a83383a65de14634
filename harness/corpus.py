"""Load documents: JSONL (``id``/``_id``, ``text``, optional ``title``, ``metadata``), a folder of .txt/.md files
(id = relative path), or a BEIR folder/``corpus.jsonl``. Every problem is reported with its location."""

from __future__ import annotations

import json
from pathlib import Path

from .config import CorpusConfig
from .errors import CorpusError
from .types import Document


def load_corpus(cfg: CorpusConfig) -> list[Document]:
    path = cfg.path
    if cfg.format == "folder":
        return _load_folder(path)
    if cfg.format == "beir" and path.is_dir():
        path = path / "corpus.jsonl"
    return _load_jsonl(path)


def _load_jsonl(path: Path) -> list[Document]:
    if not path.is_file():
        raise CorpusError(f"{path}: corpus file not found")
    docs: list[Document] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                problems.append(f"{path}:{lineno}: not UTF-8 text")
                continue
            except json.JSONDecodeError as exc:
                problems.append(f"{path}:{lineno}: not valid JSON ({exc.msg})")
                continue
            if not isinstance(row, dict):
                problems.append(f"{path}:{lineno}: expected a JSON object")
                continue
            doc_id = row.get("id", row.get("_id"))
            if doc_id is None or str(doc_id) == "":
                problems.append(f"{path}:{lineno}: missing 'id' (or '_id')")
                continue
            doc_id = str(doc_id)
            text = row.get("text")
            if not isinstance(text, str) or not text.strip():
                problems.append(f"{path}:{lineno}: document {doc_id!r} has an empty or missing 'text'")
                continue
            if doc_id in first_line:
                problems.append(f"{path}:{lineno}: duplicate document id {doc_id!r} (first on line {first_line[doc_id]})")
                continue
            first_line[doc_id] = lineno
            metadata = row.get("metadata") or {}
            docs.append(Document(doc_id, text, str(row.get("title") or ""), dict(metadata)))
    if problems:
        raise CorpusError(f"{path}: {len(problems)} problem(s) in the corpus", problems[:50] + (
            [f"... and {len(problems) - 50} more"] if len(problems) > 50 else []))
    if not docs:
        raise CorpusError(f"{path}: the corpus has no documents")
    return docs


def _load_folder(path: Path) -> list[Document]:
    if not path.is_dir():
        raise CorpusError(f"{path}: corpus folder not found")
    docs, problems = [], []
    for file in sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".md") and p.is_file()):
        rel = file.relative_to(path).as_posix()
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            problems.append(f"{file}: not UTF-8 text")
            continue
        if not text.strip():
            problems.append(f"{file}: empty document")
            continue
        docs.append(Document(rel, text, Path(rel).stem))
    if problems:
        raise CorpusError(f"{path}: {len(problems)} problem(s) in the corpus", problems)
    if not docs:
        raise CorpusError(f"{path}: no .txt or .md files found")
    return docs
