"""A resumed encode's progress line (#37): batches read back from the cache are counted as done, never as work, so
the rate and the time left are this process's (a resume once showed `48.2/s, about 1m08s left` at a real ~2/s)."""

import io

import numpy as np

from harness.cache import ArrayCache
from harness.core.progress import progress, status_line


class _Log(io.StringIO):
    def isatty(self) -> bool:
        return False


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_cached_items_are_counted_done_but_not_in_the_rate():
    # 900 of 1,000 came from the cache; 20 were encoded in 10 s: 2.0/s, and the 80 left take 40 s.
    assert status_line("encoding chunks", 920, 1000, 10.0, cached=900) == \
        "encoding chunks: 920/1,000 (92%) (900 cached), 2.0/s, about 40s left"
    # Counted as work, the same moment read 92.0/s and about 1s left.
    assert status_line("encoding chunks", 920, 1000, 10.0) == "encoding chunks: 920/1,000 (92%), 92.0/s, about 1s left"


def test_a_resumed_encode_reports_this_process_rate(tmp_path):
    """An interrupted run saved shards 0-2 of 5 (10 rows each); each batch encoded now takes 5 s of a fake clock."""
    cache, clock, log = ArrayCache(tmp_path), FakeClock(), _Log()
    order = np.arange(50)
    for number in range(3):
        rows = order[10 * number:10 * number + 10]
        cache.save("vectors/k.parts", f"10-{number:06d}", {"rows": rows, "vectors": rows[:, None].astype(np.float32)})

    def encode(rows: np.ndarray) -> np.ndarray:
        clock.now += 5.0
        return rows[:, None].astype(np.float32)

    with progress(50, "encoding chunks", True, stream=log, min_interval=0.0, clock=clock) as advance:
        vectors = cache.get_or_build_rows("vectors", "k", order, 10, encode, advance)
    assert vectors[:, 0].tolist() == list(range(50))
    lines = log.getvalue().splitlines()
    # After the cached shards: 30 done, none worked here, no rate yet. After shard 4: 10 rows in 5 s is 2.0/s, and
    # the 10 rows left take 5 s (counting the cached rows as work said 8.0/s, about 1s left).
    assert lines[2] == "encoding chunks: 30/50 (60%) (30 cached), 0.0/s"
    assert lines[3] == "encoding chunks: 40/50 (80%) (30 cached), 2.0/s, about 5s left"
