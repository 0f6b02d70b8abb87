"""How often an audit confirms a flag that is false: the family-wise error of its findings, and its power.

The truth is scripts/coverage.py's (an ordered-probit judge with exact stratum means: latent normal
scores, sd 1 Likert point, criteria correlated 0.5 within a probe, rounded and clipped to 0-4), for K
criteria and T tasks, with no coupling at all (every leakage exactly 0), or with one planted one-way
leakage (a directional pair). Each replication is a full `audit_cell` with 500 resamples; a flag of the
point estimate (stats/flags.py) counts as raised, a `confirmed` one (stats/decisions.evidence, over the
family's simultaneous intervals) as confirmed. A confirmed flag is false when the truth's own flags (the
same rule on the exact true leakages and gate) do not carry it. Reported per (K, N): the share of audits
raising any flag, confirming any flag, and confirming a false one (with a 95% Wilson interval), and the
median ratio of a leakage's family interval width to its per-cell 95% width (the cost of the family).

    .venv/bin/python scripts/flag_error.py --reps 200                  # zero coupling, K = 3-8, N = 3, 5, 20
    .venv/bin/python scripts/flag_error.py --reps 200 --leak 0.5 0.7 --ns 20 --ks 4   # power at true leakages
    .venv/bin/python scripts/flag_error.py --reps 200 --plan-check --ns 5 20         # power at --plan's figure
      (where the plan names none, the design's gates alone fall short: it runs the clean truth and reports how
      often both gates of c0 / c1 were confirmed, against the plan's probability)
    .venv/bin/python scripts/flag_error.py --reps 400 --bias 0 0.08 0.3               # judge bias, K = 5

Judge-bias mode: 1 or 5 attributes x 5 criteria, T = 2 or 3 tasks of 5 pairs, every cell's true
sensitivity the same; the share of audits flagging any cell under issue 19's rule (the cell's own 95%
interval excludes 0 and the point reaches the 0.1 threshold) and confirming any (the family interval
lies beyond the threshold), and the same per cell.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Iterable
from fractions import Fraction
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage import Truth, solved_truth, true_values

from radar_local.stats.audit import audit_cell
from radar_local.stats.bias import BIAS, NuisancePairs, nuisance_table
from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import TAU, coupling
from radar_local.stats.exact import exact_point
from radar_local.stats.flags import GATED, pair_flags
from radar_local.stats.intervals import intervals
from radar_local.stats.power import minimum_confirmed

MOVE = 1.6  # a self-effect of about 0.7: every gate passes in truth, as in the paper's audits (min 0.46)


def true_flags(truth: Truth) -> dict[tuple[str, str], set[str]]:
    c = coupling(truth.stratum_means("integer")[None], TAU)
    crit, lk, ok = truth.criteria, c.leakage[0], c.pair_reliable[0]
    return {
        (crit[a], crit[b]): set(pair_flags(Fraction(lk[a, b]), Fraction(lk[b, a]), bool(ok[a, b])))
        for a in range(len(crit))
        for b in range(a + 1, len(crit))
    }


def held(truth: Truth, pm, resamples: int, seed: int) -> bool:
    """Every interval of the family holds its truth (self-effects, off-diagonal leakages, Sym, Asym)."""
    c = coupling(truth.stratum_means("integer")[None], TAU)
    strata = Strata.from_probes(pm)
    fam = intervals(strata, exact_point(strata), TAU, resamples, seed).family
    k = len(truth.criteria)
    off = ~np.eye(k, dtype=bool)
    pairs = [
        (fam.self_effect, c.self_effect[0], np.ones(k, bool)),
        (fam.leakage, c.leakage[0], off),
        (fam.sym, c.sym[0], off),
        (fam.asym, c.asym[0], off),
    ]
    return all(((ci[m][:, 0] <= true[m]) & (true[m] <= ci[m][:, 1])).all() for ci, true, m in pairs)


@functools.cache
def planted_truth(k: int, tasks: int, leak: float) -> Truth:
    """No coupling, or a true one-way leakage c0 -> c1 of exactly `leak` (solved for its latent value)."""
    if not leak:
        return Truth(tasks, leak=np.eye(k), move=MOVE)
    return solved_truth(tasks, np.eye(k), MOVE, (0, 1), leak)


def plan_inputs(truth: Truth) -> tuple[float, float]:
    """(the truth's mean self-effect, its within-stratum sd of a score on its own criterion, Likert points):
    what `radar audit --plan` is told, so that its power can be checked against the audits'."""
    sd = 1.0  # the latent sd; the rounded and clipped score's, per stratum, in closed form:
    levels = np.arange(1, 5) - 0.5
    own = np.einsum("tidi->tid", truth.latent)  # (T, K, 2): each stratum's latent mean on its own criterion
    above = stats.norm.cdf((own[..., None] - levels) / sd)  # P(score >= k), k = 1..4
    p = -np.diff(np.concatenate([np.ones(own.shape + (1,)), above, np.zeros(own.shape + (1,))], axis=-1), axis=-1)
    values = np.arange(5)
    var = (p * values**2).sum(-1) - (p * values).sum(-1) ** 2
    effect = true_values(truth.stratum_means("integer"), TAU)["self_effect"].mean()
    return float(effect), float(np.sqrt(var.mean()))


def one(args: tuple) -> dict:
    k, n, tasks, leak, rep, resamples = args
    truth = planted_truth(k, tasks, leak)
    pm = truth.sample(np.random.default_rng([k, n, rep, int(leak * 1000)]), n, "integer")
    r = audit_cell(pm, resamples=resamples, seed=rep, budget=False)
    truth_flags = true_flags(truth)
    raised = confirmed = false = planted = 0
    for p in r.pairs.to_dict("records"):
        real = truth_flags[p["a"], p["b"]] | truth_flags.get((p["b"], p["a"]), set())
        for flag, level in p["evidence"].items():
            if flag == GATED:
                continue
            raised += 1
            if level == "confirmed":
                confirmed += 1
                false += flag not in real
                planted += flag in real
    for g in r.unreliable:  # a confirmed gate failure of a criterion that passes in truth is false too
        false += g.evidence == "confirmed"
    source, target = r.criteria[:2]  # the planted leakage's pair (c0 -> c1; a -> b at K = 3)
    gates = (
        r.reliable[source] and r.reliable[target] and {r.gate_evidence[c] for c in (source, target)} == {"confirmed"}
    )
    fam, ci = r.family["leakage"], r.leakage_ci
    ratios = [
        (fam[a][b][1] - fam[a][b][0]) / (ci[1].loc[a, b] - ci[0].loc[a, b])
        for a in r.criteria
        for b in r.criteria
        if a != b and fam[a][b] is not None and ci[1].loc[a, b] > ci[0].loc[a, b]
    ]
    return {
        "raised": raised,
        "confirmed": confirmed,
        "false": false,
        "planted": planted,
        "ratio": np.median(ratios),
        "held": held(truth, pm, resamples, rep),
        "gates": bool(gates),
    }


def bias_one(args: tuple) -> dict:
    """One audit's judge-bias table: `attributes` attributes x K criteria, every cell's true sensitivity `bias`
    (up: round(2 + 2 bias + e), down: round(2 - 2 bias + e), e ~ N(0, 1), clipped to 0-4, as in
    radar_local.synthetic), `pairs` pairs per task."""
    k, tasks, pairs, attributes, bias, rep, resamples = args
    rng = np.random.default_rng([k, tasks, pairs, attributes, int(bias * 1000), rep])
    task = np.repeat(np.arange(tasks), pairs)
    names = tuple(f"t{t}" for t in range(tasks))

    def scores(sign: float) -> np.ndarray:
        return np.clip(np.rint(2 + sign * 2 * bias + rng.normal(0, 1, (len(task), k))), 0, 4)

    table = [NuisancePairs(f"attr{a}", task, names, scores(1.0) - scores(-1.0)) for a in range(attributes)]
    rows = nuisance_table(table, [f"c{j}" for j in range(k)], [0.7] * k, [True] * k, resamples=resamples, seed=rep)
    old = [  # issue 19's rule: the cell's own 95% interval excludes 0 and the point reaches the threshold
        r.ci is not None and (r.ci[0] > 0 or r.ci[1] < 0) and abs(r.sensitivity) >= BIAS for r in rows
    ]
    return {
        "old": sum(old),
        "raised": sum(r.flag == "biased" for r in rows),
        "confirmed": sum(r.evidence == "confirmed" for r in rows),
        "cells": len(rows),
    }


def bias_rows(args: argparse.Namespace, pool: Pool | InProcess) -> list[dict]:
    rows = []
    for bias in args.bias:
        for attributes in args.attributes:
            for tasks in (2, 3):
                jobs = [(5, tasks, args.pairs, attributes, bias, rep, args.resamples) for rep in range(args.reps)]
                out = pool.map(bias_one, jobs)
                cells = sum(o["cells"] for o in out)
                row = {
                    "bias": bias,
                    "K": 5,
                    "attributes": attributes,
                    "T": tasks,
                    "pairs_per_task": args.pairs,
                    "reps": args.reps,
                    "any_flag_old_rule": round(sum(o["old"] > 0 for o in out) / args.reps, 3),
                    "any_confirmed": round(sum(o["confirmed"] > 0 for o in out) / args.reps, 3),
                    "confirmed_95": [round(x, 3) for x in wilson(sum(o["confirmed"] > 0 for o in out), args.reps)],
                    "cells_flagged_old_rule": round(sum(o["old"] for o in out) / cells, 3),
                    "cells_confirmed": round(sum(o["confirmed"] for o in out) / cells, 3),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


class InProcess:
    """`--workers 1`: the simulation in this process (no pool to fork; the test session smoke-runs it so)."""

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def map(self, f: Callable[[Any], Any], jobs: Iterable[Any]) -> list[Any]:
        return [f(job) for job in jobs]


def workers(count: int) -> Pool | InProcess:
    return Pool(count) if count > 1 else InProcess()


def wilson(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    p = hits / total
    centre, half = p + z * z / (2 * total), z * np.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return (max(0.0, (centre - half) / (1 + z * z / total)), min(1.0, (centre + half) / (1 + z * z / total)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--bootstrap", dest="resamples", type=int, default=500)
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--ks", type=int, nargs="+", default=[3, 4, 5, 6, 7, 8])
    ap.add_argument("--ns", type=int, nargs="+", default=[3, 5, 20])
    ap.add_argument("--leak", type=float, nargs="+", default=[0.0], help="planted true one-way leakage c0 -> c1")
    ap.add_argument(
        "--plan-check", action="store_true", help="plant, for each K and N, the leakage `radar audit --plan` names"
    )
    ap.add_argument("--bias", type=float, nargs="+", help="judge-bias mode: these true sensitivities, K = 5")
    ap.add_argument("--attributes", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--pairs", type=int, default=5, help="judge-bias mode: pairs per task")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with workers(args.workers) as pool:
        if args.bias:
            rows = bias_rows(args, pool)
        for leak in [] if args.bias else ([None] if args.plan_check else args.leak):
            for k in args.ks:
                for n in args.ns:
                    plan = None
                    if leak is None:  # the plan's smallest confirmed directional leakage for this design
                        effect, sd = plan_inputs(planted_truth(k, args.tasks, 0.0))
                        plan = minimum_confirmed(k, args.tasks, n, sd=sd, self_effect=effect)
                        leak = 0.0 if plan.directional is None else round(plan.directional, 4)
                    start = time.perf_counter()
                    out = pool.map(one, [(k, n, args.tasks, leak, rep, args.resamples) for rep in range(args.reps)])
                    any_false = sum(o["false"] > 0 for o in out)
                    row = {
                        "leak": leak,
                        "K": k,
                        "N": n,
                        "T": args.tasks,
                        "reps": args.reps,
                        "any_raised": round(sum(o["raised"] > 0 for o in out) / args.reps, 3),
                        "raised_per_audit": round(float(np.mean([o["raised"] for o in out])), 2),
                        "any_confirmed": round(sum(o["confirmed"] > 0 for o in out) / args.reps, 3),
                        "any_false_confirmed": round(any_false / args.reps, 3),
                        "false_95": [round(x, 3) for x in wilson(any_false, args.reps)],
                        "planted_confirmed": round(sum(o["planted"] > 0 for o in out) / args.reps, 3),
                        "family_held": round(sum(o["held"] for o in out) / args.reps, 3),
                        "gates_confirmed": round(sum(o["gates"] for o in out) / args.reps, 3),
                        **({} if plan is None else {"plan_gates": round(plan.gates, 3)}),
                        "family_width_ratio": round(float(np.nanmedian([o["ratio"] for o in out])), 2),
                        "seconds": round(time.perf_counter() - start, 1),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.plan_check:
                        leak = None
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
