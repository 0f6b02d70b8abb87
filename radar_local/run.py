"""Run: a run directory that may be added to, and the stages that write to it (generate, rewrite, score),
its verifier registry, and `finish`, which writes an audit it is handed. The workflows that put the stages
together are radar_local.auditing's; the directory, its files and what they hold are RunDir's
(radar_local.rundir)."""

from __future__ import annotations

import json
import random
from collections.abc import Container, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from radar_local.askings import Asking, halo_sample
from radar_local.calls import (
    SHORT_REFILLS,
    admitted_per_step,
    constraint_groups,
    missing_variants,
    prefix_order,
    probe_record,
    reward_record,
    verdict_records,
)
from radar_local.common import digest, slug
from radar_local.config import AuditConfig, load_config
from radar_local.context import ENGINES as CONTEXT_ENGINES
from radar_local.context import engine_key, engines, longest_request, sized, window
from radar_local.engines.base import Sampling
from radar_local.errors import InputError, RadarError
from radar_local.inputs import MAX_BYTES, load_yaml, read_json, read_model, yaml_text
from radar_local.judge import NO_THOUGHT
from radar_local.meter import StageMeter, library_versions, reproducibility
from radar_local.models import weights_identity
from radar_local.plan import GenerationRequest, ScoreRequest
from radar_local.pool import EnginePool
from radar_local.progress import say, stage_progress
from radar_local.prompts import PROMPT_VERSION
from radar_local.reasoning import check_continuation, continued, think_then_answer
from radar_local.records import Injection, ModelRef, ProbeRecord, RunInfo, Stage
from radar_local.resolved import Resolved
from radar_local.rundir import (
    CONFIG,
    INPUTS,
    LABELS,
    OLD_RUN_NOTE,
    PROBES,
    VERIFIERS,
    WEIGHTS,
    InputsSnapshot,
    RunDir,
    open_store,
)
from radar_local.score_table import write_scores
from radar_local.specs import Jury, ModelSpec
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.stats.result import AuditResult
from radar_local.stats.stored import AdaptiveRecord
from radar_local.store import write_atomic


