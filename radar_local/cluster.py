"""Scale-out on a Ray cluster: replicas of one model, each a Ray actor holding our own `Engine`.

`ClusterEngine` is an Engine: `Run` hands it a whole stage, as it hands a local engine, and it spreads
the stage over the replicas in equal pieces (the same count per replica, each large enough to keep a
replica's scheduler busy), a piece to whichever replica is free, each stored the moment it returns.
Prompts, per-request seeds and the score constraint are built by the driver exactly as
for one process, and the driver alone writes the store, so content keys, resume, fsync and the lock
mean the same on a cluster. A replica that dies mid-piece (its node killed) or makes no progress for
`stall_s` is dropped and its piece goes to another; a replica that cannot start fails the command in
one line naming its node.

Placement comes from the cluster, never from this process: a replica takes the GPUs its engine's
options name (vLLM: tensor x pipeline parallel, all on one node) when the cluster has GPUs, else CPUs,
so a CPU-only driver places GPU replicas. Ray gives each GPU replica its own CUDA_VISIBLE_DEVICES; a
CPU replica is given none, since Ray leaves a zero-GPU actor seeing every GPU of its node.

Why actors and not Ray Data's LLM processor: the processor would need its own mapping of our
prompts, seeds and strict score constraint into per-row sampling params and a dataset sink, a second
code path for what `Engine` already does; actors keep one path and let the driver own the store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from radar_local.engines.base import (
    Completion,
    EngineCounters,
    EngineOptions,
    Finished,
    FinishedSamples,
    Sampling,
    StreamBatch,
    in_order,
)
from radar_local.engines.registry import build_engine, engine_class
from radar_local.errors import RadarError
from radar_local.placement import (
    FREE_WAIT_S,
    POLL_S,
    ClusterSpec,
    connect,
    forwarded_env,
    node_problem,
    ray_module,
    replica_unit,
    wait_for_gpu_memory,
)

log = logging.getLogger("radar_local")
START_TIMEOUT_S = 900  # a replica loads its model; past this, one line instead of a hang
CLOSE_TIMEOUT_S = 120  # a replica's engine shuts down (its processes, its GPU memory) before Ray kills it
PROGRESS_CHECK_S = 10.0  # how often the replicas holding pieces are asked when they last answered
# A piece auto is this many times the engine's max_num_seqs: a replica drains its batch at the end of
# each piece (it is fed a piece at a time), which a simulation of FCFS admission puts at 61% mean
# occupancy for pieces of 2x, 86% for 8x (generation lengths uniform in 1-800; docs/BENCHMARKS.md).
PIECE_PER_SEQS = 8
# Replicas that take a share of a GPU start one at a time in this process, whichever model they serve: a grid's or
# a jury's models start on threads of their own (scorers.score_cells_on_cluster), and vLLM's start-up check and
# profiler read the device's free memory, which another model starting beside them changes.
SHARED_GPU_START = threading.Lock()


class Stopped(RadarError):
    """The command is stopping (Ctrl-C in another thread, a failed cell): a replica pool gives up."""


class Replica:
    """One engine of the model on its own resources (the body of a Ray actor)."""

    def __init__(self, engine: str, model: str, options: EngineOptions, env: dict[str, str]):
        self.started = time.time()  # wall clock: replicas on other nodes are compared (sharing a GPU: in turn)
        os.environ.update(env)
        if (share := options.gpu_memory_share()) is not None:
            wait_for_gpu_memory(share, gpus=options.engine_gpus())
        self.engine = build_engine(engine, model, options)
        self.answered, self.ready = time.monotonic(), time.time()

    def where(self) -> dict:
        import ray

        return {
            "node": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),  # Ray's GPUs for this replica
            "engine": self.engine.settings(),
            "start": [self.started, self.ready],
        }

    def call(self, method: str, prompts: list, kwargs: dict) -> tuple[list, float]:
        """A piece's answers in request order; each finished request is progress (see idle_s)."""
        start = self.answered = time.monotonic()
        if method == "constrained":
            return self.engine.constrained(prompts, **kwargs), time.monotonic() - start
        out: list = [None] * len(prompts)
        for finished in getattr(self.engine, f"{method}_stream")(prompts, **kwargs):
            for i, answer in finished:
                out[i] = answer
            self.answered = time.monotonic()
        return out, time.monotonic() - start

    def idle_s(self) -> float:
        """Seconds since the engine last finished a request; answered beside a running call (the actor
        has two threads), so the driver tells a slow piece from a hung replica."""
        return time.monotonic() - self.answered

    def counters(self) -> EngineCounters:
        return self.engine.counters()

    def close(self) -> None:
        self.engine.close()


