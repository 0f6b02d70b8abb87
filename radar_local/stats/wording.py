"""A judge's sensitivity to its template's wording: the same probes scored under each paraphrase of its template
(`judge: {paraphrases: [...]}`, issue 47).

Two views, each an existing statistic read over the wordings:
- `agreement`: the verdicts across the wordings as repeated askings (stats/repeats.py): per criterion the share of
  probes whose verdicts differ between some two wordings, Krippendorff's alpha with the wordings as raters, the sd
  of a verdict across wordings and its share of the within-stratum variance;
- `against`: each paraphrase against the judge's own template as a drift (stats/drift.py): per criterion the
  exact agreement (1 - the flip rate), kappa and the shift, and every self-effect and leakage's paired change with
  its interval and flag (rises, falls). The report names the largest flip rate and the leakages that move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from radar_local.stats.bootstrap import LEVEL, RESAMPLES
from radar_local.stats.drift import Drift, drift
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.raters import Measurement
from radar_local.stats.repeats import Repeats, repeats
from radar_local.stats.stored import Block


class Wording(Block):
    templates: list[str]  # the verifier labels: the judge's own template, then each paraphrase
    agreement: Repeats
    against: list[Drift]  # each paraphrase against the judge's own template


def wording(
    matrices: Sequence[ProbeMatrix],
    levels: Mapping[str, Sequence[float]],
    measurements: Mapping[str, Measurement],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Wording:
    """`matrices`: the judge's verdicts under its own template, then under each paraphrase."""
    own, *others = matrices
    return Wording(
        templates=[m.verifier for m in matrices],
        agreement=repeats(matrices, measurements, resamples=resamples, seed=seed, level=level),
        against=[
            drift(own, other, levels, measurements, resamples=resamples, seed=seed, level=level) for other in others
        ],
    )
