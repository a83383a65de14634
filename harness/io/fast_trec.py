"""Fast readers for TREC files whose columns are separated by single spaces (or single tabs): pyarrow's CSV reader,
and doc ids interned by hashing in C instead of sorting every row in Python. A run is parsed in blocks
(``BLOCK_BYTES``) and kept as codes, scores and ranks only, so a 1M-query run never sits in memory as text; qrels
(much smaller) are read whole with the multithreaded reader.

Every reader here returns None when it cannot be sure of reading the file exactly as the line-by-line readers do
(pyarrow missing; other ASCII whitespace inside a line, such as a second space or a CR not ending a line; an empty
column; a ``#`` comment line; a control character or a character Python counts as whitespace; another column count,
as in a run with columns after the tag; a number that does not parse; a NaN score; a grade out of range; a
duplicate judgment); the caller then takes the exact reader, which also names the line of any problem. Like
trec_eval, only ASCII whitespace separates columns."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..core.ids import GRADE_LIMIT
from ..core.runtable import ColumnarRun, Qrels, _offsets
from ..core.textfile import is_gzip, open_binary
from . import packed_ids
from .trec_blocks import (join_vocabularies, line_blocks, memory_pool, numpy_of, one_chunk, only_delimiter_separates,
                          uint64_array)

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


def _only_delimiter_separates(path: Path, delimiter: bytes) -> bool:
    """No ASCII whitespace but the delimiter inside lines, and no CR except in CRLF line ends: then splitting on
    the delimiter is splitting on whitespace, as trec_eval and the line readers do. (Empty columns, control
    characters and comments are looked for in the parsed columns, where it is cheaper: see ``_ids_are_clean``.)
    The run reader checks its blocks as it reads them; this is the same check over a whole file (the qrels)."""
    with open_binary(path) as fh:
        return all(only_delimiter_separates(block, delimiter) for block in line_blocks(fh.read, 1 << 24))


# Columns read only to see that they are not empty: as bytes (no UTF-8 check, no hashing), they cost little.
_FILLER = ("q0", "tag", "iteration")
# In an id: a control character, or a character Python's str.split() splits on but trec_eval does not (NBSP, U+2028).
_ODD_ID = r"[\x00-\x1f\x7f-\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"


class _Declined(Exception):
    """Raised where the fast path finds something only the line reader can judge; the public readers return None."""


class _LongIds(Exception):
    """Raised where a block of a run read with packed doc ids has an id that does not pack: the run is read again
    with its ids interned as strings."""


def _filler_type():
    return _arrow()[0].binary()


def _has_empty(strings) -> bool:
    pc = _arrow()[1]
    return len(strings) > 0 and pc.min(pc.binary_length(strings)).as_py() == 0


def _ids_are_clean(dictionary, first_column: bool) -> None:
    """Every distinct id of a column: none empty, none holding an odd character, none (in the first column)
    starting a ``#`` comment line. Checked on the distinct ids, not on every row."""
    pc = _arrow()[1]
    if len(dictionary) == 0:
        return
    if _has_empty(dictionary) or (first_column and pc.any(pc.starts_with(dictionary, "#")).as_py()):
        raise _Declined
    # Printable ASCII throughout (the usual case) is quick to see; only other ids need the regex.
    if not pc.all(pc.ascii_is_printable(dictionary)).as_py() and pc.any(
            pc.match_substring_regex(dictionary, _ODD_ID)).as_py():
        raise _Declined


def _csv_options(columns: Sequence[str], types: dict, delimiter: bytes, **read) -> dict:
    pacsv = _arrow()[2]
    return dict(
        read_options=pacsv.ReadOptions(column_names=list(columns), **read),
        parse_options=pacsv.ParseOptions(delimiter=delimiter.decode(), quote_char=False, double_quote=False,
                                         escape_char=False, newlines_in_values=False, ignore_empty_lines=True),
        convert_options=pacsv.ConvertOptions(column_types=types, include_columns=list(types), null_values=[],
                                             strings_can_be_null=False))


def _source(path: Path):
    pa = _arrow()[0]
    # The compression is said explicitly: arrow would otherwise guess it from any suffix.
    return pa.input_stream(str(path), compression="gzip") if is_gzip(path) else pa.OSFile(str(path))


