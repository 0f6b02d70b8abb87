"""The halo a joint judge adds: one verifier scoring the same probes per criterion and in one call for all
criteria, and per ordered pair the leakage under joint calls minus the leakage under per-criterion calls.

Both matrices hold the same probes, so the difference is paired: every bootstrap replicate resamples the
probes once (stats/bootstrap.stratified_counts, Rao-Wu n_h - 1 draws per stratum) and computes both judges'
leakages from that one resample. Intervals are the coupling intervals' expanded percentiles at the source's
design df (probes on its strata minus strata); the flag rests on the simultaneous band over the cell's
K(K-1) differences (stats/intervals.simultaneous), so a flag is wrong in at most 1 - level of audits
however many pairs there are. The global halo index is the mean difference over ordered pairs.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, Strata
from radar_local.stats.exact import exact_point, to_float
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.stored import Block, Interval, Num

ADDS, REMOVES = "adds", "removes"
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


def same_probes(a: ProbeMatrix, b: ProbeMatrix) -> tuple[ProbeMatrix, ProbeMatrix]:
    """Both matrices restricted to the probes both hold, row r the same probe in each (the pairing)."""
    if a.tasks != b.tasks or a.criteria != b.criteria:
        raise ValueError("the two judges' verdicts are on other tasks or criteria: no paired comparison")

    def keys(pm: ProbeMatrix) -> list[tuple[int, int, int, str]]:
        return list(zip(pm.task.tolist(), pm.target.tolist(), pm.direction.tolist(), map(str, pm.variant)))

    shared = set(keys(a)) & set(keys(b))

    def keep(pm: ProbeMatrix) -> ProbeMatrix:
        rows = sorted((k, r) for r, k in enumerate(keys(pm)) if k in shared)  # one order for both
        index = np.array([r for _, r in rows], dtype=np.int64)
        arrays = {f: getattr(pm, f)[index] for f in ("scores", "task", "target", "direction", "variant")}
        return ProbeMatrix(**{**vars(pm), **arrays})

    return keep(a), keep(b)


def halo(
    per_criterion: ProbeMatrix,
    joint: ProbeMatrix,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Halo:
    """The halo of `joint` over `per_criterion` on the probes both scored."""
    from radar_local.stats.intervals import expanded_interval, simultaneous  # scipy: not at `radar --help`

    a, b = same_probes(per_criterion, joint)
    crit = list(a.criteria)
    k = len(crit)
    sa, sb = Strata.from_probes(a), Strata.from_probes(b)
    ea, eb = exact_point(sa), exact_point(sb)
    point = np.full((k, k), np.nan)
    exact: dict[tuple[int, int], Fraction] = {}
    for i in range(k):
        for j in range(k):
            la, lb = ea.leakage[i][j], eb.leakage[i][j]
            if i != j and la is not None and lb is not None:
                exact[i, j] = lb - la
                point[i, j] = to_float(lb - la)
    off = ~np.eye(k, dtype=bool)
    defined = off & ~np.isnan(point)
    index = sum(exact.values(), Fraction(0)) / len(exact) if exact else None
    df = sa.design_df()
    out: dict[str, Any] = {
        "per_criterion": per_criterion.verifier,
        "joint": joint.verifier,
        "probes": int(len(a.scores)),
        "level": level,
        "resamples": resamples,
        "method": METHOD,
        "index": None if index is None else to_float(index),
        "index_ci": None,
        "pairs": [],
    }
    band = np.full((k, k, 2), np.nan)
    ci = np.full((k, k, 2), np.nan)
    if resamples and defined.any():
        rng = np.random.default_rng(seed)
        w = sa.bootstrap_weights(rng, resamples)
        ones = np.ones((1, len(sa.scores)))
        deltas = (sb.leakage(w) - sa.leakage(w)) - (sb.leakage(ones) - sa.leakage(ones))  # (B, K, K)
        ci = expanded_interval(point, deltas, df[:, None], level)
        rows, cols = np.nonzero(defined)
        flat, _ = simultaneous(point[defined], deltas[:, defined], df[rows], level)
        band[rows, cols] = flat
        mean_reps = np.nanmean(np.where(defined, deltas, np.nan), axis=(1, 2))
        if index is not None:
            ends = expanded_interval(np.array(to_float(index)), mean_reps, df.sum(), level)
            out["index_ci"] = [json_number(x) for x in ends]
    for i, j in zip(*np.nonzero(off)):
        low, high = band[i, j]
        flag = None
        if not np.isnan(low):  # exact: the band's float ends against 0
            flag = ADDS if Fraction(float(low)) > 0 else REMOVES if Fraction(float(high)) < 0 else None
        out["pairs"].append(
            {
                "source": crit[i],
                "target": crit[j],
                "per_criterion": json_number(np.nan if ea.leakage[i][j] is None else to_float(ea.leakage[i][j])),
                "joint": json_number(np.nan if eb.leakage[i][j] is None else to_float(eb.leakage[i][j])),
                "difference": json_number(point[i, j]),
                "ci": None if np.isnan(ci[i, j]).any() else [float(x) for x in ci[i, j]],
                "band": None if np.isnan(band[i, j]).any() else [float(x) for x in band[i, j]],
                "flag": flag,
            }
        )
    return Halo.model_validate(out)
