"""Golden sets from TREC and BEIR files: qrels (``qid iter docid rel`` or BEIR's ``query-id corpus-id score``
TSV), query texts (a TSV or BEIR's queries.jsonl) and evidence JSONL (SciFact sentences, SQuAD answers)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from ..config.schema import GoldsetConfig
from ..core.errors import GoldSetError
from ..core.ids import GRADE_LIMIT, data_lines, id_problem, split_line, tab_problem, whole, whole_text
from ..io.jsonl import one_document, parse_line
from ..io.textfile import read_utf8, require_file, utf8_lines
from .raw import RawEvidence, RawJudgment, RawQuery


QRELS_HEADER = ("query-id", "query_id", "qid")
_WHOLE = re.compile(r"([+-]?[0-9]+)(\.0*)?")


def _grade(text: str) -> int | str:
    """A relevance column as an int, or why it is not one. trec_eval reads it with atol: "1.5" as 1, "1e20" as 1.
    Only whole numbers (2, -1, 1.0) read the same both ways; any other is an error rather than a guess."""
    whole = _WHOLE.fullmatch(text)
    if whole:
        value = whole_text(text)  # None past 30 digits: out of range, and not turned into an int at all
        if value is None or not -GRADE_LIMIT < value < GRADE_LIMIT:
            return f"relevance {text[:40]}{'...' if len(text) > 40 else ''} is out of range (|grade| < 2**31)"
        return value
    text = text if len(text) <= 40 else text[:40] + "..."
    lead = re.match(r"[+-]?[0-9]{1,30}", text)
    try:
        number = text.isascii() and "_" not in text and float(text)
    except ValueError:
        number = False
    if number is False:
        return f"relevance {text!r} is not a number"
    return (f"relevance {text!r} is not a whole number (trec_eval would read it as {int(lead.group()) if lead else 0}; "
            f"write the grade you mean)")


def qrels_hint(path: Path, line: str, read_as: str) -> str | None:
    """For a golden set read as ``read_as`` (native JSONL, a CSV or TSV table) whose first line is a TREC qrels
    line (``qid iter docid rel``: four columns, a whole-number grade last) or BEIR's qrels header (``query-id
    corpus-id score``): one line saying what the file is and what reads it, instead of a "not valid JSON" line per
    row or a missing column. None for any other line."""
    parts = split_line(line)
    shown = repr(line.strip())
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if [p.lower() for p in parts] == ["query-id", "corpus-id", "score"]:  # BEIR's qrels/<split>.tsv header
        return (f"{path}: this looks like BEIR qrels (first line {shown}), read as {read_as} golden set; a BEIR "
                f"dataset is read whole with goldset: {{format: beir, path: THE_DATASET_FOLDER, split: "
                f"{path.stem}}} (its queries.jsonl and qrels/), and harness eval QRELS RUN scores a run against "
                f"them as they are")
    if len(parts) != 4 or parts[0].startswith(("{", "[", "#")) or not isinstance(_grade(parts[3]), int):
        return None
    return (f"{path}: this looks like TREC qrels (first line {shown}: query, iteration, document, grade), read as "
            f"{read_as} golden set; a config reads qrels with goldset: {{format: trec, path: ..., queries: "
            f"QUERIES.tsv}} (the query texts, id<TAB>text), and harness eval QRELS RUN scores a run against them "
            f"as they are")


def read_qrels_file(path: Path) -> dict[str, dict[str, int]]:
    """TREC qrels (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score`` with a header). Blank lines
    and ``#`` comment lines are skipped (trec_eval 10 skips comments too)."""
    require_file(path, "qrels file", GoldSetError)
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    problems = []
    first: dict[tuple[str, str], int] = {}
    header_checked = False
    for lineno, line, parts in data_lines(read_utf8(path, GoldSetError)):
        if not header_checked:
            header_checked = True
            if parts[0] in QRELS_HEADER:
                continue
        ambiguous = tab_problem(parts, line, 3, (0, 1)) or tab_problem(parts, line, 4, (0, 2))
        if ambiguous:
            problems.append(f"{path}:{lineno}: {ambiguous}")
            continue
        if len(parts) == 4:
            qid, _, doc, grade = parts
        elif len(parts) == 3:
            qid, doc, grade = parts
        else:
            problems.append(f"{path}:{lineno}: expected 4 columns (qid iter docid rel) or 3 (query-id corpus-id "
                            f"score), got {len(parts)}")
            continue
        bad = id_problem(qid, "query id") or id_problem(doc, "document id")
        if bad:
            problems.append(f"{path}:{lineno}: {bad}")
            continue
        value = _grade(grade)
        if isinstance(value, str):
            problems.append(f"{path}:{lineno}: {value}")
            continue
        if (qid, doc) in first:
            problems.append(f"{path}:{lineno}: duplicate judgment for query {qid!r}, doc {doc!r} "
                            f"(first on line {first[(qid, doc)]})")
            continue
        first[(qid, doc)] = lineno
        qrels[qid][doc] = value
    if problems and (whole := one_document(path, "TREC qrels (query, iteration, document, grade a line)")):
        raise GoldSetError(f"{path}: {whole}")
    if problems:
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the qrels", _capped(problems))
    return dict(qrels)


