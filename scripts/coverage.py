"""Coverage of the audit's 95% intervals on a planted truth with a known answer.

The truth: K = 3 criteria, T tasks, each (task, target, direction) stratum's probes scored on every
criterion as a latent normal (mean 2 + direction * move * L[target], task offsets, sd 1 Likert point,
criteria correlated 0.5 within a probe), then rounded and clipped to 0-4 (integer verdicts), or the
expectation of that rounding under a judge's own belief of sd 0.6 (expected scores). Every stratum
mean, so every quantity, has a closed form (normal CDFs): the truth is exact, not simulated.

For each N, R replications; each quantity's coverage (the share of replications and entries whose
interval holds the truth) and median width. `--adaptive` adds audits that start at 3 probes per
stratum and add probes where a decision is still open (radar_local/adaptive.py), up to 20.
`--at-threshold` measures one leakage whose truth is exactly the directional threshold 0.5 after an
adaptive audit and after a fixed N = 20 audit of the same probes: coverage at the threshold, where a
stopping rule bites, not pooled over entries.

    .venv/bin/python scripts/coverage.py --reps 200
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.adaptive import awaited, grow
from radar_local.config import Adaptive
from radar_local.scale import LIKERT
from radar_local.stats.audit import audit_cell
from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import coupling, global_summaries
from radar_local.stats.decisions import decisions
from radar_local.stats.exact import exact_point
from radar_local.stats.intervals import intervals
from radar_local.stats.probes import ProbeMatrix

CRITERIA = ("a", "b", "c")
LEAK = np.array([[1.0, 0.5, 0.1], [0.2, 1.0, -0.3], [0.6, 0.4, 1.0]])  # row = source
# For the adaptive audit: stronger moves and leakages from far below to near the flag thresholds,
# so that cells stop at different waves (with LEAK every decision stays open to max_n).
LEAK_MIXED = np.array([[1.0, 0.9, 0.1], [0.3, 1.0, 0.0], [0.45, 0.0, 1.0]])
MOVE, MOVE_MIXED, SD, RHO, BELIEF_SD = 1.2, 1.6, 1.0, 0.5, 0.6
QUANTITIES = ("self_effect", "leakage", "sym", "asym", "global_positive")


class Truth:
    def __init__(self, tasks: int, leak: np.ndarray = LEAK, move: float = MOVE):
        k = len(leak)
        self.criteria = CRITERIA if k == len(CRITERIA) else tuple(f"c{j}" for j in range(k))
        offset = np.linspace(-0.3, 0.3, tasks)
        sign = np.array([1.0, -1.0])
        # latent[t, i, d, j]
        self.latent = 2 + offset[:, None, None, None] + sign[None, None, :, None] * move * leak[None, :, None, :]
        self.cov = SD**2 * (RHO * np.ones((k, k)) + (1 - RHO) * np.eye(k))
        self.tasks = tasks

    def stratum_means(self, mode: str) -> np.ndarray:
        """Normalized true means (T, K, 2, K): E[clip(round(x))] = sum_k P(x >= k - 1/2)."""
        sd = SD if mode == "integer" else np.hypot(SD, BELIEF_SD)
        levels = np.arange(1, 5) - 0.5
        return stats.norm.cdf((self.latent[..., None] - levels) / sd).sum(-1) / 4

    def sample(self, rng: np.random.Generator, n: int, mode: str) -> ProbeMatrix:
        """n probes per (task, target, direction)."""
        t_count, k = self.tasks, len(self.criteria)
        t, i, d, v = (a.ravel() for a in np.meshgrid(range(t_count), range(k), range(2), range(n), indexing="ij"))
        x = self.latent[t, i, d] + rng.multivariate_normal(np.zeros(k), self.cov, len(t))
        if mode == "integer":
            scores = np.clip(np.rint(x), 0, 4)
        else:  # the judge's expected score: its belief N(x, BELIEF_SD) pushed through round-and-clip
            scores = stats.norm.cdf((x[..., None] - (np.arange(1, 5) - 0.5)) / BELIEF_SD).sum(-1)
        tasks = tuple(f"t{j}" for j in range(t_count))
        return ProbeMatrix("g", "v", self.criteria, tasks, scores, t, i, d, v, (LIKERT.span,) * k)

    def first(self, pm: ProbeMatrix, sizes: dict) -> ProbeMatrix:
        """The first sizes[cell] probes (variants) of each cell: what an adaptive audit has asked for."""
        keep = np.array(
            [
                v < sizes[(pm.tasks[t], self.criteria[i], "+-"[d])]
                for t, i, d, v in zip(pm.task, pm.target, pm.direction, pm.variant)
            ]
        )
        return ProbeMatrix(
            pm.generator,
            pm.verifier,
            pm.criteria,
            pm.tasks,
            pm.scores[keep],
            pm.task[keep],
            pm.target[keep],
            pm.direction[keep],
            pm.variant[keep],
            pm.spans,
        )


def true_values(means: np.ndarray, tau: float) -> dict[str, np.ndarray]:
    c = coupling(means[None], tau)
    return {
        "self_effect": c.self_effect[0],
        "leakage": c.leakage[0],
        "sym": c.sym[0],
        "asym": c.asym[0],
        "global_positive": global_summaries(c)["positive"][0],
    }


def estimates(pm: ProbeMatrix, tau: float, resamples: int, seed: int, small_sample: bool) -> dict[str, np.ndarray]:
    strata = Strata.from_probes(pm)
    iv = intervals(strata, exact_point(strata), tau, resamples, seed, small_sample=small_sample)
    return {
        "self_effect": iv.self_effect,
        "leakage": iv.leakage,
        "sym": iv.sym,
        "asym": iv.asym,
        "global_positive": iv.global_["positive"],
    }


def adaptive_sizes(
    truth: Truth, pm: ProbeMatrix, tau: float, resamples: int, seed: int, spec: Adaptive
) -> tuple[dict, int]:
    """Run the adaptive audit's waves (radar_local/adaptive.py's rule) on one replication's probes."""
    sizes = {(task, c, d): spec.start_n for task in pm.tasks for c in CRITERIA for d in "+-"}
    waves = 0
    while True:
        waves += 1
        result = audit_cell(
            truth.first(pm, sizes), tau=tau, resamples=resamples, seed=seed, budget=False, level=spec.confidence
        )
        sources = {c for d in awaited(result, None) if d.value is None for c in d.sources}
        following = grow(sizes, sources, spec.step, spec.max_n)
        if following == sizes:
            return sizes, waves
        sizes = following


