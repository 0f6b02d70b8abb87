"""Criterion order in a joint call (issue 47): does the place a criterion is shown at move its score?

Each verdict of a joint call records the position its criterion was shown at. Within a stratum (task, target,
direction) the probes differ only by their variant, so a verdict's residual (its score on the 0-1 footing minus
its criterion's mean in its stratum) removes what the probes say. A criterion's position effect is the mean over
strata of its score when shown first minus its mean score when shown later in that stratum (one contrast per
stratum that shows it both ways). With `order: balanced` (a Latin square over a stratum's variants) every
criterion is shown at every place equally often, so the contrast is not confounded with the probes; with
`shuffled` it is balanced in expectation. The strata are the units: Student's t interval over the contrasts, and
the flag `order` on the Bonferroni band over the K criteria (t at alpha / 2K), compared exactly. (A stratified
bootstrap over probes was tried first: with one first-shown probe per stratum of five it flagged 13% of audits
with no effect, against a nominal 5%: scripts/order_error.py.)

The order leakage of C into D: D's score when C is shown before it minus when C is shown after it, one contrast
per stratum that shows both, read the same way with the band over the K(K-1) ordered pairs. Read it from a
shuffled order: a rotation of the rubric's order (balanced) ties the pairs together (whether C and whether E
come before D move together), so one primed pair shows in others too; and a position effect shows here as well
(a criterion shown before D is never D's first).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.intervals import t_interval
from radar_local.stats.stored import Block, Interval, Num


class PositionEffect(Block):
    criterion: str
    verdicts: int
    strata: int  # strata with the criterion shown first and later: the contrasts the effect averages
    by_position: list[Num]  # mean residual at each position, 0-1 footing
    effect: Num  # shown first minus shown later
    ci: Interval | None
    band: Interval | None
    flag: bool  # the band excludes 0


class OrderPair(Block):
    source: str  # the criterion shown before or after
    target: str  # the criterion whose score moves
    strata: int
    effect: Num  # the target's score with the source shown before it minus after it
    ci: Interval | None
    band: Interval | None
    flag: bool  # the band over the K(K-1) ordered pairs excludes 0


class OrderEffects(Block):
    verifier: str
    probes: int
    level: float
    effects: list[PositionEffect]
    pairs: list[OrderPair] = []  # the order leakage: does the criterion shown before D move D's score?


def order_effects(
    verifier: str,
    criteria: Sequence[str],
    stratum: np.ndarray,
    position: np.ndarray,
    scores: np.ndarray,
    *,
    level: float = LEVEL,
) -> OrderEffects:
    """`stratum` (P,): each probe's stratum id; `position`, `scores` (P, K): where each criterion was shown and its
    score on the 0-1 footing (NaN unscored)."""
    k = len(criteria)
    ids = np.unique(stratum)
    alpha = 1 - level
    rows = []
    for c, name in enumerate(criteria):
        ok = ~np.isnan(scores[:, c])
        contrasts: list[float] = []
        by_position: list[list[float]] = [[] for _ in range(k)]
        for s in ids:
            here = ok & (stratum == s)
            first, later = here & (position[:, c] == 0), here & (position[:, c] > 0)
            if first.any() and later.any():
                contrasts.append(float(scores[first, c].mean() - scores[later, c].mean()))
            centre = scores[here, c].mean() if here.any() else np.nan
            for p in range(k):
                at = here & (position[:, c] == p)
                by_position[p] += list(scores[at, c] - centre)
        rows.append(
            PositionEffect(
                criterion=name,
                verdicts=int(ok.sum()),
                by_position=[json_number(float(np.mean(v)) if v else np.nan) for v in by_position],
                **_over_strata(contrasts, alpha, k),
            )
        )
    pairs = []
    for (c, source), (d, target) in itertools.permutations(enumerate(criteria), 2):
        ok = ~np.isnan(scores[:, d]) & (position[:, c] >= 0) & (position[:, d] >= 0)
        contrasts = []
        for s in ids:
            here = ok & (stratum == s)
            before, after = here & (position[:, c] < position[:, d]), here & (position[:, c] > position[:, d])
            if before.any() and after.any():
                contrasts.append(float(scores[before, d].mean() - scores[after, d].mean()))
        pairs.append(OrderPair(source=source, target=target, **_over_strata(contrasts, alpha, k * (k - 1))))
    return OrderEffects(verifier=verifier, probes=len(stratum), level=level, effects=rows, pairs=pairs)


def _over_strata(contrasts: list[float], alpha: float, family: int) -> dict[str, Any]:
    """The mean of one contrast per stratum, Student's t interval over the strata, and its flag on the Bonferroni
    band over `family` effects (compared exactly)."""
    d = np.asarray(contrasts)
    effect = float(d.mean()) if len(d) else np.nan
    ci = band = None
    flag = False
    if len(d) >= 2:
        se = float(d.std(ddof=1)) / np.sqrt(len(d))
        ci = [float(x) for x in t_interval(effect, se, len(d) - 1, 1 - alpha)]
        band = [float(x) for x in t_interval(effect, se, len(d) - 1, 1 - alpha, family)]
        flag = Fraction(band[0]) > 0 or Fraction(band[1]) < 0  # exact: the band's float ends against 0
    return {"strata": len(d), "effect": json_number(effect), "ci": ci, "band": band, "flag": flag}
