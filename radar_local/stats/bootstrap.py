"""Probes grouped by stratum, and their stratified resampling weights (bootstrap counts, subsets)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from radar_local.stats.coupling import ratio_of_means
from radar_local.stats.probes import ProbeMatrix, new_rows

RESAMPLES = 500  # bootstrap resamples unless a config or caller says otherwise
LEVEL = 0.95  # the level of every interval a report shows, and of the family that confirms flags


@dataclass(frozen=True)
class Strata:
    """The directed probes of a cell grouped by (task, target, direction), as sorted arrays."""

    scores: np.ndarray  # (P, K) normalized to [0, 1], float64, rows sorted by stratum
    likert: np.ndarray  # (P, K) the same scores as read, on each criterion's scale, for the exact point estimate
    starts: np.ndarray  # (S,) first row of each stratum
    sizes: np.ndarray  # (S,)
    task: np.ndarray  # (S,) stratum labels
    target: np.ndarray
    direction: np.ndarray
    shape: tuple[int, int]  # (T, K)
    spans: tuple[Fraction, ...]  # (K,) each criterion's scale span (likert / span is the 0-1 footing)

    @classmethod
    def from_probes(cls, pm: ProbeMatrix) -> Strata:
        keep = np.flatnonzero(pm.directed)
        t, i, d = pm.task[keep], pm.target[keep], pm.direction[keep]
        order = keep[np.lexsort((d, i, t))]
        starts = np.flatnonzero(new_rows(pm.task[order], pm.target[order], pm.direction[order]))
        sizes = np.diff(np.r_[starts, len(order)])
        first = order[starts]
        return cls(
            scores=pm.scores[order] / np.array([float(s) for s in pm.spans]),
            likert=pm.scores[order],
            starts=starts,
            sizes=sizes,
            task=pm.task[first],
            target=pm.target[first],
            direction=pm.direction[first],
            shape=(len(pm.tasks), len(pm.criteria)),
            spans=pm.spans,
        )

    @cached_property
    def integral(self) -> bool:
        """Every score is an integer (reasoned verdicts), not an expected score."""
        seen = self.likert[~np.isnan(self.likert)]
        return bool((seen == np.round(seen)).all())

    def means(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Stratum means as a (B, T, K, 2, K) tensor; NaN for strata with no scored probe.

        `weights` (B, P) says how often each probe counts in each of B resamples (bootstrap
        counts, or 0/1 for subsets); without it every observed probe counts once (B = 1).
        """
        if weights is None:
            weights = np.ones((1, len(self.scores)))
        return self.tensor(self.weighted_means(self.scores, weights))

    def weighted_means(self, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """(B, S, K) weighted mean of `values` (P, K; NaN = unscored) within each stratum."""
        filled, scored = np.nan_to_num(values), (~np.isnan(values)).astype(float)
        sums = np.empty((len(weights), len(self.sizes), values.shape[1]))
        counts = np.empty_like(sums)
        for s, rows in enumerate(self.slices()):  # one small matmul per stratum, not per row
            sums[:, s] = weights[:, rows] @ filled[rows]
            counts[:, s] = weights[:, rows] @ scored[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / counts

    def tensor(self, per_stratum: np.ndarray) -> np.ndarray:
        """(B, S, K) per-stratum values as the (B, T, K, 2, K) tensor of stats/coupling.py; NaN where no stratum."""
        t, k = self.shape
        out = np.full((len(per_stratum), t, k, 2, k), np.nan)
        out[:, self.task, self.target, self.direction, :] = per_stratum
        return out

    def resample(self, weights: np.ndarray) -> Strata:
        """The probes repeated as often as one row of integer weights says, as strata of their own."""
        keep = np.repeat(np.arange(len(weights)), weights.astype(int))
        sizes = np.array([int(weights[rows].sum()) for rows in self.slices()])
        return Strata(
            scores=self.scores[keep],
            likert=self.likert[keep],
            starts=np.r_[0, np.cumsum(sizes)[:-1]],
            sizes=sizes,
            task=self.task,
            target=self.target,
            direction=self.direction,
            shape=self.shape,
            spans=self.spans,
        )

    def slices(self) -> list[slice]:
        return [slice(a, a + n) for a, n in zip(self.starts, self.sizes)]

    @cached_property
    def scored(self) -> np.ndarray:
        """(S, K) the probes of each stratum scored on each criterion."""
        ok = (~np.isnan(self.scores)).astype(float)
        return np.stack([ok[rows].sum(axis=0) for rows in self.slices()]) if len(self.sizes) else ok[:0]

    def design_df(self) -> np.ndarray:
        """(K,) the design degrees of freedom of each source: probes scored on its own criterion minus strata,
        over its 2T strata. Every interval on a quantity resting on a source's probes is read at this df."""
        own = self.scored[np.arange(len(self.sizes)), self.target]
        return np.bincount(self.target, weights=np.maximum(own - 1, 0), minlength=self.shape[1])

    def leakage(self, weights: np.ndarray) -> np.ndarray:
        """(B, K, K) the ratio-of-means leakage under each row of `weights` (a row of ones: the data's)."""
        return ratio_of_means(self.tensor(self.weighted_means(self.scores, weights)))

    def bootstrap_weights(self, rng: np.random.Generator, n: int, small_sample: bool = True) -> np.ndarray:
        """(n, P) resampling counts of the probes, stratum by stratum (stratified_counts)."""
        return stratified_counts(rng, self.sizes, n, small_sample)

    def subset_weights(self, rng: np.random.Generator, n: int, per_stratum: int) -> np.ndarray:
        """(n, P) 0/1 weights selecting `per_stratum` distinct probes from every stratum."""
        if per_stratum > self.sizes.min():
            raise ValueError(f"per_stratum={per_stratum} exceeds the smallest stratum ({self.sizes.min()})")
        w = np.zeros((n, len(self.scores)))
        for rows, size in zip(self.slices(), self.sizes):
            chosen = np.argsort(rng.random((n, size)), axis=1)[:, :per_stratum]
            np.put_along_axis(w[:, rows], chosen, 1.0, axis=1)
        return w


def stratified_counts(
    rng: np.random.Generator, sizes: Sequence[int] | np.ndarray, n: int, small_sample: bool = True
) -> np.ndarray:
    """(n, sum(sizes)) resampling counts of rows laid out stratum after stratum: each stratum's rows redrawn
    with replacement from that stratum, n_h - 1 draws of its n_h (Rao & Wu 1988 with m_h = n_h - 1, so a
    resampled mean has the unbiased variance s_h^2 / n_h, not the plug-in (n_h - 1)/n_h of it), or n_h with
    small_sample=False. A stratum of one row keeps it in every resample. Every interval radar reports
    (coupling and judge bias) resamples with this one draw."""
    w = np.zeros((n, int(np.sum(sizes))))
    start = 0
    for size in sizes:
        size = int(size)
        draws = max(size - 1, 1) if small_sample else size
        picks = rng.integers(0, size, (n, draws)) + np.arange(n)[:, None] * size
        w[:, start : start + size] = np.bincount(picks.ravel(), minlength=n * size).reshape(n, size)
        start += size
    return w


def unit_bootstrap(units: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, units) counts of each unit in a resample drawn with replacement: the draw of statistics
    whose units are not stratified (the raters' responses, the jurors' probes)."""
    rng = np.random.default_rng(seed)
    return (
        rng.multinomial(units, np.full(units, 1 / units), size=resamples).astype(float)
        if units
        else np.zeros((resamples, 0))
    )


def relabellings(n: int, k: int, draws: int, seed: int) -> np.ndarray:
    """(draws, k) indices of n units drawn to the first group, each draw a uniform k-subset: a permutation test's
    relabellings where there are too many to count (stats/permutation.py)."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((draws, n)), axis=1)[:, :k]


def categorical(probabilities: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """`draws` seeded indices, each i with probability probabilities[i]."""
    return np.random.default_rng(seed).choice(len(probabilities), draws, p=probabilities)


def sign_flip_chunks(units: int, draws: int, seed: int, chunk: int = 1000) -> Iterator[np.ndarray]:
    """`draws` seeded signs per unit as int64 (+1 or -1), `chunk` draws at a time: a sign-flip test's flips over
    thousands of units, whose sums fit in 64 bits (stats/permutation.py)."""
    rng = np.random.default_rng(seed)
    for start in range(0, draws, chunk):
        yield rng.integers(0, 2, (min(chunk, draws - start), units), dtype=np.int64) * 2 - 1


def sign_flips(units: int, draws: int, seed: int) -> np.ndarray:
    """(draws, units) seeded signs, +1 or -1 each with probability 1/2: a sign-flip test's flips where there are
    too many to count (stats/permutation.py)."""
    return np.random.default_rng(seed).choice(np.array([-1, 1], dtype=object), (draws, units))