def off_diagonal(name: str, k: int) -> np.ndarray:
    if name in ("leakage", "asym"):
        return ~np.eye(k, dtype=bool)
    if name == "sym":
        return np.triu(np.ones((k, k), dtype=bool), 1)
    return np.ones((k,) if name == "self_effect" else (), dtype=bool)


def tally(ci: dict[str, np.ndarray], truth: dict[str, np.ndarray], acc: dict) -> None:
    k = len(CRITERIA)
    for name in QUANTITIES:
        keep = off_diagonal(name, k)
        low, high, true = ci[name][..., 0][keep], ci[name][..., 1][keep], truth[name][keep]
        hit = (low <= true) & (true <= high)  # an undefined interval is a miss
        acc[name]["hits"] += int(hit.sum())
        acc[name]["total"] += int(np.size(hit))
        acc[name]["widths"].extend((high - low)[~np.isnan(high - low)].tolist())


def run_fixed(
    truth: Truth, n: int, mode: str, reps: int, resamples: int, tau: float, seed: int, small_sample: bool
) -> dict:
    rng = np.random.default_rng(seed)
    target = true_values(truth.stratum_means(mode), tau)
    acc = {q: {"hits": 0, "total": 0, "widths": []} for q in QUANTITIES}
    for r in range(reps):
        tally(estimates(truth.sample(rng, n, mode), tau, resamples, r, small_sample), target, acc)
    return summarize(acc)


def summarize(acc: dict) -> dict:
    """Coverage, and the median width (a ratio's interval can be unbounded in a rare replication)."""
    return {
        q: {
            "coverage": round(a["hits"] / a["total"], 3),
            "width": round(float(np.median(a["widths"])), 3) if a["widths"] else None,
        }
        for q, a in acc.items()
    }


def run_adaptive(truth: Truth, mode: str, reps: int, resamples: int, tau: float, seed: int, spec: Adaptive) -> dict:
    """Coverage of the final 95% intervals of adaptive audits, and their probes against a fixed max_n."""
    rng = np.random.default_rng(seed)
    target = true_values(truth.stratum_means(mode), tau)
    acc = {q: {"hits": 0, "total": 0, "widths": []} for q in QUANTITIES}
    probes, waves = [], []
    for r in range(reps):
        full = truth.sample(rng, spec.max_n, mode)
        sizes, count = adaptive_sizes(truth, full, tau, resamples, r, spec)
        tally(estimates(truth.first(full, sizes), tau, resamples, r, True), target, acc)
        probes.append(sum(sizes.values()) / (len(sizes) * spec.max_n))
        waves.append(count)
    return {
        **summarize(acc),
        "probes_over_fixed_max_n": round(float(np.mean(probes)), 3),
        "waves": round(float(np.mean(waves)), 2),
    }


def solved_truth(tasks: int, leak: np.ndarray, move: float, entry: tuple[int, int], target: float) -> Truth:
    """`leak` with `entry` moved so that its true leakage (after rounding and clipping, in closed form) is
    exactly `target`: a latent coupling is not the leakage an audit measures."""
    from scipy.optimize import brentq

    def truth(x: float) -> Truth:
        moved = leak.copy()
        moved[entry] = x
        return Truth(tasks, moved, move)

    def gap(x: float) -> float:
        return float(true_values(truth(x).stratum_means("integer"), 0.4)["leakage"][entry] - target)

    return truth(brentq(gap, -3.0, 3.0, xtol=1e-12))


def threshold_truth(tasks: int, target: float = 0.5) -> Truth:
    """LEAK_MIXED with c -> a at exactly the directional threshold: the decision an adaptive audit finds
    hardest (its truth sits on the boundary)."""
    return solved_truth(tasks, LEAK_MIXED, MOVE_MIXED, (2, 0), target)


