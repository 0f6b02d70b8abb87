"""The run directory: append-only JSONL records keyed by their content, so a rerun skips stored calls.

Nothing stored is ever lost:
- Each batch of records is appended and fsynced as one write, with SIGINT/SIGTERM held back until
  it is on disk; a process killed at any moment loses at most the batch in flight.
- A writer holds an exclusive lock on the directory (flock: the kernel drops it when the holder
  dies, so a killed run never blocks the next one).
- On opening as a writer, a torn last line (a kill landed mid-write) is cut off and kept in a side
  file; a damaged line anywhere else is refused, never skipped.
- An append that fails (disk full) is rolled back to the last whole record.
- No write follows a symbolic link: a link planted in a run directory is refused, never written
  through. Whole files are written to a fresh temporary name and renamed over the target.
- A hand-edited line that is JSON but not a record of its kind is refused, naming its line.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from radar_local.errors import InputError, RadarError
from radar_local.records import RECORD_VERSION, ProbeRecord, Record, VerdictRecord, record_line

log = logging.getLogger("radar_local")


class RunLockedError(RadarError):
    """Another process is writing to this run directory."""


class StorageError(RadarError):
    """A write failed (disk full, read-only file system); what was stored before stays readable."""


_HELD: dict[Path, list[int]] = {}  # run directories this process holds: [lock descriptor, holders]


class ReadOnlyRunError(RadarError):
    """A write through a run opened for reading (load_run)."""


def lock_run_dir(root: Path, lock_file: str) -> None:
    """Take the directory's exclusive lock (re-entrant within this process: each holder releases its
    own hold, and the lock goes when the last one does or the process ends)."""
    key = root.resolve()
    if key in _HELD:
        _HELD[key][1] += 1
        return
    fd = open_no_link(root / lock_file, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunLockedError(
            f"{root}: in use by PID {holder}; wait for that command to end (or stop it), then run this one again"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as exc:  # a full disk: the PID is only a courtesy, but the message must be one line
        os.close(fd)
        raise _write_failed(root / lock_file, exc) from None
    _HELD[key] = [fd, 1]


def unlock_run_dir(root: Path) -> None:
    """Release one hold on the directory's lock; the last release lets other processes in."""
    key = root.resolve()
    held = _HELD.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _HELD[key]
        os.close(held[0])  # closing the descriptor releases the flock


def open_no_link(path: Path, flags: int) -> int:
    """os.open that refuses a symbolic link at `path` (a link planted in a run directory would have
    radar write through it, anywhere)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(
                path,
                "is a symbolic link; radar writes no file through a link in a run directory: "
                "remove the link, then run again",
            ) from None
        if isinstance(exc, PermissionError):
            raise InputError(
                path, f"cannot write here ({exc.strerror}); pick another --out or fix the permissions"
            ) from None
        raise _write_failed(path, exc) from None


# SIGINT and SIGTERM wait while any thread writes a record (one deferral for the whole process:
# masking a signal in the writing thread alone does not stop CPython from running the Python-level
# handler in the main thread, inside the write, when another thread such as a progress display's
# received it).
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_hold = threading.RLock()  # re-entrant: the handler runs in the main thread, which may be holding it
_holders = 0
_pending: list[int] = []
_handlers: dict[int, object] = {}  # the handler each deferred signal goes to afterwards


def _deferring(signum: int, frame) -> None:
    with _hold:
        if _holders:
            _pending.append(signum)
            return
    _dispatch(signum, frame)


def _dispatch(signum: int, frame) -> None:
    handler = _handlers.get(signum, signal.SIG_DFL)
    if callable(handler):
        handler(signum, frame)
    elif handler != signal.SIG_IGN:  # the default action (SIGTERM: end the process), as if never deferred
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_deferral() -> None:
    """Wrap the current handlers (only the main thread may set them); a handler set later replaces
    the wrapper, and is wrapped again at the next write from the main thread."""
    for sig in _HELD_SIGNALS:
        current = signal.getsignal(sig)
        if current is not _deferring:
            _handlers[sig] = current
            signal.signal(sig, _deferring)


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait until every thread's block has ended, so a record is never half on disk."""
    global _holders
    if threading.current_thread() is threading.main_thread():
        _install_deferral()
    with _hold:
        _holders += 1
    try:
        yield
    finally:
        with _hold:
            _holders -= 1
            due = _pending[:1] if _holders == 0 else []
            if _holders == 0:
                _pending.clear()
        for signum in due:  # handled now, in the main thread, by the handler it would have met
            signal.raise_signal(signum)


