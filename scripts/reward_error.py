"""A reward model's sensitivity profile (stats/reward.py) by simulation (issue 48): error rates and power.

The reward model: a response steered up or down on criterion C (T tasks x K criteria x N variants, each direction)
gets reward w_C x (+1 or -1) + a task effect (N(0, 1), shared by the task's responses) + noise (N(0, sigma^2)).
Per truth over R replications: the share of audits calling any criterion with w = 0 `moves` (a false finding,
family-wise), the share calling the steered criterion `moves` (power), and the share of w = 0 criteria confirmed
`blind` (within +-0.2 reward sd), with the average share of the true effect inside its 95% interval.

    .venv/bin/python scripts/reward_error.py --reps 400          # the table in docs/benchmarks/judges.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.stats.reward import reward_profile

TRUTHS = {"null": 0.0, "small": 0.15, "medium": 0.3, "large": 1.0}  # w of criterion c0, in noise sd


def one_audit(rng: np.random.Generator, k: int, tasks: int, n: int, w: float, sigma: float):
    weights = np.zeros(k)
    weights[0] = w
    rows = []
    for t in range(tasks):
        base = rng.normal()
        for c in range(k):
            for v in range(n):
                for d, sign in (("+", 1), ("-", -1)):
                    rows.append((f"t{t}", f"c{c}", d, v, float(base + sign * weights[c] + rng.normal(0, sigma))))
    crit = [f"c{c}" for c in range(k)]
    return reward_profile("rm", crit, rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--ns", type=int, nargs="+", default=[3, 5, 10])
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--truths", nargs="+", choices=sorted(TRUTHS), default=list(TRUTHS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = []
    print("| truth | N | any false `moves` | c0 `moves` (power) | w = 0 criteria confirmed `blind` |")
    print("|---|---|---|---|---|")
    for truth in args.truths:
        for n in args.ns:
            rng = np.random.default_rng([n, args.k, int(TRUTHS[truth] * 1000)])
            false = power = 0
            blind: list[float] = []
            for _ in range(args.reps):
                profile = one_audit(rng, args.k, args.tasks, n, TRUTHS[truth], args.sigma)
                verdicts = [c.verdict for c in profile.criteria]
                nulls = verdicts[1:] if TRUTHS[truth] else verdicts
                false += "moves" in nulls
                power += verdicts[0] == "moves" and TRUTHS[truth] > 0
                blind.append(sum(v == "blind" for v in nulls) / len(nulls))
            row = {
                "truth": truth,
                "n": n,
                "false_moves": false / args.reps,
                "power": power / args.reps if TRUTHS[truth] else None,
                "blind": float(np.mean(blind)),
            }
            out.append(row)
            power_text = "-" if row["power"] is None else f"{row['power']:.1%}"
            cells = [f"{truth} (w = {TRUTHS[truth]:g})", str(n), f"{row['false_moves']:.1%}", power_text]
            print("| " + " | ".join([*cells, f"{row['blind']:.1%}"]) + " |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