class Run(RunDir):
    """A run directory that may be added to: it holds the directory's lock (let go by close() or at the
    end of a `with` block), and its methods are the stages."""

    _contexts: dict[str, int] | None = None  # each vLLM engine's max_model_len (sized), once computed
    _sized_from_probes: frozenset[str] = frozenset()  # the engines re-sized from the stored probes

    @classmethod
    def create(cls, resolved: Resolved, out: str | Path) -> Run:
        """A run directory for a resolved config (resolved.resolve: every input read and checked before the
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
            if (problem := verifier_conflict(run, spec)) is not None:
                raise InputError(run.root, problem)
        jury = config.jury
        if jury is not None and any(slug(label) == slug(jury.label) for label in run.verifiers()):
            raise InputError(
                run.root,
                f"the jury's label '{jury.label}' holds a single verifier's scores here; give the jury another name",
            )
        for name, data in _inputs_texts(resolved, snapshot).items():
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
        engine, label = pool.get(self.sized(config.generator)), config.generator.label
        with meter.running(engine), stage_progress(f"{stage} ({label})", sum(r.n for r in todo), progress) as advance:
            for _attempt in range(SHORT_REFILLS + 1):
                for n in sorted({r.n for r in todo}):
                    same_n = [r for r in todo if r.n == n]
                    for finished in engine.generate_stream(
                        [r.messages for r in same_n],
                        Sampling(n, config.generation.temperature, config.generation.max_new_tokens),
                        seeds=[r.call_seed for r in same_n],
                        chunk=max(1, config.batch_size // n),
                    ):
                        store.add_probes(
                            [
                                probe_record(same_n[i], v, c, label)
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
        requests: Sequence[ScoreRequest] | None = None,
    ) -> dict:
        """Stage 2: every planned verdict (of `probes`, default the planned ones; of the calls that score one of
        `criteria`, default all) not stored yet, fed and stored as `generate` does. `requests`: other calls of
        this model (a pairwise judge's, PairPlan.requests), stored under their keys and no verifier label's."""
        self.store.require_writer()
        config, store = self.config, self.store
        self.note_weights(verifier)
        if requests is None:
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
            engine, label = pool.get(self.sized(verifier)), verifier.label
            if verifier.repeat > 1:  # asked again in another order, so in other batches: where batch variance shows
                random.Random(digest([config.seed, verifier.repeat])).shuffle(todo)
            else:
                todo = prefix_order(todo, config.layout, admitted_per_step(engine.settings()))
            reasoning = verifier.judge.reasoning if verifier.judge is not None else None
            if reasoning is not None:  # both arms continue the judge's turn: refused before any call where it cannot
                check_continuation(engine, todo[0].messages, reasoning)
            with meter.running(engine), stage_progress(f"{stage} ({label})", len(todo), progress) as advance:
                for group in constraint_groups(todo):  # one group unless criteria differ in scale
                    messages, fmt = [r.messages for r in group], group[0].answer
                    if reasoning is not None and not reasoning.think:  # the ablation's arm: no reasoning
                        if empty := NO_THOUGHT[reasoning.parser]:
                            messages = [continued(m, empty) for m in messages]
                    elif reasoning is not None:  # a thinking judge: its reasoning, then the constrained verdict
                        for thought_out in think_then_answer(
                            engine, messages, fmt=fmt, reasoning=reasoning, chunk=config.batch_size, seed=config.seed
                        ):
                            store.add_scores(
                                [v for i, c, t in thought_out for v in verdict_records(group[i], c, label, t)]
                            )
                            meter.count([[c] for _, c, _ in thought_out])
                            meter.count_reasoning([t for _, _, t in thought_out])
                            advance(len(thought_out))
                        continue
                    for finished in engine.score_stream(messages, fmt=fmt, chunk=config.batch_size):
                        store.add_scores([v for i, c in finished for v in verdict_records(group[i], c, label)])
                        meter.count([[c] for _, c in finished])
                        advance(len(finished))
        meter.count_parsed([store.scores[k] for r in requests for k in r.verdict_keys if k in store.scores])
        return meter.info

    def sized(self, spec: ModelSpec) -> ModelSpec:
        """`spec` as its engine loads: a vLLM engine's max_model_len sized from the longest request this audit
        sends it (context.py); its options as written, so its keys, unchanged."""
        if spec.engine not in CONTEXT_ENGINES:
            return spec
        if self._contexts is None:  # every engine's, checked before the first loads
            self._contexts = {engine_key(m): self._context(m) for m in engines(self.config)}
        key = engine_key(spec)
        if not spec.same_engine(self.config.generator) and key not in self._sized_from_probes:
            # a judge loads after the probes are written: sized from them too, in its own tokenizer (never below
            # the first sizing, which later waves' probes may need)
            if stored := self.probes():
                self._contexts[key] = max(self._contexts[key], self._context(spec, stored))
                self._sized_from_probes = self._sized_from_probes | {key}
        out = spec.model_copy()
        out._parsed = spec.parsed.model_copy(update={"max_model_len": self._contexts[key]})
        return out

    def _context(self, model: ModelSpec, probes: Sequence[ProbeRecord] = ()) -> int:
        try:
            return sized(longest_request(self.plan, model, self.labels, probes), model, window(model))
        except ValueError as exc:
            raise InputError(self.root / CONFIG, str(exc)) from None

    def ask(self, asking: Asking, pool: EnginePool, progress: bool = True) -> dict | None:
        """One asking beside the verifier's verdicts (askings.py), stored as its kind is: a twin's verdicts (on its
        share of each stratum), the pairs (under the judge's '-pairwise' label, the team's labelled pairs with
        them), the reward model's scalars or the labelled responses; None where nothing of its kind is there."""
        judge = asking.judge
        if asking.kind in ("pairs", "pair attacks"):
            if asking.kind == "pairs":
                requests = self.plan.pairs.requests(self.probes(), judge)
                if self.labels is not None:  # the team's pairwise labels, asked of the same judge
                    requests += self.plan.pairs.labelled(self.labels.pair_probes(), judge)
            else:  # the attacked pairs: computed from the stored probes, then asked as the pairs are
                attacked = self.pair_attacks(judge)
                self.store.add_probes([down for _, down in attacked if down.key not in self.store.probes])
                requests = self.plan.pairs.attacked(attacked, judge)
            twin = judge.model_copy(update={"name": f"{judge.label}-pairwise"})
            return self.score(twin, pool, progress, stage=asking.stage, requests=requests)
        if asking.kind == "reward":
            return score_rewards(self, judge, pool, progress)
        if asking.kind in ("attacks", "defended"):  # computed from the stored probes, then scored as probes are
            planned = self.attack_probes(asking.attacked or judge)  # a defended twin: its judge's, with their bases
            self.store.add_probes([p for p in planned if p.key not in self.store.probes])
            bases: list[ProbeRecord] = []
            if asking.attacked is not None and self.config.attacks is not None:
                bases = halo_sample(self.probes(), self.config.attacks.share)
            return self.score(judge, pool, progress, probes=bases + planned, stage=asking.stage)
        if asking.kind == "labels":
            if self.labels is None or not self.labels.labels:  # pairwise labels: the pairs' asking has them
                return None
            return self.score(judge, pool, progress, self.labels.probes(), self.labels.criteria, stage="labels")
        probes = None if asking.share is None else halo_sample(self.probes(), asking.share)
        return self.score(judge, pool, progress, probes=probes, stage=asking.kind)

    def note_weights(self, spec: ModelSpec) -> None:
        """Record the identity of the weights `spec` names as they are now, before its requests are keyed:
        weights replaced at the same path get new keys, so nothing the old ones wrote is reused."""
        if self.plan.keys == 1 or not spec.local_weights:
            return
        now = weights_identity(spec.model, template=self.plan.keys >= 4)
        if self.weights.get(spec.model) != now:
            self.weights[spec.model] = now
            self.store.write_json(WEIGHTS, self.weights)

    def register_verifier(self, spec: ModelSpec) -> None:
        """Remember which model each verifier label stands for; one label never mixes two models."""
        known = self.verifiers()
        if known.get(spec.label) == spec:
            return  # already registered: nothing to write (a grid's cells may score at once)
        if (problem := verifier_conflict(self, spec)) is not None:
            raise InputError(self.root, problem)
        known[spec.label] = spec
        self.store.write_json(VERIFIERS, {label: s.model_dump(mode="json") for label, s in known.items()})


def score_rewards(run: Run, model: ModelSpec, pool: EnginePool, progress: bool = True) -> dict:
    """The reward model's scalar on every probe (config.reward), stored as its verdicts on `reward`. A reward that
    is no finite number is unscored with why."""
    run.store.require_writer()
    run.note_weights(model)
    requests = run.plan.reward_requests(run.probes(), model)
    todo = [r for r in requests if r.key not in run.store.scores]
    meter = StageMeter(requests=len(requests))
    if todo:
        engine = pool.get(run.sized(model))
        reward = getattr(engine, "reward", None)  # transformers with runner: reward, the planted engine
        if not callable(reward):
            raise InputError(run.root, f"reward: the {model.engine} engine scores no reward; use vllm or "
                             "transformers with the option runner: reward")  # fmt: skip
        with meter.running(engine), stage_progress(f"reward ({model.label})", len(todo), progress) as advance:
            for start in range(0, len(todo), run.config.batch_size):
                chunk = todo[start : start + run.config.batch_size]
                rewards = reward([r.messages for r in chunk])
                run.store.add_scores([reward_record(r, x, model.label) for r, x in zip(chunk, rewards)])
                meter.info["calls"] += len(chunk)
                advance(len(chunk))
    meter.count_parsed([run.store.scores[r.key] for r in requests if r.key in run.store.scores])
    return meter.info


def verifier_conflict(run: Run, spec: ModelSpec) -> str | None:
    """Why `spec` cannot score under its label in this run, in one line: the label holds another model's
    or another judge's verdicts, or shares a file name with another label; else None."""
    known = run.verifiers()
    jury = run.config.jury
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
            f"verifier labels '{clash}' and '{spec.label}' share a file name; give this verifier another name (--name)"
        )
    return None


