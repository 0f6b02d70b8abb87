"""Several verifiers scoring the same runs (a grid's judges, a jury's jurors): one after another in one engine
pool, or at once on a Ray cluster, each model on its own replicas."""

from __future__ import annotations

import threading
from collections.abc import Container, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Protocol

from radar_local.askings import Asking, attack_askings, labels_asking, pairs_askings
from radar_local.cluster import Stopped
from radar_local.config import AuditConfig
from radar_local.errors import RadarError
from radar_local.placement import POLL_S, ClusterSpec, connect, ray_module, replica_unit
from radar_local.pool import EnginePool
from radar_local.specs import ModelSpec


class Scorer(Protocol):
    """What these functions ask of a run (run.Run): to score a verifier's probes, labels and pairs, and to know it."""

    def score(
        self,
        verifier: ModelSpec,
        pool: EnginePool,
        progress: bool = True,
        probes: list | None = None,
        criteria: Container[str] | None = None,
        stage: str = "score",
    ) -> dict: ...

    def ask(self, asking: Asking, pool: EnginePool, progress: bool = True) -> dict | None: ...

    config: AuditConfig

    def register_verifier(self, spec: ModelSpec) -> None: ...


def score_cells(
    verifiers: list,
    runs: Mapping[str, Scorer],
    todo: list,
    stages: dict,
    pool: EnginePool,
    progress: bool,
    pairs: bool = True,
) -> None:
    """Every cell of these verifiers, verifier by verifier, so each is loaded once (scoring the probes, the human
    labels where the grid names some, and, with `pairs`, the pairs each judge is asked, in one visit)."""
    for v in verifiers:
        for g in (g for g, vv in todo if vv is v):
            run = runs[g.label]
            stages[(g.label, v.label)]["score"] = run.score(v, pool, progress)
            beyond = [labels_asking(v)] if run.config.labels is not None else []
            beyond += pairs_askings(run.config, v) if pairs else []  # every judge
            beyond += attack_askings(run.config, v)  # in its own format
            for asking in beyond:
                if (asked := run.ask(asking, pool, progress)) is not None:
                    stages[(g.label, v.label)][asking.stage] = asked


def score_own_pairs(runs: Mapping[str, Scorer], todo: list, stages: dict, pool: EnginePool, progress: bool) -> None:
    """The pairs of every cell asked of pairwise's own model (`pairwise: {verifier: ...}`), loaded once after the
    verifiers: each generator's pairs are asked in its first cell, its other cells read them back."""
    for g, v in todo:
        run = runs[g.label]
        for asking in pairs_askings(run.config, v):
            if (asked := run.ask(asking, pool, progress)) is not None:
                stages[(g.label, v.label)][asking.stage] = asked


def score_cells_on_cluster(
    verifiers: list[ModelSpec],
    cluster: ClusterSpec,
    runs: Mapping[str, Scorer],
    todo: list,
    stages: dict,
    failed: dict[str, str] | None = None,
    pairs: bool = True,
) -> None:
    """Stage 2 on a cluster: the verifier models score at once, each on its own replicas sized by its
    own options, loaded once and reused by every cell of that model; a model that does not fit waits
    for the resources of one that finished. A failure or Ctrl-C stops every model, starting or scoring;
    with `failed` (a jury's), a model that fails is recorded there (label -> why) and the others go on."""

    models: list[list] = []  # verifiers that share weights share replicas
    for v in verifiers:
        group = next((m for m in models if m[0].same_engine(v)), None)
        if group is None:
            models.append([v])
        else:
            group.append(v)
    for g, v in todo:  # in this thread: verifiers.json is read, changed and written
        runs[g.label].register_verifier(v)
    connect(cluster)
    units = [replica_unit(m[0].parsed, cluster) for m in models]
    # Planned on the cluster's whole resources (the first stage's replicas may still be handing theirs
    # back); each model's replicas then wait for theirs to be free.
    total = ray_module().cluster_resources()
    counts = replica_counts(units, total, cluster.replicas)
    room = Room(total)
    stop = threading.Event()

    def score_model(i: int) -> None:
        kind, each = units[i]
        try:
            with room.held(kind, counts[i] * each, stop, models[i][0].model):
                pool = EnginePool(cluster.model_copy(update={"replicas": counts[i]}), stop)
                try:
                    score_cells(models[i], runs, todo, stages, pool, progress=False, pairs=pairs)
                finally:
                    pool.close()
        except RadarError as exc:
            if failed is None or isinstance(exc, Stopped):
                raise
            failed.update(dict.fromkeys((v.label for v in models[i]), str(exc)))  # the others go on

    with ThreadPoolExecutor(len(models)) as workers:
        futures = [workers.submit(score_model, i) for i in range(len(models))]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
        finally:  # Ctrl-C here, or a model failed: the others stop within a second, then we raise
            if not all(f.done() and f.exception() is None for f in futures):
                stop.set()
            wait(futures)
    raised = [e for f in futures if (e := f.exception()) is not None]
    raise_first = next((e for e in raised if not isinstance(e, Stopped)), raised[0] if raised else None)
    if raise_first is not None:
        raise raise_first


def replica_counts(units: list[tuple[str, float]], free: dict, replicas: int | str) -> list[int]:
    """Replicas per model: as configured, or (auto) an equal share of the resources of its kind."""
    if replicas != "auto":
        return [int(replicas)] * len(units)
    sharing = {kind: sum(k == kind for k, _ in units) for kind, _ in units}
    return [max(1, int(free.get(kind, 0) / sharing[kind] // each)) for kind, each in units]


class Room:
    """The grid's own account of the cluster's free resources, so its models never ask Ray for more than
    is there at once: a model waits (giving up when `stop` is set) until another gives its share back."""

    def __init__(self, free: dict):
        self.free, self.capacity = dict(free), dict(free)
        self.changed = threading.Condition()

    @contextmanager
    def held(self, kind: str, amount: float, stop: threading.Event, model: str) -> Iterator[None]:
        if amount > self.capacity.get(kind, 0):
            raise RadarError(
                f"the replicas of {model} need {amount:g} {kind}; the cluster has {self.capacity.get(kind, 0):g} "
                "in all: set cluster.replicas lower"
            )
        with self.changed:
            while self.free.get(kind, 0) < amount and not stop.is_set():
                self.changed.wait(POLL_S)
            if stop.is_set():
                raise Stopped("stopped before this model's replicas started")
            self.free[kind] -= amount
        try:
            yield
        finally:
            with self.changed:
                self.free[kind] += amount
                self.changed.notify_all()
