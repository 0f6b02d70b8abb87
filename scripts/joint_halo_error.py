"""Findings from joint calls that are the rubric's, not the judge's halo (issue 61), by simulation.

The judge is scripts/coverage.py's ordered-probit one (latent normal scores, rounded and clipped to 0-4, criteria
correlated 0.5 within a probe, self-effects of about 0.7) at the paper's design (T = 5 tasks, K = 5 criteria). A
probe's spread is split in two: half its variance is the probe's own (shared by every reading of it), half each
verdict's (drawn afresh per call), so the same probe scored per criterion and jointly is paired, as in a run.
Joint calls add a halo h: every criterion a probe does not target moves with its steer by h more (latent units:
the leakage's own), the joint judge's leakages about l + h, its self-effects untouched. The rubric's truth is the
per-criterion judge's. Each audit scores N probes a stratum jointly, and the first ceil(share x N) per criterion
too (`judge: {calls: joint, halo_check: share}`), and reads them four ways on the same data:

  joint      the joint family alone (radar before issue 61, and `reading: deployed`, which is about the judge)
  demoted    the rubric reading (stats/joint.py): a claim the halo could have made kept only where the halo check
             (stats/halo.py: its index's interval, the pair's simultaneous band) does not find joint calls moving
             the coupling that way
  unchecked  the rubric reading without a halo check: nothing is confirmed from joint calls
  per-crit   per-criterion calls at the same cost instead (N = cost / (K x 2KT) probes a stratum)

Per truth: the share of audits confirming any claim the rubric's truth does not carry (false), and the planted
finding's power (directional c0 -> c1, coupled c0 / c1), with the halo check's false alarms on a judge with no
halo. Truths: `null` (nothing coupled), `dir0.45` / `dir0.7` (a one-way leakage c0 -> c1), `sym0.7` (both ways).

    .venv/bin/python scripts/joint_halo_error.py --reps 400                  # the table in docs/benchmarks
    .venv/bin/python scripts/joint_halo_error.py --reps 200 --truths dir0.45 --halos 0.05 0.1 0.15 0.2 0.3
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage import Truth, true_values
from flag_error import MOVE, wilson, workers
from power_levers import claims, true_claims

from radar_local.scale import LIKERT
from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import TAU
from radar_local.stats.exact import exact_point
from radar_local.stats.flags import Thresholds
from radar_local.stats.halo import checked_per_stratum, halo
from radar_local.stats.intervals import gatekept, replicates
from radar_local.stats.joint import halo_sides
from radar_local.stats.probes import ProbeMatrix

TRUTHS = {"null": None, "dir0.45": ("dir", 0.45), "dir0.7": ("dir", 0.7), "sym0.7": ("sym", 0.7)}
READINGS = ("joint", "demoted", "unchecked", "per-crit")
RAISED = ("directional", "coupled", "cluster")


def leak_matrix(spec: tuple[str, float] | None, k: int, tasks: int) -> np.ndarray:
    """The per-criterion (rubric) judge's latent leak matrix whose true leakage c0 -> c1 is the spec's."""
    leak = np.eye(k)
    if spec is None:
        return leak
    from scipy.optimize import brentq

    kind, target = spec

    def build(x: float) -> np.ndarray:
        m = np.eye(k)
        m[0, 1] = x
        if kind == "sym":
            m[1, 0] = x
        return m

    def value(x: float) -> float:
        return true_values(Truth(tasks, build(x), MOVE).stratum_means("integer"), TAU)["leakage"][0, 1] - target

    return build(brentq(value, -3, 3))


def scores(latent: np.ndarray, rows: tuple, shared: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One call's integer verdicts: the probes' latent means, their own shared part, a fresh verdict part."""
    t, i, d = rows
    x = latent[t, i, d] + shared + rng.normal(0.0, math.sqrt(0.5), shared.shape)
    return np.clip(np.rint(x), 0, 4)


def matrix(label: str, pm_scores: np.ndarray, rows: tuple, v: np.ndarray, k: int, tasks: int) -> ProbeMatrix:
    t, i, d = rows
    crit, names = tuple(f"c{j}" for j in range(k)), tuple(f"t{j}" for j in range(tasks))
    return ProbeMatrix("g", label, crit, names, pm_scores, t, i, d, v, (LIKERT.span,) * k)


def subset(pm: ProbeMatrix, keep: np.ndarray) -> ProbeMatrix:
    arrays = {f: getattr(pm, f)[keep] for f in ("scores", "task", "target", "direction", "variant")}
    return ProbeMatrix(**{**vars(pm), **arrays})


