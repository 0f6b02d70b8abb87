"""A judge's drift: two verifiers (a judge before and after an upgrade, a new checkpoint, a reworded template)
scoring the same stored probes, compared verdict by verdict and audit by audit (issue 47).

Per criterion, over the probes both scored: how often the verdicts agree exactly and within one level, the mean
shift after minus before, quadratic-weighted kappa and Krippendorff's alpha of the two as raters (the agreement
statistics of the human labels, stats/raters.against_humans, the "before" judge standing for the rater), and
each judge's unscored verdicts, counted and never coerced into a score. Per criterion the self-effect's change and
per ordered pair the leakage's change, paired: one resample of probes for both judges (stats/paired.py, which the
halo shares), its flag on the simultaneous band over the K(K-1) pairs.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, Strata, unit_bootstrap
from radar_local.stats.coupling import self_effect
from radar_local.stats.intervals import expanded_interval, percentile_interval
from radar_local.stats.paired import DOWN, UP, PairedChange, paired_leakage, same_probes
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.raters import Measurement, against_humans
from radar_local.stats.stored import Block, Interval, Num

RISES, FALLS = "rises", "falls"


class DriftCriterion(Block):
    criterion: str
    probes: int  # scored by both judges
    unscored_before: int  # of the probes the other judge scored
    unscored_after: int
    exact: Num  # the share of verdicts that are equal
    within_one_level: Num
    shift: Num  # mean of after minus before, on the criterion's scale
    shift_ci: Interval | None
    kappa: Num
    kappa_ci: Interval | None
    alpha: Num
    alpha_ci: Interval | None
    self_effect_before: Num
    self_effect_after: Num
    self_effect_change: Num
    self_effect_change_ci: Interval | None


class DriftPair(PairedChange):
    flag: Literal["rises", "falls"] | None


class Drift(Block):
    before: str  # the verifier labels compared
    after: str
    probes: int
    level: float
    resamples: int
    criteria: list[DriftCriterion]
    pairs: list[DriftPair]
    index: Num  # the mean leakage change over ordered pairs
    index_ci: Interval | None


def drift(
    before: ProbeMatrix,
    after: ProbeMatrix,
    levels: Mapping[str, Sequence[float]],
    measurements: Mapping[str, Measurement],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Drift:
    """`after` against `before` on the probes both hold; `levels`: each criterion's scale values."""
    a, b = same_probes(before, after)
    coupling = paired_leakage(a, b, resamples=resamples, seed=seed, level=level)
    changes = _self_effects(a, b, resamples, seed, level)
    rows = []
    for k, c in enumerate(a.criteria):
        x, y = a.scores[:, k], b.scores[:, k]
        both = ~np.isnan(x) & ~np.isnan(y)
        values = sorted(float(v) for v in levels[c])
        step = float(np.diff(values).min()) if len(values) > 1 else 0.0
        d = y[both] - x[both]
        agree = against_humans(y, x[None], measurements[c], values, resamples=resamples, seed=seed, confidence=level)
        shift_ci = None
        if resamples and both.any():
            w = unit_bootstrap(int(both.sum()), resamples, seed)
            shift_ci = percentile_interval(w @ d / w.sum(axis=1), level)
        rows.append(
            DriftCriterion(
                criterion=c,
                probes=int(both.sum()),
                unscored_before=int((np.isnan(x) & ~np.isnan(y)).sum()),
                unscored_after=int((np.isnan(y) & ~np.isnan(x)).sum()),
                exact=json_number(float(np.mean(d == 0)) if both.any() else np.nan),
                within_one_level=json_number(float(np.mean(np.abs(d) <= step + 1e-9)) if both.any() else np.nan),
                shift=json_number(float(d.mean()) if both.any() else np.nan),
                shift_ci=shift_ci,
                kappa=agree.kappa,
                kappa_ci=agree.kappa_ci,
                alpha=agree.alpha_with_humans,
                alpha_ci=agree.alpha_with_humans_ci,
                **changes[k],
            )
        )
    flags = {UP: RISES, DOWN: FALLS, None: None}
    pairs = [DriftPair(**vars(p), flag=flags[way]) for p, way in coupling.pairs]
    return Drift(
        before=before.verifier,
        after=after.verifier,
        probes=coupling.probes,
        level=level,
        resamples=resamples,
        criteria=rows,
        pairs=pairs,
        index=coupling.index,
        index_ci=coupling.index_ci,
    )


def _self_effects(a: ProbeMatrix, b: ProbeMatrix, resamples: int, seed: int, level: float) -> list[dict[str, Any]]:
    """Each criterion's self-effect under both judges (mean over tasks, the 0-1 footing) and its paired change."""
    sa, sb = Strata.from_probes(a), Strata.from_probes(b)

    def mean_self_effect(s: Strata, w: np.ndarray | None) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a criterion with no defined task: NaN, said so
            return np.nanmean(self_effect(s.means(w)), axis=-2)  # (B, K)

    point_a, point_b = mean_self_effect(sa, None)[0], mean_self_effect(sb, None)[0]
    change = point_b - point_a
    ci = np.full((len(change), 2), np.nan)
    if resamples:
        w = sa.bootstrap_weights(np.random.default_rng(seed), resamples)
        deltas = (mean_self_effect(sb, w) - mean_self_effect(sa, w)) - change
        ci = expanded_interval(change, deltas, sa.design_df(), level)
    return [
        {
            "self_effect_before": json_number(float(point_a[k])),
            "self_effect_after": json_number(float(point_b[k])),
            "self_effect_change": json_number(float(change[k])),
            "self_effect_change_ci": None if np.isnan(ci[k]).any() else [float(v) for v in ci[k]],
        }
        for k in range(len(change))
    ]
