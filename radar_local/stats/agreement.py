"""Agreement of a pair-level vector with a reference correlation vector (RADAR §4.3, App. E)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def agreement(values: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Pearson r, Spearman rho and MAE over the pairs where `values` is defined.

    Correlations need at least 3 pairs and non-constant vectors; otherwise they are NaN.
    """
    values, reference = np.asarray(values, float), np.asarray(reference, float)
    if values.shape != reference.shape or values.ndim != 1:
        raise ValueError(f"expected two vectors of one shape, got {values.shape} and {reference.shape}")
    ok = ~(np.isnan(values) | np.isnan(reference))
    x, y = values[ok], reference[ok]
    out = {"pearson": np.nan, "spearman": np.nan, "mae": np.nan, "n_pairs": int(ok.sum())}
    if ok.any():
        out["mae"] = float(np.mean(np.abs(x - y)))
    if ok.sum() >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        out["pearson"] = float(stats.pearsonr(x, y)[0])
        out["spearman"] = float(stats.spearmanr(x, y)[0])
    return out
