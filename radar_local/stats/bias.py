"""Judge bias: how much a criterion's score moves when only a nuisance attribute changes (issue 19).

A nuisance pair is two rewrites of one base response that change one attribute no criterion should
reward (length, formatting, hedging, flattery, self-praise) up and down, and keep the content. For
criterion j and attribute a, the sensitivity is the mean over pairs of (score_j(up) - score_j(down))
on the 0-1 scale of self-effects: per task, then the mean of the tasks (as a self-effect is). Its bias
share is the sensitivity over j's own self-effect: how much of a genuine improvement in j the judge
also credits to a mere change in a. A cell is `biased` when |sensitivity| reaches the threshold, compared
exactly: `confirmed` when its family interval lies beyond the threshold (not merely beyond 0), simultaneous
over every attribute x criterion cell that can be flagged (stats/intervals.simultaneous), `possible`
otherwise; a pair declared intended is listed, never flagged.

Intervals: the rule of the coupling intervals (stats/intervals.py): the stratified bootstrap (Rao & Wu,
n_h - 1 draws from each task's pairs, seeded), expanded percentiles at the design df; a task with one pair
cannot be resampled and is held at its mean, and each row says how many tasks its interval rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from radar_local.common import to_json
from radar_local.nuisance import DOWN, UP
from radar_local.scale import LIKERT
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, stratified_counts
from radar_local.stats.exact import Q, at_least, decimal, exact_sum
from radar_local.stats.flags import CONFIRMED, POSSIBLE
from radar_local.stats.stored import Block, Evidence, Interval, Num

if TYPE_CHECKING:
    import pandas as pd

BIAS = 0.1  # default --bias-threshold: a tenth of the scale, as tradeoff_leak is of a leakage
BIASED, INTENDED = "biased", "intended"


@dataclass(frozen=True)
class NuisancePairs:
    """One attribute's pairs in one (generator, verifier) cell: up - down per criterion, 0-4 scale."""

    attribute: str
    task: np.ndarray  # (P,) task index
    tasks: tuple[str, ...]
    diff: np.ndarray  # (P, K) score(up) - score(down); NaN where either was not scored


class BiasRow(Block):
    """One criterion's sensitivity to one nuisance attribute (nuisance_table)."""

    attribute: str
    criterion: str
    pairs: int
    sensitivity: Num
    ci: Interval | None
    ci_tasks: int | None = None
    family_ci: Interval | None = None
    evidence: Evidence | None = None
    by_task: dict[str, Num]
    bias_share: Num
    flag: Literal["biased", "intended"] | None
    steered: bool | None = None


class Bias(Block):
    """stats.json's `bias`: judge bias, each criterion's sensitivity to each nuisance attribute, at `threshold`,
    with the manipulation check of each attribute's rewrites."""

    threshold: float
    level: float  # the simultaneous band's over every attribute x criterion cell
    rows: list[BiasRow]
    manipulation: dict[str, dict[str, Any]] | None = None


def nuisance_pairs(df: pd.DataFrame, criteria: list[str]) -> list[NuisancePairs]:
    """The up/down pairs of a validated table's nuisance rows (direction up or down, target the attribute),
    paired by (task, attribute, variant); a rewrite without its partner is left out."""
    import pandas as pd  # pandas: the score table's library, as in stats.probes

    out = []
    for attribute, rows in df.groupby("target", sort=True):
        wide = rows.pivot_table(
            index=["task_id", "variant"],
            columns=["direction", "criterion"],
            values="score",
            aggfunc="first",
            dropna=False,
        )
        if UP not in wide.columns.get_level_values(0) or DOWN not in wide.columns.get_level_values(0):
            continue
        up = wide[UP].reindex(columns=criteria)
        down = wide[DOWN].reindex(columns=criteria)
        paired = up.notna().any(axis=1) & down.notna().any(axis=1)
        up, down = up[paired], down[paired]
        if up.empty:
            continue
        tasks = tuple(pd.unique(up.index.get_level_values("task_id")))
        task = pd.Categorical(up.index.get_level_values("task_id"), categories=tasks).codes.astype(np.int64)
        out.append(NuisancePairs(str(attribute), task, tasks, up.to_numpy(float) - down.to_numpy(float)))
    return out


def _sensitivity(diff: np.ndarray, task: np.ndarray, n_tasks: int, span: Fraction) -> tuple[Q, list[Q]]:
    """Exact mean over tasks of each task's mean difference, on the 0-1 footing (divided by the scale's span)."""
    per_task: list[Q] = []
    for t in range(n_tasks):
        col = diff[(task == t) & ~np.isnan(diff)]
        per_task.append(exact_sum(col) / (len(col) * span) if len(col) else None)
    defined = [v for v in per_task if v is not None]
    return (sum(defined, Fraction(0)) / len(defined) if defined else None), per_task


@dataclass(frozen=True)
class _Replicates:
    deltas: np.ndarray  # (B,) replicate minus data sensitivity
    df: float  # design df: pairs minus tasks
    used: int  # tasks with two pairs or more


@dataclass(frozen=True)
class _Cell:
    pairs: NuisancePairs
    j: int
    criterion: str
    diff: np.ndarray
    sens: Q
    per_task: list[Q]
    reps: _Replicates | None


