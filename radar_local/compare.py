"""Diff two audits of a rubric: which pairs moved beyond their confidence intervals, which criteria
crossed the reliability gate, and whether a policy ceiling on Sym is crossed."""

from __future__ import annotations

from pathlib import Path

from radar_local.common import json_number
from radar_local.errors import InputError
from radar_local.inputs import read_json
from radar_local.stats.result import AuditResult


def load_stats(path: str | Path) -> AuditResult:
    """A run directory's stats.json, or a stats JSON file itself, checked before use."""
    path = Path(path)
    file = path / "stats.json" if path.is_dir() else path
    if not file.is_file():
        raise InputError(
            path, "no stats.json here; pass a run directory from `radar audit` or a `radar stats --json` file"
        )
    data = read_json(file, "pass the stats.json of a finished audit")
    if "pairs" not in data or "reliable" not in data:
        raise InputError(file, "is not a RADAR stats file (no 'pairs' or 'reliable')")
    return AuditResult.from_json(data, file)


def _disjoint(ci_a: tuple | None, ci_b: tuple | None) -> bool:
    if ci_a is None or ci_b is None or any(x != x for x in (*ci_a, *ci_b)):
        return False
    return ci_a[1] < ci_b[0] or ci_b[1] < ci_a[0]


def compare(before: AuditResult, after: AuditResult, fail_on_sym: float | None = None) -> dict:
    earlier = {frozenset((p["a"], p["b"])): p for p in before.pairs.to_dict("records")}
    rows = []
    for p in after.pairs.to_dict("records"):
        q = earlier.get(frozenset((p["a"], p["b"])))
        if q is None:
            continue
        rows.append(
            {
                "a": p["a"],
                "b": p["b"],
                "sym_before": json_number(q["sym"]),
                "sym_after": json_number(p["sym"]),
                "delta": json_number(p["sym"] - q["sym"]),
                "ci_before": q["sym_ci"],
                "ci_after": p["sym_ci"],
                "moved": _disjoint(q["sym_ci"], p["sym_ci"]),
                "flags_before": q["flags"],
                "flags_after": p["flags"],
                "reliable_after": p["reliable"],
            }
        )
    shared = [c for c in after.criteria if c in before.reliable.index]
    gate = [
        {"criterion": c, "reliable_before": bool(before.reliable[c]), "reliable_after": bool(after.reliable[c])}
        for c in shared
        if before.reliable[c] != after.reliable[c]
    ]
    violations = []
    if fail_on_sym is not None:
        # Every reliable pair of `after`, whether or not `before` has it (a renamed criterion is no loophole).
        # Stored Sym is the exact value correctly rounded, and the policy is the decimal correctly rounded:
        # rounding is monotone, so comparing the two floats keeps the exact values' order (stats/exact.py).
        violations = [
            {"a": p["a"], "b": p["b"], "sym_after": p["sym"]}
            for p in after.pairs.to_dict("records")
            if p["reliable"] and p["sym"] == p["sym"] and p["sym"] >= fail_on_sym
        ]
    return {
        "pairs": rows,
        "moved": [r for r in rows if r["moved"]],
        "gate_changes": gate,
        "fail_on_sym": fail_on_sym,
        "violations": violations,
        "only_before": sorted(set(before.criteria) - set(after.criteria)),
        "only_after": sorted(set(after.criteria) - set(before.criteria)),
    }
