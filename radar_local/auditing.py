"""The workflows of one run directory, each over a `Run` (radar_local.run) and returning its result: an
audit (generate -> score -> conclude; resumable, stored calls are skipped), a judge audited both ways, a
jury juror by juror, adaptive waves, re-scoring with another judge, and reuse of another run's records."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from radar_local.adaptive import (
    adaptive_record,
    awaited,
    calls_per_probe,
    first_sizes,
    grow,
    grown,
    merged_stages,
    wave_record,
    waves_record,
    within_budget,
)
from radar_local.askings import Asking, askings, beside, labels_asking
from radar_local.audited import assemble, audited_set
from radar_local.common import parse_model
from radar_local.config import AuditConfig, load_config
from radar_local.errors import InputError, RadarError
from radar_local.pair_verdicts import pairwise_audit
from radar_local.pool import EnginePool, pool_for
from radar_local.progress import say
from radar_local.resolved import resolve, served_schema_problem
from radar_local.run import Run, write_audit
from radar_local.rundir import WAVES, RunDir
from radar_local.scorers import score_cells_on_cluster
from radar_local.specs import Jury, ModelSpec
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.stats.result import AuditResult
from radar_local.stats.stored import AdaptiveRecord


def run_audit(
    config: AuditConfig | dict | str | Path,
    out: str | Path | None = None,
    *,
    base: Path | None = None,
    pool: EnginePool | None = None,
    progress: bool = False,
) -> AuditResult | PairwiseAudit:
    """Audit a config (an AuditConfig, a dict, or a YAML path) into `out` (default: the config's `out`)."""
    config, folder = config_from(config)
    out = out or config.out
    if out is None:
        raise InputError("config", "no run directory: set 'out' in the config or pass out=")
    with Run.create(resolve(config, base or folder), out) as run:  # the lock is let go when the audit ends
        return audit(run, pool, progress)


def config_from(config_or_path: AuditConfig | dict | str | Path) -> tuple[AuditConfig, Path]:
    """A config and the folder its relative paths are taken from."""
    if isinstance(config_or_path, AuditConfig):
        return config_or_path, Path.cwd()
    if isinstance(config_or_path, dict):
        return parse_model(AuditConfig, config_or_path, "config"), Path.cwd()
    path = Path(config_or_path)
    return load_config(path), path.parent


def audit(run: Run, pool: EnginePool | None = None, progress: bool = True) -> AuditResult | PairwiseAudit:
    """Generate, score with the config's verifier, and conclude; a judge audited both ways (`calls:
    [per-criterion, joint]`) scores the same probes per criterion, then jointly, and the joint result
    carries the halo between them; a jury is audited juror by juror, then as a jury (audit_jury); a judge asked
    only pairs, on its pairs alone (audit_pairs)."""
    first, *others = run.config.verifiers
    with pool_for(pool, run.config.cluster) as pool:
        if run.config.jury is not None:
            return audit_jury(run, run.config.jury, pool, progress)
        if run.config.pairwise is not None and run.config.pairwise.only:
            return audit_pairs(run, first, pool, progress)
        result = rescore(run, first, pool, progress, generate=True)
        for spec in others:
            result = rescore(run, spec, pool, progress, halo_against=first.label)
    return result


def audit_pairs(run: Run, verifier: ModelSpec, pool: EnginePool, progress: bool = True) -> PairwiseAudit:
    """A judge asked only pairs (pairwise.only): generate, ask it the pairs in both orders, and conclude on them
    alone; no pointwise verdict is asked."""
    run.store.require_writer()
    stages = {"generate": run.generate(pool, progress)}
    if not verifier.same_engine(run.config.generator):
        pool.close()  # free the generator before the judge loads
    for asking in beside(run.config, verifier):
        if asking.kind in ("pairs", "pair attacks"):  # the pairs, and with attacks: the attacked pairs
            asked = run.ask(asking, pool, progress)
            assert asked is not None  # the pairs are always asked
            stages[asking.stage] = asked
    probes = run.probes()
    records = audited_set(run, probes, verifiers=())
    result = pairwise_audit(run, verifier, records)
    write_audit(run, verifier, result, None, stages, len(probes), records.injection)
    return result


def rescore(
    run: Run,
    verifier: ModelSpec,
    pool: EnginePool | None = None,
    progress: bool = True,
    generate: bool = False,
    halo_against: str | None = None,
) -> AuditResult:
    """Score the stored probes with `verifier` (another judge: `radar score`; with `generate`, the probes
    not stored yet are written first) and conclude."""
    run.store.require_writer()  # before any engine loads
    if generate and (problem := served_schema_problem(run.config, verifier, run.rubric)) is not None:
        raise InputError(run.root, problem)  # before the generator's time is spent
    adaptive: AdaptiveRecord | None = None
    with pool_for(pool, run.config.cluster) as pool:
        stages: dict[str, dict] = {}
        if generate and run.config.adaptive is not None:
            stages, adaptive = waves(run, verifier, pool, progress)
        else:
            if generate:
                stages["generate"] = run.generate(pool, progress)
                if run.config.nuisance:
                    stages["rewrite"] = run.rewrite(pool, progress)
                if not verifier.same_engine(run.config.generator):
                    pool.close()  # free the generator before the verifier loads
            stages["score"] = run.score(verifier, pool, progress)
        twins = askings(run.config, verifier)  # on the same probes or a stratified share of them
        for asking in [*twins, *beside(run.config, verifier)]:  # then the pairs, rewards, labelled responses
            if (asked := run.ask(asking, pool, progress)) is not None:
                stages[asking.stage] = asked
    return conclude(run, verifier, stages, adaptive, halo_against=halo_against, twins=twins)


def conclude(
    run: Run,
    verifier: ModelSpec | Jury,
    stages: dict,
    adaptive: AdaptiveRecord | None = None,
    judges: Collection[str] | None = None,
    halo_against: str | None = None,
    jurors: dict | None = None,
    juror_results: dict[str, AuditResult] | None = None,
    twins: Sequence[Asking] = (),
) -> AuditResult:
    """The audit of what `verifier` scored, assembled from the audited set and written (Run.finish).
    `judges`: the verifiers calibrated together (a grid's); default every verifier stored in the run.
    `halo_against`: the per-criterion verifier this joint one is compared with (stats/halo.py). `jurors`: a
    jury's engines and failed jurors (audit_jury); `juror_results`: its jurors' audits, shown beside the jury's.
    `twins`: what was asked beside its verdicts (radar_local.askings), read by its measurements."""
    run.store.require_writer()
    probes = run.probes()
    mine = {verifier.label, *(a.judge.label for a in twins if a.kind != "halo check")}
    attacked_by = verifier if isinstance(verifier, ModelSpec) else None  # a jury is never attacked
    records = audited_set(run, probes, None if judges is None else {*judges, *mine}, attacked_by)
    result, table = assemble(
        run,
        verifier,
        records,
        halo_against=halo_against,
        twins=twins,
        failed=(jurors or {}).get("failed"),
        juror_results=juror_results,
        adaptive=adaptive,
    )
    write_audit(run, verifier, result, table, stages, len(probes), records.injection, adaptive, jurors)
    return result


def audit_jury(run: Run, jury: Jury, pool: EnginePool, progress: bool = True) -> AuditResult:
    """Generate once; then each juror scores the probes and the labelled responses in one visit (in turn,
    its engine closed and its memory checked before the next loads; at once on a cluster, each on its own
    replicas); then each juror's audit and the jury's, from the jurors' verdicts. A juror that fails is left
    out, and said so, while min_jurors can still be met; its verdicts stored so far are kept."""
    run.store.require_writer()
    shared = {"generate": run.generate(pool, progress)}
    if run.config.nuisance:
        shared["rewrite"] = run.rewrite(pool, progress)
    if run.config.cluster is not None:
        own, failed, engines = jurors_on_cluster(run, jury, pool)
    else:
        own, failed, engines = jurors_in_turn(run, jury, pool, progress)
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
    run.left_out = frozenset(failed)
    labels = {j.label for j in jury.jurors} | {jury.label}
    results = {
        juror.label: conclude(run, juror, {**shared, **own[juror.label]}, judges=labels)
        for juror in jury.jurors
        if juror.label in own
    }
    each = {f"{name} ({label})": stage for label, mine in own.items() for name, stage in mine.items()}
    record = {"engines": engines, "failed": failed}
    return conclude(run, jury, {**shared, **each}, judges=labels, jurors=record, juror_results=results)


def jurors_in_turn(run: Run, jury: Jury, pool: EnginePool, progress: bool) -> tuple[dict, dict, dict]:
    """Each juror scores in turn, its engine closed before the next loads: (stages per juror that scored,
    why each failed juror failed, each juror's engine record from EnginePool.close)."""
    own: dict[str, dict] = {}
    failed: dict[str, str] = {}
    engines: dict[str, dict] = {}
    for juror in jury.jurors:
        try:
            own[juror.label] = {"score": run.score(juror, pool, progress)}
            labelled = run.ask(labels_asking(juror), pool, progress) if run.config.labels is not None else None
            if labelled is not None:
                own[juror.label]["labels"] = labelled
        except RadarError as exc:
            failed[juror.label] = str(exc)
            own.pop(juror.label, None)
            if len(jury.jurors) - len(failed) < jury.quorum:
                break  # the jury cannot be met: no further juror loads
        finally:
            pool.close()  # the next juror loads into freed memory
            if pool.closed and pool.closed[-1]["model"] == juror.label:
                engines[juror.label] = pool.closed[-1]
    return own, failed, engines


def jurors_on_cluster(run: Run, jury: Jury, pool: EnginePool) -> tuple[dict, dict, dict]:
    """The jurors score at once on the cluster, each on its own replicas (scorers.score_cells_on_cluster);
    a juror that fails is recorded and the others go on. As jurors_in_turn returns."""
    pool.close()  # the generator's replicas give their resources back first
    generator, cluster = run.config.generator, run.config.cluster
    assert cluster is not None
    stages: dict = {(generator.label, j.label): {} for j in jury.jurors}
    failed: dict[str, str] = {}
    todo = [(generator, j) for j in jury.jurors]
    score_cells_on_cluster(list(jury.jurors), cluster, {generator.label: run}, todo, stages, failed)
    own = {j.label: stages[(generator.label, j.label)] for j in jury.jurors if j.label not in failed}
    return own, failed, {}


def waves(run: Run, verifier: ModelSpec, pool: EnginePool, progress: bool) -> tuple[dict, AdaptiveRecord]:
    """An adaptive audit (radar_local.adaptive): generate and score wave after wave; (stages for run.json,
    the adaptive record)."""
    spec, plan = run.config.adaptive, run.plan
    assert spec is not None
    if not run.config.bootstrap:
        raise InputError(run.root / "config.yaml", "an adaptive audit decides from intervals: set bootstrap > 0")
    run.note_weights(run.config.generator)  # before any wave's requests are keyed (a local model's weights)
    sizes, have = first_sizes(run.config, plan), {stratum: 0 for stratum in plan.strata()}
    per_probe = calls_per_probe(run.rubric, verifier.judge is not None and verifier.judge.joint)
    by_prompt = bool(run.rubric.items)  # a per-prompt rubric grows whole prompts
    if not within_budget(sizes, per_probe, spec.budget):
        first = sum(n * per_probe(stratum) for stratum, n in sizes.items())
        raise InputError(
            run.root / "config.yaml",
            f"adaptive.budget {spec.budget} is below the first wave's {first} verifier calls: raise it or lower "
            "start_n",
        )
    stopped_by = "settled"
    record: list[dict] = []
    stages: dict[str, list[dict]] = {"generate": [], "score": []}
    while True:
        requests = plan.generation_requests({c: (have[c], sizes[c] - have[c]) for c in sizes})
        stages["generate"].append(run.generate(pool, progress, requests))
        if not verifier.same_engine(run.config.generator):
            pool.close()  # free the generator before the verifier loads
        probes = run.stored_probes(plan.generation_requests({c: (0, n) for c, n in sizes.items()}))
        stages["score"].append(run.score(verifier, pool, progress, probes))
        result, _ = assemble(run, verifier, audited_set(run, probes), level=spec.confidence, interim=True)
        found = awaited(result, spec.fail_on_sym)
        still_open = [d for d in found if d.value is None]
        following = grow(sizes, grown(sizes, still_open, by_prompt), spec.step, spec.max_n, by_prompt)
        record.append(
            wave_record(len(record) + 1, have, sizes, stages["score"][-1], record, still_open, spec.max_n, by_prompt)
        )
        run.store.write_json(WAVES, waves_record(sizes, record))
        if following == sizes:
            stopped_by = "max_n" if still_open else "settled"
            break
        if not within_budget(following, per_probe, spec.budget):
            stopped_by = "budget"
            break
        have, sizes = sizes, following
    return merged_stages(stages), adaptive_record(spec, record, found, sizes, stages["score"], stopped_by)


def adopt(run: Run, other: RunDir, verifier: ModelSpec) -> dict:
    """Copy from another run the probes and scores `run`'s plan asks for (equal keys: the same prompts,
    seeds and models), so that only what differs is generated and scored. Counts reuse."""
    run.note_weights(run.config.generator)
    run.note_weights(verifier)
    mine, theirs = run.store, other.store
    asked = run.plan.generation_requests(run.adaptive_sizes())
    wanted = [r.variant_key(v) for r in asked for v in r.variants]
    mine.add_probes([theirs.probes[k] for k in wanted if k in theirs.probes and k not in mine.probes])
    probes = run.probes()  # with the bases just copied
    rewrites = [r.variant_key(v) for r in run.rewrite_requests(probes) for v in r.variants]
    mine.add_probes([theirs.probes[k] for k in rewrites if k in theirs.probes and k not in mine.probes])
    keys = [k for r in run.plan.score_requests(probes + run.rewrites(probes), verifier) for k in r.verdict_keys]
    mine.add_scores([theirs.scores[k] for k in keys if k in theirs.scores and k not in mine.scores])
    reuse = {
        "probes": len(wanted),
        "probes_reused": sum(k in theirs.probes for k in wanted),
        "scores": sum(len(r.variants) * len(run.rubric.criteria_of(r.task.id)) for r in asked)  # every planned verdict
        + len(rewrites) * len(run.rubric.shared),
        "scores_reused": sum(k in theirs.scores for k in keys),
    }
    if rewrites:
        reuse.update(rewrites=len(rewrites), rewrites_reused=sum(k in theirs.probes for k in rewrites))
    return reuse
