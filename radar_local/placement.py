"""Where a cluster's replicas go: the cluster a config names (`cluster:`), the connection to it, the resources one
replica takes and whether a node can hold it, the environment a replica inherits, and the wait for GPU memory
an engine just closed gives back."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from radar_local.engines.base import (
    EngineOptions,
)
from radar_local.errors import MissingDependencyError, RadarError
from radar_local.hardware import gpu_inventory

log = logging.getLogger("radar_local")
POLL_S = 1.0  # how often a wait looks at the stop signal


FREE_WAIT_S = 60  # for the resources and GPU memory of replicas just closed to come back


# Environment a replica inherits from the driver: where models live, staying offline, vLLM's settings;
# never what names the driver's host (addresses, ports, ranks), its libraries' paths or its CPU binding.
FORWARDED_ENV_PREFIXES = ("RADAR_", "HF_", "TRANSFORMERS_", "VLLM_")


NODE_SPECIFIC_ENV = re.compile(
    r"(_IP|_IPS|_HOST|_PORT)$|_DP_|_RANK|^VLLM_RPC_BASE_PATH$|_SO_PATH$|_INCLUDE_PATH$|"
    r"^VLLM_CUDA_COMPATIBILITY_PATH$|^VLLM_CPU_OMP_THREADS_BIND$|^VLLM_CPU_NUM_OF_RESERVED_CPU$"
)


class ClusterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ray: str = Field(
        "auto",
        min_length=1,
        description="auto (the cluster this machine belongs to), host:port, "
        "or local (a Ray instance started in this process)",
    )
    replicas: int | Literal["auto"] = Field(
        "auto", description="Replicas per model; auto: as many as the resources hold"
    )
    cpus_per_replica: float = Field(1, gt=0, description="CPUs a replica reserves (the whole replica on a CPU build)")
    gpus_per_replica: float | None = Field(
        None,
        ge=0,
        description="GPUs a replica reserves; default: what the engine's options take (vLLM: tensor x "
        "pipeline parallel) where the cluster has GPUs, else none (0: CPU replicas)",
    )
    piece: int | Literal["auto"] = Field(
        "auto",
        description="Requests handed to a replica at a time: enough to keep its scheduler busy, few enough "
        "that replicas share the end of a stage; auto: 8 x the engine's max_num_seqs sequences (vLLM), "
        "64 requests for engines without a scheduler; a stage is cut into equal pieces, the same count per replica",
    )
    stall_s: float = Field(
        600,
        gt=0,
        description="A replica holding a piece that finishes no request for this long is dropped as hung, "
        "and its piece goes to another",
    )

    @field_validator("piece")
    @classmethod
    def _positive_piece(cls, piece: int | str) -> int | str:
        if isinstance(piece, int) and piece < 1:
            raise ValueError("piece must be at least 1, or auto")
        return piece


def ray_module():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("ray", "cluster") from None
    return ray


def connect(spec: ClusterSpec) -> str:
    """ray.init once per process; returns the address as given."""
    ray = ray_module()
    if not ray.is_initialized():
        if spec.ray == "local":
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            try:
                ray.init(address=spec.ray, log_to_driver=False)
            except (ConnectionError, RuntimeError) as exc:
                raise RadarError(
                    f"cannot join the Ray cluster at {spec.ray} ({str(exc).splitlines()[0]}); "
                    "is `ray start` running there?"
                ) from None
    return spec.ray


HEADROOM = Fraction(9, 10)  # the most of its GPU share a replica beside others may ask vLLM for


def replica_unit(options: EngineOptions, spec: ClusterSpec) -> tuple[str, float]:
    """The resource a replica of this model reserves, and how much of it, from the cluster's resources
    (connected already) and the engine's options; `gpus_per_replica` overrides."""
    gpus = spec.gpus_per_replica
    share = options.gpu_memory_share()
    wanted = options.engine_gpus()
    if gpus is not None and 0 < gpus and wanted > 1 and Fraction(str(gpus)) < wanted:
        raise RadarError(
            f"cluster.gpus_per_replica {gpus:g} is below the engine's tensor x pipeline parallel size ({wanted}): "
            f"each replica runs {wanted} workers, a GPU each; set gpus_per_replica to {wanted} or more"
        )
    # vLLM checks free memory at a worker's start against the whole device: a replica started beside a running
    # one needs headroom below its share (measured on vLLM 0.32's sources: ceil(total x utilisation))
    most = HEADROOM * Fraction(str(gpus)) if gpus is not None and 0 < gpus < 1 else None
    if gpus is not None and most is not None and share is not None and Fraction(str(share)) > most:
        raise RadarError(
            f"cluster.gpus_per_replica {gpus:g} puts up to {int(1 // gpus)} replicas on a GPU, each asking vLLM "
            f"for {share:g} of its memory, and vLLM checks free memory on the whole device as each starts: set the "
            f"engine's gpu_memory_utilization to {float(most):g} or lower ({HEADROOM} x the share)"
        )
    if gpus is None:
        gpus = wanted if wanted and ray_module().cluster_resources().get("GPU", 0) > 0 else 0
    return ("GPU", gpus) if gpus else ("CPU", spec.cpus_per_replica)


def node_problem(kind: str, each: float, nodes: list[float]) -> str | None:
    """Why no node can hold one replica, in words; None where one can. A GPU replica's engine runs on one
    node (vLLM's tensor x pipeline parallel workers share it): a cluster of 1-GPU nodes has 2 GPUs in all
    but no room for a replica of 2, and Ray would wait for one forever."""
    largest = max(nodes, default=0)
    if kind != "GPU" or each <= largest:
        return None
    return (
        f"needs {each:g} GPUs on one node (its engine's tensor x pipeline parallel workers); the largest node "
        f"has {largest:g}: lower tensor_parallel_size, or add a node with {each:g} GPUs"
    )


def forwarded_env(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    """The driver's settings that mean the same on every node."""
    return {
        k: v for k, v in environ.items() if k.startswith(FORWARDED_ENV_PREFIXES) and not NODE_SPECIFIC_ENV.search(k)
    }


def wait_for_gpu_memory(share: float, timeout_s: float = FREE_WAIT_S, runner=subprocess.run, gpus: int = 0) -> None:
    """Until this engine's GPUs have `share` of their memory free (vLLM refuses to start with less): the previous
    model's engine processes may still be letting theirs go (vLLM's shutdown kills after 5 s; tensor-parallel
    workers free theirs after the core). The GPUs are CUDA_VISIBLE_DEVICES' (a Ray replica's), else the first
    `gpus` of the machine (an engine in this process); an empty CUDA_VISIBLE_DEVICES is a CPU engine's."""
    devices = os.environ.get("CUDA_VISIBLE_DEVICES")
    if devices is None and gpus:
        devices = ",".join(str(i) for i in range(gpus))
    if not devices:
        return
    deadline = time.monotonic() + timeout_s
    while True:
        found = gpu_inventory(devices, runner)
        if not found or min(g["free_mib"] / g["total_mib"] for g in found) >= share or time.monotonic() > deadline:
            return  # past the deadline vLLM's own check says what holds the memory
        time.sleep(POLL_S)
