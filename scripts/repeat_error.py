"""Do the repeat-agreement intervals (stats/repeats.py) cover the judge noise that was planted? (issue 47)

The truth is the planted engine's judge (radar_local/engines/testing.py with `noise: sd, fresh_draws: true`):
a verdict on levels 0-4 drawn from a discretized normal of sd `sd` around a centre, the centre its stratum's value
(2 for a criterion the probe does not push, 4 or 0 for one it pushes up or down) plus sd x (U - 1/2) for the
probe (U uniform): each asking draws afresh. The true noise variance of a probe is its belief's variance; the true
within-stratum variance of one verdict adds the variance of the belief means over probes; both are integrals over
U, taken on a fine grid. Per replication: 50 strata (T = 5 tasks, K = 5 targets, 2 directions; one criterion
scored, pushed in a fifth of them) of N probes, each asked R times; the share of replications whose interval
covers the truth, per statistic (`changed`: the probability that R askings are not all equal).

    .venv/bin/python scripts/repeat_error.py --reps 400           # the table in docs/BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.repeats import repeats

LEVELS = np.arange(5.0)
GRID = (np.arange(2000) + 0.5) / 2000  # U on (0, 1), midpoints


def beliefs(centres: np.ndarray, sd: float) -> np.ndarray:
    """(..., 5) the planted judge's P(level) around each centre."""
    w = np.exp(-((LEVELS - centres[..., None]) ** 2) / (2 * sd**2))
    return w / w.sum(axis=-1, keepdims=True)


def stratum_values(tasks: int, k: int) -> np.ndarray:
    """Each stratum's value of the scored criterion (index 0): pushed to 4 or 0 where it is the target."""
    return np.array([v for _ in range(tasks) for target in range(k) for v in ((4.0, 0.0) if target == 0 else (2, 2))])


def truth(values: np.ndarray, sd: float, r: int) -> dict[str, float]:
    p = beliefs(values[:, None] + sd * (GRID - 0.5), sd)  # strata x grid x levels
    mean = (p * LEVELS).sum(-1)
    var = (p * LEVELS**2).sum(-1) - mean**2
    noise = var.mean()
    spread = (var.mean(axis=1) + mean.var(axis=1)).mean()
    return {
        "changed": float((1 - (p**r).sum(-1)).mean()),
        "noise_sd": float(np.sqrt(noise)),
        "noise_share": float(noise / spread),
    }


def one(values: np.ndarray, tasks: int, k: int, n: int, r: int, sd: float, rng, resamples: int) -> dict:
    strata = len(values)
    centres = np.repeat(values, n) + sd * (rng.random(strata * n) - 0.5)
    p = beliefs(centres, sd)
    draws = np.stack([(rng.random((len(p), 1)) > p.cumsum(-1)).sum(-1) for _ in range(r)]).astype(float)
    index = np.repeat(np.arange(strata), n)
    task, rest = index // (2 * k), index % (2 * k)
    matrices = [
        ProbeMatrix(
            "g",
            f"v{a}",
            ("c",),
            tuple(f"t{i}" for i in range(tasks)),
            draws[a][:, None],
            task,
            rest // 2,
            rest % 2,
            np.tile(np.arange(n), strata).astype(str),
            (Fraction(4),),
        )
        for a in range(r)
    ]
    row = repeats(matrices, {"c": "ordinal"}, resamples=resamples, seed=int(rng.integers(1 << 30))).criteria[0]
    return {key: (getattr(row, key), getattr(row, f"{key}_ci")) for key in ("changed", "noise_sd", "noise_share")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--bootstrap", dest="resamples", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--ks", type=int, default=5)
    ap.add_argument("--ns", type=int, nargs="+", default=[3, 5, 10])
    ap.add_argument("--repeats", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--sds", type=float, nargs="+", default=[0.5, 1.0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    values = stratum_values(args.tasks, args.ks)
    rows = []
    for sd in args.sds:
        for r in args.repeats:
            true = truth(values, sd, r)
            for n in args.ns:
                start, rng = time.perf_counter(), np.random.default_rng([int(sd * 100), r, n])
                got = [one(values, args.tasks, args.ks, n, r, sd, rng, args.resamples) for _ in range(args.reps)]
                row: dict = {"sd": sd, "R": r, "N": n, "reps": args.reps}
                for key, value in true.items():
                    cis = [g[key][1] for g in got if g[key][1] is not None]
                    row[key] = round(value, 3)
                    row[f"{key}_mean"] = round(float(np.mean([g[key][0] for g in got])), 3)
                    row[f"{key}_cover"] = round(sum(lo <= value <= hi for lo, hi in cis) / max(len(cis), 1), 3)
                row["seconds"] = round(time.perf_counter() - start, 1)
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