def run_at_threshold(truth: Truth, reps: int, resamples: int, tau: float, spec: Adaptive) -> dict:
    """The leakage at its threshold, after an adaptive audit and after a fixed N = max_n audit of the same
    probes: how often its per-cell 95% interval and its family interval hold the truth, and how often the
    directional decision of its pair is settled on the wrong side (false: the truth is exactly at 0.5,
    which `>=` counts as directional)."""
    rng = np.random.default_rng(7)
    true = true_values(truth.stratum_means("integer"), tau)["leakage"][2, 0]
    out = {kind: {"cell": 0, "family": 0, "wrong": 0} for kind in ("adaptive", "fixed")}
    for r in range(reps):
        full = truth.sample(rng, spec.max_n, "integer")
        sizes, _ = adaptive_sizes(truth, full, tau, resamples, r, spec)
        for kind, pm in (("adaptive", truth.first(full, sizes)), ("fixed", full)):
            res = audit_cell(pm, tau=tau, resamples=resamples, seed=r, budget=False, level=spec.confidence)
            low, high = res.leakage_ci[0].loc["c", "a"], res.leakage_ci[1].loc["c", "a"]
            fam = res.family["leakage"]["c"]["a"]
            out[kind]["cell"] += bool(low <= true <= high)
            out[kind]["family"] += fam is None or fam[0] <= true <= fam[1]
            out[kind]["wrong"] += any(
                d.value is False for d in decisions(res) if d.kind == "directional" and set(d.criteria) == {"a", "c"}
            )
    return {kind: {k: round(v / reps, 3) for k, v in acc.items()} for kind, acc in out.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--bootstrap", dest="resamples", type=int, default=500)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--n", type=int, nargs="+", default=[3, 5, 20])
    ap.add_argument("--modes", nargs="+", default=["integer", "expected"])
    ap.add_argument("--plain", action="store_true", help="also the plain percentile bootstrap, for comparison")
    ap.add_argument("--adaptive", action="store_true", help="also adaptive audits (start 3, max 20)")
    ap.add_argument("--tau", type=float, default=0.4)
    ap.add_argument("--adaptive-tasks", type=int, default=6, help="tasks of the LEAK_MIXED truth")
    ap.add_argument("--confidence", type=float, default=0.95, help="the adaptive audit's decision confidence")
    ap.add_argument("--at-threshold", action="store_true", help="only: a leakage exactly at 0.5, adaptive vs fixed")
    ap.add_argument("--json", type=Path, help="write the table here too")
    args = ap.parse_args()
    if args.at_threshold:
        spec = Adaptive(confidence=args.confidence)
        start = time.perf_counter()
        res = run_at_threshold(threshold_truth(args.adaptive_tasks), args.reps, args.resamples, args.tau, spec)
        print(json.dumps({**res, "reps": args.reps, "seconds": round(time.perf_counter() - start, 1)}))
        return 0
    truth = Truth(args.tasks)
    rows = []
    methods = [("small-sample", True)] + ([("plain percentile", False)] if args.plain else [])
    for mode in args.modes:
        for n in args.n:
            for label, small in methods:
                start = time.perf_counter()
                res = run_fixed(truth, n, mode, args.reps, args.resamples, args.tau, seed=n, small_sample=small)
                rows.append(
                    {"mode": mode, "n": n, "method": label, **res, "seconds": round(time.perf_counter() - start, 1)}
                )
                print(_line(rows[-1]), flush=True)
        if args.adaptive:
            mixed = Truth(args.adaptive_tasks, LEAK_MIXED, MOVE_MIXED)
            start = time.perf_counter()
            res = run_fixed(mixed, 20, mode, args.reps, args.resamples, args.tau, seed=20, small_sample=True)
            rows.append(
                {"mode": mode, "n": 20, "method": "LEAK_MIXED", **res, "seconds": round(time.perf_counter() - start, 1)}
            )
            print(_line(rows[-1]), flush=True)
            for name, t in (("LEAK", truth), ("LEAK_MIXED", mixed)):
                start = time.perf_counter()
                res = run_adaptive(
                    t, mode, args.reps, args.resamples, args.tau, seed=99, spec=Adaptive(confidence=args.confidence)
                )
                rows.append(
                    {
                        "mode": mode,
                        "n": "3-20",
                        "method": f"adaptive {name}",
                        **res,
                        "seconds": round(time.perf_counter() - start, 1),
                    }
                )
                print(_line(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def _line(row: dict) -> str:
    cells = "  ".join(f"{q} {row[q]['coverage']:.3f} ({row[q]['width']:.3f})" for q in QUANTITIES)
    extra = f"  probes {row['probes_over_fixed_max_n']} of N=20, {row['waves']} waves" if "waves" in row else ""
    return f"{row['mode']:8} N={row['n']!s:5} {row['method']:16} {cells}{extra}  [{row['seconds']} s]"


if __name__ == "__main__":
    raise SystemExit(main())
