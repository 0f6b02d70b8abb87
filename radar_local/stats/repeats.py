"""A judge's repeat agreement: the same verdicts asked R times (`consistency: {repeats: R}`, issue 47).

The repeats ask the same requests again under other verifier labels ('<label>-repeat-r'), greedy as every radar
verdict is, in another order and so in other batches: where they disagree, the judge's verdict depends on what it
was batched with (vLLM's batch variance) or on its sampling. Per criterion, over the probes every repeat scored:

- `changed`: the share of probes whose R verdicts are not all equal;
- `alpha`: Krippendorff's alpha with the repeats as raters, at the criterion's level of measurement;
- `noise_sd`: the judge's noise, the root mean within-probe variance of the R verdicts (scale points);
- `noise_share`: that variance over the within-stratum variance of one verdict (the first asking's, pooled over
  strata). A within-stratum variance is the probes' own variation plus the judge's noise, and every self-effect
  and leakage's variance is proportional to it: `noise_share` is the part of their variance that is the judge's
  noise, which averaging R verdicts would divide by R.

Unscored verdicts are counted, never coerced: a probe enters where all R verdicts scored. Intervals: percentile,
over `resamples` draws of the probes with replacement (bootstrap.unit_bootstrap; drawn within strata they covered
no better); their coverage of a planted judge's noise is scripts/repeat_error.py's (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, unit_bootstrap
from radar_local.stats.intervals import percentile_interval
from radar_local.stats.paired import same_probes
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.raters import Measurement, alpha
from radar_local.stats.stored import Block, Interval, Num


class RepeatCriterion(Block):
    criterion: str
    probes: int  # probes whose R verdicts all scored
    unscored: int  # verdicts of the repeated probes that came back unscored
    changed: Num
    changed_ci: Interval | None
    alpha: Num
    alpha_ci: Interval | None
    noise_sd: Num  # scale points
    noise_sd_ci: Interval | None
    noise_share: Num  # of one verdict's within-stratum variance
    noise_share_ci: Interval | None


class Repeats(Block):
    labels: list[str]  # the verifier, then its repeats
    probes: int  # probes every repeat holds
    level: float
    resamples: int
    criteria: list[RepeatCriterion]


def common_probes(matrices: Sequence[ProbeMatrix]) -> list[ProbeMatrix]:
    """Every matrix restricted to the probes all of them hold, row r the same probe in each."""
    first = reduce(lambda a, b: same_probes(a, b)[0], matrices[1:], matrices[0])
    return [same_probes(first, m)[1] for m in matrices]


def repeats(
    matrices: Sequence[ProbeMatrix],
    measurements: Mapping[str, Measurement],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Repeats:
    """`matrices`: the verifier's verdicts (all its probes), then each repeat's (two or more in all). A resample
    draws the verifier's probes with replacement: the repeated ones among them give the noise, all of them the
    within-stratum spread."""
    if len(matrices) < 2:
        raise ValueError("repeat agreement needs two or more askings of the same verdicts")
    pms = common_probes(matrices)
    full = matrices[0]
    row = {key: r for r, key in enumerate(_keys(full))}
    repeated = np.array([row[key] for key in _keys(pms[0])], dtype=np.int64)
    stratum = full.task * 1_000_000 + (full.target + 1) * 10 + full.direction
    weights = unit_bootstrap(len(full.scores), resamples, seed) if resamples else None
    rows = [
        _criterion(
            c,
            np.stack([pm.scores[:, k] for pm in pms]),
            full.scores[:, k],
            repeated,
            stratum,
            measurements.get(c, "ordinal"),
            weights,
            level,
        )
        for k, c in enumerate(full.criteria)
    ]
    return Repeats(
        labels=[pm.verifier for pm in pms], probes=len(repeated), level=level, resamples=resamples, criteria=rows
    )


def _keys(pm: ProbeMatrix) -> list[tuple[int, int, int, str]]:
    return list(zip(pm.task.tolist(), pm.target.tolist(), pm.direction.tolist(), map(str, pm.variant)))


def _criterion(
    criterion: str,
    scores: np.ndarray,
    first: np.ndarray,
    repeated: np.ndarray,
    stratum: np.ndarray,
    measurement: Measurement,
    weights: np.ndarray | None,
    level: float,
) -> RepeatCriterion:
    """`scores`: (R, P) one criterion's verdicts on the repeated probes, NaN where unscored; `first`: the first
    asking's verdict on every probe, `repeated` the rows of the repeated ones in it; `weights`: (B, all probes)."""
    full = ~np.isnan(scores).any(axis=0)
    x, units = scores[:, full], repeated[full]  # the probes every asking scored, and their rows among all
    changed = (x.max(axis=0) != x.min(axis=0)).astype(float)
    within = x.var(axis=0, ddof=1) if len(units) else np.zeros(0)  # the judge's noise, probe by probe
    # one verdict's squared deviation from its stratum's mean (the first asking, every scored probe), pooled
    scored = ~np.isnan(first)
    _, inverse, sizes = np.unique(stratum[scored], return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=first[scored]) / sizes
    deviation = np.zeros(len(first))
    deviation[scored] = (first[scored] - means[inverse]) ** 2
    dof = int(scored.sum()) - len(sizes)
    correction = scored.sum() / dof if dof > 0 else np.nan  # a weighted mean of squares, over (n - strata)

    def statistics(w: np.ndarray) -> dict[str, np.ndarray]:
        w = np.atleast_2d(w)
        mine = w[:, units]
        with np.errstate(invalid="ignore", divide="ignore"):
            noise = (mine @ within) / mine.sum(axis=1)
            spread = (w[:, scored] @ deviation[scored]) / w[:, scored].sum(axis=1) * correction
            return {
                "changed": (mine @ changed) / mine.sum(axis=1),
                "noise_sd": np.sqrt(noise),
                "noise_share": np.where(spread > 0, noise / spread, np.nan),
                "alpha": np.atleast_1d(alpha(x, measurement, mine)) if len(units) else np.full(len(w), np.nan),
            }

    point = {k: float(v[0]) for k, v in statistics(np.ones(len(first))).items()}
    reps = statistics(weights) if weights is not None and len(units) else None

    def ci(key: str) -> Interval | None:
        return None if reps is None else percentile_interval(reps[key], level)

    return RepeatCriterion(
        criterion=criterion,
        probes=len(units),
        unscored=int(np.isnan(scores).sum()),
        **{key: json_number(point[key]) for key in ("changed", "alpha", "noise_sd", "noise_share")},
        changed_ci=ci("changed"),
        alpha_ci=ci("alpha"),
        noise_sd_ci=ci("noise_sd"),
        noise_share_ci=ci("noise_share"),
    )
