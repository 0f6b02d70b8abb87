"""Diff two audits of a rubric: which pairs moved beyond their confidence intervals, which criteria
crossed the reliability gate, and whether a policy ceiling on Sym is crossed."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from radar_local.errors import InputError
from radar_local.rubric import parse_model
from radar_local.stats.audit import SCHEMA_VERSION


class _Pair(BaseModel):
    a: str
    b: str
    sym: float | None
    reliable: bool
    flags: list[str]
    ci: dict[str, list[float | None] | None] | None


class _Stats(BaseModel):
    """The keys compare reads; anything else in the file is left alone."""

    schema_version: int
    criteria: list[str]
    reliable: dict[str, bool]
    pairs: list[_Pair]


def load_stats(path: str | Path) -> dict:
    """A run directory's stats.json, or a stats JSON file itself, checked before use."""
    path = Path(path)
    file = path / "stats.json" if path.is_dir() else path
    if not file.is_file():
        raise InputError(path, "no stats.json here; pass a run directory from `radar audit` or a `radar stats --json` file")
    try:
        stats = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputError(file, "is not valid JSON") from None
    if not isinstance(stats, dict) or "pairs" not in stats or "reliable" not in stats:
        raise InputError(file, "is not a RADAR stats file (no 'pairs' or 'reliable')")
    version = stats.get("schema_version")
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        fix = "upgrade radar_local" if newer else "re-run `radar audit` or `radar stats --json` to rewrite it"
        raise InputError(file, f"stats schema_version {version!r}, this radar_local reads {SCHEMA_VERSION}; {fix}")
    parse_model(_Stats, stats, file)
    missing = [c for c in stats["criteria"] if c not in stats["reliable"]]
    if missing:
        raise InputError(file, f"key 'reliable' lacks criterion '{missing[0]}'; re-run to rewrite the file")
    return stats


def _disjoint(ci_a: list | None, ci_b: list | None) -> bool:
    if not ci_a or not ci_b or None in ci_a or None in ci_b:
        return False
    return ci_a[1] < ci_b[0] or ci_b[1] < ci_a[0]


def compare(before: dict, after: dict, fail_on_sym: float | None = None) -> dict:
    pairs_a = {frozenset((p["a"], p["b"])): p for p in before["pairs"]}
    rows = []
    for p in after["pairs"]:
        q = pairs_a.get(frozenset((p["a"], p["b"])))
        if q is None:
            continue
        ci_a, ci_b = (q["ci"] or {}).get("sym"), (p["ci"] or {}).get("sym")
        delta = None if p["sym"] is None or q["sym"] is None else p["sym"] - q["sym"]
        rows.append({"a": p["a"], "b": p["b"], "sym_before": q["sym"], "sym_after": p["sym"], "delta": delta,
                     "ci_before": ci_a, "ci_after": ci_b, "moved": _disjoint(ci_a, ci_b),
                     "flags_before": q["flags"], "flags_after": p["flags"], "reliable_after": p["reliable"]})
    shared = [c for c in after["criteria"] if c in before["reliable"]]
    gate = [{"criterion": c, "reliable_before": before["reliable"][c], "reliable_after": after["reliable"][c]}
            for c in shared if before["reliable"][c] != after["reliable"][c]]
    violations = []
    if fail_on_sym is not None:
        violations = [r for r in rows if r["reliable_after"] and r["sym_after"] is not None and r["sym_after"] >= fail_on_sym]
    return {"pairs": rows, "moved": [r for r in rows if r["moved"]], "gate_changes": gate,
            "fail_on_sym": fail_on_sym, "violations": violations,
            "only_before": sorted(set(before["criteria"]) - set(after["criteria"])),
            "only_after": sorted(set(after["criteria"]) - set(before["criteria"]))}
