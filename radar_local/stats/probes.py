"""The statistics' input: one (generator, verifier) cell's probes x criteria as arrays, and the pivot
that makes it from a validated long score table (radar_local.score_table)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
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
    scores: np.ndarray  # (P, K) float, NaN = unscored or not scored; each criterion on its own scale
    task: np.ndarray  # (P,) task index
    target: np.ndarray  # (P,) criterion index, -1 for unconditioned probes
    direction: np.ndarray  # (P,) 0 for +, 1 for -, 2 for none
    variant: np.ndarray  # (P,) variant label, for showing example probes
    spans: tuple[Fraction, ...]  # (K,) each criterion's scale span: its 0-1 footing's divisor (scale.Scale.span)

    @property
    def directed(self) -> np.ndarray:
        return self.direction < 2


def probe_matrix(
    df: pd.DataFrame, criteria: list[str], generator: str, verifier: str, spans: Sequence[Fraction] | None = None
) -> ProbeMatrix:
    """Pivot one cell of a validated long table into a probe matrix, sorted by (task, target, direction).
    `spans`: each criterion's scale span (default the paper's 0-4, span 4)."""
    import pandas as pd  # pandas: the score table's library: loaded when a table is pivoted, not by the statistics

    cell = df[(df["generator"] == generator) & (df["verifier"] == verifier) & df["direction"].isin(PROBE_DIRECTIONS)]
    tasks = tuple(pd.unique(cell["task_id"]))
    # pandas category codes are int8 below 127 categories and int16 below 32,767: arithmetic on them
    # wraps silently, so every code is widened, and probe ids come from sorting the code columns, with
    # no arithmetic on them at all.
    crit_code = _codes(cell["criterion"], criteria)
    task_code = _codes(cell["task_id"], tasks)
    code_of = {c: i for i, c in enumerate(criteria)}
    target_code = cell["target"].map(code_of).fillna(-1).to_numpy(np.int64)  # -1: unconditioned
    dir_code = _codes(cell["direction"], PROBE_DIRECTIONS)
    variant = cell["variant"].to_numpy()
    v_code = pd.factorize(variant)[0].astype(np.int64)
    # One probe id per (task, target, direction, variant), numbered in stratum order.
    probe = _row_ids(task_code, target_code, dir_code, v_code)
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
        task=task_code[first],
        target=target_code[first],
        direction=dir_code[first],
        variant=variant[first],
        spans=tuple(spans) if spans is not None else (Fraction(4),) * len(criteria),
    )


def _codes(values: pd.Series, categories: Sequence[str]) -> np.ndarray:
    """Each value's index in `categories` as int64 (-1 where absent), whatever width pandas chose."""
    import pandas as pd  # pandas: the score table's library: the pure statistics load without it

    return np.asarray(pd.Categorical(values, categories=list(categories)).codes, dtype=np.int64)


def _row_ids(*columns: np.ndarray) -> np.ndarray:
    """Dense ids of the distinct rows of `columns`, numbered in their lexicographic order."""
    order = np.lexsort(columns[::-1])
    ids = np.empty(len(order), dtype=np.int64)
    ids[order] = np.cumsum(new_rows(*(c[order] for c in columns))) - 1
    return ids


def new_rows(*sorted_columns: np.ndarray) -> np.ndarray:
    """True where a row of sorted columns differs from the row before it (and at the first row)."""
    stacked = np.column_stack(sorted_columns)
    return np.r_[True, (stacked[1:] != stacked[:-1]).any(axis=1)]
