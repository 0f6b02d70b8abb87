"""The audited set, and the audit assembled from it in one place.

The audited set is what one audit reads of a run directory: the probes its config plans (an adaptive
audit's up to its last wave; keys under today's weights, so records of old weights or of a larger `n`
are not among them), less the probes that address the judge where `exclude_flagged_probes` says so, the
nuisance rewrites whose pair passed the manipulation check, and the stored verdicts on those. The
statistics, the injection scan, the manipulation check and the report's examples all read this set,
so a report never shows evidence the audit did not use.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from radar_local.analysis import stats_for_table
from radar_local.askings import Asking, halo_sample, labels_of
from radar_local.attack_probes import unfenced
from radar_local.injection import answer_patterns, flagged_probes
from radar_local.judge import Judge, polarity_warning
from radar_local.jury import measurement, side_by_side
from radar_local.labels import agreement as label_agreement
from radar_local.labels import errors as label_errors
from radar_local.measures import Asked
from radar_local.nuisance import manipulation_check
from radar_local.pair_verdicts import item_pairs_of, pair_attacks_of, pairwise_of
from radar_local.pitfalls import sign_lints
from radar_local.records import ProbeRecord, VerdictRecord
from radar_local.rubric import Rubric
from radar_local.rundir import RunDir
from radar_local.score_table import COLUMNS, validate_scores
from radar_local.specs import Jury, ModelSpec
from radar_local.stats.attacks import attack_table, pair_columns
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.jurors import JuryBlock
from radar_local.stats.order import OrderEffects, order_effects
from radar_local.stats.raters import Measurement
from radar_local.stats.result import AuditResult
from radar_local.stats.reward import RewardProfile, reward_profile
from radar_local.stats.settings import StatsSettings
from radar_local.stats.stored import AdaptiveRecord


@dataclass(frozen=True)
class AuditedSet:
    probes: tuple[ProbeRecord, ...]  # planned, flagged ones left out where the config says
    rewrites: tuple[ProbeRecord, ...]  # nuisance rewrites of kept pairs
    verdicts: tuple[tuple[str, VerdictRecord], ...]  # (verifier label, verdict) on those records
    injection: dict  # the scan of every planned probe, as run.json keeps it
    manipulation: dict | None  # per attribute: pairs, passed, steered; None without nuisance attributes
    attacked: tuple[ProbeRecord, ...] = ()  # the attacked probes stored (attacks:), each naming its base
    attack_verdicts: tuple[tuple[str, VerdictRecord], ...] = ()  # the verifier's verdicts on them

    @cached_property
    def verdicts_by_probe(self) -> dict[str, dict[str, dict[str, VerdictRecord]]]:
        """verifier label -> probe key -> criterion -> verdict."""
        out: dict[str, dict[str, dict[str, VerdictRecord]]] = {}
        for label, v in self.verdicts:
            out.setdefault(label, {}).setdefault(v.probe_key, {})[v.criterion] = v
        return out

    def table(self) -> pd.DataFrame:
        """The long score table of the set (score_table.COLUMNS), one row per verdict."""
        by_key = {p.key: p for p in self.probes + self.rewrites}
        rows = [
            (p.generator, label, p.task_id, p.target, p.direction, str(p.variant), v.criterion, v.score)
            for label, v in self.verdicts
            for p in (by_key[v.probe_key],)
        ]
        df = pd.DataFrame(rows, columns=list(COLUMNS))
        df["score"] = df["score"].astype("float64")
        return df


def audited_set(
    run: RunDir,
    probes: list[ProbeRecord] | None = None,
    verifiers: Collection[str] | None = None,
    attacked_by: ModelSpec | None = None,
) -> AuditedSet:
    """The records an audit of `run` reads: of `probes` (default the planned ones) and, of the verifiers
    stored there, those named in `verifiers` (default every one); with `attacked_by`, the probes attacked in that
    verifier's format (`attacks:`) and its verdicts on them."""
    config = run.config
    planned = run.probes() if probes is None else probes
    shapes = [spec.judge.answer for spec in config.verifiers if spec.judge is not None and spec.judge.template]
    injection = {**flagged_probes(planned, answers=answer_patterns(shapes)), "excluded": config.exclude_flagged_probes}
    flagged = set(injection["keys"])
    used = [p for p in planned if p.key not in flagged] if config.exclude_flagged_probes else planned
    specs = config.nuisance_specs
    rewrites = run.rewrites(planned) if specs else []
    kept, manipulation = manipulation_check(specs, rewrites)  # pairs the attribute did not move are left out
    rewrites = [r for r in rewrites if r.key in kept]
    verdicts = run.verdicts(used + rewrites, verifiers)
    attacked: list[ProbeRecord] = []
    on_them: list[tuple[str, VerdictRecord]] = []
    if config.attacks is not None and attacked_by is not None:
        attacked = [p for p in run.attack_probes(attacked_by, planned) if p.key in run.store.probes]
        twins = [attacked_by.defended(d).label for d in config.attacks.defences]  # the same pairs, defended
        on_them = run.verdicts(attacked, [attacked_by.label, *twins]) if attacked else []
        on_them += run.verdicts(halo_sample(planned, config.attacks.share), twins) if attacked and twins else []
    return AuditedSet(tuple(used), tuple(rewrites), tuple(verdicts), injection, manipulation if specs else None,
                      tuple(attacked), tuple(on_them))  # fmt: skip


