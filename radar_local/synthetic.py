"""Score tables with a planted coupling matrix: for the demo, tests and benchmarks.

A simulated verifier scores probe x on criterion j as round(2 + 2 * shift_j + noise), clipped
to 0-4, where a probe targeting C_i in direction + (-) has shift = +L[i] (-L[i]) * strength.
Its true leakage is therefore L (before clipping and rounding).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radar_local.scoring import SCORE_MAX, SCORE_MIN


def planted_table(
    criteria: list[str],
    tasks: list[str],
    coupling: np.ndarray,
    *,
    n: int = 5,
    n_unconditioned: int = 0,
    strength: float = 0.8,
    noise: float = 0.5,
    generator: str = "sim-generator",
    verifier: str = "sim-verifier",
    seed: int = 0,
    nuisance: dict[str, dict[str, float]] | None = None,
    n_pairs: int = 10,
) -> pd.DataFrame:
    """`nuisance[attribute][criterion]`: a planted judge bias; each task gets `n_pairs` up/down rewrite
    pairs scored round(2 +- 2 * bias + noise), so the true sensitivity is the bias (before rounding)."""
    k = len(criteria)
    if coupling.shape != (k, k):
        raise ValueError(f"coupling must be {k}x{k}, got {coupling.shape}")
    rng = np.random.default_rng(seed)
    t_idx, i_idx, d_sign, v_idx = np.meshgrid(
        np.arange(len(tasks)), np.arange(k), [1.0, -1.0], np.arange(n), indexing="ij"
    )
    t_idx, i_idx, d_sign, v_idx = (a.ravel() for a in (t_idx, i_idx, d_sign, v_idx))
    shift = d_sign[:, None] * coupling[i_idx] * strength
    scores = np.clip(np.rint(2 + 2 * shift + rng.normal(0, noise, shift.shape)), SCORE_MIN, SCORE_MAX)
    target = np.array(criteria)[i_idx]
    direction = np.where(d_sign > 0, "+", "-")
    variant = v_idx.astype(str)
    task = np.array(tasks)[t_idx]
    if n_unconditioned:
        # Unconditioned probes: a shared latent quality seen through the coupling structure.
        u_task = np.repeat(np.array(tasks), n_unconditioned)
        latent = rng.normal(0, 0.5, (len(u_task), k)) @ coupling
        u_scores = np.clip(np.rint(2 + latent + rng.normal(0, noise, latent.shape)), SCORE_MIN, SCORE_MAX)
        scores = np.vstack([scores, u_scores])
        task = np.r_[task, u_task]
        target = np.r_[target, np.full(len(u_task), "")]
        direction = np.r_[direction, np.full(len(u_task), "none")]
        variant = np.r_[variant, np.tile(np.arange(n_unconditioned).astype(str), len(tasks))]
    p = len(task)
    table = pd.DataFrame(
        {
            "generator": generator,
            "verifier": verifier,
            "task_id": np.repeat(task, k),
            "target": np.repeat(target, k),
            "direction": np.repeat(direction, k),
            "variant": np.repeat(variant, k),
            "criterion": np.tile(criteria, p),
            "score": scores.ravel(),
        }
    )
    rows = [table]
    for attribute, bias in (nuisance or {}).items():
        b = np.array([bias.get(c, 0.0) for c in criteria])
        for sign, way in ((1.0, "up"), (-1.0, "down")):
            shape = (len(tasks) * n_pairs, k)
            s = np.clip(np.rint(2 + sign * 2 * b + rng.normal(0, noise, shape)), SCORE_MIN, SCORE_MAX)
            rows.append(
                pd.DataFrame(
                    {
                        "generator": generator,
                        "verifier": verifier,
                        "task_id": np.repeat(np.repeat(tasks, n_pairs), k),
                        "target": attribute,
                        "direction": way,
                        "variant": np.repeat(np.tile(np.arange(n_pairs).astype(str), len(tasks)), k),
                        "criterion": np.tile(criteria, len(tasks) * n_pairs),
                        "score": s.ravel(),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


HELPSTEER2_PLANTED = np.array(
    [
        # helpfulness correctness coherence complexity verbosity  (row = source)
        [1.0, 0.9, 0.3, 0.1, 0.1],
        [0.8, 1.0, 0.2, 0.1, 0.0],
        [0.6, 0.7, 1.0, 0.0, -0.3],
        [0.2, 0.1, 0.0, 1.0, 0.4],
        [0.1, 0.0, -0.3, 0.4, 1.0],
    ]
)
