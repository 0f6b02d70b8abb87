"""What a planned audit can confirm: the smallest coupling or bias it would confirm with 80% probability,
before any call (issue 29; `radar audit CONFIG --plan`).

The variance model is the one the audit's intervals rest on, written out for a design instead of read
from replicates: a stratum mean of N probes whose scores spread `sd` points of a scale of span `span` (sd/span
on the 0-1 footing; 1 Likert point is 1/4); a per-task difference of two strata (+ and -) has variance
2 (sd/span)^2 / N, and its mean over T
tasks a T-th of that. A leakage l = shift / self-effect s has, to first order, variance
(var(shift) + l^2 var(s)) / s^2 (the delta method; the shift and the self-effect are taken as
uncorrelated, which overstates the variance where scores on two criteria move together). Sym averages
two sources' leakages; Asym differs them. A flag is confirmed when the family interval (stats/intervals.py:
max-|t| over the cell's K + 2K(K-1) quantities, at the design df 2T(N - 1) of a source) clears its
threshold; the critical value here is Sidak's for that many independent quantities, an upper bound on the
max-|t| quantile of correlated ones, so the figures are conservative. With probability p the estimate
lies z_p standard errors or less on the wrong side of its truth: a truth of threshold + (c + z_p) se is
confirmed at least that often. A pair's flag needs both its gates confirmed as well (the assumed
self-effect's family interval above tau), so the leakage is asked for p = 0.8 / P(both gates); where the
gates alone are confirmed in fewer than 80% of audits, no leakage is enough at that N (checked against
audits by scripts/flag_error.py --plan-check: leaving the gates out made the plan promise 80% where
audits confirmed 19-46% at N = 5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scipy import special

from radar_local.stats.bias import BIAS
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.flags import Thresholds

POWER = 0.8
PLAN_SD = 1.0  # Likert points: a judge's spread over probes of one stratum before any verdict says otherwise
PLAN_SELF_EFFECT = 0.6  # a legible intervention (the paper's minimum 0.46; its benchmarks' means 0.64-0.78)


def critical(cells: int, df: float, level: float = LEVEL) -> float:
    """Sidak's two-sided critical value for `cells` quantities, carried to Student's t at df."""
    tail = (1 - level ** (1 / cells)) / 2
    return float(special.stdtrit(df, 1 - tail)) if df > 0 else math.inf


@dataclass(frozen=True)
class Power:
    """The smallest truths confirmed with probability POWER; None: not at this design."""

    cells: int
    critical: float
    self_effect: float  # the gate: a self-effect of at least this passes it, confirmed
    directional: float | None  # a one-way leakage
    cluster: float | None  # a two-way Sym (equal leakages)
    tradeoff: float | None  # a negative leakage (its magnitude)
    bias: float | None  # |sensitivity| of a judge-bias cell, where the plan has nuisance pairs
    bias_cells: int
    gates: float  # the probability that a pair's two gates are both confirmed at the assumed self-effect


def minimum_confirmed(
    k: int,
    tasks: int,
    n: int,
    *,
    sd: float = PLAN_SD,
    span: float = 4.0,
    self_effect: float = PLAN_SELF_EFFECT,
    tau: float = 0.4,
    thresholds: Thresholds = Thresholds(),
    level: float = LEVEL,
    attributes: int = 0,
    pairs_per_task: int = 0,
    bias_threshold: float = BIAS,
) -> Power:
    cells = k + 2 * k * (k - 1)
    c = critical(cells, 2 * tasks * (n - 1), level)
    var_diff = 2 * (sd / span) ** 2 / (n * tasks)  # a shift's or a self-effect's mean over tasks
    # A pair's flag is confirmed only with both its gates: the leakage itself must be confirmed with
    # probability POWER / gates, and where the gates alone fall short of POWER no leakage is enough.
    gates = float(special.ndtr((self_effect - tau) / math.sqrt(var_diff) - c)) ** 2
    margin = c + float(special.ndtri(POWER / gates)) if gates > POWER else math.inf

    def se_leak(leak: float) -> float:
        return math.sqrt(var_diff * (1 + leak**2)) / self_effect

    def solve(threshold: float, sign: int, scale: float = 1.0) -> float | None:
        """The truth l with l - sign * margin * scale * se(l) = threshold, by fixed-point iteration."""
        leak = threshold
        if math.isinf(margin):
            return None
        for _ in range(100):
            leak = threshold + sign * margin * scale * se_leak(leak)
            if abs(leak) > 10:
                return None
        return leak

    flat = math.sqrt(2) * se_leak(thresholds.cluster_sym)  # l_ab - l_ba at equal leakages
    cluster = solve(thresholds.cluster_sym, 1, 1 / math.sqrt(2)) if c * flat < thresholds.directional_asym else None
    tradeoff = solve(thresholds.tradeoff_leak, -1)
    bias, bias_cells = None, attributes * k
    if bias_cells and pairs_per_task >= 2:  # up - down of one base: a difference of two scores
        c_bias = critical(bias_cells, tasks * (pairs_per_task - 1), level)
        se_bias = math.sqrt(2 / (pairs_per_task * tasks)) * sd / span
        bias = bias_threshold + (c_bias + float(special.ndtri(POWER))) * se_bias
    return Power(
        cells=cells,
        critical=c,
        self_effect=tau + (c + float(special.ndtri(POWER))) * math.sqrt(var_diff),
        directional=solve(thresholds.directional_leak, 1),
        cluster=cluster,
        tradeoff=None if tradeoff is None else -tradeoff,
        bias=bias,
        bias_cells=bias_cells,
        gates=gates,
    )


LARGEST = 2.0  # a leakage or Sym beyond this (a shift twice the self-effect) is no finding a design should count on


def plan_lines(
    k: int,
    tasks: int,
    n: int,
    power: Power,
    *,
    sd: float,
    self_effect: float,
    level: float,
    adaptive: bool,
    scale: str = "0-4",
    joint: Sequence[bool] = (False,),
) -> list[str]:
    """What `radar audit --plan` prints: the design, the assumptions, and the smallest confirmed truths.
    `joint`: each scoring pass (every juror, every call mode), whether it scores a probe in one call."""

    def smallest(x: float | None, what: str, most: float = LARGEST) -> str:
        return f"{what} {x:.2f}" if x is not None and x <= most else "not at this N"

    probes = k * tasks * 2 * n
    lines = [
        f"Plan: {k} criteria x {tasks} tasks x 2 directions x N = {n} probes{' (max_n)' if adaptive else ''}: "
        f"{probes} directed probes, {probes * k * len(joint)} verdicts in "
        f"{sum(probes if one else probes * k for one in joint)} calls"
        f"{f' ({len(joint)} scoring passes: jurors and call modes)' if len(joint) > 1 else ''}. No call is made.",
        f"Assumed: scores spread {sd:g} points of the {scale} scale within a stratum, self-effects of {self_effect} "
        "(--plan-sd, --plan-self-effect; the variance model is stats/power.py's, conservative).",
        f"With {POWER:.0%} probability this audit confirms (family-wise {level:.0%} over {power.cells} quantities, "
        f"critical value {power.critical:.2f}):",
        f"  a criterion passing the gate: {smallest(power.self_effect, 'self-effect >=', 1.0)}",
        f"  a directional pair: {smallest(power.directional, 'leakage >=')}",
        f"  a bidirectional cluster: {smallest(power.cluster, 'Sym >=')}"
        + ("" if power.cluster is not None else " (Asym's interval would not clear its threshold)"),
        f"  a tradeoff: {smallest(power.tradeoff, 'leakage <= -')}".replace("<= - ", "<= -"),
    ]
    if power.gates <= POWER:
        lines.append(
            f"  (pairs: both gates are confirmed in only {power.gates:.0%} of such audits at a self-effect of "
            f"{self_effect}; more probes, or a judge that reads the criteria better, before any flag can be)"
        )
    if power.bias_cells:
        lines.append(
            f"  a judge bias ({power.bias_cells} attribute x criterion cells): "
            f"{smallest(power.bias, '|sensitivity| >=')}"
        )
    return lines


def pilot_spread(table: Any) -> float | None:
    """The pooled within-stratum sd of a score table's verdicts on each stratum's own target criterion (the
    spread the variance model assumes), in the scale's points; None without a stratum of two scored probes."""
    rows = table[(table["criterion"] == table["target"]) & table["direction"].isin(["+", "-"])].dropna(subset=["score"])
    groups = rows.groupby(["generator", "verifier", "task_id", "target", "direction"])["score"]
    var, size = groups.var(ddof=1), groups.size()
    keep = size >= 2
    if not keep.any():
        return None
    return math.sqrt(float((var[keep] * (size[keep] - 1)).sum() / (size[keep] - 1).sum()))
