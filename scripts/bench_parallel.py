"""Benchmark: vLLM's parallel options on this machine's build, in one run: the embedded model at
pipeline parallel 1 and 2 (tensor parallel needs a head count it divides: SmolLM2-135M has 9 heads
and 3 KV heads, so 3, which a 2-core machine has no cores for). For each: engine start, sampled
probes (tokens/s) and reasoned verdicts (verdicts/s, parse rate).

Usage: .venv/bin/python scripts/bench_parallel.py [--sizes 1,2] [--prompts 32] [--json out.json]
Prints one Markdown row per size, with the CPU it ran on.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def measure(size: int, prompts: int) -> dict:
    from radar_local.engines.base import Sampling
    from radar_local.engines.registry import build_engine
    from radar_local.prompts import generation_messages, verification_messages
    from radar_local.rubric import load_benchmark
    from radar_local.scoring import ScoreFormat, parse_score

    bench = load_benchmark("helpsteer2")
    start = time.monotonic()
    engine = build_engine("vllm", "smollm2-135m", {"pipeline_parallel_size": size})
    started = time.monotonic() - start
    try:
        probes = [
            generation_messages(bench.tasks[i % len(bench.tasks)], c, sign)
            for i in range(prompts // 10 + 1)
            for c in bench.rubric.criteria
            for sign in "+-"
        ][:prompts]
        start = time.monotonic()
        out = engine.generate(probes, Sampling(1, 0.9, 64), seeds=list(range(len(probes))))
        gen_s = time.monotonic() - start
        tokens = sum(c.output_tokens for cs in out for c in cs)
        fmt = ScoreFormat(max_reasoning_chars=80, max_rationale_chars=60)
        verdicts = [
            verification_messages(bench.tasks[0], cs[0].text, c) for cs in out[:8] for c in bench.rubric.criteria
        ]
        start = time.monotonic()
        scored = engine.score(verdicts, fmt=fmt)
        score_s = time.monotonic() - start
        parsed = sum(parse_score(c.text).score is not None for c in scored)
        return {
            "pipeline_parallel_size": size,
            "bind": engine.settings().get("omp_threads_bind"),
            "start_s": round(started, 1),
            "generate_tokens_per_s": round(tokens / gen_s, 1),
            "verdicts_per_s": round(len(verdicts) / score_s, 2),
            "parse_rate": parsed / len(verdicts),
        }
    finally:
        engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,2")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from radar_local.hardware import cpu_info

    cpu = cpu_info()
    rows = [measure(int(s), args.prompts) for s in args.sizes.split(",")]
    print(f"CPU: {cpu.model}, {cpu.cores} cores, {', '.join(cpu.flags)}")
    print("| pipeline_parallel_size | CPU binding | start s | generate tokens/s | verdicts/s | parse rate |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['pipeline_parallel_size']} | {r['bind']} | {r['start_s']} | {r['generate_tokens_per_s']} | "
            f"{r['verdicts_per_s']} | {r['parse_rate']:.0%} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu.as_dict(), "rows": rows}, indent=2))


if __name__ == "__main__":  # vllm.LLM starts its engine in a new process that re-imports __main__
    main()
