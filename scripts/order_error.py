"""`radar order`'s error rates by simulation (issue 47): planted joint audits (K = 5 helpsteer2 criteria, T tasks,
N = 5 probes a stratum in a balanced order) whose judge adds `--first` Likert points to whatever criterion a call
shows first, and the same without it; per seed, the flags of stats/order.order_effects.

    .venv/bin/python scripts/order_error.py [--reps 100] [--first 0.5] [--tasks 5] [--out runs/order-error]

Reports: without an effect, the share of audits with any criterion flagged (family-wise false flags, at most 5%
by design); with it, the share of criteria flagged (power) and of audits flagging every criterion.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.auditing import run_audit
from radar_local.cli.order import effects_of


def audit(out: Path, seed: int, first: float, tasks: int, noise: float) -> list[bool]:
    spec = {"engine": "testing", "model": "planted", "options": {"noise": noise, "first": first}}
    config = {
        "rubric": "helpsteer2",
        "tasks": [{"id": f"t{i}", "prompt": f"Customer question {i} (seed {seed})."} for i in range(tasks)],
        "generator": {"engine": "testing", "model": "planted"},
        "verifier": {**spec, "judge": {"calls": "joint", "order": "balanced"}},
        "n": 5,
        "seed": seed,
        "bootstrap": 0,
    }
    root = out / f"run-{first}-{seed}"
    try:
        run_audit(config, root)
        return [e.flag for e in effects_of(root, "planted").effects]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--first", type=float, default=0.5)
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("runs/order-error"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    null = [audit(args.out, s, 0.0, args.tasks, args.noise) for s in range(args.reps)]
    moved = [audit(args.out, s, args.first, args.tasks, args.noise) for s in range(args.reps)]
    report = {
        "reps": args.reps,
        "tasks": args.tasks,
        "n": 5,
        "noise": args.noise,
        "first": args.first,
        "no_effect_any_flag": sum(any(f) for f in null) / args.reps,
        "effect_criteria_flagged": sum(sum(f) for f in moved) / (5 * args.reps),
        "effect_every_criterion_flagged": sum(all(f) for f in moved) / args.reps,
    }
    print(json.dumps(report, indent=2))
    (args.out / "order_error.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
