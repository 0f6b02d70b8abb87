"""`radar order`'s text: each criterion's score shown first minus shown later (stats/order.py)."""

from __future__ import annotations

from radar_local.report.text import CI, interval, num
from radar_local.stats.order import OrderEffects

ORDER_HEAD = ["criterion", "verdicts", "strata", "first minus later", CI, "flag"]


def order_rows(o: OrderEffects | None) -> list[list[str]]:
    return [
        [e.criterion, str(e.verdicts), str(e.strata), num(e.effect), interval(e.ci), "order" if e.flag else ""]
        for e in (o.effects if o else [])
    ]


def order_line(o: OrderEffects | None) -> str | None:
    """Whether a joint judge scores a criterion otherwise by the place it shows it at."""
    if o is None:
        return None
    moved = [e.criterion for e in o.effects if e.flag]
    compared = max((e.strata for e in o.effects), default=0)
    found = (
        f"shown first, {', '.join(moved)} score otherwise beyond the {o.level:.0%} band over the criteria: one call "
        "is not order-safe for this judge and rubric"
        if moved
        else "no stratum showed a criterion both first and later, so nothing about order was compared (order: "
        "balanced shows each criterion at each place)"
        if compared == 0
        else f"no criterion's score moves with its place beyond the {o.level:.0%} band over the criteria"
    )
    primed = [f"{p.source} before {p.target} moves it by {num(p.effect)} {interval(p.ci)}" for p in o.pairs if p.flag]
    leak = (
        f"order leakage beyond the band over the {len(o.pairs)} ordered pairs: {'; '.join(primed)} (a position "
        "effect shows here too: a criterion shown before another is never the other's first)"
        if primed
        else f"no criterion moves another's score by being shown before it, beyond the band over the {len(o.pairs)} "
        "ordered pairs"
    )
    return (
        f"Criterion order in '{o.verifier}''s joint calls, {o.probes} probes ({o.level:.0%} intervals over the "
        f"strata's contrasts; scores on the 0-1 footing): {found}; {leak}."
    )
