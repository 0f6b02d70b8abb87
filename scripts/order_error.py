"""`radar order`'s error rates by simulation (issue 47): planted joint audits (K = 5 helpsteer2 criteria, T tasks,
N = 5 probes a stratum in a balanced order) whose judge adds `--first` Likert points to whatever criterion a call
shows first, and the same without it; per seed, the flags of stats/order.order_effects.

    .venv/bin/python scripts/order_error.py [--reps 100] [--first 0.5] [--tasks 5] [--out runs/order-error]
    .venv/bin/python scripts/order_error.py --primed 0.5 [--reps 100]   # the order leakage, in a shuffled order

Reports: without an effect, the share of audits with any criterion flagged (family-wise false flags, at most 5%
by design); with it, the share of criteria flagged (power) and of audits flagging every criterion. With
`--primed P`: the judge adds P points to correctness whenever helpfulness is shown before it (order: shuffled);
the share of audits flagging any of the 20 ordered pairs without it, and with it the primed pair and any other.
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

PRIMED = ("helpfulness", "correctness")


def audit(out: Path, seed: int, first: float, tasks: int, noise: float, primed: float | None = None) -> list[bool]:
    """The criteria's position flags; with `primed` (a shuffled order), the ordered pairs' order-leakage flags,
    the primed pair first."""
    options: dict = {"noise": noise, "first": first}
    if primed:
        options["primed"] = {"Helpfulness / Understanding": {"Correctness / Completeness": primed}}
    spec = {"engine": "testing", "model": "planted", "options": options}
    config = {
        "rubric": "helpsteer2",
        "tasks": [{"id": f"t{i}", "prompt": f"Customer question {i} (seed {seed})."} for i in range(tasks)],
        "generator": {"engine": "testing", "model": "planted"},
        "verifier": {**spec, "judge": {"calls": "joint", "order": "balanced" if primed is None else "shuffled"}},
        "n": 5,
        "seed": seed,
        "bootstrap": 0,
    }
    root = out / f"run-{first}-{primed}-{seed}"
    try:
        run_audit(config, root)
        found = effects_of(root, "planted")
        if primed is None:
            return [e.flag for e in found.effects]
        flags = {(p.source, p.target): p.flag for p in found.pairs}
        return [flags.pop(PRIMED), *flags.values()]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--first", type=float, default=0.5)
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("runs/order-error"))
    parser.add_argument("--primed", type=float, help="measure the order leakage of this many points instead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.primed is not None:
        null = [audit(args.out, s, 0.0, args.tasks, args.noise, 0.0) for s in range(args.reps)]
        moved = [audit(args.out, s, 0.0, args.tasks, args.noise, args.primed) for s in range(args.reps)]
        report = {
            "reps": args.reps,
            "tasks": args.tasks,
            "n": 5,
            "noise": args.noise,
            "primed": args.primed,
            "no_effect_any_pair_flagged": sum(any(f) for f in null) / args.reps,
            "primed_pair_flagged": sum(f[0] for f in moved) / args.reps,
            "another_pair_flagged": sum(any(f[1:]) for f in moved) / args.reps,
        }
        print(json.dumps(report, indent=2))
        (args.out / "order_leakage_error.json").write_text(json.dumps(report, indent=2))
        return
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
