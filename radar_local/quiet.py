"""Quiet by default: while engines run, everything written to file descriptors 1 and 2 (vLLM's logs,
torch's and Triton's warnings, the engine's own processes, which inherit them) goes to a log file in
the run directory; radar's progress and notes go to the console through `console()`. `--verbose` or
RADAR_LOG=debug leaves the streams alone. A crash inside shows the log's last lines, which say why."""

from __future__ import annotations

import io
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

TAIL_LINES = 25
_console: TextIO | None = None  # the terminal while the descriptors point at a log


def console() -> TextIO:
    """Where radar's own progress goes: the terminal, also while engine output goes to a log."""
    return _console or sys.stderr


def verbose_from_env() -> bool:
    return os.environ.get("RADAR_LOG", "").lower() == "debug"


@contextmanager
def engine_output_to(log: Path, verbose: bool = False) -> Iterator[None]:
    """Send descriptors 1 and 2 to `log` (appended) for the block; radar's logger to the console."""
    global _console
    if verbose or verbose_from_env() or _console is not None:
        yield
        return
    new_folder, new_log = not log.parent.exists(), not log.exists()
    log.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    start = log.stat().st_size if log.exists() else 0
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    # the console: the terminal's own descriptor where sys.stderr is one, else the stream a caller
    # (a notebook, click's test runner) put in its place, which keeps working as it is
    real = _fileno(sys.stderr) == 2
    _console = (
        io.TextIOWrapper(
            os.fdopen(os.dup(saved[2]), "wb", buffering=0),
            encoding=sys.stderr.encoding,
            errors="backslashreplace",  # a model named "gén" on an ASCII console: shown escaped, never an error
            line_buffering=True,
        )
        if real
        else sys.stderr
    )
    handlers = [
        h
        for h in logging.getLogger("radar_local").handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    previous = [h.setStream(_console) for h in handlers]
    try:
        for fd in (1, 2):
            os.dup2(log_fd, fd)
        yield
    except Exception:
        _show_tail(log, start)
        raise
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(log_fd)
        for handler, stream in zip(handlers, previous):
            handler.setStream(stream)
        if real:
            _console.flush()
            _console.close()
        _console = None
        _tidy(log, new_log, new_folder)


def _tidy(log: Path, new_log: bool, new_folder: bool) -> None:
    """A log this block created and nothing wrote to (a config refused before any engine ran) is removed, and
    the folder it made for it where that is empty: a refusal leaves nothing behind."""
    try:
        if new_log and log.stat().st_size == 0:
            log.unlink()
            if new_folder and not any(log.parent.iterdir()):
                log.parent.rmdir()
    except OSError:
        pass


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _show_tail(log: Path, start: int) -> None:
    """The last lines the engine wrote in this block: an engine that fails to start says why there."""
    try:
        with log.open("rb") as fh:
            fh.seek(start)
            lines = fh.read().decode(errors="replace").splitlines()[-TAIL_LINES:]
    except OSError:
        return
    if lines:
        out = console()
        print(f"engine output (last {len(lines)} lines of {log}):", file=out)
        for line in lines:
            print("  " + line, file=out)
        out.flush()
