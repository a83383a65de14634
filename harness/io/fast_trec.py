"""Fast readers for TREC files whose columns are separated by single spaces (or single tabs): pyarrow's CSV reader,
and doc ids interned by hashing in C instead of sorting every row in Python. A run is parsed in blocks
(``run_stream``) and kept as codes, scores and ranks only, so a 1M-query run never sits in memory as text; qrels
(much smaller) are read whole with the multithreaded reader. Here: the qrels, the vocabularies and the columnar
run and qrels the engine reads.

Every reader here returns None when it cannot be sure of reading the file exactly as the line-by-line readers do
(pyarrow missing; other ASCII whitespace inside a line, such as a second space or a CR not ending a line; an empty
column; a ``#`` comment line; a control character or a character Python counts as whitespace; another column count,
as in a run with columns after the tag; a number that does not parse; a NaN or infinite score; a grade out of range; a
duplicate judgment); the caller then takes the exact reader, which also names the line of any problem. Like
trec_eval, only ASCII whitespace separates columns."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..core.ids import GRADE_LIMIT
from ..core.runtable import Run, Qrels, offsets_of
from .textfile import GZIP_ERRORS, open_binary
from . import packed_ids
from .arrow_text import (Declined, arrow, arrow_source, check_ids, csv_options, delimiter_of, dictionary_of,
                         filler_type, has_empty, indices_of, sorted_positions)
from .run_stream import LongIds, Streamed, stream_run
from .trec_blocks import line_blocks, memory_pool, numpy_of, one_chunk, only_delimiter_separates, uint64_array

QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "grade")

# Columns read only to see that they are not empty: as bytes (no UTF-8 check, no hashing), they cost little.
_FILLER = ("q0", "tag", "iteration")


def _only_delimiter_separates(path: Path, delimiter: bytes) -> bool:
    """No ASCII whitespace but the delimiter inside lines, and no CR except in CRLF line ends: then splitting on
    the delimiter is splitting on whitespace, as trec_eval and the line readers do. (Empty columns, control
    characters and comments are looked for in the parsed columns, where it is cheaper: see ``check_ids``.)
    The run reader checks its blocks as it reads them; this is the same check over a whole file (the qrels)."""
    with open_binary(path) as fh:
        return all(only_delimiter_separates(block, delimiter) for block in line_blocks(fh.read, 1 << 24, str(path)))


def _scan(path: Path, delimiter: bytes) -> bool:
    try:
        return _only_delimiter_separates(path, delimiter)
    except (OSError, *GZIP_ERRORS):
        return False


def _read_table(path: Path, columns: Sequence[str], types: dict):
    """The typed ``columns`` of a file delimited by single spaces (or single tabs) as a pyarrow table, or None
    (see the module docstring)."""
    from concurrent.futures import ThreadPoolExecutor

    pa, _, pacsv = arrow()
    delimiter = delimiter_of(path)
    if delimiter is None:
        return None
    options = csv_options(columns, types, delimiter)
    with arrow_source(path) as source, ThreadPoolExecutor(1) as pool:
        parsing = pool.submit(pacsv.read_csv, source, memory_pool=memory_pool(), **options)
        clean = _scan(path, delimiter)  # checked while arrow parses (it releases the GIL)
        try:
            table = parsing.result()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
            return None
    if not clean or table.num_rows == 0 or any(table.column(c).null_count for c in types):
        return None
    # An empty column (two delimiters in a row, or one at a line's end) is a line of five to the line reader.
    if any(has_empty(table.column(c)) for c in _FILLER if c in types):
        return None
    return table


def _qrels_table(path: Path):
    pa, pc, _ = arrow()
    table = _read_table(path, QRELS_COLUMNS, {"query_id": pa.string(), "doc_id": pa.string(), "grade": pa.int64(),
                                              "iteration": filler_type()})
    if table is None:
        return None
    low, high = pc.min_max(table.column("grade")).values()
    if not -GRADE_LIMIT < low.as_py() <= high.as_py() < GRADE_LIMIT:
        return None  # a grade out of range: the line reader names its line
    return table


def _objects(array) -> np.ndarray:
    return np.array(array.to_pylist(), dtype=object)  # not to_numpy: see trec_blocks.numpy_of


def _shared_vocab(columns: Sequence, meanwhile: Sequence[Callable] = ()):
    """One vocabulary for several string columns, in order of first appearance; each entry's position in sorted
    order; each column's codes into the vocabulary; and the results of ``meanwhile``: work that needs no codes,
    done on this thread while another hashes (arrow releases the GIL). The codes are arrow's own: nothing is
    remapped row by row; the engine looks a code's sorted position up only where scores tie."""
    from concurrent.futures import ThreadPoolExecutor

    pa, pc, _ = arrow()
    joined = pa.chunked_array([chunk for column in columns for chunk in column.chunks], pa.string())
    with ThreadPoolExecutor(1) as pool:
        hashing = pool.submit(pc.dictionary_encode, joined)
        others = [fn() for fn in meanwhile]
        encoded = hashing.result()
    dictionary = dictionary_of(encoded)
    check_ids(dictionary, first_column=False)
    codes = indices_of(encoded)
    return (_objects(dictionary), sorted_positions(dictionary),
            np.split(codes, np.cumsum([len(c) for c in columns])[:-1]), others)


