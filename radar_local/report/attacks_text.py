"""Under attack: how far each attack moves the judge's verdicts (stats/attacks.py), as text (outline.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num
from radar_local.stats.attacks import Attacks

if TYPE_CHECKING:
    from radar_local.stats.result import AuditResult

ATTACKS_HEAD = ["attack", "criterion", "pairs", "lift", CI, "family", "top share", "verdict"]


def attacks_line(result: AuditResult) -> str | None:
    """Which attacks move the judge (confirmed), which it resists, on how many pairs."""
    a = result.measured(Attacks)
    if a is None:
        return None

    def kinds(verdict: str) -> list[str]:
        return sorted({r.kind for r in a.rows if r.verdict == verdict})

    resisted = [k for k in a.kinds if all(r.verdict == "resists" for r in a.rows if r.kind == k)]
    return (
        f"Under attack: each probe with and without an attack built from this judge's own format (lift: the "
        f"attacked verdict minus the base's, 0-1 scale; attacked where the simultaneous {a.level:.0%} band over every "
        f"attack x criterion cell lies above 0, resisted where it lies below the margin {a.margin:g}). Attacked: "
        f"{', '.join(kinds('attacked')) or 'none'}; resisted on every criterion: {', '.join(resisted) or 'none'}."
    )


def attacks_rows(result: AuditResult) -> list[list[str]]:
    a = result.measured(Attacks)
    return [
        [r.kind, r.criterion, str(r.pairs), num(r.lift), interval(r.ci), interval(r.family_ci), num(r.top_share),
         r.verdict]
        for r in (a.rows if a else [])
    ]  # fmt: skip
