"""The halo's error rates by simulation (issue 31): planted audits scored both ways (per criterion, joint) on
the planted engine, R seeds each at halo 0 and at a planted halo, against the truth computed from the planted
judge's own belief (a discretized normal of sd `noise` around a centre jittered uniformly by +-noise/2).

    .venv/bin/python scripts/halo_error.py [--reps 100] [--halo 0.25] [--out runs/halo-error]

Reports: at halo 0, the share of audits with any flag (family-wise false flags; at most 5% by design) and
the coverage of 0 by each pair's 95% interval and by the index's; at the planted halo, the share of pairs
flagged `adds` (power) and the coverage of the true difference by each pair's interval and by the index's.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
import yaml

from radar_local.auditing import run_audit
from radar_local.stats.halo import Halo

CRITERIA = [
    {"id": "clarity", "label": "Clarity", "description": "How clearly the reply is written."},
    {"id": "accuracy", "label": "Accuracy", "description": "Whether the reply's facts are right."},
    {"id": "empathy", "label": "Empathy", "description": "Whether the reply acknowledges the customer."},
]
NOISE, COUPLING, TASKS, N = 0.5, {"Clarity": {"Accuracy": 0.5}}, 6, 4


def belief_mean(centre: float) -> float:
    """The planted judge's expected 0-4 score at `centre`, averaged over its uniform jitter."""
    total = 0.0
    grid = (np.arange(2000) + 0.5) / 2000
    for u in grid:
        c = centre + NOISE * (u - 0.5)
        w = np.exp(-((np.arange(5) - c) ** 2) / (2 * NOISE**2))
        total += float((w / w.sum()) @ np.arange(5))
    return total / len(grid)


def truth(halo: float) -> dict[tuple[str, str], float]:
    """Joint minus per-criterion leakage per ordered pair: the ratio of expected shifts to expected self-effect."""
    labels = {c["label"]: c["id"] for c in CRITERIA}
    se = belief_mean(4) - belief_mean(0)
    out = {}
    for a in CRITERIA:
        for b in CRITERIA:
            if a is b:
                continue
            level = COUPLING.get(a["label"], {}).get(b["label"], 0.0)
            shift = lambda lv: belief_mean(min(4, 2 + 2 * lv)) - belief_mean(max(0, 2 - 2 * lv))
            out[labels[a["label"]], labels[b["label"]]] = (shift(level + halo) - shift(level)) / se
    return out


def audit(out: Path, seed: int, halo: float, n: int = N):
    spec = {"engine": "testing", "model": "planted", "options": {"noise": NOISE, "halo": halo, "coupling": COUPLING}}
    config = {
        "rubric": str(out / "rubric.yaml"),
        "tasks": [{"id": f"t{i}", "prompt": f"Customer question {i} (seed {seed})."} for i in range(TASKS)],
        "generator": {**spec, "options": {}},
        "verifier": {**spec, "judge": {"calls": ["per-criterion", "joint"]}},
        "n": n,
        "seed": seed,
        "bootstrap": 300,
    }
    run = out / f"run-{halo}-{seed}"
    try:
        return run_audit(config, run).measured(Halo)
    finally:
        shutil.rmtree(run, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--halo", type=float, default=0.25)
    parser.add_argument("--out", type=Path, default=Path("runs/halo-error"))
    parser.add_argument("--n", type=int, default=N, help="probes per stratum")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rubric.yaml").write_text(yaml.safe_dump({"id": "support", "name": "Support", "criteria": CRITERIA}))
    report = {"reps": args.reps, "tasks": TASKS, "n": args.n, "noise": NOISE, "coupling": COUPLING}
    for halo in (0.0, args.halo):
        true = truth(halo)
        any_flag, flagged, pairs, covered, index_covered = 0, 0, 0, 0, 0
        for seed in range(args.reps):
            h = audit(args.out, seed, halo, args.n)
            flags = [p.flag for p in h.pairs]
            any_flag += any(f is not None for f in flags)
            flagged += sum(f == "adds" for f in flags)
            for p in h.pairs:
                pairs += 1
                value = true[p.source, p.target]
                covered += p.ci is not None and p.ci[0] <= value <= p.ci[1]
            mean_truth = sum(true.values()) / len(true)
            lo, hi = h.index_ci
            index_covered += lo <= mean_truth <= hi
        report[f"halo {halo}"] = {
            "truth": {f"{a}->{b}": round(v, 4) for (a, b), v in true.items()},
            "audits_with_any_flag": any_flag / args.reps,
            "pairs_flagged_adds": flagged / pairs,
            "pair_ci_coverage": covered / pairs,
            "index_ci_coverage": index_covered / args.reps,
        }
        print(json.dumps({f"halo {halo}": report[f"halo {halo}"]}, indent=2), flush=True)
    (args.out / "halo_error.json").write_text(json.dumps(report, indent=2))
    assert math.isfinite(report[f"halo {args.halo}"]["pair_ci_coverage"])


if __name__ == "__main__":
    main()