def assemble(
    run: RunDir,
    verifier: ModelSpec | Jury,
    records: AuditedSet,
    *,
    halo_against: str | None = None,
    failed: dict[str, str] | None = None,
    juror_results: dict[str, AuditResult] | None = None,
    adaptive: AdaptiveRecord | None = None,
    level: float = LEVEL,
    interim: bool = False,
    twins: Sequence[Asking] = (),
) -> tuple[AuditResult, pd.DataFrame]:
    """The complete audit of the set's verdicts by `verifier`, and the validated score table it was computed
    from: the statistics; for a joint judge its halo against `halo_against` (or its own per-criterion twin, one
    of its `twins`: radar_local.askings, each read by its measurement); for a jury its jurors but the
    `failed` ones, set beside `juror_results`; agreement with the team's labels; an adaptive audit's record.
    `interim`: an adaptive wave's audit, which decides whether to go on: no probe budget, no labels."""
    config, settings = run.config, replace(run.config.stats_settings, level=level)
    table = validate_scores(records.table(), run.table_path, run.rubric.scales, both_directions=False)
    measurements = {c: measurement(run.rubric.scale_of(c), config.scoring.expected) for c in run.rubric.ids}
    labels = run.labels
    # an interim audit (one verifier's wave) reads no labels: they are scored after the last wave
    labelled = None if labels is None or not labels.labels or interim else run.verdicts(labels.probes())
    failed = failed or {}
    jurors = [j.label for j in verifier.jurors if j.label not in failed] if isinstance(verifier, Jury) else []
    errors = label_errors(labels, labelled, jurors) if jurors and labels is not None and labelled is not None else None
    judge = None if isinstance(verifier, Jury) else verifier.judge
    twin = labels_of(twins, "halo check")
    unreasoned = labels_of(twins, "no reasoning")
    asked = Asked(
        halo_against=twin[0] if twin else halo_against,
        joint=judge.reading if judge is not None and judge.joint else None,  # whose coupling joint findings are
        repeats=labels_of(twins, "repeat"),
        paraphrases=labels_of(twins, "paraphrase"),
        unreasoned=unreasoned[0] if unreasoned else None,
        jurors=tuple(jurors),
        measurements=measurements,
        juror_errors=errors,
        manipulation=records.manipulation,
        intended={frozenset(p) for p in config.intended},
    )
    result = stats_for_table(
        table,
        run.table_path,
        settings,
        rubric=run.rubric,
        reference=run.reference,
        generator=config.generator.label,
        verifier=verifier.label,
        budget=not interim,
        asked=asked,
    )
    audit = Audit(run, verifier, records, result, settings, measurements, labelled, jurors, failed, juror_results,
                  interim)  # fmt: skip
    extra: dict = {"adaptive": adaptive}
    for measure in RUN_MEASUREMENTS:
        extra |= measure(audit)
    lint = [] if isinstance(verifier, Jury) else polarity_warnings(verifier, run.rubric)
    lint += sign_lints(run.rubric.items)
    lint += unfenced_warnings(verifier) if run.config.attacks is not None and isinstance(verifier, ModelSpec) else []
    return result.adding(warnings=[*result.warnings, *lint], **extra), table


