"""The statistics at task, criterion and variant counts on both sides of every integer width pandas
picks for category codes (int8 below 127 categories, int16 below 32,767), against an exact reference that
groups the long table's rows in plain Python (issue 28, item 1: probes of different cells once shared
an id when int8 codes wrapped, and 43-127 tasks gave wrong self-effects with exit 0)."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from radar_local.analysis import stats_for_table
from radar_local.score_table import COLUMNS, validate_scores
from radar_local.stats.audit import audit_cell
from radar_local.stats.probes import probe_matrix
from radar_local.stats.settings import StatsSettings

TAU = Fraction(2, 5)
# Task counts on both sides of int8 codes (126/127) and where the old ids first collided at K = 8..2
# criteria (29, 33, 37, 43, 52, 65, 86 tasks).
TASKS = (1, 2, 28, 29, 43, 50, 65, 86, 126, 127, 129)


def random_table(
    n_tasks: int, n_criteria: int, n_variants: int, seed: int, unscored: float = 0.05
) -> tuple[pd.DataFrame, list[str]]:
    """Every (task, target) probed + and - `n_variants` times and twice unconditioned, every probe
    scored on every criterion (0-4, a share left unscored), rows shuffled; labels that sort otherwise
    than they appear, so no order is given away."""
    rng = np.random.default_rng(seed)
    crit = [f"c{(7 * i) % n_criteria:05d}x{i}" for i in range(n_criteria)]
    tasks = [f"task-{(n_tasks - t) * 13 % 1000:03d}-{t}" for t in range(n_tasks)]
    steer = rng.uniform(0, 2, n_criteria)  # how far each criterion moves its own score, in Likert points
    rows = []
    for t in tasks:
        for i, target in enumerate(crit):
            for d, sign in (("+", 1), ("-", -1)):
                for v in range(n_variants):
                    base = 2 + sign * steer[i] * (np.arange(n_criteria) == i) + rng.normal(0, 1, n_criteria)
                    for j, c in enumerate(crit):
                        rows.append((t, target, d, f"v{v}", c, float(np.clip(np.rint(base[j]), 0, 4))))
        for v in range(2):
            rows += [(t, "", "none", f"u{v}", c, float(rng.integers(0, 5))) for c in crit]
    df = pd.DataFrame([("g", "v", *r) for r in rows], columns=list(COLUMNS))
    df.loc[rng.random(len(df)) < unscored, "score"] = np.nan
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True), crit


def reference(df: pd.DataFrame, crit: list[str]) -> dict:
    """Eq. 1-6 and the global summaries, from row-by-row sums in Fractions: no codes, no arrays."""
    sums: dict = defaultdict(Fraction)
    counts: dict = defaultdict(int)
    tasks, directed, unconditioned = set(), set(), set()
    for task, target, d, v, c, score in df[
        ["task_id", "target", "direction", "variant", "criterion", "score"]
    ].itertuples(index=False):
        tasks.add(task)
        (directed if d in "+-" else unconditioned).add((task, target, d, v))
        if not math.isnan(score):
            sums[task, target, d, c] += Fraction(score) / 4
            counts[task, target, d, c] += 1

    def mean(t, i, d, j):
        n = counts[t, i, d, j]
        return sums[t, i, d, j] / n if n else None

    def shifted(t, i, j):
        p, m = mean(t, i, "+", j), mean(t, i, "-", j)
        return None if p is None or m is None else p - m

    shifts = {(t, i, j): shifted(t, i, j) for t in tasks for i in crit for j in crit}  # each computed once

    def shift(t, i, j):
        return shifts[t, i, j]

    se_t = {(t, i): shift(t, i, i) for t in tasks for i in crit}
    leak_t = {
        (t, i, j): (
            None if se_t[t, i] is None or se_t[t, i] <= 0 or shift(t, i, j) is None else shift(t, i, j) / se_t[t, i]
        )
        for t in tasks
        for i in crit
        for j in crit
    }

    def over_tasks(values):
        vals = [x for x in values if x is not None]
        return (sum(vals, Fraction(0)) / len(vals) if vals else None), vals

    se = {i: over_tasks(se_t[t, i] for t in tasks)[0] for i in crit}
    leak, sd = {}, {}
    for i in crit:
        for j in crit:
            m, vals = over_tasks(leak_t[t, i, j] for t in tasks)
            sd[i, j] = None if len(vals) < 2 else math.sqrt(sum((x - m) ** 2 for x in vals) / len(vals))
            both = [t for t in tasks if se_t[t, i] is not None and shift(t, i, j) is not None]
            effect = sum((se_t[t, i] for t in both), Fraction(0))  # the ratio of means over those tasks
            leak[i, j] = sum((shift(t, i, j) for t in both), Fraction(0)) / effect if both and effect > 0 else None
    reliable = {i: se[i] is not None and se[i] >= TAU for i in crit}
    kept = [leak[i, j] for i in crit for j in crit if i != j and reliable[i] and leak[i, j] is not None]
    return {
        "tasks": tasks,
        "directed": len(directed),
        "unconditioned": len(unconditioned),
        "se_t": se_t,
        "leak_t": leak_t,
        "se": se,
        "leak": leak,
        "sd": sd,
        "reliable": reliable,
        "global": {
            "positive": sum((max(x, 0) for x in kept), Fraction(0)) / len(kept) if kept else None,
            "tension": sum((max(-x, 0) for x in kept), Fraction(0)) / len(kept) if kept else None,
            "max_coupling": max(kept) if kept else None,
        },
    }


def same(value: float, exact: Fraction | float | None) -> bool:
    if exact is None:
        return math.isnan(value)
    return not math.isnan(value) and math.isclose(value, float(exact), rel_tol=1e-12, abs_tol=1e-12)


def check_against_reference(df: pd.DataFrame, crit: list[str], full: bool = True) -> None:
    """Every point statistic of the audit equals the reference's (correctly rounded Fractions)."""
    ref = reference(df, crit)
    if full:
        result = stats_for_table(df, "t.csv", StatsSettings(resamples=0), budget=False)
    else:  # the statistics alone, for tables too large for the per-task report frames
        result = audit_cell(probe_matrix(validate_scores(df, "t.csv"), crit, "g", "v"), resamples=0, budget=False)
    assert set(result.tasks) == ref["tasks"]
    assert result.probes.directed == ref["directed"]
    assert result.probes.unconditioned == ref["unconditioned"]
    for i in crit:
        assert same(result.self_effect[i], ref["se"][i]), i
        assert bool(result.reliable[i]) == ref["reliable"][i], i
        for t in result.tasks:
            assert same(result.self_effect_by_task.loc[t, i], ref["se_t"][t, i]), (t, i)
        for j in crit:
            assert same(result.leakage.loc[i, j], ref["leak"][i, j]), (i, j)
            assert same(result.leakage_sd.loc[i, j], ref["sd"][i, j]), (i, j)
    if full:
        for t in result.tasks:
            frame = result.leakage_by_task[t]
            for i in crit:
                for j in crit:
                    assert same(frame.loc[i, j], ref["leak_t"][t, i, j]), (t, i, j)
    for row in result.pairs.itertuples():
        la, lb = ref["leak"][row.a, row.b], ref["leak"][row.b, row.a]
        both = la is not None and lb is not None
        assert same(row.sym, (la + lb) / 2 if both else None)
        assert same(row.asym, abs(la - lb) if both else None)
    for key, value in ref["global"].items():
        assert same(result.global_[key], value), key


