"""Which levers confirm a finding at the paper's budget: multiple-testing procedure x scoring mode x probes per call.

The truth is scripts/coverage.py's ordered-probit judge (latent normal scores, sd 1 Likert point, criteria
correlated 0.5 within a probe, rounded and clipped to 0-4; `expected`: the judge's expected score under its own
belief of sd 0.6), at the paper's design (T = 5 tasks, K = 5 criteria, or K = 8), self-effects of about 0.7.
Truths: `null` (no coupling: every claim is false but the gates), `dir0.7` / `dir0.9` (a one-way leakage
c0 -> c1 of exactly 0.7 / 0.9), `sym0.7` (a two-way pair, both leakages exactly 0.7: Sym 0.7, Asym 0), `edge`
(a least-favourable null: every leakage 0.49, so every pair's Sym sits 0.01 below the coupled threshold), `many0.7`
(every earlier criterion leaks 0.7 into every later one: K(K-1)/2 directional pairs, where a false-discovery
procedure gains most; its `found` column is the mean share of the true claims an audit makes).

Every replication draws one audit's probes and its bootstrap replicates once (stats/intervals.replicates, 500
resamples) and reads them with each procedure, so procedures are compared on the same data:

  band       one two-sided max-|t| band over every self-effect, leakage, Sym and l_ij - l_ji (radar before issue 43)
  gatekept   stats/intervals.py's procedure: gates first (one-sided, Bonferroni alpha/K), then the pair claims at
             alpha x (gates confirmed)/K in one one-sided max-t family (parallel gatekeeping, Dmitrienko & Tamhane)
  screening  what a `screening: 0.05` audit reports: gatekept's confirmed claims and the flags Benjamini-Hochberg
             passes at a false discovery rate of 5% (stats/screening.py); its `fdr` column is the mean share of
             false claims among those it makes (0 where it makes none), the rate BH controls

Per design (procedure, mode, N), over R replications: the share of audits confirming any false claim (FWER, with
a 95% Wilson interval), and on planted truths the share confirming the planted finding: `directional` c0 -> c1,
`coupled` (Sym >= 0.5 with both gates) and `cluster` (coupled, and |l_01 - l_10| < 0.25 settled). The joint call
mode (one call scores every criterion: K verdicts per call) buys K times the probes for the per-criterion calls
of N = 5: its row is N = 25 (the halo a joint call adds is issue 31's to measure, on the same run).

    .venv/bin/python scripts/power_levers.py --reps 400                       # the table in docs/BENCHMARKS.md
    .venv/bin/python scripts/power_levers.py --reps 400 --ks 8 --truths null  # the error rate at K = 8
    .venv/bin/python scripts/power_levers.py --reps 200 --plan-check --ns 5 20   # --plan's figures, measured
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage import Truth, true_values
from flag_error import MOVE, InProcess, plan_inputs, wilson, workers

from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import TAU
from radar_local.stats.exact import exact_point
from radar_local.stats.flags import CLUSTER, Thresholds
from radar_local.stats.intervals import Bounds, gatekept, replicates, simultaneous
from radar_local.stats.power import minimum_confirmed
from radar_local.stats.screening import benjamini_hochberg, p_values

TRUTHS = {
    "null": None,
    "dir0.7": ("dir", 0.7),
    "dir0.9": ("dir", 0.9),
    "sym0.7": ("sym", 0.7),
    "edge": ("all", 0.49),
    "many0.7": ("upper", 0.7),
}
PROCEDURES = ("band", "gatekept", "screening")
SCREENING_FDR = 0.05


def truth_of(name: str, k: int, tasks: int) -> Truth:
    return planted(TRUTHS[name], k, tasks)


@functools.cache
def planted(spec: tuple[str, float] | None, k: int, tasks: int) -> Truth:
    if spec is None:
        return Truth(tasks, leak=np.eye(k), move=MOVE)
    kind, target = spec
    from scipy.optimize import brentq

    def build(x: float) -> Truth:
        leak = np.eye(k)
        leak[0, 1] = x
        if kind == "sym":
            leak[1, 0] = x
        if kind == "all":
            leak = np.where(np.eye(k, dtype=bool), 1.0, x)
        if kind == "upper":
            leak[np.triu_indices(k, 1)] = x
        return Truth(tasks, leak, MOVE)

    x = brentq(lambda x: true_values(build(x).stratum_means("integer"), TAU)["leakage"][0, 1] - target, -3, 3)
    return build(x)


def band(r, level: float) -> tuple[Bounds, np.ndarray]:
    """radar before issue 43: every quantity two-sided in one band; a gate passes inside the same band."""
    k = len(r.self_effect[0])
    off, upper = ~np.eye(k, dtype=bool), np.triu(np.ones((k, k), dtype=bool), 1)
    parts = [(r.self_effect, np.ones(k, bool)), (r.leakage, off), (r.sym, upper), (r.diff, upper)]
    point = np.concatenate([q[0][m] for q, m in parts])
    deltas = np.concatenate([q[1][:, m] for q, m in parts], axis=1)
    df = np.concatenate([np.broadcast_to(np.asarray(q[2], float), np.shape(q[0]))[m] for q, m in parts])
    ci, _ = simultaneous(point, deltas, df, level)
    out, start = [], 0
    for q, m in parts:
        full = np.full(np.shape(q[0]) + (2,), np.nan)
        full[m] = ci[start : start + m.sum()]
        start += m.sum()
        out.append(full)
    se, lk, sy, di = out
    sy = np.where(np.isnan(sy), np.swapaxes(sy, 0, 1), sy)
    di = np.where(np.isnan(di), -np.swapaxes(di, 0, 1)[..., ::-1], di)
    return Bounds(se, lk, sy, di, se[:, 0], level, 1 - level, 0.0, 0), se[:, 0]


def claims(b: Bounds, gate_low: np.ndarray, tau: float, th: Thresholds) -> dict[tuple, bool]:
    """Every claim an audit can confirm, read over bounds (float comparisons suffice in a simulation)."""
    k = len(gate_low)
    gate = gate_low >= tau
    out = {("gate fail", i): bool(b.self_effect[i, 1] < tau) for i in range(k)}
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            both = gate[i] and gate[j]
            l_low, l_high = b.leakage[i, j]
            d_low, d_high = b.diff[i, j]
            out["directional", i, j] = bool(both and l_low >= th.directional_leak and d_low >= th.directional_asym)
            out["tradeoff", i, j] = bool(both and l_high <= th.tradeoff_leak)
            if i < j:
                coupled = bool(both and b.sym[i, j, 0] >= th.cluster_sym)
                out["coupled", i, j] = coupled
                out["cluster", i, j] = bool(coupled and -th.directional_asym < d_low and d_high < th.directional_asym)
    return out


def true_claims(truth: Truth, tau: float, th: Thresholds) -> dict[tuple, bool]:
    """The claims the truth itself carries: `claims` read over bounds that are the true values."""
    v = true_values(truth.stratum_means("integer"), tau)
    lk = v["leakage"]

    def exact(x: np.ndarray) -> np.ndarray:
        return np.stack([x, x], axis=-1)

    b = Bounds(exact(v["self_effect"]), exact(lk), exact(v["sym"]), exact(lk - lk.T), v["self_effect"], 0, 0, 0, 0)
    return claims(b, v["self_effect"], tau, th)


def one(args: tuple) -> dict:
    name, k, tasks, n, mode, rep, resamples, level = args
    truth = truth_of(name, k, tasks) if isinstance(name, str) else planted(name, k, tasks)
    salt = list(TRUTHS).index(name) if isinstance(name, str) else int(name[1] * 1000) + 7
    pm = truth.sample(np.random.default_rng([k, n, rep, salt, mode == "expected"]), n, mode)
    strata = Strata.from_probes(pm)
    r = replicates(strata, exact_point(strata), TAU, resamples, rep)
    th = Thresholds()
    real = true_claims(truth, TAU, th)
    out = {}
    for proc in PROCEDURES:
        if proc == "band":
            b, gate_low = band(r, level)
        else:
            b = gatekept(r, TAU, level)
            gate_low = b.gate_low
        found = claims(b, gate_low, TAU, th)
        if proc == "screening":
            p = p_values(r.self_effect[0], r.leakage[0], b.scale, r.df, TAU, th)
            for flag, i, j in benjamini_hochberg(p, SCREENING_FDR):
                found["cluster" if flag == CLUSTER else flag, i, j] = True
        made = [key for key, v in found.items() if v]
        true = [key for key, v in real.items() if v and key[0] != "gate fail"]
        out[proc] = {
            "found": sum(found[key] for key in true) / max(len(true), 1),
            "fdr": sum(not real[key] for key in made) / max(len(made), 1),
            "false": any(v and not real[key] for key, v in found.items()),
            "directional": found["directional", 0, 1],
            "coupled": found["coupled", 0, 1],
            "cluster": found["cluster", 0, 1],
            "gates": bool((gate_low[:2] >= TAU).all()),
        }
    return out


def pilot_of(truth: Truth, n: int = 400) -> tuple[float, float, float]:
    """What a pilot would measure (stats/power.pilot_spreads and pilot_correlation), from a large sample of the
    truth: the pooled within-stratum sd of a probe's scores on the criteria it does not target and on the one it
    does, and its residual score on its target against its residuals on the others, pooled."""
    pm = truth.sample(np.random.default_rng(0), n, "integer")
    key = pm.task * 1000 + pm.target * 10 + pm.direction
    residual = pm.scores.copy()
    for stratum in np.unique(key):
        rows = key == stratum
        residual[rows] -= residual[rows].mean(axis=0)
    targeted = np.zeros(residual.shape, bool)
    targeted[np.arange(len(key)), pm.target] = True
    own = residual[targeted]
    x, y = [], []
    for j in range(residual.shape[1]):
        keep = pm.target != j
        x.append(own[keep])
        y.append(residual[keep, j])
    x, y = np.concatenate(x), np.concatenate(y)
    rho = float((x * y).sum() / np.sqrt((x**2).sum() * (y**2).sum()))
    return float(np.sqrt((residual[~targeted] ** 2).mean())), float(np.sqrt((own**2).mean())), rho


def plan_check(args: argparse.Namespace, pool: Pool | InProcess) -> list[dict]:
    """Plant what `radar audit --plan` names (its smallest directional leakage and coupled Sym confirmed with 80%
    power, told the truth's own spreads, self-effect and within-probe correlation, as a pilot would measure them)
    and measure how often audits confirm it."""
    rows = []
    for k in args.ks:
        effect, _ = plan_inputs(planted(None, k, args.tasks))
        sd, sd_target, rho = pilot_of(planted(None, k, args.tasks))
        for n in args.ns:
            power = minimum_confirmed(
                k, args.tasks, n, sd=sd, sd_target=sd_target, self_effect=effect, level=args.level, rho=rho
            )
            for kind, spec, key in (("directional", "dir", "directional"), ("coupled", "sym", "coupled")):
                named = getattr(power, kind)
                row = {
                    "K": k,
                    "T": args.tasks,
                    "N": n,
                    "claim": kind,
                    "plan": None if named is None else round(named, 3),
                }
                if named is not None and named <= 2:
                    jobs = [
                        ((spec, round(named, 3)), k, args.tasks, n, "integer", rep, args.resamples, args.level)
                        for rep in range(args.reps)
                    ]
                    got = [o["gatekept"][key] for o in pool.map(one, jobs)]
                    row.update(measured=round(sum(got) / args.reps, 3), reps=args.reps)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--bootstrap", dest="resamples", type=int, default=500)
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--ks", type=int, nargs="+", default=[5])
    ap.add_argument("--ns", type=int, nargs="+", default=[3, 5, 20, 25])
    ap.add_argument("--modes", nargs="+", default=["integer", "expected"], choices=["integer", "expected"])
    ap.add_argument("--truths", nargs="+", default=list(TRUTHS), choices=list(TRUTHS))
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--plan-check", action="store_true", help="plant what --plan names at 80%% and measure it")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with workers(args.workers) as pool:
        if args.plan_check:
            rows = plan_check(args, pool)
        for name in [] if args.plan_check else args.truths:
            for k in args.ks:
                for mode in args.modes:
                    for n in args.ns:
                        start = time.perf_counter()
                        jobs = [
                            (name, k, args.tasks, n, mode, rep, args.resamples, args.level) for rep in range(args.reps)
                        ]
                        out = pool.map(one, jobs)
                        for proc in PROCEDURES:
                            got = [o[proc] for o in out]
                            false = sum(g["false"] for g in got)
                            row = {
                                "truth": name,
                                "K": k,
                                "T": args.tasks,
                                "N": n,
                                "mode": mode,
                                "procedure": proc,
                                "reps": args.reps,
                                "fwer": round(false / args.reps, 3),
                                "fwer_95": [round(x, 3) for x in wilson(false, args.reps)],
                                "fdr": round(sum(g["fdr"] for g in got) / args.reps, 3),
                                "found": round(sum(g["found"] for g in got) / args.reps, 3),
                                **{
                                    key: round(sum(g[key] for g in got) / args.reps, 3)
                                    for key in ("directional", "coupled", "cluster", "gates")
                                },
                                "seconds": round(time.perf_counter() - start, 1),
                            }
                            rows.append(row)
                            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
