"""A pairwise judge's audit (stats/pairwise.py) by simulation (issue 46): error rates, power and coverage.

The judge: each pair steered on C (T tasks x K criteria x N variants; the default pair budget N = 5) has a
quality gap on every criterion D of s (1 if D = C, else l_CD) Likert points, s drawn per pair from N(2, 0.5^2);
asked about D it chooses the first slot with probability Phi(+-gap / sigma + z), + where the up response is
shown first, z = Phi^-1(1/2 + bias): a position bias of `bias` on a tie. Every pair is asked about every
criterion in both orders (2 K verdicts a pair). Truths are integrals over s (a fine grid): p_CD, the pairwise
leakage (2 p_CD - 1) / (2 p_CC - 1), the first slot's rate.

Per design over R replications: the share of audits confirming any false finding (a leakage, a flag or a
position bias where the truth has none), the share confirming the planted leakage c0 -> c1 and the planted
position bias, and how often their 95% intervals hold the truth (the planted leakage's, the position bias's and,
over every criterion, the pairwise self-effect's).

With `--asked overall` each pair is asked only which response is better overall (a judge whose question names no
criterion, openai/evals' battle), its gap the mean of the pair's gaps over the criteria (as the planted engine's
overall quality): no gate or leakage is read, and the family's one finding is the position bias.

    .venv/bin/python scripts/pairwise_error.py --reps 400                      # the table in docs/BENCHMARKS.md
    .venv/bin/python scripts/pairwise_error.py --reps 400 --asked overall
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.stats.flags import Thresholds, pair_flags
from radar_local.stats.pairwise import DOWN_FIRST, UP_FIRST, PairVerdicts, pairwise

GRID = np.linspace(-5, 5, 401)  # standard normal quadrature for the pair's steer strength
WEIGHTS = np.exp(-(GRID**2) / 2) / np.exp(-(GRID**2) / 2).sum()
STEER, STEER_SD, SIGMA = 2.0, 0.5, 1.0


def leakage_matrix(k: int, leak: float) -> np.ndarray:
    m = np.eye(k)
    m[0, 1] = leak
    return m


def truth(k: int, leak: float, bias: float, overall: bool = False) -> dict:
    m, z = leakage_matrix(k, leak), special.ndtri(0.5 + bias)
    s = STEER + STEER_SD * GRID
    gap = s[None, None, :] * m[:, :, None] / SIGMA  # (C, D, grid)
    if overall:  # one question a pair: the mean gap over the criteria
        gap = gap.mean(axis=1, keepdims=True)
    up_first, down_first = special.ndtr(gap + z), special.ndtr(gap - z)  # P(up chosen) in each order
    p = ((up_first + down_first) / 2 * WEIGHTS).sum(-1)
    shift = 2 * p - 1
    leakage = shift / np.diag(shift)[:, None] if not overall else np.full((k, k), np.nan)
    first = ((special.ndtr(gap + z) + special.ndtr(-gap + z)) / 2 * WEIGHTS).sum(-1).mean()
    return {"leakage": leakage, "self_effect": np.diag(shift[:, :k]), "bias": float(first - 0.5)}


def sample(
    rng: np.random.Generator, k: int, tasks: int, n: int, leak: float, bias: float, overall: bool = False
) -> PairVerdicts:
    m, z = leakage_matrix(k, leak), special.ndtri(0.5 + bias)
    asked = [k] if overall else np.arange(k)  # k: the overall question
    t, c, v, d, o = np.meshgrid(np.arange(tasks), np.arange(k), np.arange(n), asked, [UP_FIRST, DOWN_FIRST],
                                indexing="ij")  # fmt: skip
    t, c, v, d, o = (x.ravel() for x in (t, c, v, d, o))
    strength = STEER + STEER_SD * rng.standard_normal((tasks, k, n))[t, c, v]  # one draw a pair
    gap = strength * (m[c].mean(axis=1) if overall else m[c, d]) / SIGMA
    first = rng.random(len(t)) < special.ndtr(np.where(o == UP_FIRST, gap, -gap) + z)
    return PairVerdicts(tuple(f"c{i}" for i in range(k)), t, c, v, d, o, np.where(first, 0, 1))


def one(rng, k: int, tasks: int, n: int, leak: float, bias: float, true: dict, resamples: int, overall: bool) -> dict:
    verdicts = sample(rng, k, tasks, n, leak, bias, overall)
    r = pairwise(verdicts, resamples=resamples, seed=int(rng.integers(1 << 30)))
    if overall:  # no criterion asked: the position bias is the one finding
        return {
            "false": r.position.confirmed and true["bias"] == 0,
            "position_confirmed": r.position.confirmed,
            "bias_covered": r.position.ci is not None and r.position.ci[0] <= true["bias"] <= r.position.ci[1],
            "no_leakage_read": not r.leakage and not r.criteria,
        }
    real = true["leakage"]
    false = any(x.confirmed and real[int(x.source[1:]), int(x.target[1:])] == 0 for x in r.leakage)
    false |= r.position.confirmed and true["bias"] == 0
    th = Thresholds()
    for p in r.pairs:
        i, j = int(p.a[1:]), int(p.b[1:])
        real_flags = pair_flags(Fraction(float(real[i, j])), Fraction(float(real[j, i])), True, th)
        false |= any(e == "confirmed" and f not in real_flags for f, e in p.evidence.items())
    planted = next(x for x in r.leakage if (x.source, x.target) == ("c0", "c1"))
    directional = next(p for p in r.pairs if (p.a, p.b) == ("c0", "c1")).evidence.get("directional")
    return {
        "false": false,
        "leak_confirmed": planted.confirmed,
        "directional_confirmed": directional == "confirmed",
        "position_confirmed": r.position.confirmed,
        "leak_covered": planted.ci is not None and planted.ci[0] <= real[0, 1] <= planted.ci[1],
        "bias_covered": r.position.ci is not None and r.position.ci[0] <= true["bias"] <= r.position.ci[1],
        "gates": all(c.gate == "passed" for c in r.criteria),
        "self_effect_covered": float(
            np.mean(
                [
                    c.self_effect_ci is not None and c.self_effect_ci[0] <= s <= c.self_effect_ci[1]
                    for c, s in zip(r.criteria, true["self_effect"])
                ]
            )
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--bootstrap", dest="resamples", type=int, default=500)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--ns", type=int, nargs="+", default=[5])
    ap.add_argument("--asked", choices=["all", "overall"], default="all", help="the questions each pair is asked")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    overall = args.asked == "overall"
    rows = []
    for name, leak, bias in (("null", 0.0, 0.0), ("planted", 0.6, 0.15)):
        true = truth(args.k, leak, bias, overall)
        for n in args.ns:
            start, rng = time.perf_counter(), np.random.default_rng([n, int(leak * 100), int(bias * 100)])
            got = [one(rng, args.k, args.tasks, n, leak, bias, true, args.resamples, overall) for _ in range(args.reps)]
            row = {
                "truth": name,
                "asked": args.asked,
                "K": args.k,
                "T": args.tasks,
                "N": n,
                "verdicts": args.k * args.tasks * n * (1 if overall else args.k) * 2,
                "reps": args.reps,
                "true_leakage": None if overall else round(float(true["leakage"][0, 1]), 3),
                "true_bias": round(true["bias"], 3),
                **{key: round(sum(g[key] for g in got) / args.reps, 3) for key in got[0]},
                "seconds": round(time.perf_counter() - start, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
