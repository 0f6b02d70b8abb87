"""The statistics' settings, one object: built once (from a config, `AuditSettings.stats_settings`, or from
the `radar stats` options) and passed as one argument to the audit of a score table."""

from __future__ import annotations

from dataclasses import dataclass, field

from radar_local.stats.bias import BIAS
from radar_local.stats.bootstrap import LEVEL, RESAMPLES
from radar_local.stats.coupling import TAU, LeakageDefinition
from radar_local.stats.flags import Thresholds


@dataclass(frozen=True)
class StatsSettings:
    tau: float = TAU  # the reliability gate on a self-effect
    resamples: int = RESAMPLES  # bootstrap resamples; 0: no intervals
    seed: int = 0
    level: float = LEVEL  # every interval's coverage
    thresholds: Thresholds = field(default_factory=Thresholds)  # the pair flags'
    bias_threshold: float = BIAS  # judge bias's flag
    leakage: LeakageDefinition = "ratio_of_means"  # how a leakage is taken over tasks
    screening: float | None = None  # a false discovery rate flags are also screened at (stats/screening.py)
    # An adaptive audit's, read by a per-prompt rubric's tests (stats/per_prompt.py): the looks its waves can take, by
    # which each exact test's p-value is multiplied, and its first wave's N, on which the pooled findings are read.
    looks: int = 1
    first_wave: int | None = None
