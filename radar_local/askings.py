"""Everything an audit asks of a verifier's probes beyond its own verdicts, written once (issue 62): the halo check's
per-criterion twin, the repeats, each other wording of the template, a thinking judge's ablation. Each is an
`Asking`, a twin of the verifier under its own label; the audit asks them in this order (auditing.rescore), the
context is sized for their requests (context.request_bounds), `--plan` counts their calls (design.design_lines),
and the measurements read them by kind (measures.Asked). A new twin is one entry here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from radar_local.config import AuditConfig
from radar_local.specs import ModelSpec

Kind = Literal["halo check", "repeat", "paraphrase", "no reasoning"]


@dataclass(frozen=True)
class Asking:
    """One set of verdicts asked on a verifier's probes: who answers (a twin labelled '<label>-...'), what for, under
    which run.json stage, and on which share of each stratum's probes (None: every probe)."""

    judge: ModelSpec
    kind: Kind
    stage: str
    share: float | None = None


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


def labels_of(asked: Sequence[Asking], kind: Kind) -> tuple[str, ...]:
    """The labels of the twins asked for `kind`, in the order asked."""
    return tuple(a.judge.label for a in asked if a.kind == kind)