@dataclass(frozen=True)
class Audit:
    """What the measurements read from the run directory read (beyond measures.Measured, the score table): the run,
    the verifier, the audited set, the cell's audit so far and how it was asked."""

    run: RunDir
    verifier: ModelSpec | Jury
    records: AuditedSet
    result: AuditResult
    settings: StatsSettings
    measurements: dict[str, Measurement]
    labelled: list[tuple[str, VerdictRecord]] | None  # the verdicts on the labelled responses (none if interim)
    jurors: list[str]  # a jury's jurors that did not fail
    failed: dict[str, str]
    juror_results: dict[str, AuditResult] | None
    interim: bool

    @property
    def judge(self) -> Judge | None:
        return None if isinstance(self.verifier, Jury) else self.verifier.judge


def jury_details(a: Audit) -> dict:
    """A jury's block as the run knows it: its aggregate, quorum, failed jurors and each juror's audit beside it."""
    v, found = a.verifier, a.result.measured(JuryBlock)
    if not isinstance(v, Jury) or found is None:
        return {}
    beside = side_by_side({v.label: a.result, **(a.juror_results or {})})
    block = JuryBlock(jurors=found.jurors, coupling=found.coupling, agreement=found.agreement, aggregate=v.aggregate,
                      min_jurors=v.quorum, failed=a.failed, side_by_side=beside)  # fmt: skip
    return {"jury": block}


def labelled_agreement(a: Audit) -> dict:
    """labels.py: the verifier's (and each juror's) agreement with the team's labels."""
    labels = a.run.labels
    if labels is None or a.labelled is None:
        return {}
    rubric, s = a.run.rubric, a.settings
    found = label_agreement(labels, a.labelled, [a.verifier.label, *a.jurors], rubric.ids, a.measurements,
                            rubric.scales, resamples=s.resamples, seed=s.seed, confidence=s.level)  # fmt: skip
    return {"labels": found}


def place_effects(a: Audit) -> dict:
    """stats/order.py: a joint judge's order effects, where it asks the criteria in another order than the rubric's."""
    judge = a.judge
    if judge is None or not judge.joint or judge.order == "rubric" or a.interim:
        return {}
    return {"order": order_of(a.run, a.verifier.label, a.records.probes, a.records.verdicts)}


def pairs_asked(a: Audit) -> dict:
    """stats/pairwise.py: the pairwise judge on the audited set's pairs of the shared criteria (pair_verdicts.py)."""
    if a.run.config.pairwise is None or a.interim or isinstance(a.verifier, Jury):
        return {}
    s = a.settings
    if (found := pairwise_of(a.run, a.verifier, a.records, s.resamples, s.seed, s.level)) is None:
        return {}
    return {"pairwise": found}


def item_pairs_asked(a: Audit) -> dict:
    """stats/item_pairs.py: the pairwise judge on a per-prompt rubric's items' pairs (pair_verdicts.py)."""
    if a.run.config.pairwise is None or a.interim or isinstance(a.verifier, Jury):
        return {}
    if (found := item_pairs_of(a.run, a.verifier, a.records, a.settings)) is None:
        return {}
    return {"item_pairs": found}


def rewards(a: Audit) -> dict:
    """stats/reward.py: the reward model's profile on the audited set's probes."""
    if a.run.config.reward is None or a.interim or isinstance(a.verifier, Jury):
        return {}
    return {"reward": reward_of(a.run, a.verifier, a.records, a.settings.level)}


def attacks_measured(a: Audit) -> dict:
    """stats/attacks.py: how far each attack moves the verifier's verdicts over its base probe's, as configured and
    with each defence of `attacks.defences` switched on (its defended twin's verdicts on the same pairs)."""
    settings, probes = a.run.config.attacks, a.records.attacked
    if settings is None or not probes or isinstance(a.verifier, Jury) or a.interim:
        return {}
    judges = {a.verifier.label: None, **{a.verifier.defended(d).label: d for d in settings.defences}}
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for label, v in (*a.records.verdicts, *a.records.attack_verdicts):
        if label in judges and v.score is not None:
            scores.setdefault((label, v.probe_key), {})[v.criterion] = float(v.score)
    asked = [(label, p) for label in judges for p in probes]  # every judge on the same pairs
    pairs = [(p.task_id, scores.get((j, p.key), {}), scores.get((j, p.base or ""), {})) for j, p in asked]
    columns, spans, attacked, base, to_top = pair_columns(a.run.rubric, pairs)
    index = {t: i for i, t in enumerate(dict.fromkeys(p.task_id for p in probes))}
    found = attack_table(
        [p.target for _, p in asked],
        np.array([index[p.task_id] for _, p in asked]),
        tuple(index),
        attacked,
        base,
        columns,
        spans,
        to_top,
        defences=[judges[j] for j, _ in asked],
        margin=settings.margin,
        resamples=a.settings.resamples,
        level=a.settings.level,
        seed=a.settings.seed,
    )
    return {"attacks": found}


