"""How the C heap hands freed memory back: set by ``harness run`` (``cli.run``) for its process, never by the library."""

from __future__ import annotations

import ctypes
import os

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, kept fixed


def return_large_frees() -> bool:
    """Give every C allocation of 128 KB or more its own mapping, returned to the kernel when freed.

    glibc raises its mmap threshold (up to 32 MB) each time such a block is freed, so after a run's first batch its
    per-batch arrays come from the heap, and the heap's top cannot shrink below a live object allocated after them:
    memory freed batch after batch stayed counted against the process. Measured on `harness run`, 20k chunks x 10k
    -> 40k queries: peak RSS 377 -> 501 MB with the moving threshold (4.1 KB a query), 372 -> 436 MB with it fixed
    (2.1 KB a query), the same wall time. Not for `harness eval`: its 32 MB read blocks would each be mapped and
    faulted in anew (0.76 -> 0.66 GB, but ~1 s more system time on 100k x 100, where the heap reused them). A user's
    ``MALLOC_MMAP_THRESHOLD_`` wins; off glibc (no ``mallopt``) nothing changes. True when set."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
