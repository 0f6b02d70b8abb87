"""Judge bias on the embedded model: does SmolLM2-135M steer length when asked, and what do its verdicts
credit to it? One audit of the quickstart's model with `nuisance: [length]` (docs/BENCHMARKS.md).

Usage: .venv/bin/python scripts/bench_nuisance.py [--out runs/bench-nuisance] [--bases 5] [--tasks 5]
       [--max-new-tokens 160]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from radar_local.auditing import run_audit
from radar_local.nuisance import MEASURES
from radar_local.rubric import load_tasks
from radar_local.rundir import load_run
from radar_local.stats.bias import Bias

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "bench-nuisance")
    ap.add_argument("--bases", type=int, default=5, help="Unconditioned probes per task (the pairs' bases)")
    ap.add_argument("--max-new-tokens", type=int, default=160, help="Generation budget of probes and rewrites")
    ap.add_argument("--tasks", type=int, default=5, help="The first this many of helpsteer2's tasks")
    args = ap.parse_args()
    spec = {"engine": "vllm", "model": "smollm2-135m", "options": {"enforce_eager": True, "max_model_len": 2048}}
    config = {
        "rubric": "helpsteer2",
        "tasks": [t.model_dump() for t in load_tasks("helpsteer2")[: args.tasks]],
        "generator": spec,
        "verifier": spec,
        "n": 1,
        "unconditioned": args.bases,
        "nuisance": ["length"],
        "generation": {"temperature": 0.9, "max_new_tokens": args.max_new_tokens},
        "scoring": {"max_reasoning_chars": 80, "max_rationale_chars": 60},
        "bootstrap": 200,
    }
    start = time.monotonic()
    result = run_audit(config, args.out, base=REPO)
    rewrites = load_run(args.out).rewrites()
    by_way = {w: [r for r in rewrites if r.direction == w] for w in ("up", "down")}
    out = {
        "seconds": round(time.monotonic() - start, 1),
        "pairs": len(by_way["up"]),
        "mean_chars": {w: round(statistics.mean(len(r.text) for r in rs), 1) for w, rs in by_way.items()},
        "mean_words": {
            w: round(statistics.mean(MEASURES["length"](r.text) for r in rs), 1) for w, rs in by_way.items()
        },
        "manipulation": result.measured(Bias).manipulation,
        "rows": [
            {k: r[k] for k in ("criterion", "pairs", "sensitivity", "ci", "bias_share", "flag")}
            for r in result.bias_rows
        ],
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
