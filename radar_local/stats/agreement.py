"""Agreement of a pair-level vector with a reference correlation vector (RADAR §4.3, App. E)."""

from __future__ import annotations

from typing import Any

import numpy as np

from radar_local.stats.correlation import constant_reason, pearson, spearman


def agreement(values: np.ndarray, reference: np.ndarray) -> dict[str, Any]:
    """Pearson r, Spearman rho (average ranks for ties) and MAE over the pairs where `values` is defined.

    Correlations need at least 3 pairs and two non-constant vectors; otherwise they are NaN and
    `reason` says which is missing.
    """
    values, reference = np.asarray(values, float), np.asarray(reference, float)
    if values.shape != reference.shape or values.ndim != 1:
        raise ValueError(f"expected two vectors of one shape, got {values.shape} and {reference.shape}")
    ok = ~(np.isnan(values) | np.isnan(reference))
    x, y = values[ok], reference[ok]
    reason = constant_reason(x, y, ("audit's vector", "reference"))
    r, rho = (None, None) if reason else (pearson(x, y), spearman(x, y))
    return {
        "pearson": np.nan if r is None else r,
        "spearman": np.nan if rho is None else rho,
        "mae": float(np.mean(np.abs(x - y))) if ok.any() else np.nan,
        "n_pairs": int(ok.sum()),
        "reason": reason,
    }
