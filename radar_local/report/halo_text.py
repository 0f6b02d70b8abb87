"""The halo check's text (outline.py): joint minus per-criterion leakage, and what a joint judge's findings rest on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num
from radar_local.stats.halo import Halo
from radar_local.stats.joint import beyond

if TYPE_CHECKING:
    from radar_local.stats.result import AuditResult


HALO_HEAD = ["source -> target", "per-criterion", "joint", "joint - per-criterion", CI, "flag"]


def halo_rows(result: AuditResult) -> list[list[str]]:
    h = result.measured(Halo)
    return [
        [
            f"{p.source} -> {p.target}",
            num(p.per_criterion),
            num(p.joint),
            num(p.difference),
            interval(p.ci),
            {"adds": "joint adds coupling", "removes": "joint removes coupling"}.get(p.flag or "", ""),
        ]
        for p in (h.pairs if h else [])
    ]


def halo_line(result: AuditResult) -> str | None:
    """What scoring every criterion in one call adds to the coupling of the same judge's per-criterion calls."""
    h = result.measured(Halo)
    if not h:
        return None
    adds = [f"{p.source} -> {p.target}" for p in h.pairs if p.flag == "adds"]
    index = f"halo index {num(h.index)} {interval(h.index_ci)}".rstrip()
    side = beyond(h.index_ci)  # the index's interval above (+1) or below (-1) 0
    found = (
        f"joint calls add coupling beyond the {h.level:.0%} simultaneous band on {', '.join(adds)}: a joint "
        "flag there may be the judge's halo, not the rubric's coupling (the per-criterion audit settles it)"
        if adds
        else "no single pair's coupling rises beyond its simultaneous band, but the index's interval lies "
        f"{'above' if side > 0 else 'below'} 0: joint calls move the coupling overall"
        if side
        else "no pair's coupling rises beyond its simultaneous band under joint calls"
    )
    return (
        f"The same {h.probes} probes scored by '{h.per_criterion}' (one call per criterion) and "
        f"'{h.joint}' (one call for all criteria): {index} (the mean joint-minus-per-criterion leakage over "
        f"ordered pairs); {found}."
    )
