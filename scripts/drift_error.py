"""`radar drift`'s error rates by simulation (issue 47): a planted audit, then the same probes scored by two more
judges with their own random draws (the planted engine's `draw`): one with the same beliefs (no drift) and one
whose coupling Clarity -> Accuracy is raised by `--move` (in the planted engine's levels), each compared with the
first by stats/drift.drift, R seeds.

    .venv/bin/python scripts/drift_error.py [--reps 100] [--n 20] [--move 0.2] [--out runs/drift-error]

Reports: without drift, the share of comparisons with any pair flagged (family-wise false flags; at most 5% by
design) and the coverage of 0 by each pair's interval; with the move, the share in which the moved pair is
flagged `rises` (power), the share with any other pair flagged, and the coverage of the true change (the planted
judge's belief, as scripts/halo_error.py computes it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from halo_error import CRITERIA, NOISE, TASKS, belief_mean

from radar_local.auditing import rescore, run_audit
from radar_local.run import Run
from radar_local.score_table import read_scores
from radar_local.specs import ModelSpec
from radar_local.stats.drift import drift
from radar_local.stats.probes import probe_matrix

BASE = 0.3  # the planted Clarity -> Accuracy coupling before


def true_change(move: float) -> float:
    """The moved pair's leakage change: the ratio of expected shifts to the expected self-effect."""
    se = belief_mean(4) - belief_mean(0)

    def shift(level: float) -> float:
        return belief_mean(min(4, 2 + 2 * level)) - belief_mean(max(0, 2 - 2 * level))

    return (shift(BASE + move) - shift(BASE)) / se


def compare(out: Path, seed: int, n: int, move: float, resamples: int) -> dict:
    def spec(name: str, draw: int, level: float) -> dict:
        options = {"noise": NOISE, "coupling": {"Clarity": {"Accuracy": level}}, "draw": draw}
        return {"engine": "testing", "model": "planted", "name": name, "options": options}

    config = {
        "rubric": str(out / "rubric.yaml"),
        "tasks": [{"id": f"t{i}", "prompt": f"Customer question {i} (seed {seed})."} for i in range(TASKS)],
        "generator": {"engine": "testing", "model": "planted"},
        "verifier": spec("before", 0, BASE),
        "n": n,
        "seed": seed,
        "bootstrap": 0,
    }
    root = out / f"run-{seed}"
    try:
        run_audit(config, root)
        with Run.open(root) as run:
            for name, draw, level in (("same", 1, BASE), ("moved", 2, BASE + move)):
                rescore(run, ModelSpec.model_validate(spec(name, draw, level)), progress=False)
            table = read_scores(run.table_path, run.rubric.scales)
            criteria = list(run.rubric.ids)
            scales = {c: run.rubric.scale_of(c) for c in criteria}
        spans = [scales[c].span for c in criteria]
        mats = {
            v: probe_matrix(table, criteria, str(table["generator"].iloc[0]), v, spans)
            for v in ("before", "same", "moved")
        }
        levels = {c: [float(v) for v in scales[c].values] for c in criteria}
        kinds = {c: "ordinal" for c in criteria}
        return {
            name: drift(mats["before"], mats[name], levels, kinds, resamples=resamples, seed=seed)
            for name in ("same", "moved")
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--n", type=int, default=20, help="probes per stratum")
    parser.add_argument("--move", type=float, default=0.2, help="the planted coupling's rise, in engine levels")
    parser.add_argument("--bootstrap", dest="resamples", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("runs/drift-error"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rubric.yaml").write_text(yaml.safe_dump({"id": "support", "name": "Support", "criteria": CRITERIA}))
    truth = true_change(args.move)
    tally = {"null_any_flag": 0, "null_pairs": 0, "null_covered": 0, "moved_flagged": 0, "moved_other_flag": 0,
             "moved_covered": 0}  # fmt: skip
    for seed in range(args.reps):
        got = compare(args.out, seed, args.n, args.move, args.resamples)
        same, moved = got["same"], got["moved"]
        tally["null_any_flag"] += any(p.flag for p in same.pairs)
        for p in same.pairs:
            tally["null_pairs"] += 1
            tally["null_covered"] += p.ci is not None and p.ci[0] <= 0 <= p.ci[1]
        target = next(p for p in moved.pairs if (p.source, p.target) == ("clarity", "accuracy"))
        tally["moved_flagged"] += target.flag == "rises"
        tally["moved_other_flag"] += any(p.flag for p in moved.pairs if p is not target)
        tally["moved_covered"] += target.ci is not None and target.ci[0] <= truth <= target.ci[1]
    report = {
        "reps": args.reps,
        "n": args.n,
        "tasks": TASKS,
        "criteria": len(CRITERIA),
        "move": args.move,
        "true_change": round(truth, 4),
        "no_drift_any_flag": tally["null_any_flag"] / args.reps,
        "no_drift_pair_ci_covers_0": tally["null_covered"] / max(tally["null_pairs"], 1),
        "moved_pair_flagged_rises": tally["moved_flagged"] / args.reps,
        "moved_other_pair_flagged": tally["moved_other_flag"] / args.reps,
        "moved_pair_ci_covers_truth": tally["moved_covered"] / args.reps,
    }
    print(json.dumps(report, indent=2))
    (args.out / "drift_error.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
