"""The run directory: append-only JSONL records keyed by their content, so a rerun skips stored calls.

Nothing stored is ever lost:
- Each batch of records is appended and fsynced as one write, with SIGINT/SIGTERM held back until
  it is on disk; a process killed at any moment loses at most the batch in flight.
- A writer holds an exclusive lock on the directory (flock: the kernel drops it when the holder
  dies, so a killed run never blocks the next one).
- On opening as a writer, a torn last line (a kill landed mid-write) is cut off and kept in a side
  file; a damaged line anywhere else is refused, never skipped.
- An append that fails (disk full) is rolled back to the last whole record.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from radar_local.errors import InputError, RadarError

RECORD_VERSION = 1
log = logging.getLogger("radar_local")


class RunLockedError(RadarError):
    """Another process is writing to this run directory."""


class StorageError(RadarError):
    """A write failed (disk full, read-only file system); what was stored before stays readable."""


def slug(label: str) -> str:
    """A model label as a file-name part."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)


_HELD: dict[Path, int] = {}  # run directories this process holds: lock file descriptors


def lock_run_dir(root: Path, lock_file: str) -> None:
    """Take the directory's exclusive lock for the life of this process (re-entrant within it)."""
    key = root.resolve()
    if key in _HELD:
        return
    fd = os.open(root / lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunLockedError(f"{root}: in use by PID {holder}; wait for that command to end (or stop it), "
                             "then run this one again") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _HELD[key] = fd


def unlock_run_dir(root: Path) -> None:
    fd = _HELD.pop(root.resolve(), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait until the block ends, so a record is never half on disk."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _write_failed(path: Path, exc: OSError) -> StorageError:
    why = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return StorageError(f"{path}: cannot write ({why}); nothing was left half-written and every file stored "
                        "before is intact: fix that, then run the same command again (a run resumes)")


def repair_torn_tail(path: Path) -> None:
    """Cut a file back to its last complete line, keeping the cut bytes in a side file."""
    if not path.is_file():
        return
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        block, end = 1 << 16, size
        while True:  # find the last newline, reading backwards
            start = max(0, end - block)
            fh.seek(start)
            chunk = fh.read(end - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            if start == 0:
                keep = 0
                break
            end = start
        fh.seek(keep)
        torn = fh.read()
        side = path.with_name(f"{path.name}.torn-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        side.write_bytes(torn)
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    log.warning("%s: cut a torn last line (%d bytes, from an interrupted write) into %s; its record will be redone",
                path, len(torn), side.name)


class Store:
    """Records of one run directory, in the files its owner (run.Run) names. `writer=True` takes the
    directory's lock and repairs torn tails; a reader never changes a file and ignores an unfinished
    last line (a writer may be mid-append)."""

    def __init__(self, root: str | Path, *, probes: str, scores: str, lock: str, writer: bool = True):
        self.root = Path(root)
        self.files = {"probes": probes, "scores": scores}
        self._appending = threading.Lock()  # a grid on a cluster scores several cells of one store at once
        if writer:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                lock_run_dir(self.root, lock)
            except (FileExistsError, NotADirectoryError):
                raise InputError(self.root, "is a file, not a run directory; pick another --out") from None
            except PermissionError as exc:
                raise InputError(self.root, f"cannot write here ({exc.strerror}); pick another --out") from None
            for name in (probes, scores):
                repair_torn_tail(self.root / name)
        self.probes = self._load(probes)
        self.scores = self._load(scores)

    def _load(self, name: str) -> dict[str, dict]:
        path = self.root / name
        records: dict[str, dict] = {}
        if not path.exists():
            return records
        with path.open("rb") as fh:
            for number, line in enumerate(fh, 1):
                if not line.endswith(b"\n"):
                    break  # unfinished: a writer is appending (only a reader can see this)
                try:
                    rec = json.loads(line)
                    key, version = rec["key"], rec.get("v")
                except (ValueError, TypeError, KeyError):
                    raise InputError(path, f"line {number} is damaged (not a whole record); move the file aside "
                                           "or fix that line, then run again (records on other lines are kept)") from None
                if version != RECORD_VERSION:
                    raise InputError(path, f"line {number}: record version {version} is not {RECORD_VERSION}; "
                                           "re-run into a new directory")
                records[key] = rec
        return records

    def _append(self, name: str, records: list[dict], into: dict[str, dict]) -> None:
        if not records:
            return
        path = self.root / name
        stamped = [{"v": RECORD_VERSION, **r} for r in records]
        blob = "".join(json.dumps(r) + "\n" for r in stamped).encode()
        with self._appending, _signals_held():
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                before = os.lseek(fd, 0, os.SEEK_END)
                try:
                    _write_all(fd, blob)
                except OSError as exc:
                    os.ftruncate(fd, before)  # roll back to the last whole record
                    raise _write_failed(path, exc) from None
            finally:
                os.close(fd)
            for r in stamped:
                into[r["key"]] = r

    def add_probes(self, records: list[dict]) -> None:
        self._append(self.files["probes"], records, self.probes)

    def add_scores(self, records: list[dict]) -> None:
        self._append(self.files["scores"], records, self.scores)

    def write_json(self, name: str, obj: object) -> None:
        write_atomic(self.root / name, json.dumps(obj, indent=2))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write a whole file or nothing: a temporary file, fsynced, then renamed over the target."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with _signals_held():
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _write_all(fd, text.encode() if isinstance(text, str) else text)
            finally:
                os.close(fd)
            tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_failed(path, exc) from None


def read_json(path: Path) -> dict:
    """A JSON file a command wrote; one line naming it when it is not JSON."""
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputError(path, "is not valid JSON; re-run the command that wrote it") from None