def pair_attacks_measured(a: Audit) -> dict:
    """stats/attacks.py: the pairwise judge under attack (pair_attacks_of), beside the pointwise audit."""
    if (
        isinstance(a.verifier, Jury)
        or a.interim
        or (found := pair_attacks_of(a.run, a.verifier, a.records, a.settings)) is None
    ):
        return {}
    return {"pairwise_attacks": found}


RUN_MEASUREMENTS = (
    jury_details, labelled_agreement, place_effects, pairs_asked, item_pairs_asked, rewards, attacks_measured,
    pair_attacks_measured,
)  # fmt: skip


def order_of(
    run: RunDir, label: str, probes: Sequence[ProbeRecord], verdicts: Iterable[tuple[str, VerdictRecord]]
) -> OrderEffects | None:
    """The place effects of `label`'s joint calls on `probes` (stats/order.py), read from `verdicts` ((label,
    verdict), as the audited set or RunDir.verdicts holds them); None where none records a position."""
    criteria = list(run.rubric.ids)
    col = {c: k for k, c in enumerate(criteria)}
    row = {p.key: i for i, p in enumerate(probes)}
    position = np.full((len(probes), len(criteria)), -1)
    scores = np.full((len(probes), len(criteria)), np.nan)
    for by, v in verdicts:
        if by != label or v.position is None:
            continue
        scale = run.rubric.scale_of(v.criterion)
        i, k = row[v.probe_key], col[v.criterion]
        position[i, k] = v.position
        if v.score is not None:
            scores[i, k] = float((v.score - scale.low) / scale.span)
    used = (position >= 0).any(axis=1)
    if not used.any():
        return None
    strata: dict[tuple[str, str | None, str], int] = {}
    stratum = np.array([strata.setdefault((p.task_id, p.target, p.direction), len(strata)) for p in probes])
    return order_effects(label, criteria, stratum[used], position[used], scores[used])


def reward_of(run: RunDir, verifier: ModelSpec, records: AuditedSet, level: float) -> RewardProfile | None:
    """The reward model's scalars on the audited set's probes (stats/reward.py), beside the verifier's scores of
    each criterion on them; None where none is stored yet."""
    assert run.config.reward is not None
    probes = [p for p in records.probes if p.direction in ("+", "-")]
    requests = run.plan.reward_requests(probes, run.config.reward)
    stored = [run.store.scores.get(r.key) for r in requests]
    if not any(v is not None for v in stored):
        return None
    rows = [
        (p.task_id, p.target, p.direction, p.variant, None if v is None else v.score) for p, v in zip(probes, stored)
    ]
    scored = records.verdicts_by_probe.get(verifier.label, {})
    judge = {
        c: np.array(
            [np.nan if (v := scored.get(p.key, {}).get(c)) is None or v.score is None else v.score for p in probes],
            float,
        )
        for c in run.rubric.ids
    }
    return reward_profile(run.config.reward.label, list(run.rubric.ids), rows, judge, level=level)


def unfenced_warnings(verifier: ModelSpec) -> list[str]:
    """The judge's template where it shows the response with no delimiter pair around it (attack_probes.unfenced)."""
    template = verifier.judge.template if verifier.judge is not None else None
    if not unfenced(template):
        return []
    return [
        f"lint: the template of '{verifier.label}' shows the response unfenced (no delimiter pair around "
        "{{ response }}): a response can write text that reads as the template's own; fence it "
        "(<response>{{ response }}</response>) and audit it under attack again"
    ]


def polarity_warnings(verifier: ModelSpec, rubric: Rubric) -> list[str]:
    """The judge's templates (its own and each paraphrase) that may read a rubric scale the other way."""
    found = []
    for spec in [verifier, *verifier.paraphrased()]:
        template = spec.judge.template if spec.judge is not None else None
        for scale in {s.name: s for s in rubric.scales.values()}.values():
            if template is not None and (said := polarity_warning(template, scale)) is not None:
                top = scale.top
                found.append(
                    f"the template of '{spec.label}' may read the scale the other way from the rubric: it says "
                    f"'{said}', where the rubric's {scale.name} scale puts the best at {top} (a self-effect is the + "
                    "probes' score minus the - probes'); check the template"
                )
    return found
