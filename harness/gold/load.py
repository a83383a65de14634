"""Golden sets: native JSONL/YAML, BEIR (queries.jsonl + qrels/<split>.tsv), TREC qrels + a queries TSV.

Loading is two steps. ``read_goldset`` parses the files and raises one GoldSetError listing every structural
problem. ``resolve.resolve_goldset`` checks the gold against the corpus (unknown doc ids, quotes not found, spans out of
range) and returns those problems per query instead of raising: a run flags such queries as ``goldset_error``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from ..config.schema import GoldsetConfig
from ..core.errors import GoldSetError
from ..core.ids import GRADE_LIMIT, data_lines, grade_problem, id_problem, read_id, tab_problem
from ..core.jsonl import jsonl_rows, numbered_lines, parse_line
from ..core.safeyaml import CheckedLoader, parse_yaml_node
from ..core.textfile import base_suffix, read_utf8


@dataclass(slots=True)
class RawEvidence:
    start: int | None = None
    end: int | None = None
    quote: str | None = None


@dataclass(slots=True)
class RawJudgment:
    doc_id: str
    grade: int
    evidence: list[RawEvidence] = field(default_factory=list)


@dataclass(slots=True)  # a golden set of 1M queries makes 2M of these at once
class RawQuery:
    query_id: str
    text: str
    tags: dict[str, str]
    relevant: list[RawJudgment]
    where: str


def read_goldset(cfg: GoldsetConfig) -> list[RawQuery]:
    return list(iter_goldset(cfg))


def iter_goldset(cfg: GoldsetConfig) -> Iterator[RawQuery]:
    """The golden set's queries as they are read; every problem is raised in one GoldSetError after the last one
    (a native file's queries are made a line at a time: ``harness run`` resolves each as it comes, so no list of
    every raw query, and no memory its objects leave behind, outlives the loading)."""
    if cfg.format == "beir":
        yield from _read_beir(cfg)
    elif cfg.format == "trec":
        yield from _read_trec(cfg)
    elif cfg.format in ("csv", "tsv", "parquet"):
        from .tabular import tabular_rows
        yield from native_queries(cfg.path, tabular_rows(cfg))
    else:
        yield from native_queries(cfg.path)


def _fail(path: Path, problems: list[str]) -> None:
    if problems:
        shown = problems[:50] + ([f"... and {len(problems) - 50} more"] if len(problems) > 50 else [])
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the golden set", shown)


class _TextKeepingLoader(CheckedLoader):
    """YAML 1.1 reads ``010`` as 8, ``1.10`` as 1.1 and ``on`` as True: ids, docs and tags would silently change.
    Here a scalar keeps its text unless it is a plain decimal integer (grades, spans) or null."""


def _scalar_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)


def _plain_int(loader: yaml.SafeLoader, node: yaml.Node) -> int | str:
    text = loader.construct_scalar(node)
    return int(text) if re.fullmatch(r"-?(0|[1-9][0-9]*)", text) else text


for _tag in ("bool", "float", "timestamp"):
    _TextKeepingLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _scalar_text)
_TextKeepingLoader.add_constructor("tag:yaml.org,2002:int", _plain_int)


def _yaml_queries(path: Path) -> list[tuple[str, object]]:
    """The queries of a YAML golden set, each with ``file:line`` of where it starts."""
    text = read_utf8(path, GoldSetError)
    # Bounded alias expansion, no cycles, duplicate keys refused: the same checks as configs.
    node, data = parse_yaml_node(text, str(path), GoldSetError, _TextKeepingLoader)
    if isinstance(data, dict) and "queries" in data:
        data = data["queries"]
        node = next((v for k, v in node.value if k.value == "queries"), None)
    if not isinstance(data, list):
        raise GoldSetError(f"{path}: expected a list of queries (or a mapping with 'queries')")
    if not isinstance(node, yaml.SequenceNode) or len(node.value) != len(data):  # built through a merge key
        return [(f"{path}: query #{i + 1}", row) for i, row in enumerate(data)]
    return [(f"{path}:{item.start_mark.line + 1}", row) for item, row in zip(node.value, data)]


def _native_rows(path: Path) -> Iterator[tuple[str, object]]:
    """(file:line, parsed row) a line at a time: a large golden set is not held as parsed rows as well as queries.
    The lines that are not JSON are raised together after the last row (the rows' own problems are then moot)."""
    if not path.is_file():
        raise GoldSetError(f"{path}: golden set file not found")
    if base_suffix(path) in (".yaml", ".yml"):
        yield from _yaml_queries(path)
        return
    problems = []
    text = read_utf8(path, GoldSetError)
    from .tabular import looks_tabular
    kind = looks_tabular(path, text)
    if kind:  # one line naming what the file is, not a "not valid JSON" line per row
        raise GoldSetError(f"{path}: this looks like a {kind} file (first line {_short(text.lstrip().split(chr(10), 1)[0].strip())}), "
                           f"read as a native JSONL golden set; set goldset.format: {kind.lower()} (and "
                           f"goldset.columns if its columns are not query_id, query, doc_id, grade)")
    for lineno, row, bad in jsonl_rows(text):
        if bad:
            problems.append(f"{path}:{lineno}: {bad}")
        elif not problems:  # after a bad line only the bad lines are reported: no use reading rows on
            yield f"{path}:{lineno}", row
    _fail(path, problems)


JUDGMENT_KEYS = {"doc", "grade", "evidence"}


def _read_judgments(where: str, qid: str, rels: object, problems: list[str]) -> list[RawJudgment]:
    """A query's ``relevant`` list; each problem is appended to ``problems``, named by ``where`` (file:line)."""
    if rels is None:
        return []
    if not isinstance(rels, list):
        # A string would read as one document per character, a mapping as one per key: neither is guessed.
        problems.append(f"{where}: query {qid!r}: 'relevant' must be a list of {{'doc': ..., 'grade': ...}} (or of "
                        f"document ids), got {type(rels).__name__} {_short(rels)}")
        return []
    relevant: list[RawJudgment] = []
    first: dict[str, int] = {}
    for i, rel in enumerate(rels):
        loc = f"{where}: query {qid!r} relevant[{i}]"
        if isinstance(rel, (str, int)) and not isinstance(rel, bool):
            rel = {"doc": rel}
        if not isinstance(rel, dict) or "doc" not in rel:
            problems.append(f"{loc}: expected {{'doc': ..., 'grade': ..., 'evidence': [...]}}")
            continue
        unknown = set(rel) - JUDGMENT_KEYS
        if unknown:
            problems.append(f"{loc}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; expected doc, grade, "
                            f"evidence")
            continue
        bad = id_problem(rel["doc"], "document id")
        if bad:
            problems.append(f"{loc}: {bad}")
            continue
        doc = str(rel["doc"])
        grade = rel.get("grade", 1)
        bad = grade_problem(grade)
        if bad:
            problems.append(f"{loc}: {bad}")
            continue
        if doc in first:
            problems.append(f"{loc}: document {doc!r} is judged twice in query {qid!r} (first at relevant[{first[doc]}])")
            continue
        first[doc] = i
        evidence = []
        raw_evidence = rel.get("evidence") or []
        if not isinstance(raw_evidence, list):
            problems.append(f"{loc}: 'evidence' must be a list, got {type(raw_evidence).__name__}")
            continue
        for j, ev in enumerate(raw_evidence):
            if isinstance(ev, dict) and isinstance(ev.get("quote"), str) and ev["quote"]:
                evidence.append(RawEvidence(quote=ev["quote"]))
            elif isinstance(ev, dict) and _is_int(ev.get("start")) and _is_int(ev.get("end")):
                if not 0 <= ev["start"] < ev["end"]:
                    problems.append(f"{loc}.evidence[{j}]: need 0 <= start < end, got {ev['start']}..{ev['end']}")
                    continue
                evidence.append(RawEvidence(ev["start"], ev["end"]))
            else:
                problems.append(f"{loc}.evidence[{j}]: expected {{'start': int, 'end': int}} or {{'quote': text}}")
        relevant.append(RawJudgment(doc, grade, evidence))
    return relevant


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def query_of(row: dict, where: str, seen: dict[str, str]) -> tuple[str, str] | str:
    """A golden-set row's query id and text, or its problem (``where``: file:line). ``seen`` holds where each query
    id stood first; this one is added. Shared by native golden sets and ``goldset build``'s answer files."""
    qid, bad = read_id(row.get("id"), "query id", "missing 'id'")
    if bad:
        return f"{where}: {bad}"
    if qid in seen:
        return f"{where}: duplicate query id {qid!r} (first at {seen[qid]})"
    seen[qid] = where
    text = row.get("query")
    if not isinstance(text, str) or not text.strip():
        return f"{where}: query {qid!r} has an empty or missing 'query'"
    return qid, text


def native_queries(path: Path, rows: Iterable[tuple[str, object]] | None = None) -> Iterator[RawQuery]:
    """A native golden set's queries (JSONL or YAML, or ``rows`` already in its form: a table's, ``gold.tabular``),
    one at a time; the problems raised together after the last row."""
    problems = []
    seen: dict[str, str] = {}
    for where, row in (_native_rows(path) if rows is None else rows):
        if not isinstance(row, dict):
            problems.append(f"{where}: expected an object with id, query, relevant")
            continue
        unknown = set(row) - {"id", "query", "relevant", "tags"}
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; expected id, query, "
                            f"relevant, tags")
        head = query_of(row, where, seen)
        if isinstance(head, str):
            problems.append(head)
            continue
        qid, text = head
        tags = row.get("tags") or {}
        if not isinstance(tags, dict):
            problems.append(f"{where}: query {qid!r}: 'tags' must be a mapping")
            tags = {}
        # A slice is named by text; a number reads as its text, but null, true or a list would become 'None',
        # 'True', '[1, 2]': not guessed.
        odd = [k for k, v in tags.items() if isinstance(v, bool) or not isinstance(v, (str, int, float))]
        if odd:
            problems.append(f"{where}: query {qid!r}: tags {', '.join(map(repr, odd))}: a tag's value must be text "
                            f"or a number, got {', '.join(_short(tags[k]) for k in odd)}")
            tags = {k: v for k, v in tags.items() if k not in odd}
        relevant = _read_judgments(where, qid, row.get("relevant"), problems)
        yield RawQuery(qid, text, {str(k): str(v) for k, v in tags.items()}, relevant, where)
    _fail(path, problems)


