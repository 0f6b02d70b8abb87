"""The statistics' input: one (generator, verifier) cell's probes x criteria as arrays, and the pivot
that makes it from a validated long score table (radar_local.score_table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

PROBE_DIRECTIONS = ("+", "-", "none")  # a nuisance rewrite (up, down) is not a probe of the coupling


@dataclass(frozen=True)
class ProbeMatrix:
    """One (generator, verifier) cell as arrays: probes x criteria, sorted by stratum."""

    generator: str
    verifier: str
    criteria: tuple[str, ...]
    tasks: tuple[str, ...]
    scores: np.ndarray  # (P, K) float, NaN = unscored or not scored; 0-4 scale
    task: np.ndarray  # (P,) task index
    target: np.ndarray  # (P,) criterion index, -1 for unconditioned probes
    direction: np.ndarray  # (P,) 0 for +, 1 for -, 2 for none
    variant: np.ndarray  # (P,) variant label, for showing example probes

    @property
    def directed(self) -> np.ndarray:
        return self.direction < 2


def probe_matrix(df: pd.DataFrame, criteria: list[str], generator: str, verifier: str) -> ProbeMatrix:
    """Pivot one cell of a validated long table into a probe matrix, sorted by (task, target, direction)."""
    import pandas as pd  # the score table's library: loaded when a table is pivoted, not by the statistics

    cell = df[(df["generator"] == generator) & (df["verifier"] == verifier) & df["direction"].isin(PROBE_DIRECTIONS)]
    tasks = tuple(pd.unique(cell["task_id"]))
    crit_code = pd.Categorical(cell["criterion"], categories=criteria).codes
    task_code = pd.Categorical(cell["task_id"], categories=tasks).codes
    code_of = {c: i for i, c in enumerate(criteria)}
    target_code = cell["target"].map(code_of).fillna(-1).to_numpy(np.int64)  # -1: unconditioned
    dir_code = pd.Categorical(cell["direction"], categories=list(PROBE_DIRECTIONS)).codes
    variant = cell["variant"].to_numpy()
    # One probe id per (task, target, direction, variant), numbered in stratum order.
    v_code, _ = pd.factorize(variant)
    key = ((task_code * (len(criteria) + 1) + target_code + 1) * 3 + dir_code) * (v_code.max() + 1) + v_code
    _, probe = np.unique(key, return_inverse=True)
    n_probes = int(probe.max()) + 1
    scores = np.full((n_probes, len(criteria)), np.nan)
    scores[probe, crit_code] = cell["score"].to_numpy()
    first = np.zeros(n_probes, dtype=np.int64)
    first[probe[::-1]] = np.arange(len(probe))[::-1]
    return ProbeMatrix(
        generator=generator,
        verifier=verifier,
        criteria=tuple(criteria),
        tasks=tasks,
        scores=scores,
        task=task_code[first].astype(np.int64),
        target=target_code[first].astype(np.int64),
        direction=dir_code[first].astype(np.int64),
        variant=variant[first],
    )
