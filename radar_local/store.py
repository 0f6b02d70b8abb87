"""The run directory: append-only JSONL records keyed by their content, so a rerun skips stored calls.

Each batch of records is appended and fsynced as one write; a process killed at any moment loses at
most the batch in flight. A half-written last line (the kill landed mid-write) is ignored on load.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from radar_local.errors import InputError

RECORD_VERSION = 1
PROBES, SCORES = "probes.jsonl", "scores.jsonl"


def slug(label: str) -> str:
    """A model label as a file-name part."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)


def stats_file(verifier: str | None = None) -> str:
    """stats.json for the audit's own verifier, stats.<label>.json for one added later."""
    return f"stats.{slug(verifier)}.json" if verifier else "stats.json"


class Store:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.probes = self._load(PROBES)
        self.scores = self._load(SCORES)

    def _load(self, name: str) -> dict[str, dict]:
        path = self.root / name
        records: dict[str, dict] = {}
        if not path.exists():
            return records
        with path.open() as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn final line from a killed writer
                if rec.get("v") != RECORD_VERSION:
                    raise InputError(path, f"record version {rec.get('v')} is not {RECORD_VERSION}; re-run into a new directory")
                records[rec["key"]] = rec
        return records

    def _append(self, name: str, records: list[dict], into: dict[str, dict]) -> None:
        if not records:
            return
        blob = "".join(json.dumps({"v": RECORD_VERSION, **r}) + "\n" for r in records)
        with (self.root / name).open("a") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        for r in records:
            into[r["key"]] = {"v": RECORD_VERSION, **r}

    def add_probes(self, records: list[dict]) -> None:
        self._append(PROBES, records, self.probes)

    def add_scores(self, records: list[dict]) -> None:
        self._append(SCORES, records, self.scores)

    def write_json(self, name: str, obj: object) -> None:
        tmp = self.root / (name + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2))
        tmp.replace(self.root / name)


def open_run(path: str | Path, must_exist: bool = False) -> Store:
    path = Path(path)
    if must_exist and not (path / PROBES).is_file():
        raise InputError(path, f"not a run directory (no {PROBES}); run `radar audit` or `radar generate` first")
    return Store(path)
