"""``harness goldset build``: a golden set from question/answer pairs or pasted quotes.

Input lines ``{"id", "query", "answers": [text, ...], "doc"?: DOC_ID, "grade"?: N, "tags"?: {...}}``. An answer
in several spans is a list of texts, its parts, all needed: part i of every answer is evidence group ``part i``
(``docs/groups.md``), so the answers of a query are all parts or all texts, with one number of parts. Each text
is located in its document (or, without ``doc``, in the whole corpus): exact, then normalised, then a bounded fuzzy
match (only inside a named document, or a corpus under FUZZY_CORPUS_CHARS) whose score is recorded. An answer found in
one place becomes an evidence span ``{"start", "end", "text", "how"[, "score"]}``. One found in several places is
placed where the passage around it matches the question best (``rank``: BM25 over those passages), when that place
clearly wins; its span records the ``margin``. Otherwise it is ambiguous. Ambiguous and missing answers are listed
for a person, never guessed, and stay out of the golden set: a query none of whose answers was placed is left out
(a query with no relevant document would count as a retrieval failure of every run)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..core.errors import GoldSetError
from ..core.ids import grade_problem, id_problem
from ..io.jsonl import jsonl_rows, one_document
from ..io.textfile import read_utf8, require_file
from ..core.types import Document
from .load import query_of, tags_of
from .locate import Match, NormCache, find_all, locate, normalise
from .rank import rank_places

FUZZY_CORPUS_CHARS = 2_000_000  # whole-corpus fuzzy search above this size would take minutes: not tried


@dataclass
class AnswerRow:
    where: str
    query_id: str
    query: str
    answers: list[str] | list[list[str]]  # texts, or each answer's parts
    doc: str | None
    grade: int
    tags: dict[str, str]


@dataclass
class Located:
    """One answer's outcome: ``how`` is exact | normalised | fuzzy | chosen (found in several places, one chosen
    by its passage) | ambiguous | missing. ``bm25`` are the places' passage scores when they were ranked."""

    where: str
    query_id: str
    answer: str
    how: str
    places: list[tuple[str, Match]] = field(default_factory=list)
    bm25: tuple[float, ...] = ()
    margin: float | None = None

    def to_dict(self) -> dict:
        out = {"where": self.where, "query_id": self.query_id, "answer": self.answer, "status": self.how,
               "places": [{"doc_id": d, "start": m.start, "end": m.end, "how": m.how, "score": m.score,
                           **({"bm25": round(self.bm25[i], 4)} if self.bm25 else {})}
                          for i, (d, m) in enumerate(self.places[:20])]}
        if self.margin is not None:
            out["margin"] = self.margin
        return out


def read_answers(path: Path, docs: Mapping[str, Document]) -> list[AnswerRow]:
    """Every line checked; all problems raised together, each with ``file:line``."""
    require_file(path, "answers file", GoldSetError)
    rows, problems, seen = [], [], {}
    for lineno, row, bad in jsonl_rows(read_utf8(path, GoldSetError)):
        where = f"{path}:{lineno}"
        if bad:
            problems.append(f"{where}: {bad}")
            continue
        if not isinstance(row, dict):
            problems.append(f"{where}: expected an object with id, query, answers")
            continue
        unknown = set(row) - {"id", "query", "answers", "doc", "grade", "tags"}
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; expected id, query, "
                            f"answers, doc, grade, tags")
            continue
        head = query_of(row, where, seen)
        if isinstance(head, str):
            problems.append(head)
            continue
        (qid, query), answers = head, row.get("answers")
        bad = _answers_problem(answers)
        if bad:
            problems.append(f"{where}: query {qid!r}: {bad}")
            continue
        doc = row.get("doc")
        if doc is not None:
            bad = id_problem(doc, "document id")
            if bad or str(doc) not in docs:
                problems.append(f"{where}: query {qid!r}: {bad or f'document {doc!r} is not in the corpus'}")
                continue
        grade = row.get("grade", 1)
        bad = grade_problem(grade)
        if bad:
            problems.append(f"{where}: query {qid!r}: {bad}")
            continue
        tags, bad = tags_of(row.get("tags"))
        if bad:
            problems.append(f"{where}: query {qid!r}: {bad}")
            continue
        rows.append(AnswerRow(where, qid, query, answers, None if doc is None else str(doc), grade, tags))
    if problems and (whole := one_document(path)):
        raise GoldSetError(f"{path}: {whole}")
    if problems:
        shown = problems[:50] + ([f"... and {len(problems) - 50} more"] if len(problems) > 50 else [])
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the answers", shown)
    return rows


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _answers_problem(answers: object) -> str | None:
    """Why ``answers`` is not a list of texts, nor of answers in parts (lists of texts, as many in each)."""
    shape = ("'answers' must be a non-empty list of texts, or of answers in several spans (each a list of its "
             "parts' texts)")
    if not isinstance(answers, list) or not answers:
        return shape
    if all(_text(a) for a in answers):
        return None
    if not all(isinstance(a, list) and a and all(_text(p) for p in a) for a in answers):
        return shape + ("; give every answer in parts, or none (a text beside answers in parts could be any part)"
                        if any(isinstance(a, list) for a in answers) else "")
    sizes = sorted({len(a) for a in answers})
    if len(sizes) > 1:
        return (f"'answers' in parts must have one number of parts (part i of each is one evidence group), got "
                f"{', '.join(map(str, sizes))}")
    return None


