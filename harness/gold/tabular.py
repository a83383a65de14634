"""Golden sets from tables teams keep in spreadsheets: CSV, TSV or Parquet, one row per judgment.

Columns are mapped in the config (``goldset.columns``); the defaults are ``query_id``, ``query``, ``doc_id``,
``grade``, and optionally ``quote`` or ``start``/``end`` for evidence, ``group`` (the row's evidence group),
``answerable`` (true/false: false marks a query whose answer is not in the corpus) and ``tags`` (a list of columns
kept as the query's tags, for slices). Rows of one query are gathered (its text and
tags must be the same on each); rows of one (query, document) add evidence to one judgment (their grades must
agree). A row with an empty document cell is a query with no judgment. Each row becomes the native form and is
validated by the same rules (``gold.load``). Quoted cells may span lines (the csv module reads them); messages name
the row's first line.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator

from ..config.schema import GoldColumns, GoldsetConfig
from ..core.errors import GoldSetError
from ..core.ids import whole, whole_text
from ..io.textfile import read_utf8, require_file



def _rows(path: Path, fmt: str, problems: list[str]) -> Iterator[tuple[str, dict]]:
    """(where, row as column -> text or value) for each row; a row that cannot be read is named in ``problems``."""
    require_file(path, "golden set file", GoldSetError)
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
            raise GoldSetError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
        for i, row in enumerate(table.to_pylist(), start=1):
            yield f"{path}: row {i}", row
        return
    text = read_utf8(path, GoldSetError)
    _, rows = csv_table(path, text, delimiter="\t" if fmt == "tsv" else ",",
                        tab_hint="; is it tab-separated? set goldset.format: tsv" if fmt == "csv" else "",
                        problems=problems)
    yield from rows


def csv_table(path: Path, text: str, *, delimiter: str = ",", tab_hint: str = "",
              error: type[Exception] = GoldSetError, problems: list[str] | None = None
              ) -> tuple[list[str] | None, Iterator[tuple[str, dict]]]:
    """A CSV/TSV table's header (its first non-blank row, None when there is none) and its rows as ``(where,
    {column: cell})``, ``where`` the row's first line (a quoted cell may span lines). A header naming a column twice,
    or a row with another number of cells than the header, is an error (``tab_hint`` is added to the latter when
    the row holds a tab): which cell is which column would be a guess. Such a row is skipped and named in
    ``problems``, so the caller reports it with every other problem of the file. Every reader of a table uses this."""
    # A cell is at most the whole text, which the file-size limit already bounds: the csv module's own cap (128 KiB)
    # would refuse a long, legal query. Raising it (process-wide; it is only ever raised) cannot admit more memory.
    if len(text) >= csv.field_size_limit():
        csv.field_size_limit(min(len(text) + 1, 2**31 - 1))
    reader = csv.reader(text.splitlines(keepends=True), delimiter=delimiter)
    line = 1
    header: list[str] | None = None

    def read() -> Iterator[list[str]]:
        while True:
            try:
                yield next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # e.g. a NUL byte: one located line, not the csv module's traceback
                raise error(f"{path}:{reader.line_num}: not readable as {'TSV' if delimiter == chr(9) else 'CSV'} "
                            f"({exc})") from None

    cells_of = read()
    for cells in cells_of:
        where, line = f"{path}:{line}", reader.line_num + 1
        if any(c.strip() for c in cells):
            header = [c.strip() for c in cells]
            dupes = sorted({h for h in header if header.count(h) > 1})
            if dupes:
                raise error(f"{where}: the header names column(s) {', '.join(map(repr, dupes))} twice")
            break

    def rows() -> Iterator[tuple[str, dict]]:
        nonlocal line
        if header is None:
            return
        for cells in cells_of:
            where, line = f"{path}:{line}", reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                problem = (f"{where}: {len(cells)} cells, but the header (line 1) has {len(header)} columns"
                           f"{tab_hint if chr(9) in ''.join(cells) else ''}")
                if problems is None:
                    raise error(problem)
                problems.append(problem)
                continue
            yield where, dict(zip(header, cells))

    return header, rows()


def _cell(row: dict, column: str | None) -> object:
    if column is None:
        return None
    value = row.get(column)
    return value.strip() if isinstance(value, str) else value


def whole_number(value: object) -> object:
    """A table's text "2" or "2.0" (ASCII digits) as the integer it is; anything else as it is (validation names
    it). The one reading of a number in a table: golden-set tables and judging sheets (``goldset merge``)."""
    if isinstance(value, str):
        # not through a float: 99999999999999999999 stays itself (and is refused by its range)
        return value if whole_text(value) is None else whole_text(value)
    number = whole(value)  # a Parquet cell: the one number rule
    return value if number is None else number


def _answerable(cell: object) -> object:
    """A table's answerable cell: true/false in any case as a boolean, empty as None (not said); anything else as
    it is, for the native reader to refuse with its row."""
    if isinstance(cell, str):
        return None if cell == "" else {"true": True, "false": False}.get(cell.lower(), cell)
    return cell


def tabular_rows(cfg: GoldsetConfig) -> list[tuple[str, dict]]:
    """The golden set as native rows ``(where, {"id", "query", "relevant", "tags"})``, one per query."""
    cols: GoldColumns = cfg.columns or GoldColumns()
    queries: dict[str, tuple[str, dict]] = {}
    problems: list[str] = []
    first = True
    for where, row in _rows(cfg.path, cfg.format, problems):
        if first:
            wanted = [("query_id", cols.query_id), ("query", cols.query), ("doc", cols.doc)]
            wanted += [(k, getattr(cols, k)) for k in ("grade", "quote", "start", "end", "group", "answerable")
                       if k in cols.model_fields_set]
            missing = [f"{key} ({name!r})" for key, name in wanted if name not in row]
            missing += [f"tags ({t!r})" for t in cols.tags if t not in row]
            if missing:
                from .trec import qrels_hint
                header = ("\t" if cfg.format == "tsv" else ",").join(map(str, row))  # line 1 as it was written
                hint = qrels_hint(cfg.path, header, f"a {cfg.format.upper()}") if cfg.format != "parquet" else None
                if hint:  # the "header" is a qrels line
                    raise GoldSetError(hint)
                raise GoldSetError(f"{where}: no column for goldset.columns {', '.join(missing)}; the table has "
                                   f"{', '.join(map(repr, row))}; map them with goldset.columns")
            first = False
        qid, text = _cell(row, cols.query_id), _cell(row, cols.query)
        qid = whole_number(qid) if not isinstance(qid, str) else qid
        key = str(qid)
        if key not in queries:
            tags = {t: str(_cell(row, t)) for t in cols.tags if _cell(row, t) not in (None, "")}
            queries[key] = (where, {"id": qid, "query": text, "relevant": [], "tags": tags})
        first_where, query = queries[key]
        if text != query["query"]:
            problems.append(f"{where}: query {key!r} has another text than on its first row ({first_where}): "
                            f"{str(text)[:40]!r} vs {str(query['query'])[:40]!r}")
            continue
        # A query's tags are one set: a later row saying otherwise is not dropped in favour of the first
        for t in cols.tags:  # a tag blank on the first row takes its value from the first row that has one
            if _cell(row, t) not in (None, "") and t not in query["tags"]:
                query["tags"][t] = str(_cell(row, t))
        differ = [t for t in cols.tags if _cell(row, t) not in (None, "")
                  and str(_cell(row, t)) != query["tags"][t]]
        if differ:
            problems.append(f"{where}: query {key!r}: " + ", ".join(
                f"tag {t} {str(_cell(row, t))!r} here, {query['tags'][t]!r} on its first row ({first_where})"
                for t in differ) + "; a query has one value of each tag")
            continue
        if (mark := _answerable(_cell(row, cols.answerable) if cols.answerable in row else None)) is not None:
            if query.setdefault("answerable", mark) != mark:
                problems.append(f"{where}: query {key!r}: answerable {mark!r} here, {query['answerable']!r} on an "
                                f"earlier row; a query is answerable or not")
                continue
        doc = _cell(row, cols.doc)
        if doc in (None, ""):
            continue
        if cols.grade in row and _cell(row, cols.grade) in (None, ""):  # in a judging sheet, blank is "not judged"
            problems.append(f"{where}: query {key!r} document {doc!r}: the grade cell is empty; give the grade (or "
                            f"leave the document cell empty for a query without judgments)")
            continue
        grade = whole_number(_cell(row, cols.grade)) if cols.grade in row else 1
        evidence = []
        quote = _cell(row, cols.quote)
        start, end = whole_number(_cell(row, cols.start)), whole_number(_cell(row, cols.end))
        has_span = start not in (None, "") or end not in (None, "")
        if quote not in (None, "") and has_span:  # which one is the evidence would be a guess
            problems.append(f"{where}: query {key!r} document {doc!r}: a quote and a span on one row; give one")
            continue
        group = _cell(row, cols.group)
        group = None if group in (None, "") else group  # (the native reader names a group that is not text)
        if quote not in (None, ""):
            evidence.append({"quote": row.get(cols.quote)})  # the cell as written: spaces may be part of a quote
        elif has_span:
            evidence.append({"start": start, "end": end})
        if evidence and group is not None:
            evidence[0]["group"] = group
        same = next((r for r in query["relevant"] if r["doc"] == doc), None)
        if same is None:
            query["relevant"].append({"doc": doc, "grade": grade, "evidence": evidence,
                                      **({"group": group} if group is not None and not evidence else {})})
        elif not evidence and group is not None and same.get("group", group) != group:
            problems.append(f"{where}: query {key!r} document {doc!r}: judged without evidence in group {group!r} "
                            f"here, {same['group']!r} on an earlier row; give each group's evidence (quote or "
                            f"start/end)")
        elif same["grade"] != grade:
            problems.append(f"{where}: query {key!r} document {doc!r}: grade {grade!r} here, {same['grade']!r} on "
                            f"an earlier row; one judgment has one grade")
        else:
            same["evidence"] += evidence
            if not evidence and group is not None:
                same["group"] = group
    if problems:
        raise GoldSetError(f"{cfg.path}: {len(problems)} problem(s) in the golden set", problems[:50])
    return list(queries.values())


def looks_tabular(path: Path, text: str) -> str | None:
    """For a file read as JSONL that is not: "CSV"/"TSV" when its first line looks like a header of one, else
    None (so 49 "not valid JSON" lines become one line naming what the file is)."""
    first = next((line for line in text.split("\n") if line.strip()), "")
    if first.lstrip().startswith(("{", "[")):
        return None
    if path.suffix.lower() in (".csv", ".tsv"):
        return path.suffix[1:].upper()
    if first.count("\t") >= 1:
        return "TSV"
    if first.count(",") >= 1:
        return "CSV"
    return None
