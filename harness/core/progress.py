"""Progress of long work (encoding, indexing, retrieving) on stderr, with rate and time left.

On a terminal: a rich bar with the rate and the time left. Elsewhere (CI logs, ``2> log``): a plain line every
30 seconds, so a cold 10-minute encode says what it is doing and short work prints nothing.
``enabled=False`` (``-q``) shows nothing. The rate and the time left count only the work done in this process:
items a resumed run read from its cache (``advance(done, cached)``) are in the count, not in the rate.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

Advance = Callable[..., None]  # advance(done, cached=0): items done so far, and how many of them were cached


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def rate_and_left(done: int, total: int, elapsed: float, cached: int = 0) -> tuple[float, float | None]:
    """(items per second, seconds left) counting only the work done in this process: ``cached`` of the ``done``
    items came from a cache (a resumed run's finished batches), took no work, and would make the rate a lie and
    the time left too short if counted."""
    worked = max(done - cached, 0)
    rate = worked / elapsed if elapsed > 0 else 0.0
    return rate, ((total - done) / rate if 0 < done < total and rate > 0 else None)


def status_line(label: str, done: int, total: int, elapsed: float, cached: int = 0) -> str:
    """``encoding chunks: 1,024/5,183 (20%), 25.1/s, about 2m46s left``; ``(512 cached)`` after the count when
    part of it came from a cache."""
    rate, seconds = rate_and_left(done, total, elapsed, cached)
    left = f", about {_duration(seconds)} left" if seconds is not None else ""
    pct = f" ({100 * done // total}%)" if total else ""
    reused = f" ({cached:,} cached)" if cached else ""
    return f"{label}: {done:,}/{total:,}{pct}{reused}, {rate:,.1f}/s{left}"


@contextmanager
def progress(total: int, label: str, enabled: bool, stream: TextIO | None = None,
             min_interval: float = 30.0, clock: Callable[[], float] = time.perf_counter) -> Iterator[Advance]:
    """Yields ``advance(done, cached=0)``: ``done`` items so far, ``cached`` of them read from a cache rather than
    computed here (left out of the rate and the time left). Nothing is shown when disabled or when there is
    nothing to do. ``clock``: seconds, for tests."""
    stream = stream or sys.stderr
    if not enabled or total <= 0:
        yield lambda done, cached=0: None
        return
    start = clock()
    if stream.isatty():
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskProgressColumn,
                                   TextColumn)
        from rich.text import Text

        class RateAndLeft(ProgressColumn):  # rich's own speed would count cached items as work done
            def render(self, task) -> Text:
                rate, seconds = task.fields.get("rate", 0.0), task.fields.get("left")
                return Text((f"{rate:,.1f}/s" if rate else "") + (f", {_duration(seconds)} left" if seconds else ""))

        with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(), RateAndLeft(),
                      console=Console(file=stream), transient=True) as bar:
            task = bar.add_task(label, total=total)

            def update(done: int, cached: int = 0) -> None:
                rate, seconds = rate_and_left(done, total, clock() - start, cached)
                bar.update(task, completed=done, rate=rate, left=seconds)

            yield update
        return
    # Not a terminal: a line every ``min_interval`` seconds, so short work (most runs) prints nothing and a long
    # encode says where it is; the last line only when an earlier one was printed.
    last = {"at": start, "printed": False}

    def advance(done: int, cached: int = 0) -> None:
        now = clock()
        if (done >= total and last["printed"]) or (done < total and now - last["at"] >= min_interval):
            print(status_line(label, done, total, now - start, cached), file=stream, flush=True)
            last.update(at=now, printed=done < total)

    yield advance
