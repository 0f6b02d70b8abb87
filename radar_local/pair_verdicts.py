"""The pairwise judge's verdicts as an audit reads them from a run directory (config `pairwise:`): on the shared
criteria's pairs (stats/pairwise.py), on a per-prompt rubric's items' pairs (stats/item_pairs.py), on the team's
pairwise labels, under attack (stats/attacks.py), and the audit of a judge asked only pairs."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from radar_local.errors import RadarError
from radar_local.labels import item_key_of
from radar_local.plan import OVERALL, PairRequest
from radar_local.records import ProbeRecord, VerdictRecord
from radar_local.rundir import RunDir
from radar_local.specs import ModelSpec
from radar_local.stats.attacks import STEERED, PairAttacks, pair_attack_table
from radar_local.stats.item_pairs import ItemPairs, item_pairs
from radar_local.stats.pairwise import (
    DOWN_FIRST,
    TIE,
    UP_FIRST,
    A,
    B,
    HumanPairs,
    PairVerdicts,
    Pairwise,
    against_raters,
    pairwise,
)
from radar_local.stats.pairwise_audit import KIND, PairwiseAudit
from radar_local.stats.result import SCHEMA_VERSION
from radar_local.stats.settings import StatsSettings


class AuditedSet(Protocol):
    """What the pairwise readers take of the audited set (audited.AuditedSet, which imports them)."""

    @property
    def probes(self) -> tuple[ProbeRecord, ...]: ...

    @property
    def verdicts_by_probe(self) -> dict[str, dict[str, dict[str, VerdictRecord]]]: ...


CHOICES = {1.0: A, 0.0: B, 0.5: TIE}  # a pairwise verdict's stored score (config.PairwiseJudge.choices)


def asked_pairs(
    run: RunDir, verifier: ModelSpec, records: AuditedSet, items: bool
) -> tuple[PairVerdicts, list[str]] | None:
    """The pairwise judge's verdicts on the audited set's pairs (PairPlan.requests) and the tasks they index: those
    of the shared criteria (a pair steered on one, asked about one or overall), beside the verifier's pointwise
    verdicts on them (the same judge's, unless pairwise has a model of its own), or (`items`) every other: a pair
    steered on a per-prompt rubric's item or asked about one. None where none is stored yet."""
    assert run.config.pairwise is not None
    judge = run.config.pairwise.judge(verifier)
    shared = {c.id for c in run.rubric.shared}
    requests = [
        r
        for r in run.plan.pairs.requests(list(records.probes), judge)
        if (r.source in shared and r.criterion in (*shared, OVERALL.id)) != items
    ]
    stored = [run.store.scores.get(r.key) for r in requests]
    if not any(v is not None for v in stored):
        return None
    crit = list(run.rubric.ids) if items else [c for c in run.rubric.ids if c in shared]
    col = {**{c: i for i, c in enumerate(crit)}, OVERALL.id: len(crit)}
    tasks = sorted({r.task_id for r in requests})
    index = {t: i for i, t in enumerate(tasks)}
    choice = [-1 if v is None or v.score is None else CHOICES.get(float(v.score), -1) for v in stored]
    pointwise = None if items else records.verdicts_by_probe.get(verifier.label)  # None: pairs only (or items)

    def ranked(r: PairRequest) -> int:
        """How the verifier's pointwise verdicts rank the pair on the criterion asked (+1 up higher)."""
        assert pointwise is not None
        up, down = (getattr(pointwise.get(key, {}).get(r.criterion), "score", None) for key in r.probe_key.split("|"))
        return 0 if up is None or down is None or up == down else 1 if up > down else -1

    verdicts = PairVerdicts(
        tuple(crit),
        np.array([index[r.task_id] for r in requests]),
        np.array([col[r.source] for r in requests]),
        np.array([r.variant for r in requests]),
        np.array([col[r.criterion] for r in requests]),
        np.array([r.order for r in requests]),
        np.array(choice),
        None if pointwise is None else np.array([ranked(r) for r in requests]),
    )
    return verdicts, tasks


def pairwise_of(
    run: RunDir, verifier: ModelSpec, records: AuditedSet, resamples: int, seed: int, level: float
) -> Pairwise | None:
    """stats/pairwise.py on the shared criteria's pairs (asked_pairs); None where none is stored (or the rubric
    has no shared criterion)."""
    assert run.config.pairwise is not None
    judge = run.config.pairwise.judge(verifier)
    if (read := asked_pairs(run, verifier, records, items=False)) is None:
        return None
    found = pairwise(read[0], resamples=resamples, seed=seed, level=level)
    if judge is not verifier:  # its own model: named, and its agreement is with another judge's pointwise verdicts
        found = found.model_copy(update={"judge": judge.label})
    if run.labels is None or not run.labels.pairs:
        return found
    return found.model_copy(update={"humans": against_labels(run, judge, resamples, seed, level)})


def item_pairs_of(run: RunDir, verifier: ModelSpec, records: AuditedSet, s: StatsSettings) -> ItemPairs | None:
    """stats/item_pairs.py on a per-prompt rubric's pairs (asked_pairs); None where it has no items or none of
    their pairs' verdicts is stored."""
    assert run.config.pairwise is not None
    if not run.rubric.items or (read := asked_pairs(run, verifier, records, items=True)) is None:
        return None
    judge = run.config.pairwise.judge(verifier)
    found = item_pairs(*read, run.rubric.items, run.rubric.shared, level=s.level, fdr=s.screening, seed=s.seed,
                       looks=s.looks, first=s.first_wave)  # fmt: skip
    return found if judge is verifier else found.model_copy(update={"judge": judge.label})


def pairwise_audit(run: RunDir, verifier: ModelSpec, records: AuditedSet) -> PairwiseAudit:
    """The audit of a judge asked only pairs (pairwise.only) on the audited set's pairs: the pairwise block alone."""
    settings = run.config.stats_settings
    found = pairwise_of(run, verifier, records, settings.resamples, settings.seed, settings.level)
    items = item_pairs_of(run, verifier, records, settings)  # a per-prompt rubric's
    if found is None and items is None:
        raise RadarError(f"{run.root}: no pairwise verdict of '{verifier.label}' is stored; run `radar audit` again")
    unread = run.labels is not None and bool(run.labels.labels)  # pointwise labels: the judge scores none
    warnings = ["the labels' pointwise rows are not scored: the judge was asked only pairs"] if unread else []
    return PairwiseAudit(
        schema_version=SCHEMA_VERSION,
        kind=KIND,
        generator=run.config.generator.label,
        verifier=verifier.label,
        rubric=run.rubric.id,
        criteria=list(run.rubric.ids),
        tasks=sorted({p.task_id for p in records.probes}),
        probes=sum(p.direction in ("+", "-") for p in records.probes),
        warnings=warnings,
        pairwise=found,
        item_pairs=items,
        attacks=pair_attacks_of(run, verifier, records, settings),
    )


def against_labels(run: RunDir, verifier: ModelSpec, resamples: int, seed: int, level: float) -> HumanPairs:
    """The pairwise judge's verdicts on the team's pairwise labels against the raters' choices."""
    assert run.labels is not None
    questions = run.labels.pair_probes()
    index = {(a.key, b.key, c): i for i, (a, b, c) in enumerate(questions)}
    raters = np.zeros((len(questions), 2))
    for label in run.labels.pairs:
        a, b = item_key_of(label.task_id, label.response_a), item_key_of(label.task_id, label.response_b)
        if label.preferred != "tie":
            raters[index[a, b, label.criterion], 0 if label.preferred == "A" else 1] += 1
    requests = run.plan.pairs.labelled(questions, verifier)  # each question's two orders, in turn
    stored = [run.store.scores.get(r.key) for r in requests]
    choice = [-1 if v is None or v.score is None else CHOICES.get(float(v.score), -1) for v in stored]
    asked = [c for _, _, c in questions]
    return against_raters(
        run.labels.source, asked, raters, np.array(choice).reshape(-1, 2), resamples=resamples, seed=seed, level=level
    )


def pair_attacks_of(run: RunDir, verifier: ModelSpec, records: AuditedSet, s: StatsSettings) -> PairAttacks | None:
    """stats/attacks.py: how far each attack in the worse response of a steered pair moves the pairwise judge to
    prefer it (RunDir.pair_attacks), against the same pair without it, in both orders; None where none is asked."""
    config, scores = run.config, run.store.scores
    if config.attacks is None or config.pairwise is None:
        return None
    judge, probes = config.pairwise.judge(verifier), list(records.probes)
    pairs = run.pair_attacks(judge, probes)
    plain = {(r.probe_key, r.criterion, r.order): r.key for r in run.plan.pairs.requests(probes, judge)}
    of: dict[str, tuple[str, str, bool]] = {}  # each attacked probe: its kind, its pair unattacked (keyed up|down),
    for better, worse in pairs:  # and whether it is the up response (a pitfall's)
        flip = better.direction == "-"
        of[worse.key] = (worse.target, f"{worse.base}|{better.key}" if flip else f"{better.key}|{worse.base}", flip)

    def choice(v: VerdictRecord | None) -> int:
        return -1 if v is None or v.score is None else CHOICES.get(float(v.score), -1)

    asked: list[tuple[str, PairRequest, int, int]] = []  # kind, request, choice with the attack, without
    for r in run.plan.pairs.attacked(pairs, judge):
        kind, unattacked, flip = of[r.probe_key.split("|")[1]]
        same = (DOWN_FIRST if r.order == UP_FIRST else UP_FIRST) if flip else r.order  # its worse response in one slot
        base = scores.get(plain.get((unattacked, r.criterion, same), ""))
        if r.key in scores and base is not None:
            asked.append((kind, r, choice(scores[r.key]), choice(base)))
    if not asked:
        return None
    question = [STEERED if r.criterion == r.source else r.criterion for _, r, _, _ in asked]
    questions = [*dict.fromkeys(question)]
    index = {t: i for i, t in enumerate(dict.fromkeys(r.task_id for _, r, _, _ in asked))}
    return pair_attack_table(
        [kind for kind, _, _, _ in asked],
        np.array([index[r.task_id] for _, r, _, _ in asked]),
        tuple(index),
        questions,
        np.array([questions.index(q) for q in question]),
        np.array([r.order for _, r, _, _ in asked]),
        np.array([x for _, _, x, _ in asked]),
        np.array([x for _, _, _, x in asked]),
        margin=config.attacks.margin,
        resamples=s.resamples,
        level=s.level,
        seed=s.seed,
    )
