"""Benchmark: a thinking judge's two requests on vLLM, streamed (radar's think_then_answer: every reasoning in the
scheduler at once, each `chunk` that ended given its verdicts in the same engine loop) against the chunked loop
radar used before (each chunk's reasonings, then their verdicts, each chunk waiting for its longest reasoning).

One engine, one run, the same prompts, budget and constraint in both arms (greedy, so the same reasonings): half the
prompts end their reasoning early and half late, as a judge's reasonings vary. Prints a Markdown table with the CPU
(or GPU) it ran on; --json writes the figures.

Usage: .venv/bin/python scripts/bench_thinking.py [--model smollm2-135m] [--prompts 48] [--chunk 8] [--budget 160]
       [--json out.json]
"""

import argparse
import json
import sys
import time
from pathlib import Path

from radar_local.engines.base import Sampling
from radar_local.hardware import cpu_info
from radar_local.judge import AFTER_THOUGHT, Reasoning
from radar_local.reasoning import as_the_template_writes, continued, think_then_answer, thought_of
from radar_local.scoring import ScoreFormat

ASKS = ("Count from 1 to 20, separated by commas.", "Write a long story about a cat named Tom.")


def chunked(engine, prompts, fmt, reasoning, chunk):
    """The loop before issue 60 item 9: a chunk's reasonings, then their verdicts."""
    done = 0
    for start in range(0, len(prompts), chunk):
        part = prompts[start : start + chunk]
        firsts = engine.generate(
            part, Sampling(1, 0.0, reasoning.budget, (reasoning.ends_with,)), seeds=[0] * len(part)
        )
        thoughts = [thought_of(c[0], reasoning) for c in firsts]
        ready = [i for i, t in enumerate(thoughts) if not t.unscored and t.text]
        after = AFTER_THOUGHT[reasoning.parser]
        asked = [continued(part[i], as_the_template_writes(thoughts[i].text, reasoning.parser) + after) for i in ready]
        engine.score(asked, fmt=fmt) if asked else []
        done += len(part)
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=48)
    ap.add_argument("--chunk", type=int, default=8)
    ap.add_argument("--budget", type=int, default=160)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from radar_local.engines.registry import build_engine

    engine = build_engine("vllm", args.model, {"enforce_eager": True, "max_model_len": 2048})
    prompts = [[{"role": "user", "content": ASKS[k % 2]}] for k in range(args.prompts)]
    reasoning = Reasoning(budget=args.budget, parser="tags", end="7")  # counting ends early, a story late
    fmt = ScoreFormat(max_reasoning_chars=40, max_rationale_chars=40)
    chunked(engine, prompts[: args.chunk], fmt, reasoning, args.chunk)  # warm the engine for both arms
    engine.reset_prefix_cache()
    t0 = time.perf_counter()
    chunked(engine, prompts, fmt, reasoning, args.chunk)
    before = time.perf_counter() - t0
    engine.reset_prefix_cache()
    t0 = time.perf_counter()
    streamed = sum(len(b) for b in think_then_answer(engine, prompts, fmt=fmt, reasoning=reasoning,
                                                     chunk=args.chunk, seed=0))  # fmt: skip
    after = time.perf_counter() - t0
    engine.close()
    cpu = cpu_info()
    where = f"{cpu.model}, {cpu.cores} cores, flags {' '.join(cpu.flags) or 'none'}"
    figures = {"prompts": len(prompts), "verdicts": streamed, "chunk": args.chunk, "budget": args.budget,
               "chunked_s": round(before, 2), "streamed_s": round(after, 2), "speedup": round(before / after, 2),
               "cpu": where}  # fmt: skip
    print("| loop | wall s | prompts | chunk | budget |\n|---|---|---|---|---|")
    print(f"| chunked (before) | {before:.2f} | {len(prompts)} | {args.chunk} | {args.budget} |")
    print(f"| streamed | {after:.2f} | {len(prompts)} | {args.chunk} | {args.budget} |")
    print(f"\nstreamed is {before / after:.2f}x the chunked loop's throughput ({figures['cpu']})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
