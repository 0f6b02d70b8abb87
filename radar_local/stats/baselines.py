"""Passive estimators of criterion dependence (RADAR App. E; ARTS-Hybrid calibration, B.1).

Each takes a probes x criteria score matrix (NaN = unscored) and returns a K x K matrix.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from radar_local.stats.correlation import average_ranks, exact_dot, exact_integers, exact_sum, pearson


def _pairwise(
    scores: np.ndarray, fn: Callable[[np.ndarray, np.ndarray], float | None], ranked: bool = False
) -> np.ndarray:
    """fn(x, y) per pair over the probes scored on both (None -> NaN); `ranked`: fn takes average
    ranks, computed once per column where no score is missing."""
    if scores.ndim != 2:
        raise ValueError(f"scores must be probes x criteria, got shape {scores.shape}")
    k = scores.shape[1]
    complete = not np.isnan(scores).any()
    values = average_ranks(scores) if ranked and complete else scores
    out = np.eye(k)
    for a in range(k):
        for b in range(a + 1, k):
            ok = ~(np.isnan(values[:, a]) | np.isnan(values[:, b]))
            x, y = values[ok, a], values[ok, b]
            if ranked and not complete:
                x, y = average_ranks(x), average_ranks(y)
            r = fn(x, y)  # None for a constant column or fewer than 3 probes
            out[a, b] = out[b, a] = np.nan if r is None else r
    return out


def synthetic_correlation(scores: np.ndarray) -> np.ndarray:
    """Pearson correlation of two criteria's score columns over unconditioned probes (App. E)."""
    return _pairwise(scores, pearson)


def score_profile_redundancy(scores: np.ndarray) -> np.ndarray:
    """Spearman correlation of two criteria's scores across probes: the redundancy term of the
    ARTS-Hybrid calibration objective (criteria whose score profiles move together)."""
    return _pairwise(scores, lambda x, y: pearson(2 * x, 2 * y), ranked=True)  # Spearman: Pearson of ranks


def whitening_redundancy(scores: np.ndarray) -> np.ndarray:
    """RRD-style redundancy: |partial correlation| of each pair from the precision matrix of the
    score covariance, i.e. the overlap a whitening step would remove (App. E). Uses probes
    scored on every criterion; constant criteria give NaN. An invertible covariance is inverted in
    exact arithmetic (equal partial correlations stay equal); a singular one (fewer probes than
    criteria, or collinear ones) through the pseudo-inverse, in floats."""
    if scores.ndim != 2:
        raise ValueError(f"scores must be probes x criteria, got shape {scores.shape}")
    k = scores.shape[1]
    full = scores[~np.isnan(scores).any(axis=1)]
    out = np.full((k, k), np.nan)
    np.fill_diagonal(out, 1.0)
    live = np.flatnonzero(np.ptp(full, axis=0) > 0) if len(full) else np.array([], int)
    if len(full) < 3 or len(live) < 2:
        return out
    exact = _exact_inverse(_exact_scatter(full[:, live]))
    if exact is None:
        precision = np.linalg.pinv(np.cov(full[:, live], rowvar=False))
        d = np.sqrt(np.abs(np.diag(precision)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            partial = np.abs(-precision / np.outer(d, d))
    else:
        m = len(live)
        partial = np.array(
            [[math.sqrt(float(exact[a][b] ** 2 / (exact[a][a] * exact[b][b]))) for b in range(m)] for a in range(m)]
        )
    np.fill_diagonal(partial, 1.0)
    out[np.ix_(live, live)] = partial
    return out


def _exact_scatter(x: np.ndarray) -> list[list[int]]:
    """n^2 times the covariance matrix, in exact integers (its scale does not change a partial correlation)."""
    cols = [exact_integers(x[:, j]) for j in range(x.shape[1])]
    n, sums = len(x), [exact_sum(c) for c in cols]
    return [[n * exact_dot(cols[a], cols[b]) - sums[a] * sums[b] for b in range(len(cols))] for a in range(len(cols))]


def _exact_inverse(m: list[list[int]]) -> list[list[Fraction]] | None:
    """Gauss-Jordan in rational arithmetic; None for a singular matrix."""
    k = len(m)
    rows = [[Fraction(v) for v in row] + [Fraction(int(i == j)) for j in range(k)] for i, row in enumerate(m)]
    for col in range(k):
        pivot = next((r for r in range(col, k) if rows[r][col] != 0), None)
        if pivot is None:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        lead = rows[col][col]
        rows[col] = [v / lead for v in rows[col]]
        for r in range(k):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [v - factor * p for v, p in zip(rows[r], rows[col])]
    return [row[k:] for row in rows]
