"""The paired comparison of two verifiers' leakages on the same probes, which the paired family shares: a joint
judge against its per-criterion verdicts (the halo, stats/halo.py), a judge against its upgrade, a reworded
template or its own answer without thinking (drift, stats/drift.py, wording and thinking built on it).

Both matrices hold the same probes, so the difference is paired: every bootstrap replicate resamples the
probes once (stats/bootstrap.stratified_counts, Rao-Wu n_h - 1 draws per stratum) and computes both judges'
leakages from that one resample. Intervals are the coupling intervals' expanded percentiles at the source's
design df (probes on its strata minus strata); a pair's direction rests on the simultaneous band over the cell's
K(K-1) differences (stats/intervals.simultaneous), so it is wrong in at most 1 - level of audits however many
pairs there are. The index is the mean difference over ordered pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, Strata
from radar_local.stats.exact import exact_point, to_float
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.stored import Block, Interval, Num

Way = Literal["up", "down"]
UP: Way = "up"
DOWN: Way = "down"


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


class PairedChange(Block):
    """One ordered pair's leakage under each verifier, the change (after minus before), its interval and the
    simultaneous band its direction rests on (stats.json's drift pairs add that direction as their flag)."""

    source: str
    target: str
    before: Num
    after: Num
    change: Num
    ci: Interval | None
    band: Interval | None


@dataclass(frozen=True)
class PairedLeakage:
    probes: int  # both verifiers scored
    pairs: list[tuple[PairedChange, Way | None]]  # each with its direction where the band settles it
    index: Num  # the mean change over ordered pairs
    index_ci: Interval | None


def paired_leakage(
    before: ProbeMatrix, after: ProbeMatrix, *, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL
) -> PairedLeakage:
    """`after`'s leakages against `before`'s on the probes both scored."""
    from radar_local.stats.intervals import ends, expanded_interval, simultaneous  # scipy: not at `radar --help`

    a, b = same_probes(before, after)
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
    index_ci = None
    df = sa.design_df()
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
            index_ci = ends(expanded_interval(np.array(to_float(index)), mean_reps, df.sum(), level))
    pairs = []
    for i, j in zip(*np.nonzero(off)):
        low, high = band[i, j]
        way: Way | None = None
        if not np.isnan(low):  # exact: the band's float ends against 0
            way = UP if Fraction(float(low)) > 0 else DOWN if Fraction(float(high)) < 0 else None
        change = PairedChange(
            source=crit[i],
            target=crit[j],
            before=json_number(np.nan if ea.leakage[i][j] is None else to_float(ea.leakage[i][j])),
            after=json_number(np.nan if eb.leakage[i][j] is None else to_float(eb.leakage[i][j])),
            change=json_number(point[i, j]),
            ci=None if np.isnan(ci[i, j]).any() else (float(ci[i, j][0]), float(ci[i, j][1])),
            band=None if np.isnan(band[i, j]).any() else (float(band[i, j][0]), float(band[i, j][1])),
        )
        pairs.append((change, way))
    return PairedLeakage(
        probes=int(len(a.scores)),
        pairs=pairs,
        index=None if index is None else to_float(index),
        index_ci=index_ci,
    )
