"""Self-effect, leakage, gating, symmetric coupling and global summaries (RADAR §3.4-3.5, App. C).

Every function takes stratum means with optional leading batch axes, so the same code serves the
point estimate, the bootstrap and the probe-budget ablation. Shapes: T tasks, K criteria,
means[..., t, i, d, j] = mean normalized score on criterion j of probes for task t that target
criterion i in direction d (d = 0 for +, 1 for -).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np

TAU = 0.40
# How a leakage is taken over tasks: the ratio of means (radar's default, ratio_of_means) or the paper's eq. 5, the
# mean of the per-task ratios over the tasks where the source's self-effect is positive (to reproduce its tables).
LeakageDefinition = Literal["ratio_of_means", "paper"]
LEAKAGE_DEFINITIONS: tuple[LeakageDefinition, ...] = ("ratio_of_means", "paper")


def _nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def _nanstd(x: np.ndarray, axis: int) -> np.ndarray:
    """Population sd over the defined values; undefined (NaN) with fewer than two, never 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.where((~np.isnan(x)).sum(axis=axis) >= 2, np.nanstd(x, axis=axis), np.nan)


def gen_coupling(means: np.ndarray) -> np.ndarray:
    """GenCoupling(C_i -> C_j) = p_j(i,+) - p_j(i,-) per task (eq. 8). Shape (..., T, K, K)."""
    if means.shape[-2] != 2 or means.shape[-3] != means.shape[-1]:
        raise ValueError(f"means must have shape (..., T, K, 2, K), got {means.shape}")
    return means[..., 0, :] - means[..., 1, :]


def self_effect(means: np.ndarray) -> np.ndarray:
    """SelfEffect(C_i) = p_i(i,+) - p_i(i,-) per task (eq. 1, 7). Shape (..., T, K)."""
    return np.diagonal(gen_coupling(means), axis1=-2, axis2=-1)


def leakage(means: np.ndarray, positive: np.ndarray | None = None) -> np.ndarray:
    """Leakage(C_i -> C_j) = GenCoupling / SelfEffect per task (eq. 2, 9). Shape (..., T, K, K).

    A row is undefined (NaN) in a task where the source's self-effect is not positive: zero
    cannot be normalized against, and a negative one is a failed intervention (§3.4.3).
    `positive` (..., T, K) is that decision made elsewhere, exactly; without it, the floats decide.
    """
    gc = gen_coupling(means)
    se = np.diagonal(gc, axis1=-2, axis2=-1)
    ok = (se > 0 if positive is None else positive)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, gc / np.where(ok, se[..., None], 1.0), np.nan)


# A denominator this close to 0 (a sum of float stratum means, whose exact value may be 0) leaves a
# resample's leakage undefined rather than huge: only sources far below any gate come near it.
NEAR_ZERO = 1e-9


def ratio_of_means(means: np.ndarray) -> np.ndarray:
    """Leakage(C_i -> C_j) over tasks: the mean shift of C_j over the mean self-effect of C_i, over the tasks
    where both are defined. Shape (..., K, K); undefined where that mean self-effect is not positive.

    The paper's eq. 5 averages the per-task ratios (eq. 2) instead; a task whose intervention barely moved
    its criterion then divides by nearly 0 (a self-effect of 0.083 made a per-task leakage of -3.0 and a
    tradeoff flag whose Sym lay outside its own interval: issue 29). Here every task enters numerator and
    denominator linearly, so no task can dominate, and the estimate is a smooth function of stratum means,
    which the bootstrap's intervals need (docs/BENCHMARKS.md, "Flags that hold"). Per-task ratios (eq. 2)
    stay in `leakage_by_task` and their spread (eq. 6) in `leakage_sd`.
    """
    gc = gen_coupling(means)
    se = np.broadcast_to(np.diagonal(gc, axis1=-2, axis2=-1)[..., None], gc.shape)  # (..., T, K, K): source's
    both = ~np.isnan(gc) & ~np.isnan(se)
    shift, effect = (np.where(both, x, 0.0).sum(axis=-3) for x in (gc, se))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(both.any(axis=-3) & (effect > NEAR_ZERO), shift / effect, np.nan)


