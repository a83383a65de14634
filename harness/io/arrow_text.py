"""What the fast TREC readers (``fast_trec`` and its run stream, ``run_stream``) share: pyarrow, loaded lazily; the
CSV options that read single-delimiter TREC columns; the checks that make the fast path decline a file it cannot be
sure of reading as the line readers do (``Declined``); arrow's dictionary encoding taken apart."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .textfile import GZIP_ERRORS, is_gzip, open_binary
from .trec_blocks import numpy_of

# In an id: a control character, or a character Python's str.split() splits on but trec_eval does not (NBSP, U+2028).
ODD_ID = r"[\x00-\x1f\x7f-\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"


class Declined(Exception):
    """Raised where the fast path finds something only the line reader can judge; the public readers return None."""


def arrow():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    return pa, pc, pacsv


def delimiter_of(path: Path) -> bytes | None:
    """A tab when the first line has one (a TSV export), else a space; None for an empty file or a broken gzip file
    (the fast readers decline it: the line reader says what is wrong with it)."""
    if path.stat().st_size == 0:
        return None
    try:
        with open_binary(path) as fh:
            return b"\t" if b"\t" in fh.readline(1 << 20) else b" "  # a huge first line is the readers' to refuse
    except (OSError, *GZIP_ERRORS):
        return None


def filler_type():
    return arrow()[0].binary()


def has_empty(strings) -> bool:
    pc = arrow()[1]
    return len(strings) > 0 and pc.min(pc.binary_length(strings)).as_py() == 0


def check_ids(dictionary, first_column: bool) -> None:
    """Every distinct id of a column: none empty, none holding an odd character, none (in the first column)
    starting a ``#`` comment line. Checked on the distinct ids, not on every row."""
    pc = arrow()[1]
    if len(dictionary) == 0:
        return
    if has_empty(dictionary) or (first_column and pc.any(pc.starts_with(dictionary, "#")).as_py()):
        raise Declined
    # Printable ASCII throughout (the usual case) is quick to see; only other ids need the regex.
    if not pc.all(pc.ascii_is_printable(dictionary)).as_py() and pc.any(
            pc.match_substring_regex(dictionary, ODD_ID)).as_py():
        raise Declined


def csv_options(columns: Sequence[str], types: dict, delimiter: bytes, **read) -> dict:
    pacsv = arrow()[2]
    return dict(
        read_options=pacsv.ReadOptions(column_names=list(columns), **read),
        parse_options=pacsv.ParseOptions(delimiter=delimiter.decode(), quote_char=False, double_quote=False,
                                         escape_char=False, newlines_in_values=False, ignore_empty_lines=True),
        convert_options=pacsv.ConvertOptions(column_types=types, include_columns=list(types), null_values=[],
                                             strings_can_be_null=False))


def arrow_source(path: Path):
    pa = arrow()[0]
    # The compression is said explicitly: arrow would otherwise guess it from any suffix.
    return pa.input_stream(str(path), compression="gzip") if is_gzip(path) else pa.OSFile(str(path))


def indices_of(encoded) -> np.ndarray:
    """The codes (int32, as arrow gives them) of a dictionary-encoded chunked array; its chunks share one dictionary."""
    parts = [numpy_of(c.indices) for c in encoded.chunks]
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def dictionary_of(encoded):
    pa = arrow()[0]
    return encoded.chunk(0).dictionary if encoded.num_chunks else pa.array([], pa.string())


def sorted_positions(dictionary) -> np.ndarray:
    """Each entry's position when the dictionary (distinct strings) is sorted. Arrow orders strings byte-wise, which
    for UTF-8 is Python's (and trec_eval's) order."""
    order = numpy_of(arrow()[1].sort_indices(dictionary))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return position
