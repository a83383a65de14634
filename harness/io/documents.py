"""Load documents: JSONL (``id``/``_id``, ``text``, optional ``title``, ``metadata``; ``.jsonl.gz`` too), a folder of documents (id =
relative path; text, Markdown, HTML, PDF and DOCX files, through ``extract``), or a BEIR folder/``corpus.jsonl``. Every problem is reported with its location.

A folder corpus reads only files inside the folder: a link pointing outside it is skipped with a warning (a link
to /etc/passwd would otherwise put that file into the reports)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from ..config.schema import CorpusConfig
from ..core.errors import CorpusError
from ..core.ids import id_problem, read_id
from .jsonl import one_document, parse_line
from .outmarker import MARKER, STAGING
from .limits import TooLarge, max_bytes, too_large
from .textfile import GZIP_ERRORS, open_binary, require_file
from ..core.types import Document

from .extract import ENCODED_SUFFIXES, SUFFIXES as DOC_SUFFIXES, Unreadable, extract


def _stderr_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def load_corpus(cfg: CorpusConfig, warn: Callable[[str], None] | None = None) -> list[Document]:
    """``warn`` receives one line per skipped file (default: stderr)."""
    path = cfg.path
    if cfg.format == "folder":
        return _load_folder(path, warn or _stderr_warning, cfg.encoding)
    if cfg.format == "beir" and path.is_dir():
        path = path / "corpus.jsonl"
    return _load_jsonl(path)


def _load_jsonl(path: Path) -> list[Document]:
    require_file(path, "corpus file", CorpusError)
    docs: list[Document] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    try:
        with open_binary(path) as fh:  # corpus.jsonl.gz is read through gzip
            longest = max_bytes("line")
            for lineno, raw in enumerate(iter(lambda: fh.readline(longest + 1), b""), start=1):
                if len(raw) > longest:  # never more than the limit of one line in memory
                    raise too_large(f"{path}:{lineno}", "a line", "line")
                _read_line(path, lineno, raw, docs, problems, first_line)
    except GZIP_ERRORS as exc:
        raise CorpusError(f"{path}: not a complete gzip file ({exc})") from None
    if problems and (whole := one_document(path)):
        raise CorpusError(f"{path}: {whole}")
    if problems:
        raise CorpusError(f"{path}: {len(problems)} problem(s) in the corpus", problems[:50] + (
            [f"... and {len(problems) - 50} more"] if len(problems) > 50 else []))
    if not docs:
        raise CorpusError(f"{path}: the corpus has no documents")
    return docs


def _read_line(path: Path, lineno: int, raw: bytes, docs: list[Document], problems: list[str],
               first_line: dict[str, int]) -> None:
    """One corpus line: its document appended to ``docs``, or its problem to ``problems``."""
    if not raw.strip():
        return
    where = f"{path}:{lineno}"
    try:  # decoded line by line: every line that is not UTF-8 is named, with the other problems
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{where}: not UTF-8 text")
        return
    row, bad = parse_line(line.removeprefix("\ufeff") if lineno == 1 else line)  # (a byte-order mark)
    if bad:
        problems.append(f"{where}: {bad}")
        return
    if not isinstance(row, dict):
        problems.append(f"{where}: expected a JSON object")
        return
    doc_id, bad_id = read_id(row.get("id", row.get("_id")), "document id", "missing 'id' (or '_id')")
    if bad_id:
        problems.append(f"{where}: {bad_id}")
        return
    text = row.get("text")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: document {doc_id!r} has an empty or missing 'text'")
        return
    if doc_id in first_line:
        problems.append(f"{where}: duplicate document id {doc_id!r} (first on line {first_line[doc_id]})")
        return
    first_line[doc_id] = lineno
    title, metadata = row.get("title"), row.get("metadata")
    if title is not None and not isinstance(title, str):
        problems.append(f"{where}: document {doc_id!r}: 'title' must be text, got {type(title).__name__}")
        return
    if metadata is not None and not isinstance(metadata, dict):
        problems.append(f"{where}: document {doc_id!r}: 'metadata' must be a mapping, got {type(metadata).__name__}")
        return
    docs.append(Document(doc_id, text, title or "", dict(metadata or {})))


def _folder_files(path: Path, warn: Callable[[str], None]) -> list[Path]:
    """The .txt/.md files under ``path``. Links are not followed out of the folder: each one pointing outside
    (or nowhere) is skipped with a warning. Links to folders are not descended into; a link to a folder inside
    is read where its files really are."""
    root = path.resolve()
    files = []
    for dirpath, dirnames, filenames in os.walk(path):  # does not follow links to folders
        dirnames[:] = sorted(d for d in dirnames if not _harness_output(Path(dirpath) / d, warn))
        for name in dirnames + sorted(filenames):
            p = Path(dirpath) / name
            is_doc = name in filenames and p.suffix.lower() in DOC_SUFFIXES
            if p.is_symlink() and (is_doc or name in dirnames):
                target = p.resolve()
                if not target.exists():
                    warn(f"{p}: skipped: a link to {target}, which does not exist")
                    continue
                if not target.is_relative_to(root):
                    warn(f"{p}: skipped: a link to {target}, outside the corpus folder {path}")
                    continue
            if is_doc and p.is_file():
                files.append(p)
    return sorted(files)


def _load_folder(path: Path, warn: Callable[[str], None], encoding: str | None = None) -> list[Document]:
    """Every document file in the folder (``extract``: text, Markdown, HTML, PDF, DOCX; text, Markdown and HTML
    in ``encoding``, default UTF-8). A file whose text cannot be read (a text file in another encoding, an encrypted
    PDF, a scan, a broken DOCX) is skipped with a warning naming it and why, and the skipped files are counted in
    one more line; files of other kinds are counted in one warning. Nothing is dropped without a line saying so."""
    if not path.is_dir():
        raise CorpusError(f"{path}: corpus folder not found")
    docs, problems, unreadable = [], [], []
    for file in _folder_files(path, warn):
        rel = file.relative_to(path).as_posix()
        if not _utf8_name(rel):
            # Its id could be written to no run file, results.json or report (it crashed in the fingerprint after
            # retrieval): skipped, named with its bytes escaped, as an unreadable file is.
            unreadable.append(f"{os.fsencode(file).decode('utf-8', 'backslashreplace')}: its name is not UTF-8 "
                              f"(a document id is the file's path); rename the file to read it")
            continue
        bad_id = id_problem(rel, "document id (the file's path in the folder)")
        if bad_id:
            problems.append(f"{file}: {bad_id}; rename the file")
            continue
        try:
            got = extract(file, encoding)
        except Unreadable as exc:
            # A PDF without a text layer, a broken DOCX, a .txt saved by an old editor in cp1252: common in a real
            # folder, and one of them must not stop the others being read. Each is named, the rest is read.
            hint = "; set corpus.encoding if the folder's text files share another encoding" \
                if file.suffix.lower() in ENCODED_SUFFIXES and encoding is None and "UTF-8" in str(exc) else ""
            unreadable.append(f"{file}: {exc}{hint}")
            continue
        except OSError as exc:
            problems.append(f"{file}: cannot be read ({exc.strerror or exc})")
            continue
        except TooLarge as exc:  # listed with the folder's other problems
            problems.append(str(exc))
            continue
        if not got.text.strip():
            problems.append(f"{file}: empty document")
            continue
        docs.append(Document(rel, got.text, got.title or Path(rel).stem, got.metadata))
    if problems:
        raise CorpusError(f"{path}: {len(problems)} problem(s) in the corpus", problems)
    for line in unreadable:
        warn(f"{line}; skipped")
    if unreadable and docs:
        warn(f"{path}: {len(unreadable)} unreadable file(s) skipped, {len(docs)} document(s) read")
    others = _other_files(path)
    if others:
        kinds = ", ".join(f"{n} {s or 'without a suffix'}" for s, n in sorted(others.items(), key=lambda x: -x[1]))
        warn(f"{path}: skipped {sum(others.values())} file(s) of other kinds ({kinds}); documents are "
             f"{', '.join(DOC_SUFFIXES)}")
    if not docs:
        raise CorpusError(f"{path}: no readable document in the folder (read: {', '.join(DOC_SUFFIXES)})",
                          unreadable)
    return docs


def _utf8_name(name: str) -> bool:
    """A file name as os.walk gives it holds lone surrogates for the bytes that are not UTF-8 (surrogateescape)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _harness_output(folder: Path, warn: Callable[[str], None] | None = None) -> bool:
    """A folder harness wrote (its marker) or is writing (a staging folder): a run's reports are not documents. A
    config without ``output:`` writes under ``reports/`` beside it, which may be inside a folder corpus: the next
    run read the last one's report.md and report.html as documents."""
    if folder.name.startswith(STAGING) or (folder / MARKER).is_file():
        if warn is not None and not folder.name.startswith(STAGING):
            warn(f"{folder}: skipped: a harness output folder (it holds {MARKER}), not documents")
        return True
    return False


def _other_files(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not _harness_output(Path(dirpath) / d)]
        for name in filenames:
            suffix = Path(name).suffix.lower()
            if suffix not in DOC_SUFFIXES and not name.startswith("."):
                counts[suffix] = counts.get(suffix, 0) + 1
    return counts
