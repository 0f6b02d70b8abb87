"""Agreement among raters (a jury's jurors, a judge and the team's human raters): Krippendorff's alpha, quadratic-
weighted kappa, and the effective number of independent jurors. Pure numpy; every estimate takes unit weights so
a bootstrap replicate is the same function of resampled counts.

Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability", eq. for the coincidence
matrix o_ck, n_c and the difference functions): alpha = 1 - (n - 1) * sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck,
over the units with two or more values. Nominal: d2 = [c != k]; ordinal: d2 = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2;
interval: d2 = (c - k)^2, summed without a coincidence matrix (sum over pairs of (x_i - x_j)^2 = 2 (m S2 - S1^2)),
so continuous scores need no table of values.

Quadratic-weighted kappa (Cohen 1968) with weights (x - y)^2 on a numeric scale is 1 - mean (x - y)^2 over its
expectation under independent marginals, var x + var y + (mean x - mean y)^2 (population variances): Lin's
concordance correlation. It needs no categories, so it reads a jury's mean scores as they are.

Effective jurors (Kish 1965, the design effect of equicorrelated measurements; the Spearman-Brown relation): the
mean of k jurors whose errors have mean pairwise correlation rho has the variance of k / (1 + (k - 1) rho)
independent ones. rho is clipped to [0, 1], so the estimate lies in [1, k].
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from radar_local.stats.bootstrap import LEVEL, unit_bootstrap
from radar_local.stats.correlation import spearman
from radar_local.stats.intervals import percentile_interval
from radar_local.stats.stored import Block, Interval, Num

# a criterion's level of measurement, which decides how two scores differ (Krippendorff)
Measurement = Literal["nominal", "ordinal", "interval"]
MEASUREMENTS: tuple[Measurement, ...] = ("nominal", "ordinal", "interval")


def alpha(data: np.ndarray, measurement: Measurement, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Krippendorff's alpha of `data` (raters x units, NaN where a rater gave no value). `weights`: counts of each
    unit, (units,) for one estimate or (B, units) for B bootstrap replicates (returns B values). NaN where fewer
    than two pairable values exist or every value is the same (no expected disagreement)."""
    data = np.asarray(data, float)
    if measurement not in MEASUREMENTS:
        raise ValueError(f"unknown level of measurement '{measurement}'; expected one of {', '.join(MEASUREMENTS)}")
    present = ~np.isnan(data)
    m = present.sum(axis=0)
    keep = m >= 2  # a unit with one value has no pair
    data, present, m = data[:, keep], present[:, keep], m[keep].astype(float)
    w = np.ones(len(m)) if weights is None else np.asarray(weights, float)[..., keep]
    single = w.ndim == 1
    w = np.atleast_2d(w)
    values = np.unique(data[present]) if measurement != "interval" else np.empty(0)
    if not keep.any():  # no unit two raters scored (one juror left in a jury): no agreement to measure
        return float("nan") if single else np.full(len(w), np.nan)
    chunk = max(1, CHUNK_CELLS // max(1, len(m) * len(values)))  # replicates at once: memory stays bounded
    if len(w) > chunk:
        return np.concatenate(
            [_alpha(data, present, m, w[i : i + chunk], measurement, values) for i in range(0, len(w), chunk)]
        )
    out = _alpha(data, present, m, w, measurement, values)
    return float(out[0]) if single else out


CHUNK_CELLS = 1 << 22  # replicates x units x values held at once by a nominal or ordinal alpha (32 MiB of floats)


def _alpha(
    data: np.ndarray, present: np.ndarray, m: np.ndarray, w: np.ndarray, measurement: Measurement, values: np.ndarray
) -> np.ndarray:
    if measurement == "interval":
        x = np.where(present, data, 0.0)
        s1, s2 = x.sum(axis=0), (x * x).sum(axis=0)
        observed = w @ (2 * (m * s2 - s1 * s1) / np.maximum(m - 1, 1))
        n, t1, t2 = w @ m, w @ s1, w @ s2
        expected = 2 * (n * t2 - t1 * t1)
    else:
        counts = np.stack([(data == v).sum(axis=0) for v in values], axis=1).astype(float)  # units x values
        scaled = w[:, :, None] * (counts / (m - 1)[:, None])[None]  # B x units x values
        o = np.einsum("buc,uk->bck", scaled, counts)
        o -= np.einsum("buc,ck->bck", scaled, np.eye(len(values)))  # a value is not its own pair
        nc = o.sum(axis=2)
        n = nc.sum(axis=1)
        d2 = _ordinal_d2(nc) if measurement == "ordinal" else np.broadcast_to(1.0 - np.eye(len(values)), o.shape)
        observed = (o * d2).sum(axis=(1, 2))
        expected = np.einsum("bc,bk,bck->b", nc, nc, d2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / np.where(expected > 0, expected, 1), np.nan)


def _ordinal_d2(nc: np.ndarray) -> np.ndarray:
    """(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 for every pair of ordered values, per replicate (B x V x V)."""
    cum = np.concatenate([np.zeros((len(nc), 1)), np.cumsum(nc, axis=1)], axis=1)  # cum[:, i] = sum of n_g, g < i
    v = nc.shape[1]
    lo, hi = np.minimum.outer(np.arange(v), np.arange(v)), np.maximum.outer(np.arange(v), np.arange(v))
    between = cum[:, hi + 1] - cum[:, lo]
    return (between - (nc[:, :, None] + nc[:, None, :]) / 2) ** 2


def weighted_kappa(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Quadratic-weighted kappa of paired scores (Lin's concordance): 1 - mean (x - y)^2 / (var x + var y +
    (mean x - mean y)^2). `weights` as for alpha, per pair. NaN where both raters are constant and equal."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    w = np.atleast_2d(np.ones(len(x)) if weights is None else np.asarray(weights, float))
    n = w.sum(axis=1)
    mx, my = w @ x / n, w @ y / n
    vx, vy = w @ (x * x) / n - mx**2, w @ (y * y) / n - my**2
    expected = vx + vy + (mx - my) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(expected > 1e-15, 1 - (w @ (x - y) ** 2 / n) / expected, np.nan)
    return float(out[0]) if weights is None or np.ndim(weights) == 1 else out


def effective_jurors(errors: np.ndarray) -> dict[str, Any]:
    """Kish's effective number of independent jurors from their errors (jurors x items, NaN where missing):
    k / (1 + (k - 1) rho), rho the mean pairwise Pearson correlation of errors on the items both scored, clipped to
    [0, 1]. None where fewer than two jurors have three shared items and non-constant errors."""
    errors = np.asarray(errors, float)
    k = len(errors)
    rhos = []
    for a, b in itertools.combinations(range(k), 2):
        both = ~np.isnan(errors[a]) & ~np.isnan(errors[b])
        x, y = errors[a][both], errors[b][both]
        if len(x) >= 3 and x.std() > 0 and y.std() > 0:
            rhos.append(float(np.corrcoef(x, y)[0, 1]))
    if not rhos:
        return {"effective": None, "jurors": k, "mean_error_correlation": None, "pairs": 0}
    rho = float(np.mean(rhos))
    clipped = min(1.0, max(0.0, rho))
    return {"effective": k / (1 + (k - 1) * clipped), "jurors": k, "mean_error_correlation": rho, "pairs": len(rhos)}


class Confusion(Block):
    levels: list[float]  # the scale's values
    counts: list[list[int]]  # human level (rows) x the judge's nearest level (columns)


class HumanAgreement(Block):
    """A judge's agreement with the human raters on one criterion (against_humans)."""

    responses: int
    ratings: int
    unscored: int
    level_of_measurement: Measurement
    confidence: float
    spearman: Num
    spearman_ci: Interval | None
    kappa: Num  # quadratic-weighted
    kappa_ci: Interval | None
    mae: Num
    mae_ci: Interval | None
    alpha_with_humans: Num
    alpha_with_humans_ci: Interval | None
    alpha_humans: Num  # the ceiling: the raters among themselves
    alpha_humans_ci: Interval | None
    confusion: Confusion


class LabelsBlock(Block):
    """stats.json's `labels`: per judge and labelled criterion, its agreement with the team's human labels."""

    source: str
    responses: int
    raters: int
    judges: dict[str, dict[str, HumanAgreement]]


def against_humans(
    judge: np.ndarray,
    humans: np.ndarray,
    measurement: Measurement,
    values: Sequence[float],
    *,
    resamples: int = 0,
    seed: int = 0,
    confidence: float = LEVEL,
) -> HumanAgreement:
    """A judge's agreement with human raters on labelled responses. `judge`: (items,) scores, NaN unscored;
    `humans`: (raters, items), NaN where a rater gave none. Every (response, rater) rating is a pair with the
    judge's score of that response: Spearman, quadratic-weighted kappa and MAE over the pairs; Krippendorff's alpha
    of the humans with the judge as one more rater, and of the humans alone (the ceiling, where a response has two
    raters or more); the confusion matrix of human level (rows) against the judge's nearest level (columns).
    Intervals: percentile bootstrap over responses."""
    judge, humans = np.asarray(judge, float), np.atleast_2d(np.asarray(humans, float))
    rated = (~np.isnan(humans)).any(axis=0)
    used = rated & ~np.isnan(judge)
    j, h = judge[used], humans[:, used]
    rater, item = np.nonzero(~np.isnan(h))
    x, y = j[item], h[rater, item]
    levels = np.asarray(sorted(values), float)
    out: dict[str, Any] = {
        "responses": int(used.sum()),
        "ratings": int(len(x)),
        "unscored": int((rated & np.isnan(judge)).sum()),
        "level_of_measurement": measurement,
        "confidence": confidence,
    }
    several = bool(((~np.isnan(h)).sum(axis=0) >= 2).any())
    w = unit_bootstrap(int(used.sum()), resamples, seed) if resamples else None
    both = np.vstack([h, j[None]])  # the judge as one more rater
    stats = {
        "spearman": (_rank_correlation(x, y), None if w is None else _rank_correlation_reps(x, y, w[:, item])),
        "kappa": (weighted_kappa(x, y) if len(x) else np.nan, None if w is None else weighted_kappa(x, y, w[:, item])),
        "mae": (float(np.mean(np.abs(x - y))) if len(x) else np.nan, None if w is None else _mae(x, y, w[:, item])),
        "alpha_with_humans": (alpha(both, measurement), None if w is None else alpha(both, measurement, w)),
        "alpha_humans": (alpha(h, measurement), None if w is None else alpha(h, measurement, w))
        if several
        else (np.nan, None),
    }
    for name, (point, reps) in stats.items():
        out[name] = None if np.isnan(point) else float(point)
        defined = reps is not None and out[name] is not None
        out[f"{name}_ci"] = percentile_interval(np.asarray(reps), confidence) if defined else None
    nearest = np.abs(x[:, None] - levels[None]).argmin(axis=1)
    human = np.searchsorted(levels, y)
    confusion = np.zeros((len(levels), len(levels)), int)
    np.add.at(confusion, (human, nearest), 1)
    out["confusion"] = {"levels": [float(v) for v in levels], "counts": confusion.tolist()}
    return HumanAgreement.model_validate(out)


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    rho = spearman(x, y) if len(x) else None
    return np.nan if rho is None else rho


def _rank_correlation_reps(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman on each replicate's pairs, each pair repeated as often as its response was drawn."""
    return np.array([_rank_correlation(np.repeat(x, c), np.repeat(y, c)) for c in weights.astype(int)])


def _mae(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return weights @ np.abs(x - y) / weights.sum(axis=1)