class ClusterEngine(StreamBatch):
    """The Engine interface over the replicas of one model. `stop`, set by another thread, makes every
    wait give up within POLL_S: the replicas are killed and `Stopped` raised."""

    def __init__(
        self, engine: str, model: str, options: EngineOptions, spec: ClusterSpec, stop: threading.Event | None = None
    ):
        ray = ray_module()
        self.name, self.model, self.spec = engine, model, spec
        self.stop = stop or threading.Event()
        self.address = connect(spec)
        kind, each = replica_unit(options, spec)
        count = replicas_with_room(self, kind, each)
        env = forwarded_env(os.environ)
        if kind == "CPU":  # Ray would leave it seeing every GPU of its node; others may share its cores
            env = engine_class(engine).replica_env({**env, "CUDA_VISIBLE_DEVICES": ""})
        actor = ray.remote(Replica).options(
            num_cpus=spec.cpus_per_replica if kind == "CPU" else 0,
            num_gpus=each if kind == "GPU" else 0,
            max_restarts=0,
            max_concurrency=2,  # a call, and idle_s beside it
        )
        self.replicas = []
        self.places: list[dict] = []
        self.work = [{"calls": 0, "prompt_tokens": 0, "output_tokens": 0, "seconds": 0.0} for _ in range(count)]
        self.alive = set(range(count))
        self._turn = 0
        # replicas that share a GPU start one after another: vLLM's start-up check and profiler read the device's
        # free memory, so two starting together get a smaller KV cache or fail, depending on timing
        shared = kind == "GPU" and each < 1
        try:
            with SHARED_GPU_START if shared else contextlib.nullcontext():
                for _ in range(count):
                    self.replicas.append(actor.remote(engine, model, options, env))
                    if shared:
                        self._wait_started()
                self._wait_started()
        except BaseException:  # Ctrl-C or a stop while the replicas load: none is left behind
            self.close(graceful=False)
            raise
        seqs = [p["engine"]["max_num_seqs"] for p in self.places if p["engine"].get("max_num_seqs")]
        self.piece = spec.piece if spec.piece != "auto" else (PIECE_PER_SEQS * min(seqs) if seqs else 64)

    def wait_a_poll(self) -> None:
        if self.stop.wait(POLL_S):
            raise Stopped(f"stopped while the replicas of {self.model} were starting or working")

    def _wait_started(self) -> None:
        """Each replica's place as it starts; the first that cannot start fails the command at once."""
        ray = ray_module()
        refs = {r.where.remote(): i for i, r in enumerate(self.replicas)}
        places: dict[int, dict] = {}
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(places) < len(refs):
            if time.monotonic() > deadline:
                raise RadarError(
                    f"{len(refs) - len(places)} of {len(refs)} replicas of {self.model} did not start within "
                    f"{START_TIMEOUT_S} s; check the nodes' logs (ray logs) and free resources"
                )
            waiting = [ref for ref, i in refs.items() if i not in places]
            ready, _ = ray.wait(waiting, num_returns=len(waiting), timeout=POLL_S)
            for ref in ready:
                try:
                    places[refs[ref]] = ray.get(ref)
                except Exception as exc:
                    raise RadarError(
                        f"replica {refs[ref] + 1} of {self.model} could not start on {_node_of(exc)}: {_cause(exc)}"
                    ) from None
            if self.stop.is_set():
                self.wait_a_poll()
        self.places = [places[i] for i in range(len(refs))]

    # ---- the Engine interface: a stage's requests are spread at once, each piece stored as it returns ----
    def generate_stream(
        self, prompts, sampling: Sampling, *, seeds: list[int], chunk: int = 0
    ) -> Iterator[FinishedSamples]:
        return self._spread("generate", prompts, seeds, sampling=sampling, chunk=chunk)

    def score_stream(self, prompts, *, fmt, chunk: int = 0) -> Iterator[Finished]:
        return self._spread("score", prompts, None, fmt=fmt, chunk=chunk)

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
        """The first replica's engine settings (each replica's devices are in report()), and the split."""
        return {**(self.places[0]["engine"] if self.places else {}), "replicas": len(self.alive), "piece": self.piece}

    def close(self, graceful: bool = True) -> None:
        """Each live replica closes its engine (its processes and their GPU memory go) within
        CLOSE_TIMEOUT_S, then every replica is killed, which hands its resources back to Ray."""
        ray = ray_module()
        if graceful and self.alive:
            ray.wait(
                [self.replicas[i].close.remote() for i in sorted(self.alive)],
                num_returns=len(self.alive),
                timeout=CLOSE_TIMEOUT_S,
            )
        for r in self.replicas:
            try:
                ray.kill(r)
            except Exception:
                pass
        self.alive = set()

    # ---- scheduling ----
    def _spread(self, method: str, prompts: list, seeds: list[int] | None, **kwargs) -> Iterator[list]:
        """Pieces of `prompts` to free replicas, each yielded (with its indices) as it returns; a piece
        lost with its replica, or held by a replica that stopped answering, goes to another."""
        ray = ray_module()
        size = piece_size(len(prompts), len(self.alive), self._piece_requests(kwargs.get("n", 1)))
        pieces = [
            (i, prompts[i : i + size], seeds[i : i + size] if seeds is not None else None)
            for i in range(0, len(prompts), size)
        ]
        if method != "constrained":
            kwargs["chunk"] = kwargs.get("chunk") or size  # a batch engine's batches (the stage's chunk)
        queue = deque(range(len(pieces)))
        idle, running = deque(sorted(self.alive)), dict[Any, tuple[int, int]]()
        idle.rotate(-self._turn)  # successive small calls start on successive replicas
        self._turn += 1
        heard: dict[int, float] = {}  # replica -> when it last finished a request (or took its piece)
        checked = time.monotonic()
        while queue or running:
            if self.stop.is_set():
                self.close(graceful=False)
                self.wait_a_poll()
            while queue and idle:
                k, replica = queue.popleft(), idle.popleft()
                start, part, part_seeds = pieces[k]
                extra = {"seeds": part_seeds} if part_seeds is not None else {}
                running[self.replicas[replica].call.remote(method, part, {**kwargs, **extra})] = (k, replica)
                heard[replica] = time.monotonic()
            done, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
            if not done:
                if time.monotonic() - checked >= min(PROGRESS_CHECK_S, self.spec.stall_s / 2):
                    self._drop_hung(running, heard, queue)
                    checked = time.monotonic()
                continue
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

    def _piece_requests(self, n: int) -> int:
        """A piece in requests: `piece` auto counts sequences, and a generation request holds n."""
        return max(1, self.piece // n) if self.spec.piece == "auto" else self.piece

    def _drop_hung(self, running: dict, heard: dict[int, float], queue: deque) -> None:
        """Ask the replicas holding pieces when they last finished a request; one silent for stall_s
        (or too stuck to say) is killed, and its piece queued first."""
        ray = ray_module()
        asked = {self.replicas[replica].idle_s.remote(): replica for _, replica in running.values()}
        answered, _ = ray.wait(list(asked), num_returns=len(asked), timeout=POLL_S * 5)
        now = time.monotonic()
        for ref in answered:
            try:
                heard[asked[ref]] = max(heard[asked[ref]], now - ray.get(ref))
            except Exception:  # its piece's own answer reports the loss
                pass
        for ref, (k, replica) in list(running.items()):
            if now - heard[replica] > self.spec.stall_s:
                del running[ref]
                ray.kill(self.replicas[replica])
                self._lose(replica, TimeoutError(f"no request finished in {self.spec.stall_s:g} s"), "")
                queue.appendleft(k)

    def _lose(self, replica: int, exc: Exception, then: str) -> None:
        self.alive.discard(replica)
        log.warning(
            "replica %d on %s was lost (%s: %s); %s",
            replica + 1,
            self.places[replica]["ip"],
            type(exc).__name__,
            exc,
            then or "its piece goes to another replica",
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
                    "devices": p.get("devices", ""),
                    "lost": i not in self.alive,
                    **self.work[i],
                }
                for i, p in enumerate(self.places)
            ],
        }


