"""Golden sets: native JSONL/YAML here; BEIR (queries.jsonl + qrels/<split>.tsv) and TREC qrels + a queries TSV in
``trec``; the tables (CSV, TSV, Parquet) in ``tabular``, read into the native form.

Loading is two steps. ``read_goldset`` parses the files and raises one GoldSetError listing every structural
problem. ``resolve.resolve_goldset`` checks the gold against the corpus (unknown doc ids, quotes not found, spans out of
range) and returns those problems per query instead of raising: a run flags such queries as ``goldset_error``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from ..config.schema import GoldsetConfig
from ..core.errors import GoldSetError
from ..core.ids import NumberText, grade_problem, id_problem, read_id, shown, whole
from ..io.jsonl import MAX_INT_DIGITS, REPEATED_KEY, one_document, parse_line
from ..io.safeyaml import CheckedLoader, parse_yaml_node
from ..io.textfile import base_suffix, read_utf8, require_file, utf8_lines
from .raw import RawEvidence, RawJudgment, RawQuery
from .trec import qrels_hint, read_beir, read_qrels_file, read_trec  # noqa: F401  (read_qrels_file: eval's)


def read_goldset(cfg: GoldsetConfig) -> list[RawQuery]:
    return list(iter_goldset(cfg))


def iter_goldset(cfg: GoldsetConfig) -> Iterator[RawQuery]:
    """The golden set's queries as they are read; every problem is raised in one GoldSetError after the last one
    (a native file's queries are made a line at a time: ``harness run`` resolves each as it comes, so no list of
    every raw query, and no memory its objects leave behind, outlives the loading)."""
    if cfg.format == "beir":
        yield from read_beir(cfg)
    elif cfg.format == "trec":
        yield from read_trec(cfg)
    elif cfg.format in ("csv", "tsv", "parquet"):
        from .tabular import tabular_rows
        yield from native_queries(cfg.path, tabular_rows(cfg))
    else:
        yield from native_queries(cfg.path)


def _fail(path: Path, problems: list[str]) -> None:
    if problems and base_suffix(path) in (".jsonl", ".json") and (whole := one_document(path)):
        raise GoldSetError(f"{path}: {whole}")
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
    if len(text) > MAX_INT_DIGITS or not re.fullmatch(r"-?(0|[1-9][0-9]*)", text):
        return text  # kept as text: an id reads it as written, a grade or span refuses it by the number rule
    return int(text)


def _number_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return NumberText(loader.construct_scalar(node))  # 2.0: 2 as a grade (``whole``), "2.0" as an id


class BoolText(str):
    """A YAML boolean kept as its text (an id or a tag reads ``on`` as written); ``answerable`` reads it as one."""


def _bool_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return BoolText(loader.construct_scalar(node))


_TextKeepingLoader.add_constructor("tag:yaml.org,2002:float", _number_text)
_TextKeepingLoader.add_constructor("tag:yaml.org,2002:bool", _bool_text)
_TextKeepingLoader.add_constructor("tag:yaml.org,2002:timestamp", _scalar_text)
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
    require_file(path, "golden set file", GoldSetError)
    if base_suffix(path) in (".yaml", ".yml"):
        yield from _yaml_queries(path)
        return
    problems = []
    first, broken = True, False
    for lineno, line in utf8_lines(path, GoldSetError):  # a block at a time: never the whole file as text
        if first:
            from .tabular import looks_tabular
            hint = qrels_hint(path, line, "a native JSONL")  # before the TSV test: qrels are often tab-separated
            if hint:
                raise GoldSetError(hint)
            kind = looks_tabular(path, line)
            if kind:  # one line naming what the file is, not a "not valid JSON" line per row
                raise GoldSetError(f"{path}: this looks like a {kind} file (first line {_short(line.strip())}), "
                                   f"read as a native JSONL golden set; set goldset.format: {kind.lower()} (and "
                                   f"goldset.columns if its columns are not query_id, query, doc_id, grade)")
            first = False
        row, bad = parse_line(line)
        if bad:
            problems.append(f"{path}:{lineno}: {bad}")
            if REPEATED_KEY in bad:  # JSON, but ambiguous: said with the other rows' problems, all together
                yield f"{path}:{lineno}", RowProblem(problems[-1])
            else:
                broken = True
        elif not broken:  # after a line that is not JSON only the lines' own problems are reported
            yield f"{path}:{lineno}", row
    if broken:
        _fail(path, problems)


class RowProblem(str):
    """A row ``_native_rows`` read but cannot take (a key given twice): its located problem, in the row's place."""


JUDGMENT_KEYS = {"doc", "grade", "evidence", "group"}
QUERY_KEYS = {"id", "query", "relevant", "tags", "answerable"}