@dataclass(frozen=True)
class Coupling:
    """Aggregated coupling of one cell, possibly with leading batch axes."""

    self_effect: np.ndarray  # (..., K) mean over tasks of the per-task self-effect
    self_effect_by_task: np.ndarray  # (..., T, K)
    leakage: np.ndarray  # (..., K, K) ratio of means over tasks (ratio_of_means; the paper's eq. 5 is a mean of ratios)
    leakage_sd: np.ndarray  # (..., K, K) std over tasks, eq. 6; NaN with fewer than two tasks
    leakage_by_task: np.ndarray  # (..., T, K, K)
    reliable: np.ndarray  # (..., K) bool: self-effect >= tau

    @property
    def sym(self) -> np.ndarray:
        """SymCoupling(C_i, C_j) = (l_ij + l_ji) / 2 (eq. 3). Shape (..., K, K)."""
        return 0.5 * (self.leakage + np.swapaxes(self.leakage, -1, -2))

    @property
    def asym(self) -> np.ndarray:
        """Asymmetry(C_i, C_j) = |l_ij - l_ji| (eq. 4). Shape (..., K, K)."""
        return np.abs(self.leakage - np.swapaxes(self.leakage, -1, -2))

    @property
    def pair_reliable(self) -> np.ndarray:
        """A pair-level summary needs both directions to pass the gate (§3.4.3)."""
        return self.reliable[..., :, None] & self.reliable[..., None, :]


def coupling(
    means: np.ndarray,
    tau: float = TAU,
    *,
    positive: np.ndarray | None = None,
    reliable: np.ndarray | None = None,
    definition: LeakageDefinition = "ratio_of_means",
) -> Coupling:
    """All directional quantities from stratum means, aggregated over tasks (eq. 1-6).

    The decisions against thresholds, `positive` (see leakage) and `reliable` (..., K), come from the
    caller where they must be exact (stats/exact.py, stats/intervals.py); without them the floats decide.
    `definition`: the leakage over tasks, a ratio of means or the paper's eq. 5 (a mean of per-task ratios).
    """
    if not 0 <= tau <= 1:
        raise ValueError(f"tau must lie in [0, 1], got {tau}")
    by_task = leakage(means, positive)
    se_t = self_effect(means)
    se = _nanmean(se_t, axis=-2)
    return Coupling(
        self_effect=se,
        self_effect_by_task=se_t,
        leakage=ratio_of_means(means) if definition == "ratio_of_means" else _nanmean(by_task, axis=-3),
        leakage_sd=_nanstd(by_task, axis=-3),
        leakage_by_task=by_task,
        reliable=np.nan_to_num(se, nan=-1.0) >= tau if reliable is None else reliable,
    )


def global_summaries(c: Coupling) -> dict[str, np.ndarray]:
    """GlobalPos, GlobalTension (eq. 10-11) and MaxCoupling over off-diagonal cells of reliable rows.

    Rows of unreliable sources are excluded (App. C); all-excluded gives NaN.
    """
    k = c.leakage.shape[-1]
    off = ~np.eye(k, dtype=bool)
    keep = off & c.reliable[..., :, None] & ~np.isnan(c.leakage)
    vals = np.where(keep, c.leakage, np.nan)
    flat = vals.reshape(vals.shape[:-2] + (k * k,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "positive": np.nanmean(np.maximum(flat, 0), axis=-1),
            "tension": np.nanmean(np.maximum(-flat, 0), axis=-1),
            "max_coupling": np.nanmax(flat, axis=-1),
        }


def double_counted_share(leakage: np.ndarray, reliable: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """How much of a weighted aggregate sum_j w_j s_j double-counts through coupling.

    Steering criterion i by one unit of its own self-effect moves the aggregate by
    w_i + sum_{j != i} w_j * l_ij; the part through other criteria counts the same movement again.
    Per reliable source i: share_i = sum_{j != i} w_j l+_ij / (w_i + sum_{j != i} w_j l+_ij), over
    reliable targets j and positive leakage l+ (a tradeoff does not double-count). Overall: the same
    ratio with numerator and denominator summed over reliable sources, each weighted by w_i.
    NaN where no reliable source exists.
    """
    k = len(weights)
    if leakage.shape != (k, k) or reliable.shape != (k,):
        raise ValueError(
            f"need a {k}x{k} leakage matrix and {k} reliability flags, got {leakage.shape} and {reliable.shape}"
        )
    if (weights < 0).any():
        raise ValueError("weights must be non-negative")
    l_pos = np.where(
        reliable[:, None] & reliable[None, :] & ~np.eye(k, dtype=bool), np.nan_to_num(np.maximum(leakage, 0)), 0.0
    )
    other = l_pos @ weights  # sum_j w_j l+_ij per source i
    total = weights + other
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(reliable, other / total, np.nan)
        overall = (
            (weights[reliable] @ other[reliable]) / (weights[reliable] @ total[reliable]) if reliable.any() else np.nan
        )
    return float(overall), share