def _capped(problems: list[str]) -> list[str]:
    return problems[:50] + ([f"... and {len(problems) - 50} more"] if len(problems) > 50 else [])


def _read_query_texts(path: Path) -> dict[str, str]:
    require_file(path, "queries file", GoldSetError)
    texts, problems = {}, []
    first: dict[str, int] = {}
    for lineno, line in utf8_lines(path, GoldSetError):
        if path.suffix == ".jsonl":
            row, _ = parse_line(line)
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                problems.append(f"{path}:{lineno}: expected {{'_id': ..., 'text': ...}}")
                continue
            qid, text = row.get("_id", row.get("id")), row["text"]
            if qid is None:
                problems.append(f"{path}:{lineno}: missing '_id'")
                continue
        else:
            parts = line.split("\t", 1)
            if len(parts) != 2:
                problems.append(f"{path}:{lineno}: expected 'id<TAB>text'")
                continue
            qid, text = parts[0].strip(), parts[1].strip()
        bad = id_problem(qid, "query id")
        if bad:
            problems.append(f"{path}:{lineno}: {bad}")
            continue
        qid = str(qid)
        if qid in first:
            problems.append(f"{path}:{lineno}: duplicate query id {qid!r} (first on line {first[qid]})")
            continue
        first[qid] = lineno
        texts[qid] = text
    if problems:
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the queries", _capped(problems))
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


def read_beir(cfg: GoldsetConfig) -> list[RawQuery]:
    folder = cfg.path
    qrels = read_qrels_file(folder / "qrels" / f"{cfg.split}.tsv")
    texts = _read_query_texts(folder / "queries.jsonl")
    evidence = _read_evidence(cfg.evidence) if cfg.evidence else None
    return _from_qrels(qrels, texts, str(folder), evidence)


def _read_evidence(path: Path) -> dict[tuple[str, str], list[RawEvidence]]:
    """Evidence JSONL: SciFact-style ``sentence_texts`` (quotes) or SQuAD-style ``answers`` with ``answer_start``."""
    require_file(path, "evidence file", GoldSetError)
    out: dict[tuple[str, str], list[RawEvidence]] = defaultdict(list)
    problems = []
    for lineno, line in utf8_lines(path, GoldSetError):
        try:
            row, bad = parse_line(line)  # (a lone surrogate or a key given twice named too)
            if bad:
                raise ValueError(bad)
            key = (str(row["query-id"]), str(row["corpus-id"]))
            raw_quotes, answers = row.get("sentence_texts", []), row.get("answers", [])
            if not isinstance(raw_quotes, list) or not isinstance(answers, list):
                raise ValueError("'sentence_texts' and 'answers' must be lists")
            quotes = [q for q in raw_quotes if isinstance(q, str) and q]
            starts = [whole(a["answer_start"]) for a in answers]  # the number rule: 12.0 is 12
            spans = [RawEvidence(start, start + len(a["text"]), text=a["text"])
                     for start, a in zip(starts, answers) if start is not None]  # (resolve checks the text)
            if len(quotes) != len(raw_quotes) or len(spans) != len(answers) or \
                    not all(0 <= s.start < s.end for s in spans):
                raise ValueError("a quote is not text, or an answer is not {'text', 'answer_start'}")
        except (json.JSONDecodeError, RecursionError, KeyError, TypeError, AttributeError, ValueError) as exc:
            problems.append(f"{path}:{lineno}: expected {{'query-id', 'corpus-id', 'sentence_texts': [text] or "
                            f"'answers': [{{'text', 'answer_start'}}]}} ({type(exc).__name__}: {exc})")
            continue
        out[key].extend(RawEvidence(quote=q) for q in quotes)
        out[key].extend(spans)
    if problems:
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the evidence", _capped(problems))
    return dict(out)


def read_trec(cfg: GoldsetConfig) -> list[RawQuery]:
    if cfg.queries is None:
        raise GoldSetError(f"{cfg.path}: the trec format needs goldset.queries (a TSV of id<TAB>text)")
    return _from_qrels(read_qrels_file(cfg.path), _read_query_texts(cfg.queries), str(cfg.path))
