"""Stratified resampling of probes, vectorized: one gather and one segment-sum per chunk of resamples."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from radar_local.scores import ProbeMatrix
from radar_local.scoring import SCORE_MAX



@dataclass(frozen=True)
class Strata:
    """The directed probes of a cell grouped by (task, target, direction), as sorted arrays."""

    scores: np.ndarray  # (P, K) normalized to [0, 1], float32 for the resamples, rows sorted by stratum
    likert: np.ndarray  # (P, K) the same scores as read, float64 on the 0-4 scale, for the exact point estimate
    starts: np.ndarray  # (S,) first row of each stratum
    sizes: np.ndarray  # (S,)
    task: np.ndarray  # (S,) stratum labels
    target: np.ndarray
    direction: np.ndarray
    shape: tuple[int, int]  # (T, K)
    complete: bool  # no unscored cell: a faster path

    @classmethod
    def from_probes(cls, pm: ProbeMatrix) -> "Strata":
        keep = np.flatnonzero(pm.directed)
        t, i, d = pm.task[keep], pm.target[keep], pm.direction[keep]
        order = keep[np.lexsort((d, i, t))]
        code = (pm.task[order] * len(pm.criteria) + pm.target[order]) * 2 + pm.direction[order]
        starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
        sizes = np.diff(np.r_[starts, len(order)])
        first = order[starts]
        return cls(
            scores=(pm.scores[order] / SCORE_MAX).astype(np.float32), likert=pm.scores[order], starts=starts, sizes=sizes,
            task=pm.task[first], target=pm.target[first], direction=pm.direction[first],
            shape=(len(pm.tasks), len(pm.criteria)),
            complete=not np.isnan(pm.scores[order]).any(),
        )

    def means(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Stratum means as a (B, T, K, 2, K) tensor; NaN for strata with no scored probe.

        `weights` (B, P) says how often each probe counts in each of B resamples (bootstrap
        counts, or 0/1 for subsets); without it every observed probe counts once (B = 1).
        """
        if weights is None:
            weights = np.ones((1, len(self.scores)), np.float32)
        filled, scored = np.nan_to_num(self.scores), (~np.isnan(self.scores)).astype(np.float32)
        sums = np.empty((len(weights), len(self.sizes), self.scores.shape[1]))
        counts = np.empty_like(sums)
        for s, rows in enumerate(self.slices()):  # one small matmul per stratum, not per row
            sums[:, s] = weights[:, rows] @ filled[rows]
            counts[:, s] = weights[:, rows] @ scored[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            strat = sums / counts
        t, k = self.shape
        out = np.full((len(weights), t, k, 2, k), np.nan)
        out[:, self.task, self.target, self.direction, :] = strat
        return out

    def slices(self) -> list[slice]:
        return [slice(a, a + n) for a, n in zip(self.starts, self.sizes)]

    def bootstrap_weights(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, P) resampling counts: each stratum's probes redrawn with replacement from that stratum."""
        w = np.empty((n, len(self.scores)), np.float32)
        for rows, size in zip(self.slices(), self.sizes):
            draws = rng.integers(0, size, (n, size)) + np.arange(n)[:, None] * size
            w[:, rows] = np.bincount(draws.ravel(), minlength=n * size).reshape(n, size)
        return w

    def subset_weights(self, rng: np.random.Generator, n: int, per_stratum: int) -> np.ndarray:
        """(n, P) 0/1 weights selecting `per_stratum` distinct probes from every stratum."""
        if per_stratum > self.sizes.min():
            raise ValueError(f"per_stratum={per_stratum} exceeds the smallest stratum ({self.sizes.min()})")
        w = np.zeros((n, len(self.scores)), np.float32)
        for rows, size in zip(self.slices(), self.sizes):
            chosen = np.argsort(rng.random((n, size)), axis=1)[:, :per_stratum]
            np.put_along_axis(w[:, rows], chosen, 1.0, axis=1)
        return w


def resample_means(strata: Strata, n_resamples: int, seed: int, chunk: int = 100) -> np.ndarray:
    """Bootstrap stratum means, (n_resamples, T, K, 2, K), in chunks to bound memory."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    rng = np.random.default_rng(seed)
    parts = []
    for start in range(0, n_resamples, chunk):
        parts.append(strata.means(strata.bootstrap_weights(rng, min(chunk, n_resamples - start))))
    return np.concatenate(parts)


def percentile_ci(samples: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Percentile interval over axis 0; the last axis of the result is (low, high)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    alpha = (1 - level) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(samples, [100 * alpha, 100 * (1 - alpha)], axis=0)
    return np.stack([lo, hi], axis=-1)
