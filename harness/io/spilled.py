"""A column of numbers kept in an unlinked temporary file and read back a slice at a time.

The hit columns of a large run (``HitTable.chunk`` and ``scores``: 12 bytes a hit, 1.2 GB at 1M queries x depth
100) are read a batch of queries at a time by everything that uses them (the levels, the hit judge, the writers, a
query's ranked list), so they need not stay in memory: each batch is appended as retrieval proceeds, and each read
copies one slice back into a fresh array (served from the page cache, which the kernel may drop, instead of
anonymous memory, which it cannot). Like ``querystore.QueryStore``'s spool, the file is a
``tempfile.TemporaryFile``: unlinked at creation, so nothing is left behind however the process ends.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Iterator

import numpy as np

from .files import temp_space


class SpilledColumn:
    """A 1-D array of ``dtype`` on disk: ``append`` at the end, read with ``column[lo:hi]`` (a new, writable
    array) or ``np.asarray(column)`` (all of it)."""

    ndim = 1

    def __init__(self, dtype, folder: str | None = None):
        self.dtype = np.dtype(dtype)
        with temp_space("the run's hits"):
            self._file = tempfile.TemporaryFile(prefix="harness-hits-", dir=folder)
        self._lock = threading.Lock()
        self._length = 0

    def append(self, values: np.ndarray) -> None:
        data = np.ascontiguousarray(values, dtype=self.dtype)
        with self._lock, temp_space("the run's hits"):
            self._file.seek(0, os.SEEK_END)
            self._file.write(memoryview(data).cast("B"))
            self._file.flush()  # a full disk is found here, not at a later read
            self._length += len(data)

    def __len__(self) -> int:
        return self._length

    @property
    def shape(self) -> tuple[int]:
        return (self._length,)

    @property
    def nbytes(self) -> int:
        return self._length * self.dtype.itemsize

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError(f"a spilled column is read by slices of rows, not {type(key).__name__}")
        start, stop, step = key.indices(self._length)
        if step != 1:
            raise TypeError("a spilled column is read by contiguous slices")
        return self._read(start, max(stop - start, 0))

    def __array__(self, dtype=None, copy=None):
        whole = self._read(0, self._length)
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def tolist(self) -> list:
        return self._read(0, self._length).tolist()

    def _read(self, start: int, count: int) -> np.ndarray:
        out = np.empty(count, dtype=self.dtype)
        view = memoryview(out).cast("B")
        with self._lock:  # one position for reads and appends
            self._file.seek(start * self.dtype.itemsize)
            done = 0
            while done < len(view):  # a read may return less than asked
                n = self._file.readinto(view[done:])
                if not n:
                    raise EOFError(f"spilled column: {len(view) - done} bytes missing at row {start}")
                done += n
        return out

    def __reduce__(self):  # pickled (sent to another process, deep-copied) as the array it reads as: a file is not
        return np.asarray, (self._read(0, self._length),)


class SpilledRows:
    """A (rows, width) matrix in an unlinked temporary file, zero where nothing was written: a large run's metric
    values (``MetricTable.values``: 8 bytes a query and a metric at each level, ~130 MB for the two levels of a
    1M-query run), written as the engine scores each batch and read back a block of rows at a time by the summary,
    the records and the reports.

    Rows are written in any order (``values[rows] = block``, ``rows`` distinct positions: one write per run of
    consecutive rows) and read by ``values[i]``, ``values[i, j]``, ``values[:, j]`` (a column: width times less than
    the matrix), a boolean mask of rows, or ``blocks()``. The last block read is kept, so a walk over the rows in
    order reads each block once."""

    ndim = 2
    BLOCK = 1 << 16  # rows read at a time

    def __init__(self, n_rows: int, width: int, dtype=np.float64, folder: str | None = None):
        self.dtype = np.dtype(dtype)
        self.shape = (int(n_rows), int(width))
        self._row_bytes = self.shape[1] * self.dtype.itemsize
        with temp_space("the run's metric values"):
            self._file = tempfile.TemporaryFile(prefix="harness-values-", dir=folder)
            self._file.truncate(self.shape[0] * self._row_bytes)  # a sparse file: unwritten rows read as zeros
        self._fd = self._file.fileno()
        self._cached: tuple[int, np.ndarray] | None = None  # (first row, the block read)

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self._row_bytes

    def __setitem__(self, rows, block) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        block = np.broadcast_to(block, (len(rows), self.shape[1]))
        if len(rows) > 1 and (np.diff(rows) <= 0).any():
            order = np.argsort(rows, kind="stable")
            rows, block = rows[order], block[order]
        block = np.ascontiguousarray(block, dtype=self.dtype)
        if len(rows) and (rows[0] < 0 or rows[-1] >= self.shape[0] or (len(rows) > 1 and (np.diff(rows) == 0).any())):
            raise IndexError("spilled rows are written once each, at positions inside the matrix")
        self._cached = None
        starts = np.flatnonzero(np.diff(rows, prepend=-2) != 1)  # where each run of consecutive rows begins
        ends = np.append(starts[1:], len(rows))
        with temp_space("the run's metric values"):
            for lo, hi in zip(starts.tolist(), ends.tolist()):
                data = memoryview(block[lo:hi]).cast("B")
                offset = int(rows[lo]) * self._row_bytes
                while len(data):  # a write may take less than given
                    done = os.pwrite(self._fd, data, offset)
                    data, offset = data[done:], offset + done

    def rows(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo:hi`` as a new array."""
        lo, hi = max(lo, 0), min(hi, self.shape[0])
        out = np.empty((max(hi - lo, 0), self.shape[1]), dtype=self.dtype)
        view, offset = memoryview(out).cast("B"), lo * self._row_bytes
        while len(view):
            n = os.preadv(self._fd, [view], offset)
            if not n:
                raise EOFError(f"spilled rows: {len(view)} bytes missing at row {offset // self._row_bytes}")
            view, offset = view[n:], offset + n
        return out

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, the rows from it) a block at a time, in order."""
        for lo in range(0, self.shape[0], self.BLOCK):
            yield lo, self.rows(lo, lo + self.BLOCK)

    def _row(self, i: int) -> np.ndarray:
        if i < 0:
            i += self.shape[0]
        if not 0 <= i < self.shape[0]:
            raise IndexError(f"row {i} of {self.shape[0]}")
        lo = i - i % self.BLOCK
        if self._cached is None or self._cached[0] != lo:
            self._cached = (lo, self.rows(lo, lo + self.BLOCK))
        return self._cached[1][i - lo]

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            return self._row(int(key)).copy()
        if isinstance(key, tuple) and len(key) == 2:
            row, col = key
            if isinstance(row, (int, np.integer)):
                return self._row(int(row))[col]
            if row == slice(None):
                return self._column(col)
        if isinstance(key, np.ndarray) and key.dtype == bool and key.shape == (self.shape[0],):
            return np.concatenate([block[key[lo:lo + len(block)]] for lo, block in self.blocks()]) \
                if self.shape[0] else np.zeros((0, self.shape[1]), self.dtype)
        raise TypeError(f"spilled rows are read by a row, a row and a column, a column or a boolean mask, not {key!r}")

    def _column(self, col) -> np.ndarray:
        """``values[:, col]``, filled a block at a time. (Each block's column is copied out as it is read: a list of
        views of the blocks kept every block alive, the whole matrix at once, ~100 bytes a query with 12 metrics.)"""
        shape = np.zeros((0, self.shape[1]), self.dtype)[:, col].shape[1:]  # () for one column, (w,) for several
        out = np.empty((self.shape[0], *shape), dtype=self.dtype)
        for lo, block in self.blocks():
            out[lo:lo + len(block)] = block[:, col]
        return out

    def __iter__(self) -> Iterator[np.ndarray]:
        for _, block in self.blocks():
            yield from block

    def __array__(self, dtype=None, copy=None):
        whole = self.rows(0, self.shape[0])
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def __reduce__(self):  # pickled (sent to another process, deep-copied) as the array it reads as
        return np.asarray, (self.rows(0, self.shape[0]),)