def replicas_with_room(cluster: ClusterEngine, kind: str, each: float) -> int:
    """How many replicas to start, once the cluster's free resources hold them (the previous model's
    replicas may still be letting theirs go)."""
    ray = ray_module()
    total = ray.cluster_resources().get(kind, 0)
    if total < each:
        raise RadarError(
            f"a replica of {cluster.model} needs {each:g} {kind}; the Ray cluster at {cluster.address} has "
            f"{total:g} in all (set cluster.gpus_per_replica, or the engine's parallel sizes)"
        )
    nodes = [n.get("Resources", {}).get(kind, 0) for n in ray.nodes() if n.get("Alive")]
    if (problem := node_problem(kind, each, nodes)) is not None:
        raise RadarError(f"a replica of {cluster.model} {problem} (the Ray cluster at {cluster.address})")
    fits = sum(int(n // each) for n in nodes) if kind == "GPU" else None  # whole replicas, node by node
    if fits is not None and cluster.spec.replicas != "auto" and cluster.spec.replicas > fits:
        raise RadarError(
            f"{cluster.spec.replicas} replicas of {cluster.model} at {each:g} GPUs each do not fit the nodes of the "
            f"Ray cluster at {cluster.address} ({fits} do): set cluster.replicas to {fits} or lower"
        )
    deadline = time.monotonic() + FREE_WAIT_S
    while True:
        free = ray.available_resources().get(kind, 0)
        count = int(free // each) if cluster.spec.replicas == "auto" else cluster.spec.replicas
        if fits is not None and cluster.spec.replicas == "auto":
            count = min(count, fits)
        if count >= 1 and free >= count * each:
            return count
        if time.monotonic() > deadline:
            raise RadarError(
                f"the Ray cluster at {cluster.address} has no room for {max(count, 1)} replica(s) of "
                f"{cluster.model} at {each:g} {kind} each (free: {free:g} {kind})"
            )
        cluster.wait_a_poll()


def piece_size(requests: int, replicas: int, largest: int) -> int:
    """Requests per piece: the stage cut into equal pieces of at most `largest`, the same number for
    every replica, so that replicas of equal speed finish a stage together."""
    per_replica = max(1, -(-requests // (replicas * largest)))
    return max(1, -(-requests // (replicas * per_replica)))


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

    found = re.search(r"\bip=([0-9A-Fa-f.:]+)", str(exc))
    return f"node {found.group(1)}" if found else "its node"