def _write_failed(path: Path, exc: OSError) -> StorageError:
    if exc.errno == errno.ENAMETOOLONG:
        return StorageError(
            f"{path}: the name is too long for the file system; choose a shorter name or folder (nothing was written)"
        )
    why = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return StorageError(
        f"{path}: cannot write ({why}); nothing was left half-written and every file stored "
        "before is intact: fix that, then run the same command again (a run resumes)"
    )


def cut_torn_tail(path: Path) -> None:
    """Cut a file back to its last complete line, keeping the cut bytes in a side file. A file that
    ends in a newline is only read (it may be read-only)."""
    if not path.is_file() or path.is_symlink():
        return
    with path.open("rb") as fh:
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
    with _signals_held():
        try:
            fd = open_no_link(side, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            try:
                _write_all(fd, torn)
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk: the file stays as it is, torn line and all
            side.unlink(missing_ok=True)
            raise RadarError(
                f"{path}: cannot set its torn last line aside ({exc.strerror or exc}); nothing stored was changed: "
                "free space on the disk and run the same command again"
            ) from None
        fd = open_no_link(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
    log.warning(
        "%s: cut a torn last line (%d bytes, from an interrupted write) into %s; its record will be redone",
        path,
        len(torn),
        side.name,
    )


class Store:
    """Records of one run directory (radar_local.records), in the files rundir.RunDir names. `writer=True`
    takes the directory's lock and repairs torn tails; a reader never changes a file and ignores an
    unfinished last line (a writer may be mid-append)."""

    def __init__(self, root: str | Path, *, probes: str, scores: str, lock: str, writer: bool = True):
        self.root = usable_path(Path(root))
        self.files = {"probes": probes, "scores": scores}
        self.writer = writer
        self._appending = threading.Lock()  # a grid on a cluster scores several cells of one store at once
        if writer:
            if self.root.is_symlink() and not self.root.exists():
                raise InputError(self.root, "is a symbolic link to nothing; remove it or pick another --out")
            if self.root.is_file():
                raise InputError(self.root, "is a file, not a run directory; pick another --out")
            make_folder(self.root)
            lock_run_dir(self.root, lock)
            for name in (probes, scores):
                cut_torn_tail(self.root / name)
        self.lines: dict[str, dict[str, int]] = {probes: {}, scores: {}}  # each stored key's line, for errors
        self.probes: dict[str, ProbeRecord] = self._load(probes, ProbeRecord)
        self.scores: dict[str, VerdictRecord] = self._load(scores, VerdictRecord)

    def _load(self, name: str, kind: type) -> dict:
        path = self.root / name
        records: dict = {}
        if path.is_symlink():
            raise InputError(
                path,
                "is a symbolic link; radar reads and writes no record file through a link in a run "
                "directory: put the file itself here, then run again",
            )
        if not path.exists():
            return records
        if path.is_dir():
            raise InputError(path, "is a folder, not radar's record file; move it aside, then run again")
        with path.open("rb") as fh:
            for number, line in enumerate(fh, 1):
                if not line.endswith(b"\n"):
                    break  # unfinished: a writer is appending (only a reader can see this)
                rec = _record(line, kind)
                if isinstance(rec, str):
                    raise InputError(
                        path,
                        f"line {number} is damaged ({rec}); move the file aside or fix that line, "
                        "then run again (records on other lines are kept)",
                    )
                if rec.v != RECORD_VERSION:
                    raise InputError(
                        path,
                        f"line {number}: record version {rec.v} is not {RECORD_VERSION}; re-run into a new directory",
                    )
                records[rec.key] = rec
                self.lines[name][rec.key] = number
        return records

    def mismatch(self, kind: str, rec: Record, field: str, expected: object) -> InputError:
        """The error for a stored record whose `field` disagrees with the request its key hashes."""
        return self.edited(
            kind, rec, f"'{field}' is {getattr(rec, field)!r}, which does not match its key ({expected!r})"
        )

    def edited(self, kind: str, rec: Record, what: str) -> InputError:
        """The error for a stored record radar cannot have written (`what` is wrong with it)."""
        name = self.files[kind]
        return InputError(
            self.root / name,
            f"line {self.lines[name].get(rec.key, '?')}: {what}: the line was edited; restore it or move the file "
            "aside, then run again",
        )

    def require_writer(self) -> None:
        if not self.writer:
            raise ReadOnlyRunError(
                f"{self.root}: opened for reading (load_run); to add to it, open it as a writer: "
                "`with Run.open(path) as run: ...` (or run `radar score`)"
            )

    def close(self) -> None:
        """Release this store's hold on the directory's lock (a reader holds none)."""
        if self.writer:
            self.writer = False
            unlock_run_dir(self.root)

    def _append(self, name: str, records: list, into: dict) -> None:
        if not records:
            return
        self.require_writer()
        path = self.root / name
        blob = "".join(record_line(r) for r in records).encode()
        with self._appending, _signals_held():
            fd = open_no_link(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                before = os.lseek(fd, 0, os.SEEK_END)
                try:
                    _write_all(fd, blob)
                except OSError as exc:
                    os.ftruncate(fd, before)  # roll back to the last whole record
                    raise _write_failed(path, exc) from None
            finally:
                os.close(fd)
            for r in records:
                into[r.key] = r

    def add_probes(self, records: list[ProbeRecord]) -> None:
        self._append(self.files["probes"], records, self.probes)

    def add_scores(self, records: list[VerdictRecord]) -> None:
        self._append(self.files["scores"], records, self.scores)

    def write_json(self, name: str, obj: object) -> None:
        self.write_text(name, json.dumps(obj, indent=2))

    def write_text(self, name: str, text: str) -> None:
        self.require_writer()
        write_atomic(self.root / name, text)


def _record(line: bytes, kind: type[Record]) -> Record | str:
    """The record on a line, or what is wrong with it (its first field that fails)."""
    try:
        return kind.model_validate_json(line)
    except ValidationError as exc:
        err = exc.errors()[0]
    if err["type"] == "json_invalid" or isinstance(err["input"], str) and not err["loc"]:
        return "not a whole JSON record"
    if not err["loc"]:
        return "not a JSON object"
    field = str(err["loc"][0])
    if err["type"] == "finite_number":
        return f"{field} {err['input']} is not a finite number"
    annotation = kind.model_fields[field].annotation if field in kind.model_fields else None
    return f"'{field}' is missing or not {_KIND_NAMES.get(annotation, 'a number or null')}"


_KIND_NAMES: dict[object, str] = {str: "text", int: "an integer"}


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write a whole file or nothing: a fresh temporary file beside it (a unique name, created
    exclusively, so no planted link is followed), fsynced, renamed over the target (which replaces a
    link there, never writes through it), then the folder fsynced so the rename itself is durable."""
    path = usable_path(Path(path))
    if path.is_symlink() is False and path.exists() and not (path.is_file() or path.is_dir()):
        raise InputError(path, "is not a regular file (a FIFO, socket or device); pick another output path")
    tmp: str | None = None
    try:
        with _signals_held():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".radar-", suffix=".tmp")  # short: any name fits
            try:
                _write_all(fd, text.encode() if isinstance(text, str) else text)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            tmp = None
            _fsync_dir(path.parent)
    except IsADirectoryError:
        raise InputError(path, "is a folder; pick another output path") from None
    except NotADirectoryError:
        raise InputError(path.parent, "is a file, not a folder; pick another output path") from None
    except OSError as exc:
        raise _write_failed(path, exc) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


NAME_MAX = 255  # bytes in one file name on Linux and macOS file systems


def usable_path(path: Path) -> Path:
    """`path`, refused in one line when one of its names is too long for the file system (which
    pathlib's own checks raise as a bare OSError)."""
    long = next((part for part in Path(path).parts if len(os.fsencode(part)) > NAME_MAX), None)
    if long is not None:
        raise InputError(
            path,
            f"the name '{long[:40]}...' is longer than {NAME_MAX} bytes, too long for the file "
            "system; choose a shorter name",
        )
    return Path(path)


def make_folder(path: Path, *, own: bool = False) -> Path:
    """An output folder, made with its parents; one line when a file is in the way. `own`: a folder
    radar names inside a run directory or a report (report/, figures/, repair/), where a link would
    send radar's files elsewhere: refused. A folder the user names (--out) may be a link."""
    usable_path(path)
    if own and path.is_symlink():
        raise InputError(
            path,
            "is a symbolic link; radar writes nothing through a link inside a run directory "
            "or report: remove the link, then run again",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(path, "is a file (or inside one), not a folder; pick another output path") from None
    except PermissionError as exc:
        raise InputError(path, f"cannot make this folder ({exc.strerror}); pick another output path") from None
    except OSError as exc:
        raise _write_failed(path, exc) from None
    return path
