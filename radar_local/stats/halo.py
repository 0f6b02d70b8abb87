"""The halo a joint judge adds: one verifier scoring the same probes per criterion and in one call for all
criteria, and per ordered pair the leakage under joint calls minus the leakage under per-criterion calls: the
paired comparison of stats/paired.py (its intervals, its simultaneous band a flag rests on, its index), with the
per-criterion verdicts before and the joint ones after.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from radar_local.stats.bootstrap import LEVEL, RESAMPLES
from radar_local.stats.paired import DOWN, UP, paired_leakage
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.stored import Block, Interval, Num

ADDS, REMOVES = "adds", "removes"
FLAGS = {UP: ADDS, DOWN: REMOVES, None: None}  # joint calls' leakage above the per-criterion one, or below
METHOD = (
    "paired stratified bootstrap (the same Rao-Wu resample of probes for both judges), expanded percentiles at "
    "the source's design df; flags on the simultaneous band over the K(K-1) ordered pairs"
)


class HaloPair(Block):
    source: str
    target: str
    per_criterion: Num  # the source -> target leakage under per-criterion calls
    joint: Num  # under joint calls
    difference: Num  # joint minus per-criterion
    ci: Interval | None
    band: Interval | None  # the simultaneous band the flag rests on
    flag: Literal["adds", "removes"] | None


class Halo(Block):
    """stats.json's `halo`: per ordered pair the joint-minus-per-criterion leakage with its interval and flag,
    the global index, and what they rest on."""

    per_criterion: str  # the verifier labels compared
    joint: str
    probes: int
    level: float
    resamples: int
    method: str
    index: Num
    index_ci: Interval | None
    pairs: list[HaloPair]


def checked_per_stratum(share: float, n: int) -> int:
    """The probes of a stratum of `n` a joint judge's halo check scores per criterion (`judge: {halo_check:
    share}`): the first ceil(share x n), the share taken exactly as written."""
    return math.ceil(Fraction(str(share)) * n)


def halo(
    per_criterion: ProbeMatrix,
    joint: ProbeMatrix,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Halo:
    """The halo of `joint` over `per_criterion` on the probes both scored (stats/paired.py)."""
    paired = paired_leakage(per_criterion, joint, resamples=resamples, seed=seed, level=level)
    pairs = [
        HaloPair(source=p.source, target=p.target, per_criterion=p.before, joint=p.after, difference=p.change,
                 ci=p.ci, band=p.band, flag=FLAGS[way])
        for p, way in paired.pairs
    ]  # fmt: skip
    return Halo(
        per_criterion=per_criterion.verifier,
        joint=joint.verifier,
        probes=paired.probes,
        level=level,
        resamples=resamples,
        method=METHOD,
        index=paired.index,
        index_ci=paired.index_ci,
        pairs=pairs,
    )