def _queries(column):
    """(query ids in order of first appearance as an arrow array, each row's code into them, whether each query's
    rows are together)."""
    pc = arrow()[1]
    encoded = pc.dictionary_encode(column)
    codes = indices_of(encoded)
    dictionary = dictionary_of(encoded)
    check_ids(dictionary, first_column=True)
    return dictionary, codes, int(np.count_nonzero(codes[1:] != codes[:-1])) == len(dictionary) - 1


def _columnar_run(run: Streamed, doc_vocab: np.ndarray, doc_order: np.ndarray) -> Run:
    doc_codes, scores, ranks = run.doc_codes, run.scores, run.ranks
    dictionary, qcodes, together = run.queries
    if together:  # the usual case: no sort, queries in order of appearance
        query_ids = _objects(dictionary)
        # Each query's rows are one run: its length is where the next starts (bincount would copy the codes
        # to int64 first).
        starts = np.flatnonzero(qcodes[1:] != qcodes[:-1]) + 1
        return Run(query_ids, np.concatenate([[0], starts, [len(qcodes)]]).astype(np.int64), doc_vocab,
                           doc_codes, scores, ranks, doc_order)
    else:  # interleaved queries: grouped, in sorted order of query id, each keeping its file order
        position = sorted_positions(dictionary)
        query_ids = np.empty(len(position), dtype=object)
        query_ids[position] = _objects(dictionary)
        qcodes = position[qcodes]
        order = np.argsort(qcodes, kind="stable")
        qcodes, doc_codes, scores, ranks = qcodes[order], doc_codes[order], scores[order], ranks[order]
    lengths = np.bincount(qcodes, minlength=len(query_ids))
    return Run(query_ids, offsets_of(lengths), doc_vocab, doc_codes, scores, ranks, doc_order)


def _qrels(table, doc_vocab: np.ndarray, doc_codes: np.ndarray, queries) -> Qrels | None:
    """Queries by first appearance, each query's documents in file order (what the line reader gives); None on a
    duplicate judgment, which the line reader reports with its line."""
    dictionary, qcodes, together = queries
    pairs = np.sort(qcodes.astype(np.int64) * max(len(doc_vocab), 1) + doc_codes)
    if (pairs[1:] == pairs[:-1]).any():
        return None
    query_ids = _objects(dictionary)
    grades = numpy_of(table.column("grade")).astype(np.int64)
    codes = doc_codes
    if not together:  # each query's judgments gathered, in file order (qrels files usually list them together)
        order = np.argsort(qcodes, kind="stable")
        grades, codes = grades[order], doc_codes[order]
    return Qrels(query_ids, offsets_of(np.bincount(qcodes, minlength=len(query_ids))), doc_vocab[codes], grades,
                 doc_vocab, codes)


def _interned(table):
    """(doc vocabulary, its sorted positions, each row's doc code, the query layout) of one table."""
    vocab, order, (codes,), (queries,) = _shared_vocab([table.column("doc_id")],
                                                       meanwhile=[lambda: _queries(table.column("query_id"))])
    return vocab, order, codes, queries