def _scan(path: Path, delimiter: bytes) -> bool:
    try:
        return _only_delimiter_separates(path, delimiter)
    except (OSError, EOFError):
        return False


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
    options = _csv_options(columns, types, delimiter)
    with _source(path) as source, ThreadPoolExecutor(1) as pool:
        parsing = pool.submit(pacsv.read_csv, source, memory_pool=memory_pool(), **options)
        clean = _scan(path, delimiter)  # checked while arrow parses (it releases the GIL)
        try:
            table = parsing.result()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
            return None
    if not clean or table.num_rows == 0 or any(table.column(c).null_count for c in types):
        return None
    # An empty column (two delimiters in a row, or one at a line's end) is a line of five to the line reader.
    if any(_has_empty(table.column(c)) for c in _FILLER if c in types):
        return None
    return table


def _qrels_table(path: Path):
    pa, pc, _ = _arrow()
    table = _read_table(path, QRELS_COLUMNS, {"query_id": pa.string(), "doc_id": pa.string(), "grade": pa.int64(),
                                              "iteration": _filler_type()})
    if table is None:
        return None
    low, high = pc.min_max(table.column("grade")).values()
    if not -GRADE_LIMIT < low.as_py() <= high.as_py() < GRADE_LIMIT:
        return None  # a grade out of range: the line reader names its line
    return table


# A run is parsed this many bytes at a time: memory holds one block's text (two while the next is parsed), never the
# whole file's, plus ~24 bytes a row (doc and query codes, score, rank) and each block's distinct ids.
BLOCK_BYTES = 1 << 26


@dataclass
class _Streamed:
    docs: object  # pa.StringArray: the doc vocabulary, in order of first appearance (after the seed's entries)
    doc_codes: np.ndarray  # (n,) int32
    queries: tuple  # as ``_queries`` gives it
    scores: np.ndarray  # (n,) float64
    ranks: np.ndarray  # (n,) int64
    keys: np.ndarray | None = None  # (V,) uint64: the vocabulary's packed ids, when the run was read packed


def _doc_codes(batch, pool, packed: bool) -> tuple:
    """When ``packed``: (each row's packed id, None), or ``_LongIds`` when an id does not pack; else (each row's
    code into the block's own string dictionary, that dictionary)."""
    pc = _arrow()[1]
    docs = one_chunk(batch.column("doc_id"))
    if packed:
        keys = packed_ids.pack(docs)
        if keys is None:
            raise _LongIds
        return keys, None
    encoded = pc.dictionary_encode(docs, memory_pool=pool)
    return numpy_of(encoded.indices), encoded.dictionary


def _parse_block(block, options: dict, packed: bool) -> tuple:
    """One block's columns: its doc codes and vocabulary (``_doc_codes``), its query ids dictionary-encoded, scores
    and ranks. Blocks are parsed and hashed on worker threads, two at a time (arrow
    releases the GIL), while the main thread reads and checks the next block's bytes. Arrow's own multithreaded
    parse is off: on 2 cores its threads spent more time in the kernel than they saved."""
    pa, pc, pacsv = _arrow()
    pool = memory_pool()
    batch = pacsv.read_csv(pa.py_buffer(block.view()), memory_pool=pool, **options)
    if any(batch.column(c).null_count for c in batch.column_names) or any(
            _has_empty(batch.column(c)) for c in ("q0", "tag")):
        raise _Declined
    if pc.any(pc.is_nan(batch.column("score"))).as_py():
        raise _Declined  # a NaN score: the line reader names its line
    # A block's query ids are mostly its own (a run lists each query's hits together): their dictionaries are
    # unified once, at the end.
    return (*_doc_codes(batch, pool, packed), pc.dictionary_encode(one_chunk(batch.column("query_id")),
                                                                   memory_pool=pool),
            numpy_of(batch.column("score")), numpy_of(batch.column("rank")))


