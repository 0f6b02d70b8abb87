"""Whose coupling a joint judge's findings are about (issue 61): the rubric's, or the joint judge's as deployed.

A joint call scores every criterion at once, and a judge that lets one criterion's impression colour the others
there (a halo) makes criteria move together that would not under per-criterion calls. The family's bounds are
the joint judge's, so a pair they confirm may be its call format rather than the rubric. Under the rubric
reading (the default) a positive-coupling claim (directional, cluster, coupled, screened) is kept only where a
halo check on the same probes (stats/halo.py) does not find joint calls adding coupling: neither the halo index's
interval nor the pair's simultaneous band (either order) lies above 0; a tradeoff likewise where none lies below
0. Where the check finds it, or where no check was made, the claim is demoted to `possible`: its point estimate
crosses, and the report says why. Each side reads one tail of the index's interval and of the band, so on a judge
that adds no halo a true finding is demoted in at most 1 - level of audits (scripts/joint_halo_error.py measures
it; `--plan` prices it). Under the deployed reading the halo is part of the judge's coupling and nothing is
demoted; the halo block still says how much of it the call format makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from radar_local.stats.flags import CLUSTER, CONFIRMED, COUPLED, DIRECTIONAL, POSSIBLE, SCREENED, TRADEOFF
from radar_local.stats.halo import ADDS, REMOVES, Halo
from radar_local.stats.stored import Block

if TYPE_CHECKING:
    import pandas as pd

Reading = Literal["rubric", "deployed"]
RAISED = (DIRECTIONAL, CLUSTER)  # claims a halo that adds coupling can make; a tradeoff is one a halo that removes can
DEMOTED = (CONFIRMED, COUPLED, SCREENED)


class JointCalls(Block):
    """stats.json's `joint`: a joint judge's reading, what its halo check found, and the pairs whose claims were
    demoted for it."""

    reading: Reading
    checked: bool  # a halo check (per-criterion verdicts on the same probes) was made
    adds: bool  # the halo index's interval lies above 0
    removes: bool  # ... below 0
    demoted: list[list[str]]  # pairs [a, b] with a claim demoted to possible


def beyond(ci: Sequence[float | None] | None) -> int:
    """+1 where an interval lies above 0, -1 below, 0 where it holds 0 or is undefined (exactly)."""
    low, high = ci if ci is not None else (None, None)
    if low is None or high is None or low != low or high != high:
        return 0
    return 1 if Fraction(low) > 0 else -1 if Fraction(high) < 0 else 0


def halo_sides(halo: Halo | None, a: str, b: str) -> tuple[bool, bool]:
    """(adds, removes) for the pair a / b: the halo index's interval or either order's band beyond 0."""
    if halo is None:
        return False, False
    index = beyond(halo.index_ci)
    flags = {p.flag for p in halo.pairs if {p.source, p.target} == {a, b}}
    return index > 0 or ADDS in flags, index < 0 or REMOVES in flags


def read_joint(
    pairs: pd.DataFrame, halo: Halo | None, reading: Reading, intervals: bool = True
) -> tuple[pd.DataFrame, JointCalls]:
    """A joint judge's pairs (with their `evidence`) under `reading`, and its `joint` record: under the rubric
    reading every claim its halo could have made, where a halo check does not rule that out, demoted to possible.
    `intervals`: the audit has family bounds (without them every flag is already possible)."""
    index = beyond(halo.index_ci) if halo is not None else 0
    record = {"reading": reading, "checked": halo is not None, "adds": index > 0, "removes": index < 0}
    if reading == "deployed" or not intervals or "evidence" not in pairs:
        return pairs, JointCalls(**record, demoted=[])
    demoted, evidence = [], []
    for p in pairs.to_dict("records"):
        adds, removes = halo_sides(halo, p["a"], p["b"]) if halo is not None else (True, True)
        level = dict(p["evidence"] or {})
        for flag, was in level.items():
            if was in DEMOTED and ((flag in RAISED and adds) or (flag == TRADEOFF and removes)):
                level[flag] = POSSIBLE
        if level != (p["evidence"] or {}):
            demoted.append([p["a"], p["b"]])
        evidence.append(level)
    pairs = pairs.copy()
    pairs["evidence"] = evidence
    return pairs, JointCalls(**record, demoted=demoted)
