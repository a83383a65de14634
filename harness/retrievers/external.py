"""A run produced by another system, judged like any retriever here.

TREC run files name documents: each hit becomes the whole document as one span. JSONL runs (``io.jsonl_run``: a
query per line, or a hit per line) may name chunks: ``{"doc_id"?, "chunk_id"?, "start"?, "end"?, "text"?,
"score"}``; a hit given only by its text is located in its document (``base.HitPlacer``, the same rules as every retriever's hits).
Hits that cannot be placed are reported by the run with their query and value, or skipped and counted."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Mapping, Sequence

from ..core.schema import Strict
from ..core.errors import RunFileError
from ..core.ids import data_lines, parse_unit_id
from ..io.jsonl_run import read_jsonl_hits
from ..io.runfiles import run_line_problem, score_problem
from ..io.textfile import not_a_file, require_file, utf8_lines
from ..core.types import Chunk, Document, Hit, Query, RankedList
from .base import RetrieverKind, register
from .contract import HitPlacer, shown_lines
from .ranking import rank_distinct


PREFLIGHT_LINES = 1_000  # the lines of an external run read first before any work (`validate` reads no further)


class ExternalConfig(Strict):
    kind: Literal["external"] = "external"
    path: Path
    """the run file: TREC or JSONL, may be .gz"""
    format: Literal["trec", "jsonl", "auto"] = "auto"
    """trec, jsonl, or auto: by the file's extension (.jsonl or .json: jsonl, else trec)"""
    # lenient: hits that name no chunk of the corpus are skipped and reported (results.json hit_problems), as
    # retriever_hits.unplaceable: skip does for the whole run; strict: they stop the run, each named.
    placement: Literal["strict", "lenient"] = "strict"
    """strict: hits that name no chunk stop the run, each named; lenient: they are skipped and reported"""

    def preflight(self, where: str) -> list[str]:
        """The file exists. Its lines are read before any work by ``check_lines`` (once, wherever the retriever
        is: a hybrid's child too), then placed by ``check_placement``."""
        problem = not_a_file(self.path, "external run file")
        return [f"{where}.path: {problem}"] if problem else []

    def check_lines(self, sample: bool = False) -> None:
        """The run's lines read as ``index`` reads them, a RunFileError naming each bad one. Its first
        ``PREFLIGHT_LINES`` lines are read first (a file of the wrong form is found at once; a good file is read
        whole only by the run itself: reading it all here too made a large run's start 25% slower). When they have
        a problem, every line is read so that each bad one is named in one go, unless ``sample`` (``validate``'s
        quick check), which says that it read only those lines."""
        try:
            ExternalRetriever(self)._read(limit=PREFLIGHT_LINES)
        except RunFileError as exc:
            if not _longer(self.path, PREFLIGHT_LINES):
                raise
            if sample:
                head = str(exc).split("\n", 1)[0]
                raise RunFileError(f"{head} (in its first {PREFLIGHT_LINES:,} lines: validate reads no further; "
                                   f"harness run reads every line)", exc.problems) from None
            ExternalRetriever(self)._read()  # raises, naming every bad line of the file

    def read_in_part(self) -> bool:
        """Whether the quick check (``check_lines(sample=True)``, validate's) reads only part of this run file."""
        return self.path.is_file() and _longer(self.path, PREFLIGHT_LINES)

    def check_placement(self, chunks: Sequence[Chunk], documents: Mapping[str, Document], unplaceable: str,
                        sample: bool = False) -> str | None:
        """The hits of the first ``PREFLIGHT_LINES`` lines placed on the run's chunks as ``index`` places them
        (``unplaceable``: the run's ``retriever_hits.unplaceable``): with ``fail``, those that cannot be placed are
        the run's own error, found before any work (then of every line, each named, unless ``sample``: validate's
        quick check says it read only the first lines); with ``skip``, a warning line counting the hits the run will
        drop (None when there are none)."""
        retriever = _external(self, documents, unplaceable)
        try:
            retriever.index(chunks, limit=PREFLIGHT_LINES)
        except RunFileError:
            if sample or not _longer(self.path, PREFLIGHT_LINES):
                raise
            _external(self, documents, unplaceable).index(chunks)  # raises, naming every hit of the file
            raise
        if not retriever.unplaced:
            return None
        lines = f"in its first {PREFLIGHT_LINES:,} lines " if _longer(self.path, PREFLIGHT_LINES) else ""
        return (f"{self.path}: {len(retriever.unplaced)} hit(s) {lines}name no chunk of the corpus and will be "
                f"dropped (retriever_hits.unplaceable: skip), e.g. {retriever.unplaced[0]}")