def _stream_run(path: Path, seed=None, packed: bool = False) -> _Streamed | None:
    """A run read block by block, its doc ids coded into ``seed`` (a vocabulary, extended) or a new vocabulary;
    None as the module docstring says. ``packed``: the ids are interned as packed keys (``io.packed_ids``; ``seed``
    then holds keys too), and ``_LongIds`` is raised when one does not pack."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    pa = _arrow()[0]
    if path.stat().st_size == 0:
        return None
    try:
        delimiter = _delimiter(path)
    except (OSError, EOFError):  # a broken gzip file: the line reader says what is wrong with it
        return None
    types = {"query_id": pa.string(), "doc_id": pa.string(), "rank": pa.int64(), "score": pa.float64(),
             "q0": _filler_type(), "tag": _filler_type()}
    size = BLOCK_BYTES
    # One chunk a block (arrow's block size is the chunk size); no threads of arrow's own (see ``_parse_block``).
    options = _csv_options(RUN_COLUMNS, types, delimiter, block_size=size + (size >> 2), use_threads=False)
    parsed: list[tuple] = []  # what ``_parse_block`` gives, in file order
    workers = 2
    with _source(path) as source, ThreadPoolExecutor(workers) as pool:
        parsing: deque = deque()  # (future, bytes of its block)
        try:
            for block in line_blocks(source.read, size):
                if not only_delimiter_separates(block, delimiter):
                    return None
                # At most ``workers`` blocks' worth of text in flight, plus the block just read. Counted in bytes,
                # not blocks: the small block of the one line that spans two reads would otherwise take a worker's
                # place in the count, and the big blocks would be parsed one at a time.
                while parsing and sum(n for _, n in parsing) >= workers * size:
                    parsed.append(parsing.popleft()[0].result())
                parsing.append((pool.submit(_parse_block, block, options, packed), block.end - block.start))
            while parsing:
                parsed.append(parsing.popleft()[0].result())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, EOFError):
            return None
        finally:
            for future, _ in parsing:
                future.cancel()
    if not sum(len(block[0]) for block in parsed):
        return None
    local_codes, dictionaries, query_codes, scores, ranks = map(list, zip(*parsed))
    parsed.clear()
    with ThreadPoolExecutor(1) as pool:  # the doc ids are interned (in arrow, without the GIL) while ...
        # uint64 keys hash cheaply enough to intern every row in one table: no per-block pass to join
        interning = (pool.submit(_joined_keys, seed, local_codes) if packed
                     else pool.submit(join_vocabularies, seed, dictionaries, local_codes))
        # ... the query ids, scores and ranks are put together here
        unified = pa.chunked_array(query_codes).unify_dictionaries(memory_pool=memory_pool())
        query_vocab = _dictionary(unified)
        _ids_are_clean(query_vocab, first_column=True)
        qcodes = _indices(unified)
        together = int(np.count_nonzero(qcodes[1:] != qcodes[:-1])) == len(query_vocab) - 1
        scores = np.concatenate(scores).astype(np.float64, copy=False)
        ranks = np.concatenate(ranks).astype(np.int64, copy=False)
        docs, doc_codes = interning.result()
    keys = None
    if packed:
        keys, docs = docs, packed_ids.unpack(docs)
    return _Streamed(docs, doc_codes, (query_vocab, qcodes, together), scores, ranks, keys)


def _joined_keys(seed, blocks: list) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys: ``seed``'s (a uint64 arrow array, or None) first, in order, then the blocks' in order of
    first appearance; each row's code into them) from each block's packed keys. The list is emptied as it is used.
    Measured on 10M rows: one table over every row beat a table per block (on the parsing threads) joined after,
    6.2 s against 6.9 s for the whole read."""
    pa, pc, _ = _arrow()
    chunks = [*([] if seed is None else [seed]), *map(uint64_array, blocks)]
    blocks.clear()
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, pa.uint64()), memory_pool=memory_pool())
    del chunks
    seeded = 0 if seed is None else len(seed)
    return numpy_of(_dictionary(encoded)), _indices(encoded)[seeded:].astype(np.int32, copy=False)


def _indices(encoded) -> np.ndarray:
    """The codes (int32, as arrow gives them) of a dictionary-encoded chunked array; its chunks share one dictionary."""
    parts = [numpy_of(c.indices) for c in encoded.chunks]
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def _dictionary(encoded):
    pa = _arrow()[0]
    return encoded.chunk(0).dictionary if encoded.num_chunks else pa.array([], pa.string())


def _positions(dictionary) -> np.ndarray:
    """Each entry's position when the dictionary is sorted. Arrow orders strings byte-wise, which for UTF-8 is
    Python's (and trec_eval's) order."""
    pc = _arrow()[1]
    order = numpy_of(pc.sort_indices(dictionary))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return position