def _parts(answers: list) -> list[tuple[str, str | None]]:
    """(text, group) of each text to locate, repeated texts of a group once (SQuAD lists one per annotator)."""
    if all(isinstance(a, str) for a in answers):
        return [(a, None) for a in dict.fromkeys(answers)]
    return list(dict.fromkeys((part, f"part {i}") for a in answers for i, part in enumerate(a, 1)))


def locate_answer(answer: str, candidates: list[Document], fuzzy: bool, cache: NormCache | None = None
                  ) -> tuple[str, list[tuple[str, Match]]]:
    """(how, places): the first rule (exact, normalised, fuzzy) that finds the answer anywhere in ``candidates``
    decides; one place is located, several ambiguous."""
    cache = cache or NormCache()
    for rule in ("exact", "normalised", "fuzzy"):
        if rule == "fuzzy" and not fuzzy:
            break
        if rule == "exact":  # cheap: no normalising unless no document has the answer as it is
            places = [(d.doc_id, Match(s, s + len(answer), "exact")) for d in candidates for s in find_all(d.text, answer)]
        else:
            norm_answer = normalise(answer)[0]
            places = [(d.doc_id, m) for d in candidates
                      if rule == "fuzzy" or norm_answer in cache.of(d.doc_id, d.text)[0]
                      for m in locate(d.text, answer, fuzzy=rule == "fuzzy", norm=cache.of(d.doc_id, d.text),
                                      norm_needle=norm_answer)
                      if m.how == rule]
        if places:
            return (rule if len(places) == 1 else "ambiguous"), places
    return "missing", []


def build_goldset(rows: list[AnswerRow], docs: Mapping[str, Document]) -> tuple[list[dict], list[Located]]:
    """The golden set's rows, and every answer's outcome (in input order)."""
    everything = list(docs.values())
    corpus_fuzzy = sum(len(d.text) for d in everything) <= FUZZY_CORPUS_CHARS
    out, outcomes = [], []
    cache = NormCache()
    for row in rows:
        candidates = [docs[row.doc]] if row.doc else everything
        evidence: dict[str, list[dict]] = {}
        for answer, group in _parts(row.answers):
            how, places = locate_answer(answer, candidates, bool(row.doc) or corpus_fuzzy, cache)
            outcome = Located(row.where, row.query_id, answer, how, places)
            outcomes.append(outcome)
            place = places[0] if how in ("exact", "normalised", "fuzzy") else None
            if how == "ambiguous":
                ranked = rank_places(row.query, places, docs)
                outcome.bm25, outcome.margin = ranked.scores, ranked.margin
                if ranked.chosen is not None:
                    outcome.how, place = "chosen", places[ranked.chosen]
            if place is None:  # ambiguous or missing: listed for a person, out of the golden set
                continue
            doc_id, m = place
            span = {"start": m.start, "end": m.end, "text": docs[doc_id].text[m.start:m.end], "how": m.how}
            if m.how == "fuzzy":
                span["score"] = m.score
            if outcome.how == "chosen":
                span["margin"] = outcome.margin
            if group is not None:
                span["group"] = group
            spans = evidence.setdefault(doc_id, [])
            if not any(s.get("start") == m.start and s.get("end") == m.end and s.get("group") == group
                       for s in spans):
                spans.append(span)
        if not evidence:
            continue
        relevant = [{"doc": d, "grade": row.grade, "evidence": spans} for d, spans in evidence.items()]
        item: dict = {"id": row.query_id, "query": row.query, "relevant": relevant}
        if row.tags:
            item["tags"] = row.tags
        out.append(item)
    return out, outcomes


def tally(outcomes: list[Located]) -> dict[str, int]:
    counted = Counter(o.how for o in outcomes)
    return {k: counted.get(k, 0) for k in ("exact", "normalised", "fuzzy", "chosen", "ambiguous", "missing")}