class ExternalRetriever:
    def __init__(self, config: ExternalConfig, documents: Mapping[str, Document] | None = None,
                 unplaceable: str = "fail"):
        self.config = config
        self.documents = documents
        self.unplaceable = unplaceable
        self.raw: dict[str, list[dict]] = {}
        self.unplaced: list[str] = []
        self.duplicates_dropped = 0  # repeated hits dropped before the cut at depth (results.json hit_problems)

    def _read(self, limit: int | None = None) -> None:
        """The run's rows by query (``limit``: its first that many lines only)."""
        path, fmt = self.config.path, self.config.format
        require_file(path, "external run file", RunFileError)
        if fmt == "auto":
            fmt = "jsonl" if path.suffix in (".jsonl", ".json") else "trec"
        problems = []
        if fmt == "trec":
            # The same lines as `harness eval` reads: # comments skipped, columns after the tag ignored; a block at
            # a time, so a check of the first lines does not read the whole file
            for lineno, line, parts in data_lines(utf8_lines(path, RunFileError)):
                if limit is not None and lineno > limit:
                    break
                problem = run_line_problem(line, parts) or score_problem(parts[4])
                if problem:
                    problems.append(f"{path}:{lineno}: {problem}")
                    continue
                self.raw.setdefault(parts[0], []).append({"doc_id": parts[2], "score": float(parts[4]),
                                                          "where": f"{path}:{lineno}"})
        else:
            for qid, hits in read_jsonl_hits(path, what="external run", limit=limit).items():
                self.raw[qid] = [{"doc_id": h.doc_id, "chunk_id": h.chunk_id, "start": h.start, "end": h.end,
                                  "text": h.text, "score": h.score, "where": h.where} for h in hits]
        if problems:
            raise RunFileError(f"{path}: {len(problems)} problem(s) in the external run", problems[:50])

    def index(self, chunks: Sequence[Chunk], limit: int | None = None) -> None:
        """Reads the run and places its hits with the run's placement rules (``base.HitPlacer``), so a hybrid or
        reranked parent sees chunk ids. Hits that cannot be placed, of every query in the file, are one error
        naming each line (``unplaceable: fail``); with ``skip`` they are kept as read, and the run drops and
        counts those of the queries it asks for, with every other retriever's. ``limit``: the file's first that
        many lines only (``ExternalConfig.check_placement``)."""
        self._read(limit)
        documents = self.documents or _documents_from(chunks)
        placer = HitPlacer(chunks, documents)
        self.resolved: dict[str, list[Hit]] = {}
        problems, ambiguous = [], []
        for qid, rows in self.raw.items():
            hits = []
            for row in rows:
                hit = _hit(row, documents, placer)
                if isinstance(hit, str):
                    ambiguous.append(f"{row['where']}: query {qid!r}: {hit}")
                    continue
                placed = placer.chunk(hit)
                if isinstance(placed, Chunk):
                    hit = Hit(placed.chunk_id, placed.doc_id, hit.score, 0, placed.start, placed.end)
                else:
                    problems.append(f"{row['where']}: query {qid!r}: {placed[1]}")
                hits.append(hit)
            self.resolved[qid] = hits
        if ambiguous:  # whatever retriever_hits.unplaceable says: either reading would be a guess
            raise RunFileError(f"{self.config.path}: {len(ambiguous)} line(s) name an id that is both a document and "
                               f"a chunk of another document: rename the document, or name hits in a JSONL run "
                               f"(doc_id or chunk_id)", shown_lines(ambiguous))
        self.loosely_placed = list(placer.loose)
        self.unplaced = problems  # (with skip: what the run will drop, each with its line)
        if problems and self.unplaceable == "fail":
            # A check of the first lines says so when the file has more (their hits are not counted yet)
            lines = f" in its first {limit:,} lines" if limit is not None and _longer(self.config.path, limit) else ""
            raise RunFileError(f"{self.config.path}: {len(problems)} hit(s){lines} could not be placed in the corpus "
                               f"(retriever_hits.unplaceable: fail; skip drops them)", shown_lines(problems))

    def answered_query_ids(self) -> list[str]:
        """The queries the run file has a ranking for, in file order (after ``index``)."""
        return list(self.raw)

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        """Each query's hits with a repeated one once, at its best place, then cut at ``k``: a cut before dropping
        repeats would lose hits within depth. (trec_eval itself refuses a run that repeats a doc id within a query;
        keeping the best-ranked copy is harness's rule, so run.trec is one trec_eval reads.)"""
        out = []
        for q in queries:
            ranked, dropped = rank_distinct(q.query_id, self.resolved.get(q.query_id, []), k)
            self.duplicates_dropped += dropped
            out.append(ranked)
        return out


