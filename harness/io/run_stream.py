"""A TREC run read block by block (the fast run reader of ``fast_trec``): 64 MB blocks of whole lines, checked as
they are read and parsed two at a time on worker threads; the doc ids packed (``io.packed_ids``) or interned as
strings, each block's, joined at the end."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from .textfile import GZIP_ERRORS
from . import packed_ids
from .arrow_text import (Declined, arrow, arrow_source, check_ids, csv_options, delimiter_of, dictionary_of,
                         filler_type, has_empty, indices_of)
from .trec_blocks import (join_vocabularies, line_blocks, memory_pool, numpy_of, one_chunk, only_delimiter_separates,
                          uint64_array)

RUN_COLUMNS = ("query_id", "q0", "doc_id", "rank", "score", "tag")


class LongIds(Exception):
    """Raised where a block of a run read with packed doc ids has an id that does not pack: the run is read again
    with its ids interned as strings."""


# A run is parsed this many bytes at a time: memory holds one block's text (two while the next is parsed), never the
# whole file's, plus ~24 bytes a row (doc and query codes, score, rank) and each block's distinct ids.
BLOCK_BYTES = 1 << 26


@dataclass
class Streamed:
    docs: object  # pa.StringArray: the doc vocabulary, in order of first appearance (after the seed's entries)
    doc_codes: np.ndarray  # (n,) int32
    queries: tuple  # (query ids in order of first appearance, each row's code into them, whether they are together)
    scores: np.ndarray  # (n,) float64
    ranks: np.ndarray  # (n,) int64
    keys: np.ndarray | None = None  # (V,) uint64: the vocabulary's packed ids, when the run was read packed


def _doc_codes(batch, pool, packed: bool, encode: bool = True) -> tuple:
    """When ``packed``: (each row's packed id, None), or ``LongIds`` when an id does not pack; else (each row's
    code into the block's own string dictionary, that dictionary), or, not ``encode``d, (the ids, None)."""
    pc = arrow()[1]
    docs = one_chunk(batch.column("doc_id"))
    if packed:
        keys = packed_ids.pack(docs)
        if keys is None:
            raise LongIds
        return keys, None
    if not encode:
        return docs, None
    encoded = pc.dictionary_encode(docs, memory_pool=pool)
    return numpy_of(encoded.indices), encoded.dictionary


def _parse_block(block, options: dict, packed: bool, encode_docs: bool = True) -> tuple:
    """One block's columns: its doc codes and vocabulary (``_doc_codes``), its query ids dictionary-encoded, scores
    and ranks. Blocks are parsed and hashed on worker threads, two at a time (arrow releases the GIL), while the
    main thread reads and checks the next block's bytes. Arrow's own multithreaded
    parse is off: on 2 cores its threads spent more time in the kernel than they saved."""
    pa, pc, pacsv = arrow()
    pool = memory_pool()
    batch = pacsv.read_csv(pa.py_buffer(block.view()), memory_pool=pool, **options)
    if any(batch.column(c).null_count for c in batch.column_names) or any(
            has_empty(batch.column(c)) for c in ("q0", "tag")):
        raise Declined
    if pc.any(pc.invert(pc.is_finite(batch.column("score")))).as_py():  # (None for a block of no rows)
        raise Declined  # a NaN or infinite score (inf, 1e400): the line reader names its line
    # A block's query ids are mostly its own (a run lists each query's hits together): their dictionaries are
    # unified once, at the end.
    return (*_doc_codes(batch, pool, packed, encode_docs), pc.dictionary_encode(one_chunk(batch.column("query_id")),
                                                                   memory_pool=pool),
            numpy_of(batch.column("score")), numpy_of(batch.column("rank")))


def parsed_blocks(path: Path, packed: bool, encode_docs: bool = True, size: int | None = None) -> Iterator[tuple]:
    """Each block of the run parsed (``_parse_block``), in file order, two parsed at a time on worker threads while
    this one reads and checks the next block's bytes. ``Declined`` where the fast path cannot be sure of the file."""
    from concurrent.futures import ThreadPoolExecutor

    pa = arrow()[0]
    delimiter = delimiter_of(path)
    if delimiter is None:
        raise Declined
    types = {"query_id": pa.string(), "doc_id": pa.string(), "rank": pa.int64(), "score": pa.float64(),
             "q0": filler_type(), "tag": filler_type()}
    size = size or BLOCK_BYTES
    # One chunk a block (arrow's block size is the chunk size); no threads of arrow's own (see ``_parse_block``).
    options = csv_options(RUN_COLUMNS, types, delimiter, block_size=size + (size >> 2), use_threads=False)
    workers = 2
    with arrow_source(path) as source, ThreadPoolExecutor(workers) as pool:
        parsing: deque = deque()  # (future, bytes of its block)
        try:
            for block in line_blocks(source.read, size, str(path)):
                if not only_delimiter_separates(block, delimiter):
                    raise Declined
                # At most ``workers`` blocks' worth of text in flight, plus the block just read. Counted in bytes,
                # not blocks: the small block of the one line that spans two reads would otherwise take a worker's
                # place in the count, and the big blocks would be parsed one at a time.
                while parsing and sum(n for _, n in parsing) >= workers * size:
                    yield parsing.popleft()[0].result()
                parsing.append((pool.submit(_parse_block, block, options, packed, encode_docs),
                                block.end - block.start))
            while parsing:
                yield parsing.popleft()[0].result()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, *GZIP_ERRORS):
            raise Declined from None
        finally:
            for future, _ in parsing:
                future.cancel()


def stream_run(path: Path, seed=None, packed: bool = False) -> Streamed | None:
    """A run read block by block, its doc ids coded into ``seed`` (a vocabulary, extended) or a new vocabulary;
    None as the module docstring says. ``packed``: the ids are interned as packed keys (``io.packed_ids``; ``seed``
    then holds keys too), and ``LongIds`` is raised when one does not pack."""
    from concurrent.futures import ThreadPoolExecutor

    pa = arrow()[0]
    parsed = list(parsed_blocks(path, packed))  # what ``_parse_block`` gives, in file order
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
        query_vocab = dictionary_of(unified)
        check_ids(query_vocab, first_column=True)
        qcodes = indices_of(unified)
        together = int(np.count_nonzero(qcodes[1:] != qcodes[:-1])) == len(query_vocab) - 1
        scores = np.concatenate(scores).astype(np.float64, copy=False)
        ranks = np.concatenate(ranks).astype(np.int64, copy=False)
        docs, doc_codes = interning.result()
    keys = None
    if packed:
        keys, docs = docs, packed_ids.unpack(docs)
    return Streamed(docs, doc_codes, (query_vocab, qcodes, together), scores, ranks, keys)


def _joined_keys(seed, blocks: list) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys: ``seed``'s (a uint64 arrow array, or None) first, in order, then the blocks' in order of
    first appearance; each row's code into them) from each block's packed keys. The list is emptied as it is used.
    Measured on 10M rows: one table over every row beat a table per block (on the parsing threads) joined after,
    6.2 s against 6.9 s for the whole read."""
    pa, pc, _ = arrow()
    chunks = [*([] if seed is None else [seed]), *map(uint64_array, blocks)]
    blocks.clear()
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, pa.uint64()), memory_pool=memory_pool())
    del chunks
    seeded = 0 if seed is None else len(seed)
    return numpy_of(dictionary_of(encoded)), indices_of(encoded)[seeded:].astype(np.int32, copy=False)
