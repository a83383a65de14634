"""Golden sets: native JSONL/YAML, BEIR (queries.jsonl + qrels/<split>.tsv), TREC qrels + a queries TSV.

Loading is two steps. ``read_goldset`` parses the files and raises one GoldSetError listing every structural
problem. ``resolve_goldset`` checks the gold against the corpus (unknown doc ids, quotes not found, spans out of
range) and returns those problems per query instead of raising: a run flags such queries as ``goldset_error``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from .config import GoldsetConfig
from .errors import GoldSetError
from .textfile import base_suffix, read_utf8
from .types import Chunk, Document, GoldSet, Judgment, Query, Span


@dataclass
class RawEvidence:
    start: int | None = None
    end: int | None = None
    quote: str | None = None


@dataclass
class RawJudgment:
    doc_id: str
    grade: int
    evidence: list[RawEvidence] = field(default_factory=list)


@dataclass
class RawQuery:
    query_id: str
    text: str
    tags: dict[str, str]
    relevant: list[RawJudgment]
    where: str


@dataclass(frozen=True)
class GoldProblem:
    query_id: str
    doc_id: str
    kind: str  # unknown_document | quote_not_found | span_out_of_range
    message: str


def read_goldset(cfg: GoldsetConfig) -> list[RawQuery]:
    if cfg.format == "beir":
        return _read_beir(cfg)
    if cfg.format == "trec":
        return _read_trec(cfg)
    return _read_native(cfg.path)


def _fail(path: Path, problems: list[str]) -> None:
    if problems:
        shown = problems[:50] + ([f"... and {len(problems) - 50} more"] if len(problems) > 50 else [])
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the golden set", shown)


def _native_rows(path: Path) -> list[tuple[str, object]]:
    if not path.is_file():
        raise GoldSetError(f"{path}: golden set file not found")
    if base_suffix(path) in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(read_utf8(path, GoldSetError))
        except yaml.YAMLError as exc:
            raise GoldSetError(f"{path}: not valid YAML: {exc}") from None
        if isinstance(data, dict) and "queries" in data:
            data = data["queries"]
        if not isinstance(data, list):
            raise GoldSetError(f"{path}: expected a list of queries (or a mapping with 'queries')")
        return [(f"{path}: query #{i + 1}", row) for i, row in enumerate(data)]
    rows, problems = [], []
    for lineno, line in enumerate(read_utf8(path, GoldSetError).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"{path}:{lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: not valid JSON ({exc.msg})")
    _fail(path, problems)
    return rows


def _read_native(path: Path) -> list[RawQuery]:
    queries, problems = [], []
    seen: dict[str, str] = {}
    for where, row in _native_rows(path):
        if not isinstance(row, dict):
            problems.append(f"{where}: expected an object with id, query, relevant")
            continue
        unknown = set(row) - {"id", "query", "relevant", "tags"}
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected id, query, relevant, tags")
        qid, text = row.get("id"), row.get("query")
        if qid is None or not str(qid).strip():
            problems.append(f"{where}: missing 'id'")
            continue
        qid = str(qid)
        if qid in seen:
            problems.append(f"{where}: duplicate query id {qid!r} (first at {seen[qid]})")
            continue
        seen[qid] = where
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: query {qid!r} has an empty or missing 'query'")
            continue
        tags = row.get("tags") or {}
        if not isinstance(tags, dict):
            problems.append(f"{where}: query {qid!r}: 'tags' must be a mapping")
            tags = {}
        relevant = []
        for i, rel in enumerate(row.get("relevant") or []):
            loc = f"{where}: query {qid!r} relevant[{i}]"
            if isinstance(rel, str):
                rel = {"doc": rel}
            if not isinstance(rel, dict) or "doc" not in rel:
                problems.append(f"{loc}: expected {{'doc': ..., 'grade': ..., 'evidence': [...]}}")
                continue
            grade = rel.get("grade", 1)
            if not isinstance(grade, int) or isinstance(grade, bool):
                problems.append(f"{loc}: 'grade' must be a whole number, got {grade!r}")
                continue
            evidence = []
            for j, ev in enumerate(rel.get("evidence") or []):
                if isinstance(ev, dict) and isinstance(ev.get("quote"), str) and ev["quote"]:
                    evidence.append(RawEvidence(quote=ev["quote"]))
                elif isinstance(ev, dict) and isinstance(ev.get("start"), int) and isinstance(ev.get("end"), int):
                    if not 0 <= ev["start"] < ev["end"]:
                        problems.append(f"{loc}.evidence[{j}]: need 0 <= start < end, got {ev['start']}..{ev['end']}")
                        continue
                    evidence.append(RawEvidence(ev["start"], ev["end"]))
                else:
                    problems.append(f"{loc}.evidence[{j}]: expected {{'start': int, 'end': int}} or {{'quote': text}}")
            relevant.append(RawJudgment(str(rel["doc"]), grade, evidence))
        queries.append(RawQuery(qid, text, {str(k): str(v) for k, v in tags.items()}, relevant, where))
    _fail(path, problems)
    return queries


def read_qrels_file(path: Path) -> dict[str, dict[str, int]]:
    """TREC qrels (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score`` with a header)."""
    if not path.is_file():
        raise GoldSetError(f"{path}: qrels file not found")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    problems = []
    first: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(read_utf8(path, GoldSetError).splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if lineno == 1 and parts[0] in ("query-id", "query_id", "qid"):
            continue
        if len(parts) == 4:
            qid, _, doc, grade = parts
        elif len(parts) == 3:
            qid, doc, grade = parts
        else:
            problems.append(f"{path}:{lineno}: expected 4 columns (qid iter docid rel) or 3 (query-id corpus-id "
                            f"score), got {len(parts)}")
            continue
        try:
            value = int(grade)
        except ValueError:
            try:
                value = int(float(grade))
            except ValueError:
                problems.append(f"{path}:{lineno}: relevance {grade!r} is not a number")
                continue
        if (qid, doc) in first:
            problems.append(f"{path}:{lineno}: duplicate judgment for query {qid!r}, doc {doc!r} "
                            f"(first on line {first[(qid, doc)]})")
            continue
        first[(qid, doc)] = lineno
        qrels[qid][doc] = value
    if problems:
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the qrels", problems[:50])
    return dict(qrels)


def _read_query_texts(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise GoldSetError(f"{path}: queries file not found")
    texts, problems = {}, []
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(read_utf8(path, GoldSetError).splitlines(), start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                    texts[str(row.get("_id", row.get("id")))] = str(row["text"])
                except (json.JSONDecodeError, KeyError, AttributeError):
                    problems.append(f"{path}:{lineno}: expected {{'_id': ..., 'text': ...}}")
    else:
        for lineno, line in enumerate(read_utf8(path, GoldSetError).splitlines(), start=1):
            if line.strip():
                parts = line.split("\t", 1)
                if len(parts) != 2:
                    problems.append(f"{path}:{lineno}: expected 'id<TAB>text'")
                    continue
                texts[parts[0].strip()] = parts[1].strip()
    if problems:
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the queries", problems[:50])
    return texts


def _from_qrels(qrels: dict[str, dict[str, int]], texts: dict[str, str], where: str,
                evidence: dict[tuple[str, str], list[RawEvidence]] | None = None) -> list[RawQuery]:
    missing = [q for q in qrels if q not in texts]
    if missing:
        raise GoldSetError(f"{where}: {len(missing)} judged queries have no text",
                           [f"query {q!r}" for q in missing[:20]])
    evidence = evidence or {}
    return [RawQuery(q, texts[q], {}, [RawJudgment(d, g, evidence.get((q, d), [])) for d, g in docs.items()], where)
            for q, docs in qrels.items()]


def _read_beir(cfg: GoldsetConfig) -> list[RawQuery]:
    folder = cfg.path
    qrels = read_qrels_file(folder / "qrels" / f"{cfg.split}.tsv")
    texts = _read_query_texts(folder / "queries.jsonl")
    evidence = _read_evidence(cfg.evidence) if cfg.evidence else None
    return _from_qrels(qrels, texts, str(folder), evidence)


def _read_evidence(path: Path) -> dict[tuple[str, str], list[RawEvidence]]:
    """Evidence JSONL: SciFact-style ``sentence_texts`` (quotes) or SQuAD-style ``answers`` with ``answer_start``."""
    if not path.is_file():
        raise GoldSetError(f"{path}: evidence file not found")
    out: dict[tuple[str, str], list[RawEvidence]] = defaultdict(list)
    for line in read_utf8(path, GoldSetError).splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        key = (str(row["query-id"]), str(row["corpus-id"]))
        for quote in row.get("sentence_texts", []):
            out[key].append(RawEvidence(quote=quote))
        for ans in row.get("answers", []):
            out[key].append(RawEvidence(ans["answer_start"], ans["answer_start"] + len(ans["text"])))
    return dict(out)


def _read_trec(cfg: GoldsetConfig) -> list[RawQuery]:
    if cfg.queries is None:
        raise GoldSetError(f"{cfg.path}: the trec format needs goldset.queries (a TSV of id<TAB>text)")
    return _from_qrels(read_qrels_file(cfg.path), _read_query_texts(cfg.queries), str(cfg.path))


def resolve_goldset(raw: Sequence[RawQuery], docs: Mapping[str, Document], name: str
                    ) -> tuple[GoldSet, list[GoldProblem]]:
    """Turn quotes into spans and check every judgment against the corpus."""
    queries, judgments, problems = [], [], []
    for rq in raw:
        queries.append(Query(rq.query_id, rq.text, dict(rq.tags)))
        for rj in rq.relevant:
            doc = docs.get(rj.doc_id)
            if doc is None:
                problems.append(GoldProblem(rq.query_id, rj.doc_id, "unknown_document",
                                            f"query {rq.query_id!r}: relevant document {rj.doc_id!r} is not in the corpus"))
                judgments.append(Judgment(rq.query_id, rj.doc_id, rj.grade, ()))
                continue
            spans = []
            for ev in rj.evidence:
                if ev.quote is not None:
                    at = doc.text.find(ev.quote)
                    if at < 0:
                        short = ev.quote if len(ev.quote) <= 60 else ev.quote[:57] + "..."
                        problems.append(GoldProblem(rq.query_id, rj.doc_id, "quote_not_found",
                                                    f"query {rq.query_id!r}: evidence quote {short!r} not found in "
                                                    f"document {rj.doc_id!r}"))
                        continue
                    spans.append(Span(at, at + len(ev.quote)))
                else:
                    assert ev.start is not None and ev.end is not None
                    if ev.end > len(doc.text):
                        problems.append(GoldProblem(rq.query_id, rj.doc_id, "span_out_of_range",
                                                    f"query {rq.query_id!r}: evidence span {ev.start}..{ev.end} is "
                                                    f"outside document {rj.doc_id!r} ({len(doc.text)} chars)"))
                        continue
                    spans.append(Span(ev.start, ev.end))
            judgments.append(Judgment(rq.query_id, rj.doc_id, rj.grade, tuple(spans)))
    return GoldSet(name, tuple(queries), tuple(judgments)), problems


def chunk_qrels(gold: GoldSet, chunks: Sequence[Chunk]) -> dict[str, dict[str, int]]:
    """Chunk-level gold: a chunk is relevant when it overlaps an evidence span of a relevant document (the
    document's grade); a judged document with no spans makes all its chunks carry its grade."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    out: dict[str, dict[str, int]] = {q.query_id: {} for q in gold.queries}
    for j in gold.judgments:
        for c in by_doc.get(j.doc_id, []):
            if j.relevance > 0 and j.evidence:
                # Chunks of a relevant document that miss every span are judged, and not relevant.
                hit = any(s.overlaps(c.start, c.end) for s in j.evidence)
                out[j.query_id][c.chunk_id] = max(out[j.query_id].get(c.chunk_id, 0), j.relevance if hit else 0)
            else:
                out[j.query_id][c.chunk_id] = j.relevance
    return out


def doc_qrels(gold: GoldSet) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {q.query_id: {} for q in gold.queries}
    for j in gold.judgments:
        out[j.query_id][j.doc_id] = j.relevance
    return out
