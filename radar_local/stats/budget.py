"""Probe-budget ablation (RADAR App. G): how the audit changes with fewer probes per cell."""

from __future__ import annotations

from typing import Any

import numpy as np

from radar_local.stats.agreement import agreement
from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import Coupling, LeakageDefinition, coupling
from radar_local.stats.exact import resample_decisions

BUDGETS = (1, 2, 3, 4, 5, 10)


def probe_budget(
    strata: Strata,
    pairs: list[tuple[int, int]],
    reference: np.ndarray | None,
    full: Coupling,
    *,
    tau: float,
    seed: int,
    budgets: tuple[int, ...] = BUDGETS,
    n_subsets: int = 30,
    definition: LeakageDefinition = "ratio_of_means",
) -> list[dict[str, Any]]:
    """For each N below the smallest stratum, `n_subsets` stratified subsets of N probes each; then
    one row that uses all probes (Table 13's last row), from the point estimate `full`.

    With a reference: mean and sd of Pearson, Spearman and MAE of the gated Sym vector against it.
    Without one: mean and sd of each pair's Sym. The full row has no sd: it is not resampled.
    """
    rng = np.random.default_rng(seed)
    a, b = np.array([p[0] for p in pairs], int), np.array([p[1] for p in pairs], int)
    rows = []
    smallest = int(strata.sizes.min())
    for n in [n for n in budgets if n < smallest]:
        weights = strata.subset_weights(rng, n_subsets, n)
        means = strata.means(weights)
        positive, reliable = resample_decisions(strata, weights, tau, means)
        subsets = coupling(means, tau, positive=positive, reliable=reliable, definition=definition)
        rows.append({"n": n, "subsets": n_subsets, **_summary(subsets, a, b, reference)})
    rows.append({"n": smallest, "subsets": 1, "all_probes": True, **_summary(full, a, b, reference)})
    return rows


def _summary(c: Coupling, a: np.ndarray, b: np.ndarray, reference: np.ndarray | None) -> dict[str, Any]:
    sym = np.where(c.pair_reliable[:, a, b], c.sym[:, a, b], np.nan)  # (subsets, pairs)
    if reference is None:
        return {"sym": [_mean_sd(sym[:, p]) for p in range(len(a))]}
    metrics = [agreement(s, reference) for s in sym]
    return {key: _mean_sd(np.array([m[key] for m in metrics])) for key in ("pearson", "spearman", "mae")}


def _mean_sd(vals: np.ndarray) -> dict[str, Any]:
    n = len(vals)
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return {"mean": None, "sd": None, "defined": 0}
    return {"mean": float(vals.mean()), "sd": float(vals.std()) if n > 1 else None, "defined": int(len(vals))}