QRELS_HEADER = ("query-id", "query_id", "qid")
_WHOLE = re.compile(r"([+-]?[0-9]+)(\.0*)?")


def _grade(text: str) -> int | str:
    """A relevance column as an int, or why it is not one. trec_eval reads it with atol: "1.5" as 1, "1e20" as 1.
    Only whole numbers (2, -1, 1.0) read the same both ways; any other is an error rather than a guess."""
    whole = _WHOLE.fullmatch(text)
    if whole:
        value = int(whole.group(1))
        if not -GRADE_LIMIT < value < GRADE_LIMIT:
            return f"relevance {text} is out of range (|grade| < 2**31)"
        return value
    lead = re.match(r"[+-]?[0-9]+", text)
    try:
        number = text.isascii() and "_" not in text and float(text)
    except ValueError:
        number = False
    if number is False:
        return f"relevance {text!r} is not a number"
    return (f"relevance {text!r} is not a whole number (trec_eval would read it as {int(lead.group()) if lead else 0}; "
            f"write the grade you mean)")


def read_qrels_file(path: Path) -> dict[str, dict[str, int]]:
    """TREC qrels (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score`` with a header). Blank lines
    and ``#`` comment lines are skipped (trec_eval 10 skips comments too)."""
    if not path.is_file():
        raise GoldSetError(f"{path}: qrels file not found")
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
    if problems:
        raise GoldSetError(f"{path}: {len(problems)} problem(s) in the qrels", _capped(problems))
    return dict(qrels)


