"""Text out of the files a team's documents live in: Markdown, HTML, PDF, DOCX (and plain text).

Each extractor returns the document's text, its title, and where its pages or sections start in that text
(``metadata["pages"]`` / ``metadata["sections"]``: ``{"start", "end", "page" | "title"}``), so evidence spans,
quotes and chunk offsets point into exactly the text that was indexed. The libraries are well-kept ones (selectolax
for HTML, pypdf for PDF, python-docx for DOCX), imported only when a file of their kind is read; a file that cannot
be read raises ``Unreadable`` with the reason, which the folder reader lists (never a silent drop).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import MissingDependencyError
from .limits import MB, max_bytes, too_large

EXTRA = "pip install 'rag-harness[documents]'"
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
RICH_SUFFIXES = (".html", ".htm", ".pdf", ".docx")
SUFFIXES = TEXT_SUFFIXES + RICH_SUFFIXES
ENCODED_SUFFIXES = TEXT_SUFFIXES + (".html", ".htm")  # read in the folder's declared encoding (corpus.encoding)


class Unreadable(Exception):
    """This file's text cannot be extracted; the message says why."""


@dataclass
class Extracted:
    text: str
    title: str = ""
    metadata: dict = field(default_factory=dict)


def extract(path: Path, encoding: str | None = None) -> Extracted:
    """The file's text; ``io.limits.TooLarge`` past the ``document`` limit (its text, or a text file's bytes) or,
    for a DOCX, past the ``extracted`` limit in any of its parts (read before anything is inflated). ``encoding``
    is that of text, Markdown and HTML files (default UTF-8); PDF and DOCX say their own."""
    got = _extract(path, encoding)
    if len(got.text) > max_bytes("document"):  # characters, at most as many as its UTF-8 bytes
        raise too_large(str(path), "its extracted text", "document")
    return got


def _extract(path: Path, encoding: str | None) -> Extracted:
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        return _html(path, encoding)
    if suffix == ".pdf":
        return _pdf(path)
    if suffix == ".docx":
        _docx_parts_bounded(path)
        return _docx(path)
    text = _utf8(path) if encoding is None else _decoded(path, encoding)
    if suffix in (".md", ".markdown"):
        return _markdown(text)
    return Extracted(text)


def _docx_parts_bounded(path: Path) -> None:
    """A DOCX is a zip: a 2.5 MB one inflated to 2-3 GB in python-docx. Each part's size as the zip declares it
    (zipfile never inflates a part past it) is checked first."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            sizes = [(info.file_size, info.filename) for info in z.infolist()]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # python-docx says what is wrong with it
    limit = max_bytes("extracted")
    big = max(sizes, default=(0, ""))
    if big[0] > limit or sum(size for size, _ in sizes) > limit:
        raise too_large(str(path), f"its content ({sum(size for size, _ in sizes) / MB:,.0f} MB inflated)",
                        "extracted")


def _utf8(path: Path) -> str:
    if path.stat().st_size > max_bytes("document"):  # never read whole past the limit
        raise too_large(str(path), "the file", "document")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte {exc.start})") from None


def _decoded(path: Path, encoding: str) -> str:
    if path.stat().st_size > max_bytes("document"):  # never read whole past the limit
        raise too_large(str(path), "the file", "document")
    try:
        return path.read_bytes().decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not {encoding} text (byte {exc.start})") from None


# ---- Markdown: the file's own text (quotes are written against it); headings mark the sections ---------------

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _markdown(text: str) -> Extracted:
    found = list(_HEADING.finditer(text))
    marks = [(m.start(), m.group(2).strip()) for m in found]
    title = next((t for (s, t), m in zip(marks, found) if len(m.group(1)) == 1), "")
    levels = [len(m.group(1)) for m in found]
    return Extracted(text, title, {"sections": _spans(marks, len(text), "title", levels)} if marks else {})


def _spans(marks: list[tuple[int, object]], length: int, key: str, levels: list[int] | None = None) -> list[dict]:
    """``levels``: each heading's level (1 for h1/#), kept so a chunker can rebuild the heading path."""
    spans = [{"start": start, "end": marks[i + 1][0] if i + 1 < len(marks) else length, key: value}
             for i, (start, value) in enumerate(marks)]
    for span, level in zip(spans, levels or ()):
        span["level"] = level
    return spans


# ---- HTML: visible text, a blank line between blocks, whitespace collapsed inside them -------------------------

