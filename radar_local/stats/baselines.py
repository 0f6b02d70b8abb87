"""Passive estimators of criterion dependence (RADAR App. E; ARTS-Hybrid calibration, B.1).

Each takes a probes x criteria score matrix (NaN = unscored) and returns a K x K matrix.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats


def _pairwise(scores: np.ndarray, fn) -> np.ndarray:
    if scores.ndim != 2:
        raise ValueError(f"scores must be probes x criteria, got shape {scores.shape}")
    k = scores.shape[1]
    out = np.eye(k)
    for a in range(k):
        for b in range(a + 1, k):
            ok = ~(np.isnan(scores[:, a]) | np.isnan(scores[:, b]))
            x, y = scores[ok, a], scores[ok, b]
            r = fn(x, y) if ok.sum() >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0 else np.nan
            out[a, b] = out[b, a] = r
    return out


def synthetic_correlation(scores: np.ndarray) -> np.ndarray:
    """Pearson correlation of two criteria's score columns over unconditioned probes (App. E)."""
    return _pairwise(scores, lambda x, y: stats.pearsonr(x, y)[0])


def score_profile_redundancy(scores: np.ndarray) -> np.ndarray:
    """Spearman correlation of two criteria's scores across probes: the redundancy term of the
    ARTS-Hybrid calibration objective (criteria whose score profiles move together)."""
    return _pairwise(scores, lambda x, y: stats.spearmanr(x, y)[0])


def whitening_redundancy(scores: np.ndarray) -> np.ndarray:
    """RRD-style redundancy: |partial correlation| of each pair from the precision matrix of the
    score covariance, i.e. the overlap a whitening step would remove (App. E). Uses probes
    scored on every criterion; constant criteria give NaN."""
    if scores.ndim != 2:
        raise ValueError(f"scores must be probes x criteria, got shape {scores.shape}")
    k = scores.shape[1]
    full = scores[~np.isnan(scores).any(axis=1)]
    out = np.full((k, k), np.nan)
    np.fill_diagonal(out, 1.0)
    live = np.flatnonzero(np.ptp(full, axis=0) > 0) if len(full) else np.array([], int)
    if len(full) < 3 or len(live) < 2:
        return out
    precision = np.linalg.pinv(np.cov(full[:, live], rowvar=False))
    d = np.sqrt(np.abs(np.diag(precision)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        partial = np.abs(-precision / np.outer(d, d))
    np.fill_diagonal(partial, 1.0)
    out[np.ix_(live, live)] = partial
    return out
