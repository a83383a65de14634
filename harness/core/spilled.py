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
