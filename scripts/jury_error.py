"""The jury comparison's error rates by simulation (issue 32): three jurors score the same steered probes with
independent noise, the jury is their mean, and `radar_local.analysis.stats_for_table` (the audit's own code)
compares the jury's worst coupling with each juror's. Scores are continuous on a 0-100 scale (no rounding, no
clipping in practice), so each judge's true leakage is its planted coupling and the truth is exact.

    .venv/bin/python scripts/jury_error.py [--reps 200] [--n 4] [--tasks 6] [--out runs/jury-error]

Scenarios: `same` (every juror couples clarity -> accuracy 0.3: the jury's true worst coupling equals each
juror's, so any flag is false) and `haloed` (two jurors couple 0.2, the third 0.5 on every pair: the jury's true
worst coupling, 0.3, is 0.1 above the first two and 0.2 below the third). Reports the share of audits with a
false flag (family-wise; at most 5% by design), the share of true differences flagged (power) and the coverage
of the true difference by the Bonferroni intervals.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from radar_local.analysis import stats_for_table
from radar_local.hardware import cpu_info
from radar_local.measures import Asked
from radar_local.scale import range_scale
from radar_local.stats.jurors import JuryBlock
from radar_local.stats.settings import StatsSettings

# A steered criterion moves 2 x 30 of the 100 points (self-effect 0.6, above tau); noise sd 15 a score.
CRITERIA, TASKS, N, MID, SHIFT, NOISE = ["clarity", "accuracy", "empathy"], 6, 4, 50.0, 30.0, 15.0
JURORS = ["a", "b", "c"]


def couplings(scenario: str) -> dict[str, np.ndarray]:
    """Each juror's true leakage matrix (source row, target column)."""
    one = np.zeros((3, 3))
    one[0, 1] = 0.3 if scenario == "same" else 0.2
    if scenario == "same":
        return dict.fromkeys(JURORS, one)
    halo = np.full((3, 3), 0.5)
    np.fill_diagonal(halo, 0)
    return {"a": one, "b": one, "c": halo}


def worst(c: np.ndarray) -> float:
    return float(np.max(c[~np.eye(3, dtype=bool)]))


def table(cs: dict[str, np.ndarray], rng: np.random.Generator, tasks: int, n: int) -> pd.DataFrame:
    rows = []
    for t in range(tasks):
        for i, target in enumerate(CRITERIA):
            for sign, direction in ((1, "+"), (-1, "-")):
                for v in range(n):
                    scores = {}
                    for j in JURORS:
                        effect = np.where(np.arange(3) == i, 1.0, cs[j][i])  # the steered criterion moves fully
                        scores[j] = MID + sign * SHIFT * effect + rng.normal(0, NOISE, 3)
                    scores["jury"] = np.mean([scores[j] for j in JURORS], axis=0)
                    for judge, s in scores.items():
                        for k, c in enumerate(CRITERIA):
                            rows.append(("g", judge, f"t{t}", target, direction, str(v), c, float(s[k])))
    return pd.DataFrame(
        rows, columns=["generator", "verifier", "task_id", "target", "direction", "variant", "criterion", "score"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--bootstrap", dest="resamples", type=int, default=300)
    parser.add_argument("--n", type=int, default=N, help="Probes per (task, criterion, direction)")
    parser.add_argument("--tasks", type=int, default=TASKS)
    parser.add_argument("--out", type=Path, default=Path("runs/jury-error"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    scale = range_scale("0-100")
    report: dict = {
        "reps": args.reps,
        "tasks": args.tasks,
        "n": args.n,
        "noise_sd_over_shift": NOISE / SHIFT,
        "cpu": cpu_info().as_dict(),
    }
    for scenario in ("same", "haloed"):
        cs = couplings(scenario)
        jury_true = worst(np.mean([cs[j] for j in JURORS], axis=0))
        truth = {j: jury_true - worst(cs[j]) for j in JURORS}
        false_audits, flagged, differing, covered, rows, undefined = 0, 0, 0, 0, 0, 0
        for rep in range(args.reps):
            df = table(cs, np.random.default_rng(rep), args.tasks, args.n)
            result = stats_for_table(
                df,
                "simulated",
                StatsSettings(resamples=args.resamples, seed=rep),
                verifier="jury",
                scale=scale,
                asked=Asked(jurors=tuple(JURORS), measurements=dict.fromkeys(CRITERIA, "interval")),  # continuous
            )
            wrong = False
            for row in result.measured(JuryBlock).coupling.jurors:
                true = truth[row.juror]
                rows += 1
                if row.ci is None:  # no pair both judges pass as reliable: no comparison, no flag
                    undefined += 1
                    continue
                lo, hi = row.ci
                covered += lo <= true <= hi
                if row.flag == "below" and true >= 0 or row.flag == "above" and true <= 0:
                    wrong = True
                if true != 0:
                    differing += 1
                    flagged += row.flag == ("below" if true < 0 else "above")
            false_audits += wrong
        report[scenario] = {
            "truth": {j: round(v, 4) for j, v in truth.items()},
            "audits_with_a_false_flag": false_audits / args.reps,
            "true_differences_flagged": flagged / differing if differing else None,
            "interval_coverage": covered / (rows - undefined) if rows > undefined else None,
            "comparisons_undefined": undefined / rows,
        }
        print(json.dumps({scenario: report[scenario]}), flush=True)
    (args.out / "jury_error.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