def _or_none(reader: Callable) -> Callable:
    @functools.wraps(reader)
    def read(*paths: Path):
        try:
            return reader(*paths)
        except Declined:
            return None
    return read


@_or_none
def read_run(path: Path) -> Run | None:
    if arrow() is None:
        return None
    try:  # packed doc ids first; the rare run whose short ids give way to long ones is read twice
        run = stream_run(path, packed=True)
    except LongIds:
        run = stream_run(path)
    if run is None:
        return None
    vocab, order = _vocab_and_order(run)
    return _columnar_run(run, vocab, order)


def _vocab_and_order(run: Streamed) -> tuple[np.ndarray, np.ndarray]:
    """The doc vocabulary checked and as Python strings, and its sorted positions, sorted on another thread meanwhile
    (NumPy and arrow sort without the GIL): the packed keys when the run has them, else the strings."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        if run.keys is not None:
            order = pool.submit(packed_ids.sorted_positions, run.keys)
        else:
            order = pool.submit(sorted_positions, run.docs)
        check_ids(run.docs, first_column=False)
        vocab = _objects(run.docs)
        return vocab, order.result()


@_or_none
def read_qrels(path: Path) -> Qrels | None:
    """TREC qrels (``qid iteration docid grade``)."""
    table = _qrels_table(path) if arrow() is not None else None
    if table is None:
        return None
    vocab, _, codes, queries = _interned(table)
    return _qrels(table, vocab, codes, queries)


@_or_none
def read_qrels_coded(path: Path) -> tuple[Qrels, object, object] | None:
    """TREC qrels whose ``doc_ids`` are codes (int) into a doc vocabulary, with that vocabulary and the query ids
    as arrow strings: the vocabulary is the docs' packed keys (``io.packed_ids``, sorted) when every one packs, else
    a pyarrow StringArray. No Python string a judgment: what a run read in batches is joined against
    (``metrics.streamed``)."""
    table = _qrels_table(path) if arrow() is not None else None
    if table is None:
        return None
    docs = one_chunk(table.column("doc_id"))
    keys = packed_ids.pack(docs)
    if keys is None:
        encoded = arrow()[1].dictionary_encode(docs)
        vocab, codes = encoded.dictionary, numpy_of(encoded.indices)
        check_ids(vocab, first_column=False)
    else:
        vocab, codes = packed_ids.sorted_codes(keys)
        if not packed_ids.printable(vocab):
            check_ids(packed_ids.unpack(vocab), first_column=False)
    queries = _queries(table.column("query_id"))
    qrels = _qrels(table, np.arange(len(vocab)), codes, queries)
    return None if qrels is None else (qrels, vocab, queries[0])


@_or_none
def read_qrels_and_run(qrels_path: Path, run_path: Path) -> tuple[Qrels, Run] | None:
    """Both files, their doc ids interned together (the qrels' first, then the run's new ones, block by block): the
    engine then joins them on integer codes without looking a string up again."""
    if arrow() is None:
        return None
    pc = arrow()[1]
    qrels_table = _qrels_table(qrels_path)
    if qrels_table is None:
        return None
    run, qrels_codes = None, None
    keys = packed_ids.pack(one_chunk(qrels_table.column("doc_id")))
    if keys is not None:  # packed doc ids (see ``io.packed_ids``): the qrels' keys seed the run's vocabulary
        encoded = pc.dictionary_encode(uint64_array(keys), memory_pool=memory_pool())
        try:
            run, qrels_codes = stream_run(run_path, seed=encoded.dictionary, packed=True), numpy_of(encoded.indices)
        except LongIds:  # the run has a long id: it is read again with its ids interned as strings
            pass
    if qrels_codes is None:
        encoded = pc.dictionary_encode(qrels_table.column("doc_id"))
        run, qrels_codes = stream_run(run_path, seed=dictionary_of(encoded)), indices_of(encoded)
    if run is None:
        return None
    vocab, order = _vocab_and_order(run)
    qrels = _qrels(qrels_table, vocab, qrels_codes, _queries(qrels_table.column("query_id")))
    if qrels is None:
        return None
    return qrels, _columnar_run(run, vocab, order)
