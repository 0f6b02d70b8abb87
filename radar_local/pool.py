"""EnginePool: the one engine a process holds at a time, and the check that a closed engine gave its memory back."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from radar_local.cluster import ClusterEngine
from radar_local.engines.base import Engine
from radar_local.engines.registry import build_engine
from radar_local.hardware import memory_free
from radar_local.placement import ClusterSpec, wait_for_gpu_memory
from radar_local.progress import say
from radar_local.specs import ModelSpec

log = logging.getLogger("radar_local")


class EnginePool:
    """Holds one engine at a time: loading other weights frees the previous model's memory first (checked:
    `closed` records what each engine took and gave back), and a generator that is also the verifier is
    loaded once."""

    def __init__(self, cluster: ClusterSpec | None = None, stop: threading.Event | None = None) -> None:
        self.spec: ModelSpec | None = None
        self.engine: Engine | None = None
        self.cluster = cluster  # None: the engine runs in this process
        self.stop = stop  # on a cluster: set by another thread, the replicas give up (grid.py)
        self.loaded: dict = {}  # the engine held now: its label, seconds to start, memory free before it
        self.closed: list[dict] = []  # every engine closed: load and close record (close())

    def get(self, spec: ModelSpec, where: object = "config") -> Engine:
        if self.engine is not None and self.spec is not None and self.spec.same_engine(spec):
            return self.engine
        self.close()
        before, start = memory_free(), time.monotonic()
        if self.cluster is None:
            if (share := spec.parsed.gpu_memory_share()) is not None and spec.parsed.engine_gpus():
                wait_for_gpu_memory(share, gpus=spec.parsed.engine_gpus())  # the last engine's GPU memory back
            self.engine = build_engine(spec.engine, spec.model, spec.parsed, where)
        else:
            self.engine = ClusterEngine(spec.engine, spec.model, spec.parsed, self.cluster, self.stop)
        self.spec = spec
        self.loaded = {"model": spec.label, "start_seconds": round(time.monotonic() - start, 3), "free_before": before}
        return self.engine

    def close(self) -> None:
        """Free the engine, and check that its memory came back (a warning where less than half of what it
        held did). A shutdown that fails (its worker already gone after Ctrl-C) is a note, never an error that
        would hide the one being raised."""
        engine, self.engine, self.spec = self.engine, None, None
        if engine is None:
            return
        held, start = memory_free(), time.monotonic()
        try:
            engine.close()
        except Exception as exc:
            log.warning("engine %s did not shut down cleanly (%s: %s)", engine.name, type(exc).__name__, exc)
        after = memory_free()
        seconds = round(time.monotonic() - start, 3)
        record = {**self.loaded, "free_held": held, "close_seconds": seconds, "free_after": after}
        # only an engine holding weights on this machine takes memory a close gives back (a server's, a planted
        # engine's or a cluster's replicas' memory is elsewhere: what moved meanwhile is other processes')
        holds = getattr(engine, "LOCAL_WEIGHTS", False) and not isinstance(engine, ClusterEngine)
        for kind in sorted(held.keys() & after.keys() & record.get("free_before", {}).keys() if holds else ()):
            taken, freed = record["free_before"][kind] - held[kind], after[kind] - held[kind]
            if taken > MEMORY_NOISE and freed < taken / 2:
                say(
                    f"engine {record['model']} gave back {freed / 2**30:.2f} of the {taken / 2**30:.2f} GiB of "
                    f"{kind} memory it took; the next model may not fit"
                )
        self.closed.append(record)
        self.loaded = {}

    def __enter__(self) -> EnginePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def pool_for(pool: EnginePool | None, cluster: ClusterSpec | None = None) -> Iterator[EnginePool]:
    """The pool passed, lent for the block and left open for its owner; else a new one, closed at the end
    of the block however it ends."""
    if pool is not None:
        yield pool
        return
    with EnginePool(cluster) as own:
        yield own


MEMORY_NOISE = 512 << 20  # bytes other processes may take or give back while an engine runs
