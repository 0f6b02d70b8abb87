"""Progress of a long stage on stderr: calls done, calls/s and ETA."""

from __future__ import annotations

import time
from contextlib import contextmanager

from radar_local.quiet import console

PLAIN_EVERY_S = 5.0


@contextmanager
def stage_progress(label: str, total: int, enabled: bool = True):
    """Yields `advance(k)`; prints a rich bar on a terminal and plain lines otherwise."""
    start, out = time.monotonic(), console()
    if not enabled or total == 0:
        yield lambda k: None
        return
    if out.isatty():
        from rich.console import Console  # rich: a bar only on a terminal, its layout loads then
        from rich.progress import (  # rich: the bar's columns, with the console above
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        rate = TextColumn("{task.fields[rate]}")
        with Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            rate,
            TimeRemainingColumn(),
            transient=False,
            console=Console(file=out),
        ) as bar:
            task = bar.add_task(label, total=total, rate="")

            def advance_bar(k: int) -> None:
                bar.advance(task, k)
                done = bar.tasks[0].completed
                bar.update(task, rate=f"{done / max(time.monotonic() - start, 1e-9):.2f} calls/s")

            yield advance_bar
        return
    done, shown = 0, 0.0

    def advance(k: int) -> None:
        nonlocal done, shown
        done += k
        now = time.monotonic()
        if done < total and now - shown < PLAIN_EVERY_S:
            return  # a stream finishes answers one by one: a plain line every few seconds is enough
        shown, elapsed = now, now - start
        speed = done / max(elapsed, 1e-9)
        eta = (total - done) / speed if speed else float("inf")
        print(f"{label}: {done}/{total} calls, {speed:.2f} calls/s, ETA {eta:.0f} s", file=out, flush=True)

    yield advance


def say(line: str) -> None:
    """One line of news on the console (a warning the run carries on after)."""
    print(line, file=console(), flush=True)