def read_answerable(value: object, relevant: list[RawJudgment]) -> tuple[bool, str | None]:
    """A query's ``answerable`` (default true) and its problem (None: none). A boolean only: "no" or 0 would be a
    guess (YAML keeps ``false`` as ``BoolText``: its spellings false/False/FALSE are taken, not yes/no/on/off). A
    query marked unanswerable judges no document relevant: both would be two claims at once (a grade 0 judgment,
    "this document does not answer it", agrees with the mark)."""
    if isinstance(value, BoolText) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    if not isinstance(value, bool):
        return True, f"'answerable' must be true or false, got {_short(value)}"
    judged = [j.doc_id for j in relevant if j.grade >= 1]
    if not value and judged:
        named = ", ".join(map(_short, judged[:3])) + (", ..." if len(judged) > 3 else "")
        return False, (f"marked answerable: false (its answer is not in the corpus) but it judges "
                       f"{len(judged)} document(s) relevant ({named}); drop the judgments or the mark")
    return value, None


def group_problem(value: object) -> str | None:
    """Why ``value`` cannot name an evidence group (None: it can). A group is named by text: a number or a list
    would be a guess at which groups are the same."""
    if not isinstance(value, str) or not value.strip():
        return f"'group' must be non-empty text (units with the same group are alternatives), got {_short(value)}"
    return None


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
                            f"evidence, group")
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
        group = rel.get("group")
        if group is not None and (bad := group_problem(group)):
            problems.append(f"{loc}: {bad}")
            continue
        first[doc] = i
        evidence = []
        raw_evidence = rel.get("evidence") or []
        if not isinstance(raw_evidence, list):
            problems.append(f"{loc}: 'evidence' must be a list, got {type(raw_evidence).__name__}")
            continue
        for j, ev in enumerate(raw_evidence):
            item = evidence_of(ev)
            if isinstance(item, str):
                problems.append(f"{loc}.evidence[{j}]: {item}")
            else:
                evidence.append(item)
        relevant.append(RawJudgment(doc, whole(grade), evidence, group))
    return relevant


def tags_of(value: object) -> tuple[dict[str, str], str | None]:
    """A query's tags as text, and the problem with the ones that cannot be (None: none). A slice is named by text;
    a number reads as its text, but null, true or a list would become 'None', 'True', '[1, 2]': not guessed."""
    tags = value or {}
    if not isinstance(tags, dict):
        return {}, "'tags' must be a mapping"
    odd = [k for k, v in tags.items() if isinstance(v, bool) or not isinstance(v, (str, int, float))]
    kept = {str(k): str(v) for k, v in tags.items() if k not in odd}
    if odd:
        return kept, (f"tags {', '.join(map(repr, odd))}: a tag's value must be text or a number, got "
                      f"{', '.join(_short(tags[k]) for k in odd)}")
    return kept, None


# how, score, margin: how `goldset build` found a span (margin: by how much its passage won, when it was chosen)
EVIDENCE_KEYS = {"quote", "start", "end", "text", "how", "score", "margin", "group"}


def evidence_of(ev: object) -> RawEvidence | str:
    """One evidence item of a native golden set, or its problem: a quote, or a span (with the text it reads, as
    `goldset build` writes it); never both, nor a key that would be ignored."""
    shape = "expected {'start': int, 'end': int} or {'quote': text}"
    if not isinstance(ev, dict):
        return shape
    unknown = set(map(str, ev)) - EVIDENCE_KEYS
    if unknown:
        return f"unknown key(s) {', '.join(sorted(unknown))}; {shape}"
    has_span = "start" in ev or "end" in ev
    group = ev.get("group")
    if group is not None and (bad := group_problem(group)):
        return bad
    if "quote" in ev:
        if has_span or "text" in ev:  # which of them is the evidence would be a guess
            return "a quote and a span (or its text) together; give the quote, or start/end"
        if not isinstance(ev["quote"], str) or not ev["quote"]:
            return f"'quote' must be non-empty text, got {_short(ev['quote'])}"
        return RawEvidence(quote=ev["quote"], group=group)
    start, end = whole(ev.get("start")), whole(ev.get("end"))
    if start is None or end is None:
        return shape
    if not 0 <= start < end:
        return f"need 0 <= start < end, got {shown(start)}..{shown(end)}"
    text = ev.get("text")
    if text is not None and not isinstance(text, str):
        return f"'text' (what the span reads) must be text, got {_short(text)}"
    found = {k: ev[k] for k in ("how", "score", "margin") if k in ev} or None
    return RawEvidence(start, end, text=text, found=found, group=group)


def _short(value: object) -> str:
    text = shown(value)
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
        if isinstance(row, RowProblem):
            problems.append(str(row))
            continue
        if not isinstance(row, dict):
            problems.append(f"{where}: expected an object with id, query, relevant")
            continue
        unknown = set(row) - QUERY_KEYS
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; expected id, query, "
                            f"relevant, tags, answerable")
        head = query_of(row, where, seen)
        if isinstance(head, str):
            problems.append(head)
            continue
        qid, text = head
        tags, bad = tags_of(row.get("tags"))
        if bad:
            problems.append(f"{where}: query {qid!r}: {bad}")
        relevant = _read_judgments(where, qid, row.get("relevant"), problems)
        answerable, bad = read_answerable(row.get("answerable", True), relevant)
        if bad:
            problems.append(f"{where}: query {qid!r}: {bad}")
        yield RawQuery(qid, text, tags, relevant, where, answerable)
    _fail(path, problems)