_SKIP = {"script", "style", "noscript", "template", "head", "svg", "iframe", "object", "canvas"}
_BLOCK = {"p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "li", "ul", "ol", "table",
          "tr", "td", "th", "thead", "tbody", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd",
          "dl", "figure", "figcaption", "br", "hr", "form", "fieldset", "address", "details", "summary"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_SPACE = re.compile(r"\s+")


class _HtmlText:
    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.current: list[str] = []
        self.sections: list[tuple[int, str]] = []
        self.levels: list[int] = []
        self.first_h1 = ""

    def flush(self) -> None:
        text = _SPACE.sub(" ", "".join(self.current)).strip()
        if text:
            self.blocks.append(text)
        self.current = []

    def offset(self) -> int:
        return sum(len(b) + 2 for b in self.blocks)

    def walk(self, node) -> None:  # noqa: ANN001 (a selectolax node)
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                self.current.append(child.text_content or "")
                continue
            if tag in _SKIP or tag.startswith("-"):  # comments, doctype
                continue
            block = tag in _BLOCK
            if block:
                self.flush()
            if tag in _HEADINGS:
                heading = _SPACE.sub(" ", child.text(separator=" ")).strip()
                if heading:
                    self.sections.append((self.offset(), heading))
                    self.levels.append(int(tag[1]))
                    self.first_h1 = self.first_h1 or (heading if tag == "h1" else "")
            self.walk(child)
            if block:
                self.flush()


def _html(path: Path, encoding: str | None = None) -> Extracted:
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        raise MissingDependencyError(f"{path}: HTML documents need selectolax: {EXTRA}") from None
    tree = LexborHTMLParser(_utf8(path) if encoding is None else _decoded(path, encoding))
    out = _HtmlText()
    if tree.body is not None:
        out.walk(tree.body)
    out.flush()
    text = "\n\n".join(out.blocks)
    title_node = tree.css_first("title")
    title = _SPACE.sub(" ", title_node.text()).strip() if title_node is not None else ""
    meta = {"sections": _spans(out.sections, len(text), "title", out.levels)} if out.sections else {}
    return Extracted(text, title or out.first_h1, meta)


# ---- PDF: each page's text layer, pages separated by a blank line ------------------------------------------------

def _pdf(path: Path) -> Extracted:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise MissingDependencyError(f"{path}: PDF documents need pypdf: {EXTRA}") from None
    import logging

    pypdf_log = logging.getLogger("pypdf")
    level = pypdf_log.level
    pypdf_log.setLevel(logging.ERROR)  # its warnings about a damaged file become our one line, not a log flood
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise Unreadable("the PDF is encrypted")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
        title = str(info.title).strip() if info is not None and info.title else ""
    except Unreadable:
        raise
    except (PdfReadError, OSError, ValueError, KeyError, TypeError) as exc:
        raise Unreadable(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    finally:
        pypdf_log.setLevel(level)
    if not any(pages):
        raise Unreadable(f"no text layer in its {len(pages)} page(s) (a scan? OCR it first)")
    text, marks = "", []
    for number, page in enumerate(pages, start=1):
        if not page:
            continue
        if text:
            text += "\n\n"
        marks.append((len(text), number))
        text += page
    return Extracted(text, title, {"pages": _spans(marks, len(text), "page")})


# ---- DOCX: paragraphs (and table cells), a blank line between them; Heading styles mark the sections -----------

def _docx(path: Path) -> Extracted:
    try:
        import docx
    except ImportError:
        raise MissingDependencyError(f"{path}: DOCX documents need python-docx: {EXTRA}") from None
    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises zipfile/KeyError/its own errors for a file that is not DOCX
        raise Unreadable(f"not a readable DOCX file ({type(exc).__name__}: {exc})") from None
    blocks: list[str] = []
    marks: list[tuple[int, str]] = []
    title = (document.core_properties.title or "").strip()
    offset = 0
    for paragraph in document.paragraphs:
        text = _SPACE.sub(" ", paragraph.text).strip()
        if not text:
            continue
        style = (paragraph.style.name or "") if paragraph.style is not None else ""
        if style.startswith("Heading") or style == "Title":
            marks.append((offset, text))
            title = title or (text if style in ("Title", "Heading 1") else "")
        blocks.append(text)
        offset += len(text) + 2
    for table in document.tables:
        for row in table.rows:
            cells = " | ".join(_SPACE.sub(" ", c.text).strip() for c in row.cells)
            if cells.strip(" |"):
                blocks.append(cells)
    text = "\n\n".join(blocks)
    if not text:
        raise Unreadable("no text in the document")
    return Extracted(text, title, {"sections": _spans(marks, len(text), "title")} if marks else {})