def write_audit(
    run: Run,
    verifier: ModelSpec | Jury,
    result: AuditResult | PairwiseAudit,
    table: pd.DataFrame | None,
    stages: dict,
    probes: int,
    injection: dict,
    adaptive: AdaptiveRecord | None = None,
    jurors: dict | None = None,
) -> None:
    """Write an audit by `verifier` (auditing.conclude): its score table, stats and run info (the earlier
    runs of this audit kept in it). `jurors`: a jury's engines and failed jurors. A judge asked only pairs has
    no score table (`table` None)."""
    run.store.require_writer()
    if table is not None:
        write_scores(table, run.table_path)
    write_atomic(run.stats_path(verifier.label), json.dumps(result.to_json(), indent=2))
    info = RunInfo(
        radar_local_prompt_version=PROMPT_VERSION,
        generator=model_ref(run.config.generator),
        verifier=model_ref(verifier),
        probes=probes,
        injection=Injection(**injection),
        stages={name: Stage(**stage) for name, stage in stages.items()},
        libraries=library_versions(),
        reproducibility=reproducibility(run.config, stages),
        **({} if adaptive is None else {"adaptive": adaptive.stored()}),
        **({} if jurors is None else {"jurors": jurors}),
    )
    path = run.info_path(verifier.label)
    if path.exists():  # the earlier runs of this audit, as they were written
        history = read_json(path)
        info.previous_runs = history.pop("previous_runs", []) + [history]
    write_atomic(path, json.dumps(info.model_dump(mode="json", exclude_unset=True), indent=2))


def model_ref(spec: ModelSpec | Jury) -> ModelRef:
    if isinstance(spec, Jury):
        return ModelRef(label=spec.label, engine="jury", model=", ".join(j.label for j in spec.jurors))
    return ModelRef(label=spec.label, engine=spec.engine, model=spec.model)


def _inputs_texts(resolved: Resolved, snapshot: InputsSnapshot) -> dict[str, str]:
    """inputs.json's text and labels.json's (with labels), refused before any write where radar could not
    read them back."""
    kept = {INPUTS: snapshot.model_dump(mode="json")}
    if resolved.labels is not None:
        kept[LABELS] = resolved.labels.model_dump(mode="json")
    texts = {name: json.dumps(data, indent=2) for name, data in kept.items()}
    for name, data in texts.items():
        if len(data.encode()) > MAX_BYTES:
            what = "labels" if name == LABELS else "rubric and tasks"
            raise InputError(
                resolved.source,
                f"its {what} would make {name} {len(data.encode()) >> 20} MiB, more than the {MAX_BYTES >> 20} "
                "MiB radar reads back; audit fewer or shorter ones",
            )
    return texts


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
