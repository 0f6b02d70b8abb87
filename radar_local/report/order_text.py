"""`radar order`'s text: each criterion's score shown first minus shown later (stats/order.py)."""

from __future__ import annotations

from radar_local.report.markdown import md_table
from radar_local.report.text import interval, num
from radar_local.stats.order import OrderEffects


def order_lines(o: OrderEffects) -> list[str]:
    rows = [
        [e.criterion, str(e.verdicts), str(e.strata), num(e.effect), interval(e.ci), "order" if e.flag else ""]
        for e in o.effects
    ]
    moved = [e.criterion for e in o.effects if e.flag]
    return [
        f"Criterion order in '{o.verifier}''s joint calls, {o.probes} probes ({o.level:.0%} intervals over the "
        "strata's contrasts; scores on the 0-1 footing).",
        "",
        *md_table(["criterion", "verdicts", "strata", "first minus later", "interval", "flag"], rows),
        "",
        f"Shown first, {', '.join(moved)} score otherwise beyond the {o.level:.0%} band over the criteria: one call "
        "is not order-safe for this judge and rubric."
        if moved
        else f"No criterion's score moves with its place beyond the {o.level:.0%} band over the criteria.",
    ]
