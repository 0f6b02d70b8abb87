"""What an audit measures of one cell's verdicts beyond its coupling (issue 62): each measurement is a name (its
stats.json block or blocks), a function of what every measurement reads (`Measured`), and what the audit asked for
it (`Asked`: the labels of the verdicts that answer it). The hub, analysis.stats_for_table, loops over MEASUREMENTS
with no branch of its own; a new measurement is its statistics module in stats/, one function and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from radar_local.common import to_json
from radar_local.rubric import Rubric
from radar_local.scale import Scale
from radar_local.stats.bias import Bias, nuisance_pairs, nuisance_table
from radar_local.stats.coupling import double_counted_share
from radar_local.stats.drift import drift
from radar_local.stats.halo import halo
from radar_local.stats.joint import Reading, read_joint
from radar_local.stats.jurors import JuryBlock, against_jurors, among_jurors
from radar_local.stats.probes import ProbeMatrix, probe_matrix
from radar_local.stats.raters import Measurement
from radar_local.stats.repeats import repeats
from radar_local.stats.result import AuditResult
from radar_local.stats.settings import StatsSettings
from radar_local.stats.stored import DoubleCount
from radar_local.stats.wording import wording


@dataclass(frozen=True)
class Asked:
    """What the audit asked of this cell beyond its steered verdicts, each by the verifier labels that answer it."""

    halo_against: str | None = None  # the same judge's per-criterion verdicts, where this one calls jointly
    joint: Reading | None = None  # where this judge scores every criterion in one call: whose coupling it reports
    repeats: tuple[str, ...] = ()  # its verdicts asked again
    paraphrases: tuple[str, ...] = ()  # its judge under each other wording of its template
    unreasoned: str | None = None  # its thinking judge answering at once (the ablation)
    jurors: tuple[str, ...] = ()  # where it is a jury: its jurors
    measurements: dict[str, Measurement] = field(default_factory=dict)  # each criterion's level of measurement
    juror_errors: dict[str, np.ndarray] | None = None  # criterion -> jurors x labelled responses
    manipulation: dict[str, Any] | None = None  # the judge-bias rewrites' manipulation check
    intended: set[frozenset[str]] | None = None  # the pairs the rubric means to couple


@dataclass(frozen=True)
class Measured:
    """What every measurement reads: the table, this cell's probe matrix and coupling, the rubric's scales, the
    settings, what was asked, and the blocks measured before it."""

    df: pd.DataFrame  # every verifier's verdicts of this generator's probes (no rewrites)
    rewrites: pd.DataFrame  # this cell's judge-bias pairs
    cell: ProbeMatrix
    core: AuditResult
    scales: dict[str, Scale]
    rubric: Rubric | None
    settings: StatsSettings
    asked: Asked
    blocks: dict[str, Any]

    @property
    def criteria(self) -> list[str]:
        return list(self.cell.criteria)

    @property
    def spans(self) -> list[Fraction]:
        return [self.scales[c].span for c in self.criteria]

    @property
    def levels(self) -> dict[str, list[float]]:
        return {c: [float(v) for v in self.scales[c].values] for c in self.criteria}

    def matrix(self, label: str) -> ProbeMatrix:
        """The verdicts of `label` on this cell's probes, as this cell's are read."""
        return probe_matrix(self.df, self.criteria, self.cell.generator, label, self.spans)

    @property
    def draws(self) -> dict[str, Any]:
        return {"resamples": self.settings.resamples, "seed": self.settings.seed, "level": self.settings.level}


def judge_bias(m: Measured) -> dict[str, Any]:
    """stats/bias.py: each attribute's paired rewrites, where the audit made them."""
    if not len(m.rewrites) and not m.asked.manipulation:
        return {}
    steered = {a: x["steered"] for a, x in (m.asked.manipulation or {}).items()}
    rows = nuisance_table(
        nuisance_pairs(m.rewrites, m.criteria),
        m.criteria,
        [float(m.core.self_effect[c]) for c in m.criteria],
        [bool(m.core.reliable[c]) for c in m.criteria],
        threshold=m.settings.bias_threshold,
        intended=m.asked.intended,
        steered=steered,
        spans=m.spans,
        **m.draws,
    )
    s = m.settings
    return {
        "bias": Bias(threshold=s.bias_threshold, level=s.level, rows=rows, manipulation=to_json(m.asked.manipulation))
    }


