"""Progress of long work (encoding, indexing, retrieving) on stderr, with rate and time left.

On a terminal: a rich bar with the rate and the time left. Elsewhere (CI logs, ``2> log``): a plain line every
30 seconds, so a cold 10-minute encode says what it is doing and short work prints nothing.
``enabled=False`` (``-q``) shows nothing.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

Advance = Callable[[int], None]  # called with the number of items done so far


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def status_line(label: str, done: int, total: int, elapsed: float) -> str:
    """``encoding chunks: 1,024/5,183 (20%), 25.1/s, about 2m46s left``."""
    rate = done / elapsed if elapsed > 0 else 0.0
    left = f", about {_duration((total - done) / rate)} left" if 0 < done < total and rate > 0 else ""
    pct = f" ({100 * done // total}%)" if total else ""
    return f"{label}: {done:,}/{total:,}{pct}, {rate:,.1f}/s{left}"


@contextmanager
def progress(total: int, label: str, enabled: bool, stream: TextIO | None = None,
             min_interval: float = 30.0) -> Iterator[Advance]:
    """Yields ``advance(done)``. Nothing is shown when disabled or when there is nothing to do."""
    stream = stream or sys.stderr
    if not enabled or total <= 0:
        yield lambda done: None
        return
    if stream.isatty():
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskProgressColumn,
                                   TextColumn, TimeRemainingColumn)
        from rich.text import Text

        class Rate(ProgressColumn):
            def render(self, task) -> Text:
                return Text(f"{task.speed:,.1f}/s" if task.speed else "")

        with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(), Rate(),
                      TimeRemainingColumn(), console=Console(file=stream), transient=True) as bar:
            task = bar.add_task(label, total=total)
            yield lambda done: bar.update(task, completed=done)
        return
    # Not a terminal: a line every ``min_interval`` seconds, so short work (most runs) prints nothing and a long
    # encode says where it is; the last line only when an earlier one was printed.
    start = time.perf_counter()
    last = {"at": start, "printed": False}

    def advance(done: int) -> None:
        now = time.perf_counter()
        if (done >= total and last["printed"]) or (done < total and now - last["at"] >= min_interval):
            print(status_line(label, done, total, now - start), file=stream, flush=True)
            last.update(at=now, printed=done < total)

    yield advance