def family_claims(pm: ProbeMatrix, resamples: int, seed: int, level: float) -> dict[tuple, bool]:
    strata = Strata.from_probes(pm)
    b = gatekept(replicates(strata, exact_point(strata), TAU, resamples, seed), TAU, level)
    return claims(b, b.gate_low, TAU, Thresholds())


def one(args: tuple) -> dict:
    name, h, k, tasks, n, share, rep, resamples, level = args
    spec = TRUTHS[name]
    leak = leak_matrix(spec, k, tasks)
    rubric, judge = Truth(tasks, leak, MOVE), Truth(tasks, leak + h * (1 - np.eye(k)), MOVE)
    rng = np.random.default_rng([rep, int(h * 1000), list(TRUTHS).index(name), n, int(share * 1000)])
    t, i, d, v = (a.ravel() for a in np.meshgrid(range(tasks), range(k), range(2), range(n), indexing="ij"))
    rows = (t, i, d)
    shared = rng.normal(0.0, math.sqrt(0.5), (len(t), 1)) * np.ones((1, k))  # the probe's own: correlation 0.5
    joint = matrix("joint", scores(judge.latent, rows, shared, rng), rows, v, k, tasks)
    per = matrix("per", scores(rubric.latent, rows, shared, rng), rows, v, k, tasks)
    checked = subset(per, v < checked_per_stratum(share, n))
    found = family_claims(joint, resamples, rep, level)
    h_block = halo(checked, joint, resamples=resamples, seed=rep, level=level)
    crit = list(joint.criteria)
    demoted = dict(found)
    for (kind, *pair), value in found.items():
        if kind == "gate fail" or not value:
            continue
        adds, removes = halo_sides(h_block, crit[pair[0]], crit[pair[1]])
        if (kind in RAISED and adds) or (kind == "tradeoff" and removes):
            demoted[kind, *pair] = False
    unchecked = {key: value and key[0] == "gate fail" for key, value in found.items()}
    calls = len(t) + len(checked.scores) * k  # the joint calls and the check's per-criterion calls
    n_per = max(2, calls // (k * 2 * k * tasks))
    per_crit = family_claims(subset(per, v < n_per), resamples, rep, level)
    real = true_claims(rubric, TAU, Thresholds())
    out = {"calls": calls, "n_per": n_per, "alarm": any(halo_sides(h_block, a, b) != (False, False) for a in crit
                                                         for b in crit if a < b)}  # fmt: skip
    for reading, got in zip(READINGS, (found, demoted, unchecked, per_crit)):
        out[reading] = {
            "false": any(value and not real[key] for key, value in got.items()),
            "directional": got["directional", 0, 1],
            "coupled": got["coupled", 0, 1],
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--bootstrap", dest="resamples", type=int, default=500)
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--ns", type=int, nargs="+", default=[15], help="joint probes per stratum")
    ap.add_argument("--share", type=float, default=0.1, help="the halo check's share (judge: {halo_check: share})")
    ap.add_argument("--truths", nargs="+", default=list(TRUTHS), choices=list(TRUTHS))
    ap.add_argument("--halos", type=float, nargs="+", default=[0.0, 0.25, 0.7])
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with workers(args.workers) as pool:
        for name in args.truths:
            for h in args.halos:
                for n in args.ns:
                    start = time.perf_counter()
                    jobs = [
                        (name, h, args.k, args.tasks, n, args.share, rep, args.resamples, args.level)
                        for rep in range(args.reps)
                    ]
                    out = pool.map(one, jobs)
                    alarms = sum(o["alarm"] for o in out)
                    row = {
                        "truth": name,
                        "halo": h,
                        "N": n,
                        "share": args.share,
                        "calls": out[0]["calls"],
                        "per_crit_N": out[0]["n_per"],
                        "reps": args.reps,
                        "check_alarm": round(alarms / args.reps, 3),
                    }
                    for reading in READINGS:
                        false = sum(o[reading]["false"] for o in out)
                        row[reading] = {
                            "false": round(false / args.reps, 3),
                            "false_95": [round(x, 3) for x in wilson(false, args.reps)],
                            "directional": round(sum(o[reading]["directional"] for o in out) / args.reps, 3),
                            "coupled": round(sum(o[reading]["coupled"] for o in out) / args.reps, 3),
                        }
                    row["seconds"] = round(time.perf_counter() - start, 1)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