@settings(deadline=None)  # examples from the profile: 10 in test-fast, 100 in make test
@given(
    n_tasks=st.sampled_from(TASKS),
    n_criteria=st.integers(2, 8),
    n_variants=st.sampled_from((1, 2, 3)),
    seed=st.integers(0, 2**16),
)
def test_statistics_match_the_exact_reference_across_int8(n_tasks, n_criteria, n_variants, seed):
    df, crit = random_table(n_tasks, n_criteria, n_variants, seed)
    check_against_reference(df, crit)


def test_fifty_tasks_of_a_noise_free_table_keep_every_probe():
    """The sweep's case: 50 tasks, 5 criteria, every self-effect exactly 1 and every leakage 0 by
    construction (a steered probe scores 4 or 0 on its target, 2 elsewhere)."""
    crit = [f"c{i}" for i in range(5)]
    rows = [
        (f"t{t}", i, d, f"{v}", j, (4 if d == "+" else 0) if i == j else 2)
        for t in range(50)
        for i in crit
        for d in "+-"
        for v in range(2)
        for j in crit
    ]
    df = pd.DataFrame([("g", "v", *r) for r in rows], columns=list(COLUMNS))
    result = stats_for_table(df, "t.csv", StatsSettings(resamples=0), budget=False)
    assert result.probes.directed == 50 * 5 * 2 * 2
    assert (result.self_effect == 1.0).all()
    assert (result.leakage.to_numpy()[~np.eye(5, dtype=bool)] == 0).all()


@pytest.mark.thorough
@pytest.mark.parametrize(
    "n_tasks,n_criteria,n_variants",
    [
        (126, 5, 2),
        (127, 5, 2),
        (1, 126, 1),
        (1, 127, 1),
        (2, 128, 1),
        (3, 2, 127),
        (2, 2, 129),
    ],
)
def test_statistics_match_the_exact_reference_across_int8_at_scale(n_tasks, n_criteria, n_variants):
    df, crit = random_table(n_tasks, n_criteria, n_variants, seed=n_tasks + n_criteria)
    check_against_reference(df, crit, full=n_criteria < 100)


@pytest.mark.slow
@pytest.mark.parametrize("n_tasks", [32_766, 32_767])
def test_statistics_match_the_exact_reference_across_int16(n_tasks):
    """int16 codes end at 32,766 tasks; the statistics alone (the per-task report frames are the slow part)."""
    df, crit = random_table(n_tasks, 2, 1, seed=n_tasks, unscored=0.0)
    check_against_reference(df, crit, full=False)
