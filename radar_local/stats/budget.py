"""Probe-budget ablation (RADAR App. G): how the audit changes with fewer probes per cell."""

from __future__ import annotations

import numpy as np

from radar_local.stats.agreement import agreement
from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import coupling

BUDGETS = (1, 2, 3, 4, 5, 10)


def probe_budget(
    strata: Strata,
    pairs: list[tuple[int, int]],
    reference: np.ndarray | None,
    *,
    tau: float,
    seed: int,
    budgets: tuple[int, ...] = BUDGETS,
    n_subsets: int = 30,
) -> list[dict]:
    """For each N up to the smallest stratum, `n_subsets` stratified subsets of N probes each.

    With a reference: mean and sd of Pearson, Spearman and MAE of the gated Sym vector against it.
    Without one: mean and sd of each pair's Sym.
    """
    rng = np.random.default_rng(seed)
    a, b = np.array([p[0] for p in pairs], int), np.array([p[1] for p in pairs], int)
    rows = []
    for n in budgets:
        if n > strata.sizes.min():
            break
        c = coupling(strata.means(strata.subset_weights(rng, n_subsets, n)), tau)
        sym = np.where(c.pair_reliable[:, a, b], c.sym[:, a, b], np.nan)  # (n_subsets, pairs)
        row: dict = {"n": n, "subsets": n_subsets}
        if reference is not None:
            metrics = [agreement(s, reference) for s in sym]
            for key in ("pearson", "spearman", "mae"):
                vals = np.array([m[key] for m in metrics])
                row[key] = _mean_sd(vals)
        else:
            row["sym"] = [_mean_sd(sym[:, p]) for p in range(len(pairs))]
        rows.append(row)
    return rows


def _mean_sd(vals: np.ndarray) -> dict:
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return {"mean": None, "sd": None, "defined": 0}
    return {"mean": float(vals.mean()), "sd": float(vals.std()), "defined": int(len(vals))}