def _replicates(
    diff: np.ndarray, task: np.ndarray, n_tasks: int, resamples: int, seed: int, span: Fraction
) -> _Replicates | None:
    """The replicates' deviations from the data's sensitivity, by the coupling intervals' draw
    (stats/bootstrap.stratified_counts, each task's pairs a stratum); df = pairs minus tasks. A task with one
    pair cannot be resampled: it keeps its mean in every replicate and adds no df; with no task of two pairs
    there is nothing to resample (None)."""
    strata = [rows for t in range(n_tasks) if len(rows := np.flatnonzero((task == t) & ~np.isnan(diff)))]
    used = sum(len(rows) >= 2 for rows in strata)
    if not resamples or not used:
        return None
    sizes = [len(rows) for rows in strata]
    values = diff[np.concatenate(strata)] / float(span)  # stratum after stratum, as the counts lay them out
    counts = stratified_counts(np.random.default_rng(seed), sizes, resamples)
    bounds = np.r_[0, np.cumsum(sizes)]
    means = np.stack(
        [counts[:, a:b] @ values[a:b] / counts[:, a:b].sum(axis=1) for a, b in zip(bounds[:-1], bounds[1:])], axis=1
    )
    task_means = np.array([values[a:b].mean() for a, b in zip(bounds[:-1], bounds[1:])])
    return _Replicates(means.mean(axis=1) - task_means.mean(), float(sum(n - 1 for n in sizes)), used)


def nuisance_table(
    pairs: list[NuisancePairs],
    criteria: list[str],
    self_effect: list[float],
    reliable: list[bool],
    *,
    threshold: float = BIAS,
    intended: set[frozenset[str]] | None = None,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
    steered: dict[str, bool] | None = None,
    spans: Sequence[Fraction] | None = None,
) -> list[BiasRow]:
    """One row per (attribute, criterion): pairs, sensitivity and its interval, per task, bias share, flag.
    `steered[attribute]` False (the manipulation check failed): no flag; absent: not checked (None).
    `spans`: each criterion's scale span (default the paper's 0-4)."""
    from radar_local.stats.intervals import expanded_interval, simultaneous  # scipy: not at `radar --help`

    cells = []
    for a, p in enumerate(pairs):
        for j, criterion in enumerate(criteria):
            diff = p.diff[:, j]
            span = LIKERT.span if spans is None else spans[j]
            sens, per_task = _sensitivity(diff, p.task, len(p.tasks), span)
            reps = (
                None if sens is None else _replicates(diff, p.task, len(p.tasks), resamples, seed + 7919 * a + j, span)
            )
            cells.append(_Cell(p, j, criterion, diff, sens, per_task, reps))
    # The family: every cell that can be flagged, one replicate index across them (their draws are independent,
    # which only makes the band wider where cells move together), as stats/intervals.Family is for coupling.
    flaggable = [
        i
        for i, c in enumerate(cells)
        if c.reps is not None
        and frozenset((c.pairs.attribute, c.criterion)) not in (intended or set())
        and (steered or {}).get(c.pairs.attribute) is not False
    ]
    band = np.full((len(cells), 2), np.nan)
    if flaggable:
        chosen = [cells[i] for i in flaggable]
        band[flaggable] = simultaneous(
            np.array([float(c.sens) for c in chosen]),  # type: ignore[arg-type]
            np.stack([c.reps.deltas for c in chosen], axis=1),  # type: ignore[union-attr]
            np.array([c.reps.df for c in chosen]),  # type: ignore[union-attr]
            level,
        )[0]
    rows = []
    for c, family in zip(cells, band):
        p, j, criterion, diff, sens, per_task, reps = c.pairs, c.j, c.criterion, c.diff, c.sens, c.per_task, c.reps
        ci = None if reps is None else expanded_interval(np.array(float(sens)), reps.deltas, reps.df, level)  # type: ignore[arg-type]
        share = float(sens) / self_effect[j] if sens is not None and reliable[j] and self_effect[j] > 0 else None
        moved = (steered or {}).get(p.attribute)
        if frozenset((p.attribute, criterion)) in (intended or set()):
            flag, evidence = INTENDED, None
        elif moved is False or sens is None or not at_least(abs(sens), threshold):
            flag, evidence = None, None
        else:
            flag, evidence = BIASED, CONFIRMED if beyond(family, threshold) else POSSIBLE
        rows.append(
            {
                "attribute": p.attribute,
                "criterion": criterion,
                "pairs": int((~np.isnan(diff)).sum()),
                "sensitivity": None if sens is None else float(sens),
                "ci": None if ci is None else (float(ci[0]), float(ci[1])),
                "ci_tasks": 0 if reps is None else reps.used,  # tasks with two pairs or more: the spread rests on them
                "family_ci": None if np.isnan(family).any() else (float(family[0]), float(family[1])),
                "by_task": {t: None if v is None else float(v) for t, v in zip(p.tasks, per_task)},
                "bias_share": None if share is None else float(share),
                "flag": flag,
                "evidence": evidence,
                "steered": moved,
            }
        )
    return [BiasRow.model_validate(to_json(r)) for r in rows]


def beyond(interval: Sequence[float | None] | np.ndarray | None, threshold: float) -> bool:
    """The whole interval lies at or beyond +-threshold, compared exactly (stats/exact.py); none (or an open
    end): False."""
    ends = [] if interval is None else [x for x in interval if x is not None]
    if len(ends) != 2 or not np.isfinite(np.asarray(ends, float)).all():
        return False
    low, high = (Fraction(float(x)) for x in ends)
    return low >= decimal(threshold) or high <= -decimal(threshold)