def double_count(m: Measured) -> dict[str, Any]:
    """The rubric's weighted aggregate (its `weights`, else equal weights) and the share of it that double-counts
    through coupled, reliable pairs."""
    if m.rubric is None:
        return {}
    rubric, result = m.rubric, m.core
    weights = {c: (rubric.weights or {}).get(c, 0.0 if rubric.weights else 1.0) for c in result.criteria}
    w = np.array([weights[c] for c in result.criteria], float)
    overall, share = double_counted_share(result.leakage.to_numpy(), result.reliable.to_numpy(), w)
    block = {
        "weights": weights,
        "rubric_weights": rubric.weights is not None,
        "share": overall,
        "by_source": dict(zip(result.criteria, share)),
    }
    return {"double_count": DoubleCount.model_validate(to_json(block))}


def halo_check(m: Measured) -> dict[str, Any]:
    """stats/halo.py: a joint judge against its own per-criterion verdicts on the same probes."""
    if m.asked.halo_against is None:
        return {}
    return {"halo": halo(m.matrix(m.asked.halo_against), m.cell, **m.draws)}


def asked_again(m: Measured) -> dict[str, Any]:
    """stats/repeats.py: the verdicts asked again, against the first asking."""
    if not m.asked.repeats:
        return {}
    mats = [m.cell, *(m.matrix(label) for label in m.asked.repeats)]
    return {"repeats": repeats(mats, m.asked.measurements, **m.draws)}


def reworded(m: Measured) -> dict[str, Any]:
    """stats/wording.py: the judge under each other wording of its template."""
    if not m.asked.paraphrases:
        return {}
    mats = [m.cell, *(m.matrix(label) for label in m.asked.paraphrases)]
    return {"wording": wording(mats, m.levels, m.asked.measurements, **m.draws)}


def thinking(m: Measured) -> dict[str, Any]:
    """stats/drift.py: what the judge's reasoning changes, its verdicts at once "before", reasoned "after"."""
    if m.asked.unreasoned is None:
        return {}
    return {"thinking": drift(m.matrix(m.asked.unreasoned), m.cell, m.levels, m.asked.measurements, **m.draws)}


def jury(m: Measured) -> dict[str, Any]:
    """stats/jurors.py: the jury's worst coupling against each juror's, and the jurors' agreement."""
    if not m.asked.jurors:
        return {}
    jurors, criteria = list(m.asked.jurors), m.criteria
    mats = {j: m.matrix(j) for j in jurors}
    cell = m.df[(m.df["generator"] == m.cell.generator) & m.df["verifier"].isin(jurors)]
    wide = cell.pivot_table(
        index=["task_id", "target", "direction", "variant"],
        columns=["criterion", "verifier"],
        values="score",
        aggfunc="first",
        dropna=False,
    )
    missing = np.full(len(wide), np.nan)  # a juror with no score of a criterion
    scores = {
        c: np.vstack([wide[(c, j)].to_numpy(float) if (c, j) in wide.columns else missing for j in jurors])
        for c in criteria
    }
    draws = m.draws
    return {
        "jury": JuryBlock(
            jurors=jurors,
            coupling=against_jurors(m.cell, mats, tau=m.settings.tau, **draws),
            agreement=among_jurors(
                scores,
                jurors,
                m.asked.measurements or dict.fromkeys(criteria, "ordinal"),
                errors=m.asked.juror_errors,
                **draws,
            ),
        )
    }


def joint_reading(m: Measured) -> dict[str, Any]:
    """stats/joint.py: a joint judge's pair findings read as its rubric's (the halo demoted) or as deployed."""
    if m.asked.joint is None:
        return {}
    pairs, block = read_joint(m.core.pairs, m.blocks.get("halo"), m.asked.joint, m.core.family is not None)
    return {"pairs": pairs, "joint": block}


# In order: a measurement may read the blocks of those before it (the joint reading reads the halo check's).
MEASUREMENTS: tuple[Callable[[Measured], dict[str, Any]], ...] = (
    judge_bias,
    double_count,
    halo_check,
    asked_again,
    reworded,
    thinking,
    jury,
    joint_reading,
)
