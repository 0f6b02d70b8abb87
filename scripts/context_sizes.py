"""The max_model_len radar gives each vLLM engine of a config (radar_local/context.py), with the request that sets
it; with --run, the longest request that run's records hold (prompt and output tokens as the engine counted them),
so the bound can be checked against what was sent.

    .venv/bin/python scripts/context_sizes.py configs/quickstart.yaml --run runs/quickstart

Counts tokens with each model's own tokenizer (local weights; nothing downloads); loads no engine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from radar_local.config import load_config
from radar_local.context import engines, longest_request, sized, window
from radar_local.resolved import resolve
from radar_local.run import Run

REPO = Path(__file__).resolve().parents[1]


def longest_recorded(run: Path) -> dict[str, int]:
    """The largest prompt + output tokens among a run's probes and verdicts."""
    out = {}
    for name, kind in (("probes.jsonl", "probe"), ("scores.jsonl", "verdict")):
        tokens = [
            (r.get("prompt_tokens") or 0) + (r.get("output_tokens") or 0)
            for r in map(json.loads, (run / name).read_text().splitlines())
        ]
        out[kind] = max(tokens, default=0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--run", type=Path, help="a run of the (first) config: its longest recorded requests")
    args = parser.parse_args()
    print("| config | model | longest request | its bound (tokens) | max_model_len |")
    print("|---|---|---|---|---|")
    for path in args.configs:
        config = load_config(path).model_copy(update={"out": None})
        with tempfile.TemporaryDirectory() as scratch:
            run = Run.create(resolve(config, REPO), Path(scratch) / "run")
            for spec in engines(run.config):
                need = longest_request(run.plan, spec, run.labels)
                size = sized(need, spec, window(spec))
                print(f"| {path.name} | {spec.label} | {need.what} | {need.tokens} | {size} |")
            run.close()
    if args.run is not None:
        recorded = longest_recorded(args.run)
        print(f"\n{args.run}: longest recorded probe {recorded['probe']} tokens, verdict {recorded['verdict']} tokens")


if __name__ == "__main__":
    main()
