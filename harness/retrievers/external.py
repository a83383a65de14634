"""A run produced by another system, judged like any retriever here.

TREC run files name documents: each hit becomes the whole document as one span. JSONL runs may name chunks:
``{"query_id": ..., "hits": [{"doc_id": ..., "chunk_id"?, "start"?, "end"?, "text"?, "score": ...}]}``; a hit
given only by its text is located in its document. Hits that cannot be placed are all reported, never dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Sequence

from ..config.schema import Strict
from ..core.errors import RunFileError
from ..core.ids import data_lines
from ..io.runfiles import run_line_problem, score_problem
from ..core.textfile import read_utf8
from ..core.types import Chunk, Hit, Query, RankedList
from . import RetrieverKind, register


class ExternalConfig(Strict):
    kind: Literal["external"] = "external"
    path: Path
    format: Literal["trec", "jsonl", "auto"] = "auto"

    def preflight(self, where: str) -> list[str]:  # the file's content is read as the run, after this check
        return [] if self.path.is_file() else [f"{where}.path: {self.path}: external run file not found"]


class ExternalRetriever:
    def __init__(self, config: ExternalConfig, documents: dict[str, str] | None = None):
        self.config = config
        self.documents = documents
        self.raw: dict[str, list[dict]] = {}

    def _read(self) -> None:
        path, fmt = self.config.path, self.config.format
        if not path.is_file():
            raise RunFileError(f"{path}: external run file not found")
        if fmt == "auto":
            fmt = "jsonl" if path.suffix in (".jsonl", ".json") else "trec"
        problems = []
        text = read_utf8(path, RunFileError)
        if fmt == "trec":
            # The same lines as `harness eval` reads: # comments skipped, columns after the tag ignored.
            for lineno, line, parts in data_lines(text):
                problem = run_line_problem(line, parts) or score_problem(parts[4])
                if problem:
                    problems.append(f"{path}:{lineno}: {problem}")
                    continue
                self.raw.setdefault(parts[0], []).append({"doc_id": parts[2], "score": float(parts[4]),
                                                          "where": f"{path}:{lineno}"})
        else:
            for lineno, line in enumerate(text.split("\n"), start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    hits = [dict(h, score=float(h["score"]), doc_id=str(h["doc_id"]), where=f"{path}:{lineno}")
                            for h in row["hits"]]
                    self.raw.setdefault(str(row["query_id"]), []).extend(hits)
                except (json.JSONDecodeError, RecursionError, KeyError, TypeError, ValueError) as exc:
                    problems.append(f"{path}:{lineno}: expected {{'query_id', 'hits': [{{'doc_id', 'score', ...}}]}} "
                                    f"({type(exc).__name__}: {exc})")
        if problems:
            raise RunFileError(f"{path}: {len(problems)} problem(s) in the external run", problems[:50])

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._read()
        self.by_id = {c.chunk_id: c for c in chunks}
        self.doc_text: dict[str, str] = dict(self.documents or {})
        for c in ([] if self.documents else chunks):  # no documents given: reassemble texts from chunk spans
            text = self.doc_text.get(c.doc_id, "")
            if c.end > len(text):
                text = text.ljust(c.start)[: c.start] + c.text if c.start >= len(text) else text[: c.start] + c.text
            self.doc_text[c.doc_id] = text
        problems = []
        self.resolved: dict[str, list[Hit]] = {}
        for qid, hits in self.raw.items():
            out = []
            for h in hits:
                placed = self._place(h)
                if isinstance(placed, str):
                    problems.append(f"{h['where']}: query {qid!r}: {placed}")
                else:
                    out.append(Hit(placed[0], h["doc_id"], h["score"], 0, placed[1], placed[2]))
            self.resolved[qid] = out
        if problems:
            raise RunFileError(f"{self.config.path}: {len(problems)} hit(s) could not be placed in the corpus",
                               problems[:50])

    def _place(self, h: dict) -> tuple[str, int, int] | str:
        doc = h["doc_id"]
        if doc not in self.doc_text:
            return f"document {doc!r} is not in the corpus"
        text = self.doc_text[doc]
        if h.get("chunk_id") in self.by_id:
            c = self.by_id[h["chunk_id"]]
            return c.chunk_id, c.start, c.end
        if isinstance(h.get("start"), int) and isinstance(h.get("end"), int):
            if not 0 <= h["start"] < h["end"] <= len(text):
                return f"span {h['start']}..{h['end']} is outside document {doc!r}"
            return f"{doc}#{h['start']}-{h['end']}", h["start"], h["end"]
        if isinstance(h.get("text"), str):
            at = text.find(h["text"])
            if at < 0:
                return f"hit text {h['text'][:50]!r} not found in document {doc!r}"
            return f"{doc}#{at}-{at + len(h['text'])}", at, at + len(h["text"])
        if h.get("chunk_id"):
            return f"chunk {h['chunk_id']!r} is not a chunk of this corpus and has no span or text"
        return f"{doc}#0-{len(text)}", 0, len(text)

    def answered_query_ids(self) -> list[str]:
        """The queries the run file has a ranking for, in file order (after ``index``)."""
        return list(self.raw)

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        out = []
        for q in queries:
            hits = sorted(self.resolved.get(q.query_id, []), key=lambda h: (h.score, h.chunk_id), reverse=True)[:k]
            out.append(RankedList(q.query_id, tuple(Hit(h.chunk_id, h.doc_id, h.score, r, h.start, h.end)
                                                    for r, h in enumerate(hits, 1))))
        return out


register(RetrieverKind("external", ExternalConfig, lambda c, ctx: ExternalRetriever(c, ctx.extras.get("documents")),
                       "a run produced elsewhere (TREC run or JSONL with chunk hits)"))
