"""Everything an audit asks of a verifier's probes beyond its own verdicts, written once (issue 62): the halo check's
per-criterion twin, the repeats, each other wording of the template, a thinking judge's ablation (`askings`: each a
twin of the verifier under its own label, asked for verdicts), then the pairs, the reward model's scalars and the
team's labelled responses (`beside`). Each is an `Asking`; `Run.ask` asks any of them, the audit asks them in this
order (auditing.rescore), the context is sized for the twins' requests (context.request_bounds), `--plan` counts
their calls (design.design_lines), and the measurements read them by kind (measures.Asked). A new twin is one entry
here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from radar_local.config import AuditConfig
from radar_local.records import ProbeRecord
from radar_local.specs import ModelSpec
from radar_local.stats.halo import checked_per_stratum

Kind = Literal[
    "halo check", "repeat", "paraphrase", "no reasoning", "pairs", "pair attacks", "reward", "labels", "attacks",
    "defended",
]  # fmt: skip


@dataclass(frozen=True)
class Asking:
    """One set of verdicts asked on a verifier's probes: who answers (a twin labelled '<label>-...'), what for, under
    which run.json stage, and on which share of each stratum's probes (None: every probe)."""

    judge: ModelSpec
    kind: Kind
    stage: str
    share: float | None = None
    attacked: ModelSpec | None = None  # a defended twin: the judge whose attacked probes (and their bases) it scores


def askings(config: AuditConfig, verifier: ModelSpec) -> list[Asking]:
    """What the audit of `config` asks on `verifier`'s probes beyond its verdicts, in the order it asks them."""
    asked = []
    if (check := verifier.halo_check()) is not None:  # a joint judge per criterion, on a stratified sample
        twin, share = check
        asked.append(Asking(twin, "halo check", "halo check", share))
    if (consistency := config.consistency) is not None and verifier == config.verifiers[0]:
        asked += [  # the first verifier's verdicts asked again, on the halo check's kind of sample
            Asking(twin, "repeat", f"repeat {twin.repeat}", consistency.share)
            for twin in verifier.repeats(consistency.repeats)
        ]
    asked += [  # the same probes under each other wording of the judge's template
        Asking(twin, "paraphrase", twin.label.removeprefix(f"{verifier.label}-")) for twin in verifier.paraphrased()
    ]
    if (at_once := verifier.unreasoned()) is not None:  # a thinking judge answering at once: the ablation
        asked.append(Asking(at_once, "no reasoning", "no reasoning"))
    return asked


def beside(config: AuditConfig, verifier: ModelSpec) -> list[Asking]:
    """What the audit asks beside the twins, in order: the pairs, the reward model and the attacked probes (on the
    first verifier's probes, once; the attacked probes of a judge `radar score` adds too, in its own format), the
    team's labelled responses (of every verifier)."""
    first = verifier == config.verifiers[0]
    attacked = first or verifier not in config.verifiers
    asked = pairs_askings(config, verifier) if first else []
    asked += [reward_asking(config)] if first and config.reward is not None else []
    asked += attack_askings(config, verifier) if attacked else []
    return asked + ([labels_asking(verifier)] if config.labels is not None else [])


def pairs_askings(config: AuditConfig, verifier: ModelSpec) -> list[Asking]:
    """The steered pairs (and the team's labelled pairs) asked of `verifier`, or of pairwise's own model, then, with
    `attacks:`, its attacked pairs (their worse response attacked); none without `pairwise:`."""
    if config.pairwise is None:
        return []
    judge = config.pairwise.judge(verifier)
    attacked = [Asking(judge, "pair attacks", "pair attack")] if config.attacks is not None else []
    return [Asking(judge, "pairs", "pairwise"), *attacked]


def reward_asking(config: AuditConfig) -> Asking:
    """The reward model's scalar on every probe."""
    assert config.reward is not None
    return Asking(config.reward, "reward", "reward")


def attack_askings(config: AuditConfig, verifier: ModelSpec) -> list[Asking]:
    """The probes attacked in `verifier`'s own format (attack_probes.py) scored by it, then, with those probes'
    bases, by it with each defence of `attacks.defences` switched on (defences.py); none without `attacks:`, nor for
    a judge asked only pairs (its pairs are attacked: pairs_askings)."""
    if config.attacks is None or (config.pairwise is not None and config.pairwise.only):
        return []
    defended = [verifier.defended(d) for d in config.attacks.defences]
    return [Asking(verifier, "attacks", "attack")] + [
        Asking(twin, "defended", twin.label.removeprefix(f"{verifier.label}-"), attacked=verifier) for twin in defended
    ]


def labels_asking(verifier: ModelSpec) -> Asking:
    """The team's labelled responses scored by `verifier` on their labelled criteria."""
    return Asking(verifier, "labels", "labels")


def halo_sample(probes: list[ProbeRecord], share: float) -> list[ProbeRecord]:
    """The probes an asking of a share scores: in each stratum the first ceil(share x N) variants, so the sample is
    paired, stratified and the same on resume (a grown stratum adds to it, never swaps it)."""
    counts = Counter((p.task_id, p.target, p.direction) for p in probes)
    return [p for p in probes if p.variant < checked_per_stratum(share, counts[p.task_id, p.target, p.direction])]


def labels_of(asked: Sequence[Asking], kind: Kind) -> tuple[str, ...]:
    """The labels of the twins asked for `kind`, in the order asked."""
    return tuple(a.judge.label for a in asked if a.kind == kind)
