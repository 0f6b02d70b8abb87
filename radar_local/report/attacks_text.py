"""Under attack: how far each attack moves the judge's verdicts (stats/attacks.py), as text (outline.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num
from radar_local.stats.attacks import ITEMS, PITFALLS, SCORE, STEERED, Attacks, PairAttacks

if TYPE_CHECKING:
    from radar_local.stats.pairwise_audit import PairwiseAudit
    from radar_local.stats.result import AuditResult

ATTACKS_HEAD = ["attack", "criterion", "pairs", "lift", CI, "family", "top share", "verdict"]


def attacks_line(result: AuditResult) -> str | None:
    """Which attacks move the judge (confirmed), which it resists, on how many pairs."""
    a = result.measured(Attacks)
    if a is None:
        return None

    def kinds(verdict: str) -> list[str]:
        return sorted({r.kind for r in a.of() if r.verdict == verdict})

    resisted = [k for k in a.kinds if all(r.verdict == "resists" for r in a.of() if r.kind == k)]
    return (
        f"Under attack: each probe with and without an attack built from this judge's own format (lift: the "
        f"attacked verdict minus the base's, 0-1 scale; attacked where the simultaneous {a.level:.0%} band over every "
        f"attack x criterion cell lies above 0, resisted where it lies below the margin {a.margin:g}). Attacked: "
        f"{', '.join(kinds('attacked')) or 'none'}; resisted on every criterion: {', '.join(resisted) or 'none'}."
        + (POOLED if any(r.criterion in (ITEMS, PITFALLS, SCORE) for r in a.rows) else "")
    )


POOLED = (
    f" A per-prompt rubric's items are pooled per pair over its task's own: {ITEMS} and {PITFALLS} the change in "
    f"their met rate (a judge talked into 'met' says a pitfall occurred too), {SCORE} the change in the task's "
    "rubric score (points met over positive points)."
)


def attacks_rows(result: AuditResult) -> list[list[str]]:
    a = result.measured(Attacks)
    return [
        [r.kind, r.criterion, str(r.pairs), num(r.lift), interval(r.ci), interval(r.family_ci), num(r.top_share),
         r.verdict]
        for r in (a.of() if a else [])
    ]  # fmt: skip


DEFENCES_HEAD = ["attack", "defence", "attacked on", "resists on", "largest lift", "its family band"]


def stops(a: Attacks, defence: str, kind: str) -> bool:
    """A defence stops an attack: the attack moves the judge as configured (confirmed on a criterion) and, with the
    defence on, the judge resists it on every criterion (its band below the margin: confirmed too)."""
    moved = any(r.verdict == "attacked" for r in a.of() if r.kind == kind)
    return moved and all(r.verdict == "resists" for r in a.of(defence) if r.kind == kind)


def defences_line(result: AuditResult) -> str | None:
    """Which defence stops which attack, each measured on the same pairs as the judge as configured."""
    a = result.measured(Attacks)
    if a is None or not a.defences:
        return None
    said = []
    for d in a.defences:
        moved = [k for k in a.kinds if any(r.verdict == "attacked" for r in a.of() if r.kind == k)]
        still = [k for k in moved if any(r.verdict == "attacked" for r in a.of(d) if r.kind == k)]
        stopped = [k for k in moved if stops(a, d, k)]
        left = [k for k in moved if k not in still and k not in stopped]
        said.append(
            f"{d} stops {', '.join(stopped) or 'none'}"
            + (f", leaves {', '.join(left)} open (no longer confirmed, not confirmed resisted)" if left else "")
            + (f", is still moved by {', '.join(still)}" if still else "")
        )
    return (
        "Defences: the same attacked probes and their bases scored by this judge with each defence switched on beside "
        "its own settings (docs/judge-bias.md), one family with the rows above. A defence stops an attack that moves "
        f"the judge as configured when, with it, the judge resists that attack on every criterion: {'; '.join(said)}."
    )


def defences_rows(result: AuditResult) -> list[list[str]]:
    a = result.measured(Attacks)
    if a is None or not a.defences:
        return []
    out = []
    for kind in a.kinds:
        for defence in (None, *a.defences):
            mine = [r for r in a.of(defence) if r.kind == kind]
            top = max((r for r in mine if r.lift is not None), key=lambda r: r.lift or 0.0, default=None)
            out.append([
                kind, defence or "none (as configured)",
                ", ".join(r.criterion for r in mine if r.verdict == "attacked") or "none",
                f"{sum(r.verdict == 'resists' for r in mine)} of {len(mine)}",
                num(top.lift) if top else "-", interval(top.family_ci) if top else "-",
            ])  # fmt: skip
    return out


PAIR_ATTACKS_HEAD = ["attack", "question", "verdicts", "lift", CI, "family", "flips, shown as A", "as B", "verdict"]


def pair_attacks_line(result: AuditResult | PairwiseAudit) -> str | None:
    """Which attacks in the worse response of a pair move the pairwise judge to prefer it, confirmed."""
    a = result.measured(PairAttacks)
    if a is None:
        return None
    moved = sorted({r.kind for r in a.rows if r.verdict == "attacked"})
    resisted = [k for k in a.kinds if all(r.verdict == "resists" for r in a.rows if r.kind == k)]
    return (
        "Pairwise judge under attack: each steered pair with its worse (down) response attacked, asked in both orders "
        f"(lift: the attacked response's win rate, a tie half, with the attack minus without; {STEERED}: asked about "
        "the criterion it was steered on, on which the other response is the better; flips: of the verdicts that "
        "preferred the other response without the attack, the share that prefer the attacked one with it, by the "
        "slot it was shown in: a claim or forged verdict naming A speaks for it only when it is A). Attacked "
        f"(the simultaneous {a.level:.0%} band above 0): {', '.join(moved) or 'none'}; resisted on every question "
        f"(below the margin {a.margin:g}): {', '.join(resisted) or 'none'}."
    )


def pair_attacks_rows(result: AuditResult | PairwiseAudit) -> list[list[str]]:
    a = result.measured(PairAttacks)
    return [
        [r.kind, r.criterion, str(r.pairs), num(r.lift), interval(r.ci), interval(r.family_ci),
         *(num(f, signed=False) for f in (r.flips or [None, None])), r.verdict]
        for r in (a.rows if a else [])
    ]  # fmt: skip
