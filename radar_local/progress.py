"""Progress of a long stage on stderr: calls done, calls/s and ETA."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


@contextmanager
def stage_progress(label: str, total: int, enabled: bool = True):
    """Yields `advance(k)`; prints a rich bar on a terminal and plain lines otherwise."""
    start = time.monotonic()
    if not enabled or total == 0:
        yield lambda k: None
        return
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        rate = TextColumn("{task.fields[rate]}")
        with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), rate, TimeRemainingColumn(), transient=False) as bar:
            task = bar.add_task(label, total=total, rate="")

            def advance(k: int) -> None:
                bar.advance(task, k)
                done = bar.tasks[0].completed
                bar.update(task, rate=f"{done / max(time.monotonic() - start, 1e-9):.2f} calls/s")

            yield advance
        return
    done = 0

    def advance(k: int) -> None:
        nonlocal done
        done += k
        elapsed = time.monotonic() - start
        speed = done / max(elapsed, 1e-9)
        eta = (total - done) / speed if speed else float("inf")
        print(f"{label}: {done}/{total} calls, {speed:.2f} calls/s, ETA {eta:.0f} s", file=sys.stderr, flush=True)

    yield advance