def _capped(problems: list[str]) -> list[str]:
    return problems[:50] + ([f"... and {len(problems) - 50} more"] if len(problems) > 50 else [])


def _read_query_texts(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise GoldSetError(f"{path}: queries file not found")
    texts, problems = {}, []
    first: dict[str, int] = {}
    for lineno, line in numbered_lines(read_utf8(path, GoldSetError)):
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
    problems = []
    for lineno, line in numbered_lines(read_utf8(path, GoldSetError)):
        try:
            row = json.loads(line)
            key = (str(row["query-id"]), str(row["corpus-id"]))
            raw_quotes, answers = row.get("sentence_texts", []), row.get("answers", [])
            if not isinstance(raw_quotes, list) or not isinstance(answers, list):
                raise ValueError("'sentence_texts' and 'answers' must be lists")
            quotes = [q for q in raw_quotes if isinstance(q, str) and q]
            spans = [RawEvidence(a["answer_start"], a["answer_start"] + len(a["text"])) for a in answers]
            if len(quotes) != len(raw_quotes) or not all(_is_int(s.start) and 0 <= s.start < s.end for s in spans):
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


def _read_trec(cfg: GoldsetConfig) -> list[RawQuery]:
    if cfg.queries is None:
        raise GoldSetError(f"{cfg.path}: the trec format needs goldset.queries (a TSV of id<TAB>text)")
    return _from_qrels(read_qrels_file(cfg.path), _read_query_texts(cfg.queries), str(cfg.path))
