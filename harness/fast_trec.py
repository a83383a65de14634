"""Fast readers for TREC files whose columns are separated by single spaces (or single tabs): pyarrow's
multithreaded CSV reader, and doc ids interned by hashing in C instead of sorting every row in Python.

Every reader here returns None when it cannot be sure of reading the file exactly as the line-by-line readers do
(pyarrow missing; other ASCII whitespace inside a line, such as a second space or a CR not ending a line; an empty
column; a ``#`` comment line; a control character or a character Python counts as whitespace; another column count,
as in a run with columns after the tag; a number that does not parse; a NaN score; a grade out of range; a
duplicate judgment); the caller then takes the exact reader, which also names the line of any problem. Like
trec_eval, only ASCII whitespace separates columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .ids import GRADE_LIMIT
from .runtable import ColumnarRun, Qrels, _offsets
from .textfile import is_gzip, open_binary

RUN_COLUMNS = ("query_id", "q0", "doc_id", "rank", "score", "tag")
QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "grade")


def _arrow():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    return pa, pc, pacsv


def _delimiter(path: Path) -> bytes:
    """A tab when the first line has one (a TSV export), else a space."""
    with open_binary(path) as fh:
        return b"\t" if b"\t" in fh.readline() else b" "


# Bytes no line of a clean file holds, whatever the delimiter: ASCII controls other than LF, CR, tab (the tab is
# checked with the other whitespace below).
_CONTROL_BYTES = bytes(range(0x00, 0x09)) + bytes(range(0x0b, 0x0d)) + bytes(range(0x0e, 0x20)) + b"\x7f"
# UTF-8 of U+0080..U+00A0 (C1 controls, NEL, NBSP) and of the other characters Python's str.split() splits on.
_ODD_UTF8 = re.compile(rb"\xc2[\x80-\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80")


def _only_delimiter_separates(path: Path, delimiter: bytes) -> bool:
    """No ASCII whitespace but the delimiter inside lines, no CR except in CRLF line ends, no empty column, no
    comment line, no control character and no character that Python (but not trec_eval) splits on: then splitting
    on the delimiter is splitting on whitespace, as trec_eval and the line readers do, and every id is one."""
    others = bytes(c for c in b" \t\v\f" if c != delimiter[0]) + _CONTROL_BYTES
    # Patterns that span a line end or two delimiters; each block is also checked joined to the previous one's end.
    joins = (delimiter * 2, b"\n" + delimiter, delimiter + b"\n", delimiter + b"\r", b"\n#")
    previous = b"\n"  # the file starts like a line
    with open_binary(path) as fh:
        while block := fh.read(1 << 24):
            if len(block.translate(None, others)) != len(block):
                return False
            # A CR must end a line. One split across two blocks fails this check: the exact reader then reads it.
            if b"\r" in block and block.count(b"\r") != block.count(b"\r\n"):
                return False
            seam = previous + block[:3]
            if any(j in block or j in seam for j in joins):
                return False
            if not block.isascii() and (_ODD_UTF8.search(block) or _ODD_UTF8.search(previous + block[:2])):
                return False
            previous = block[-3:]
    return not previous.endswith(delimiter)
def _read_table(path: Path, columns: Sequence[str], types: dict):
    """The typed ``columns`` of a file delimited by single spaces (or single tabs) as a pyarrow table, or None
    (see the module docstring)."""
    from concurrent.futures import ThreadPoolExecutor

    pa, _, pacsv = _arrow()
    if path.stat().st_size == 0:
        return None
    try:
        delimiter = _delimiter(path)
    except (OSError, EOFError):  # a broken gzip file: the line reader says what is wrong with it
        return None
    options = dict(
        read_options=pacsv.ReadOptions(column_names=list(columns)),
        parse_options=pacsv.ParseOptions(delimiter=delimiter.decode(), quote_char=False, double_quote=False,
                                         escape_char=False, newlines_in_values=False, ignore_empty_lines=True),
        convert_options=pacsv.ConvertOptions(column_types=types, include_columns=list(types), null_values=[],
                                             strings_can_be_null=False))
    # The compression is said explicitly: arrow would otherwise guess it from any suffix.
    source = pa.input_stream(str(path), compression="gzip") if is_gzip(path) else pa.memory_map(str(path))
    with source, ThreadPoolExecutor(1) as pool:
        parsing = pool.submit(pacsv.read_csv, source, **options)
        try:
            clean = _only_delimiter_separates(path, delimiter)  # checked while arrow parses (it releases the GIL)
        except (OSError, EOFError):
            clean = False
        try:
            table = parsing.result()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
            return None
    if not clean or table.num_rows == 0 or any(table.column(c).null_count for c in types):
        return None
    return table


def _run_table(path: Path):
    pa, pc, _ = _arrow()
    table = _read_table(path, RUN_COLUMNS, {"query_id": pa.string(), "doc_id": pa.string(), "rank": pa.int64(),
                                            "score": pa.float64()})
    if table is None or pc.any(pc.is_nan(table.column("score"))).as_py():
        return None  # a NaN score: the line reader names its line
    return table


def _qrels_table(path: Path):
    pa, pc, _ = _arrow()
    table = _read_table(path, QRELS_COLUMNS, {"query_id": pa.string(), "doc_id": pa.string(), "grade": pa.int64()})
    if table is None:
        return None
    low, high = pc.min_max(table.column("grade")).values()
    if not -GRADE_LIMIT < low.as_py() <= high.as_py() < GRADE_LIMIT:
        return None  # a grade out of range: the line reader names its line
    return table


def _indices(encoded) -> np.ndarray:
    """The codes (int32, as arrow gives them) of a dictionary-encoded chunked array; its chunks share one dictionary."""
    parts = [c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks]
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def _dictionary(encoded):
    pa = _arrow()[0]
    return encoded.chunk(0).dictionary if encoded.num_chunks else pa.array([], pa.string())


def _positions(dictionary) -> np.ndarray:
    """Each entry's position when the dictionary is sorted. Arrow orders strings byte-wise, which for UTF-8 is
    Python's (and trec_eval's) order."""
    pc = _arrow()[1]
    order = pc.sort_indices(dictionary).to_numpy()
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return position


def _objects(array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False).astype(object)


def _shared_vocab(columns: Sequence, meanwhile: Sequence[Callable] = ()):
    """One vocabulary for several string columns, in order of first appearance; each entry's position in sorted
    order; each column's codes into the vocabulary; and the results of ``meanwhile``: work that needs no codes,
    done on this thread while another hashes (arrow releases the GIL). The codes are arrow's own: nothing is
    remapped row by row; the engine looks a code's sorted position up only where scores tie."""
    from concurrent.futures import ThreadPoolExecutor

    pa, pc, _ = _arrow()
    joined = pa.chunked_array([chunk for column in columns for chunk in column.chunks], pa.string())
    with ThreadPoolExecutor(1) as pool:
        hashing = pool.submit(pc.dictionary_encode, joined)
        others = [fn() for fn in meanwhile]
        encoded = hashing.result()
    dictionary = _dictionary(encoded)
    codes = _indices(encoded)
    return (_objects(dictionary), _positions(dictionary), np.split(codes, np.cumsum([len(c) for c in columns])[:-1]),
            others)


