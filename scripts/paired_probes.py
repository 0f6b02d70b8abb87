"""Whether pairing a stratum's + and - probes would shrink the variance of a shift (issue 43 item 2): variant v of
(task, target, +) and variant v of (task, target, -) share their seed and task, so their verdicts on a criterion
may move together. A shift's variance, unpaired, is (var+ + var-)/N; paired, (var+ + var- - 2 cov)/N. Read from a
run's own score table (a simulator draws the two independently, so only a real generator and judge can say).

    .venv/bin/python scripts/paired_probes.py RUN_DIR
    .venv/bin/python scripts/paired_probes.py --config configs/quickstart.yaml --out runs/paired   # audit first

Prints, per criterion and pooled: the pairs, the within-stratum correlation of + and - verdicts of one variant,
and the paired variance over the unpaired one (below 1: pairing helps).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.auditing import run_audit
from radar_local.errors import RadarError
from radar_local.rundir import load_run
from radar_local.score_table import read_scores


def paired(table) -> dict:
    """Per criterion: pairs, correlation of + and - residuals (each stratum's mean removed), variance ratio."""
    rows = table[table["direction"].isin(["+", "-"])].dropna(subset=["score"])
    keys = ["generator", "verifier", "task_id", "target", "criterion"]
    wide = rows.pivot_table(index=[*keys, "variant"], columns="direction", values="score", aggfunc="mean").dropna()
    residual = wide - wide.groupby(level=keys).transform("mean")
    out = {}
    for name, part in [*residual.groupby(level="criterion"), ("pooled", residual)]:
        plus, minus = part["+"].to_numpy(), part["-"].to_numpy()
        var = float((plus**2).mean() + (minus**2).mean())
        cov = float((plus * minus).mean())
        scale = float(np.sqrt((plus**2).mean() * (minus**2).mean()))
        out[str(name)] = {
            "pairs": len(part),
            "correlation": round(cov / scale, 3) if scale else None,
            "paired_over_unpaired": round((var - 2 * cov) / var, 3) if var else None,
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="?", type=Path)
    ap.add_argument("--config", type=Path, help="audit this config first (into --out)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    try:
        if args.config:
            run_audit(args.config, args.out)
        run = load_run(args.out if args.config else args.run)
        report = paired(read_scores(run.table_path, run.rubric.scales))
    except RadarError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
