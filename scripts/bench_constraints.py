"""Benchmark: how long xgrammar (vLLM's structured-output backend) takes to compile radar's answer
constraints, as vLLM compiles them (its regex path, which vLLM stops after VLLM_REGEX_COMPILATION_TIMEOUT_S,
5 s by default), for the verifier's verdict and for the rubric editor as the rubric grows.

Usage: .venv/bin/python scripts/bench_constraints.py [--criteria 3,5,10,20,40,80] [--repeat 3]
Prints one line per constraint: its regex length and the median compile time of `--repeat` fresh compiles.
"""

import argparse
import statistics
import time

from radar_local.models import resolve
from radar_local.repair.edits import EditFormat
from radar_local.scoring import ScoreFormat


def compile_seconds(regex: str, tokenizer_path: str, repeat: int) -> float:
    import xgrammar as xgr
    from transformers import AutoTokenizer

    info = xgr.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(tokenizer_path))
    times = []
    for _ in range(repeat):
        compiler = xgr.GrammarCompiler(info, cache_enabled=False)  # a fresh compile each time, as a new rubric
        start = time.perf_counter()
        compiler.compile_regex(regex)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--criteria", default="3,5,10,20,40,80")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", default="smollm2-135m", help="whose tokenizer (the grammar's vocabulary)")
    args = ap.parse_args()
    path = str(resolve(args.model)[0])
    print(f"tokenizer: {args.model}")
    rows = [("verdict (reasoned)", ScoreFormat().regex), ("verdict (expected)", ScoreFormat(mode="expected").regex)]
    rows += [
        (f"editor, {k} criteria", EditFormat(tuple(f"criterion_{i}" for i in range(k))).regex)
        for k in map(int, args.criteria.split(","))
    ]
    for name, regex in rows:
        print(f"{name}: regex {len(regex):,} characters, compile {compile_seconds(regex, path, args.repeat):.3f} s")