def _queries(column):
    """(query ids in order of first appearance as an arrow array, each row's code into them, whether each query's
    rows are together)."""
    pc = _arrow()[1]
    encoded = pc.dictionary_encode(column)
    codes = _indices(encoded)
    dictionary = _dictionary(encoded)
    return dictionary, codes, int(np.count_nonzero(codes[1:] != codes[:-1])) == len(dictionary) - 1


def _columnar_run(table, doc_vocab: np.ndarray, doc_order: np.ndarray, doc_codes: np.ndarray,
                  queries) -> ColumnarRun:
    scores = np.ascontiguousarray(table.column("score").to_numpy(), dtype=np.float64)
    ranks = np.ascontiguousarray(table.column("rank").to_numpy(), dtype=np.int64)
    dictionary, qcodes, together = queries
    if together:  # the usual case: no sort, queries in order of appearance
        query_ids = _objects(dictionary)
    else:  # interleaved queries: grouped, in sorted order of query id, each keeping its file order
        position = _positions(dictionary)
        query_ids = np.empty(len(position), dtype=object)
        query_ids[position] = _objects(dictionary)
        qcodes = position[qcodes]
        order = np.argsort(qcodes, kind="stable")
        qcodes, doc_codes, scores, ranks = qcodes[order], doc_codes[order], scores[order], ranks[order]
    lengths = np.bincount(qcodes, minlength=len(query_ids))
    return ColumnarRun(query_ids, _offsets(lengths), doc_vocab, doc_codes, scores, ranks, doc_order)


def _qrels(table, doc_vocab: np.ndarray, doc_codes: np.ndarray, queries) -> Qrels | None:
    """Queries by first appearance, each query's documents in file order (what the line reader gives); None on a
    duplicate judgment, which the line reader reports with its line."""
    dictionary, qcodes, _ = queries
    pairs = np.sort(qcodes.astype(np.int64) * max(len(doc_vocab), 1) + doc_codes)
    if (pairs[1:] == pairs[:-1]).any():
        return None
    order = np.argsort(qcodes, kind="stable")
    query_ids = _objects(dictionary)
    grades = table.column("grade").to_numpy().astype(np.int64)[order]
    codes = doc_codes[order]
    return Qrels(query_ids, _offsets(np.bincount(qcodes, minlength=len(query_ids))), doc_vocab[codes], grades,
                 doc_vocab, codes)


def _interned(table):
    """(doc vocabulary, its sorted positions, each row's doc code, the query layout) of one table."""
    vocab, order, (codes,), (queries,) = _shared_vocab([table.column("doc_id")],
                                                       meanwhile=[lambda: _queries(table.column("query_id"))])
    return vocab, order, codes, queries


def read_run(path: Path) -> ColumnarRun | None:
    table = _run_table(path) if _arrow() is not None else None
    return None if table is None else _columnar_run(table, *_interned(table))


def read_qrels(path: Path) -> Qrels | None:
    """TREC qrels (``qid iteration docid grade``)."""
    table = _qrels_table(path) if _arrow() is not None else None
    if table is None:
        return None
    vocab, _, codes, queries = _interned(table)
    return _qrels(table, vocab, codes, queries)


def read_qrels_and_run(qrels_path: Path, run_path: Path) -> tuple[Qrels, ColumnarRun] | None:
    """Both files at once, their doc ids interned together: the engine then joins them on integer codes without
    looking a string up again."""
    if _arrow() is None:
        return None
    qrels_table = _qrels_table(qrels_path)
    run_table = _run_table(run_path) if qrels_table is not None else None
    if run_table is None:
        return None
    vocab, order, (qrels_codes, run_codes), (qrels_queries, run_queries) = _shared_vocab(
        [qrels_table.column("doc_id"), run_table.column("doc_id")],
        meanwhile=[lambda: _queries(qrels_table.column("query_id")), lambda: _queries(run_table.column("query_id"))])
    qrels = _qrels(qrels_table, vocab, qrels_codes, qrels_queries)
    if qrels is None:
        return None
    return qrels, _columnar_run(run_table, vocab, order, run_codes, run_queries)