def _hit(row: dict, documents: Mapping[str, Document], placer: HitPlacer) -> Hit | str:
    """A row of the run as a hit: as given (chunk id, span, text), or an id alone as the whole document it names,
    else as the chunk it names (a chunk-level TREC run). A TREC docno that is a document and also the chunk of
    another document (doc "a#0-23" beside doc "a" cut at 23) is why it cannot be read: either reading is a guess."""
    chunk_id = row.get("chunk_id")
    start, end = row.get("start"), row.get("end")
    # Given values go to placement as they are: a span that is not two offsets is reported there, never ignored.
    span = (-1, -1) if start is None and end is None else (-1 if start is None else start, -1 if end is None else end)
    text = row.get("text")
    doc_id = row.get("doc_id") or ""
    doc = documents.get(doc_id)
    if not chunk_id and span == (-1, -1) and text is None:
        # a TREC line's docno may name one of the run's chunks (harness's own run.chunks.trec); a JSONL hit's
        # doc_id says it is a document, and stays one
        chunk = placer.by_id.get(doc_id) if "chunk_id" not in row else None
        if doc is not None and chunk is not None and (chunk.doc_id, chunk.start, chunk.end) != (doc_id, 0,
                                                                                                  len(doc.text)):
            return (f"{doc_id!r} is a document and also the chunk [{chunk.start}, {chunk.end}) of document "
                    f"{chunk.doc_id!r}")
        if doc is not None:
            span = (0, len(doc.text))  # a TREC line names a document: its whole text is the retrieved span
        elif chunk is not None:
            chunk_id, doc_id = doc_id, ""
        elif (unit := parse_unit_id(doc_id)) is not None and unit[0] in documents:
            # an evidence unit of harness's own run.chunks.trec: the hit that covered it, read as the unit's first
            # span (it covers the unit again; the hit's own extent is in hits.parquet)
            doc_id, span = unit[0], unit[1][0] if unit[1] else (0, len(documents[unit[0]].text))
    return Hit(str(chunk_id) if chunk_id else "", doc_id, row["score"], 0, span[0], span[1], text)


def _longer(path: Path, lines: int) -> bool:
    """Whether ``path`` has more than that many lines (reading no further than the next one)."""
    return any(lineno > lines for lineno, _ in utf8_lines(path, RunFileError))


def _documents_from(chunks: Sequence[Chunk]) -> dict[str, Document]:
    """No documents given (a retriever built outside a run): each document's text as far as its chunks show it."""
    texts: dict[str, str] = {}
    for c in chunks:
        text = texts.get(c.doc_id, "")
        if c.end > len(text):
            text = text.ljust(c.start)[: c.start] + c.text if c.start >= len(text) else text[: c.start] + c.text
        texts[c.doc_id] = text
    return {d: Document(d, t) for d, t in texts.items()}


def _external(config: ExternalConfig, documents: Mapping[str, Document], unplaceable: str) -> ExternalRetriever:
    """``placement: lenient`` skips this retriever's unplaceable hits whatever the run's policy."""
    return ExternalRetriever(config, documents, "skip" if config.placement == "lenient" else unplaceable)


register(RetrieverKind("external", ExternalConfig, lambda c, ctx: _external(c, ctx.documents, ctx.unplaceable),
                       "a run produced elsewhere (TREC run or JSONL with chunk hits)"))