def _objects(array) -> np.ndarray:
    return np.array(array.to_pylist(), dtype=object)  # not to_numpy: see trec_blocks.numpy_of


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
    _ids_are_clean(dictionary, first_column=False)
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
    _ids_are_clean(dictionary, first_column=True)
    return dictionary, codes, int(np.count_nonzero(codes[1:] != codes[:-1])) == len(dictionary) - 1


def _columnar_run(run: _Streamed, doc_vocab: np.ndarray, doc_order: np.ndarray) -> ColumnarRun:
    doc_codes, scores, ranks = run.doc_codes, run.scores, run.ranks
    dictionary, qcodes, together = run.queries
    if together:  # the usual case: no sort, queries in order of appearance
        query_ids = _objects(dictionary)
        # Each query's rows are one run: its length is where the next starts (bincount would copy the codes
        # to int64 first).
        starts = np.flatnonzero(qcodes[1:] != qcodes[:-1]) + 1
        return ColumnarRun(query_ids, np.concatenate([[0], starts, [len(qcodes)]]).astype(np.int64), doc_vocab,
                           doc_codes, scores, ranks, doc_order)
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
    return Qrels(query_ids, _offsets(np.bincount(qcodes, minlength=len(query_ids))), doc_vocab[codes], grades,
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
        except _Declined:
            return None
    return read


@_or_none
def read_run(path: Path) -> ColumnarRun | None:
    if _arrow() is None:
        return None
    try:  # packed doc ids first; the rare run whose short ids give way to long ones is read twice
        run = _stream_run(path, packed=True)
    except _LongIds:
        run = _stream_run(path)
    if run is None:
        return None
    vocab, order = _vocab_and_order(run)
    return _columnar_run(run, vocab, order)


def _vocab_and_order(run: _Streamed) -> tuple[np.ndarray, np.ndarray]:
    """The doc vocabulary checked and as Python strings, and its sorted positions, sorted on another thread meanwhile
    (NumPy and arrow sort without the GIL): the packed keys when the run has them, else the strings."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        if run.keys is not None:
            order = pool.submit(packed_ids.sorted_positions, run.keys)
        else:
            order = pool.submit(_positions, run.docs)
        _ids_are_clean(run.docs, first_column=False)
        vocab = _objects(run.docs)
        return vocab, order.result()


@_or_none
def read_qrels(path: Path) -> Qrels | None:
    """TREC qrels (``qid iteration docid grade``)."""
    table = _qrels_table(path) if _arrow() is not None else None
    if table is None:
        return None
    vocab, _, codes, queries = _interned(table)
    return _qrels(table, vocab, codes, queries)


@_or_none
def read_qrels_and_run(qrels_path: Path, run_path: Path) -> tuple[Qrels, ColumnarRun] | None:
    """Both files, their doc ids interned together (the qrels' first, then the run's new ones, block by block): the
    engine then joins them on integer codes without looking a string up again."""
    if _arrow() is None:
        return None
    pc = _arrow()[1]
    qrels_table = _qrels_table(qrels_path)
    if qrels_table is None:
        return None
    run, qrels_codes = None, None
    keys = packed_ids.pack(one_chunk(qrels_table.column("doc_id")))
    if keys is not None:  # packed doc ids (see ``io.packed_ids``): the qrels' keys seed the run's vocabulary
        encoded = pc.dictionary_encode(uint64_array(keys), memory_pool=memory_pool())
        try:
            run, qrels_codes = _stream_run(run_path, seed=encoded.dictionary, packed=True), numpy_of(encoded.indices)
        except _LongIds:  # the run has a long id: it is read again with its ids interned as strings
            pass
    if qrels_codes is None:
        encoded = pc.dictionary_encode(qrels_table.column("doc_id"))
        run, qrels_codes = _stream_run(run_path, seed=_dictionary(encoded)), _indices(encoded)
    if run is None:
        return None
    vocab, order = _vocab_and_order(run)
    qrels = _qrels(qrels_table, vocab, qrels_codes, _queries(qrels_table.column("query_id")))
    if qrels is None:
        return None
    return qrels, _columnar_run(run, vocab, order)
