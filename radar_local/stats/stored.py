"""The blocks of stats.json: each made by its producer as a model, dumped as it is stored and read back by the
same class, so the report reads attributes the type checker checks against the producer."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict

Num = float | None  # a stored number; null is undefined (NaN)
Matrix = dict[str, dict[str, float | None]]
Evidence = Literal["confirmed", "coupled", "screened", "possible"]  # stats/flags.EVIDENCE


class Interval(NamedTuple):
    """An interval's ends, stored as [low, high] (null where undefined). Its level, method and degrees of freedom
    are its block's (`level`, `bootstrap`, `family`): one per block, never repeated per cell."""

    low: float | None
    high: float | None


B = TypeVar("B", bound="Block")  # a block's type, as `AuditResult.measured` is asked for one


class Block(BaseModel):
    """A block of stats.json: names are text, numbers numbers (read back strictly: never a string or a bool),
    intervals [low, high], no NaN (null); a key it does not know is an error."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    def stored(self) -> dict[str, Any]:
        """The block as stats.json holds it: what its producer set (an optional key left out stays out)."""
        return self.model_dump(mode="json", exclude_unset=True)


# The blocks whose producers sit above the AuditResult (stats/audit.py, analysis.py, calibration.py,
# adaptive.py) live here, so the result and its file can name them without an import cycle.


class PairCoupling(Block):
    """One criterion pair's coupling: each direction's leakage, their symmetric and asymmetric parts."""

    a: str
    b: str
    leak_ab: Num
    leak_ba: Num
    sym: Num
    asym: Num


class Resampling(Block):
    """`bootstrap`: how the intervals were drawn (stats/audit.py)."""

    resamples: int
    seed: int
    level: float
    method: str
    df: dict[str, float] | None  # each source's design degrees of freedom
    undefined: dict[str, dict[str, int]] | None = None  # resamples in which a defined value was undefined, by cell
    no_interval: dict[str, str] | None = None  # the global summaries without one, and why


class ProbeCounts(Block):
    """`probes`: what the statistics rest on (stats/audit.py)."""

    directed: int
    unconditioned: int
    min_per_stratum: int
    unscored_cells: int
    score_values: Literal["integer", "continuous"]


class Unscored(Block):
    """`unscored`: verdicts without a score, and strata with none on their own target, per task."""

    verdicts: int
    verdicts_total: int
    strata: int
    strata_total: int
    tasks: dict[str, int]


class ReferenceAgreement(Block):
    """`agreement`: the audit's vector against the human reference (stats/agreement.py)."""

    pearson: Num
    spearman: Num
    mae: Num
    n_pairs: int
    reason: str | None  # why a correlation is undefined


class Baselines(Block):
    """`baselines`: redundancy without steering, per pair, and each against the reference."""

    sample: str
    synthetic_correlation: dict[str, Num] | None
    agreement: dict[str, ReferenceAgreement] | None = None
    whitening_redundancy: dict[str, Num] | None
    score_profile_redundancy: dict[str, Num] | None


class Spread(Block):
    mean: Num
    sd: Num
    defined: int


class BudgetRow(Block):
    """One row of `budget`: a statistic's spread over subsets of n probes per stratum (stats/budget.py)."""

    n: int
    subsets: int
    all_probes: bool | None = None
    sym: list[Spread] | None = None
    pearson: Spread | None = None
    spearman: Spread | None = None
    mae: Spread | None = None


class Scales(Block):
    """`scales`: each criterion's scale and the footing the effects are on."""

    footing: str
    criteria: dict[str, str]


class DoubleCount(Block):
    """`double_count`: the share of the rubric's weighted aggregate that counts one movement twice."""

    weights: dict[str, float]
    rubric_weights: bool
    share: Num
    by_source: dict[str, Num]


class Discrimination(Block):
    discrimination: Num  # the sd of a verifier's scores on a criterion, 0-1
    n: int


class CrossAgreement(Block):
    agreement: Num  # 1 - mean |difference| of two verifiers' scores, 0-1
    n: int


class Calibration(Block):
    """`calibration`: the judges' discrimination, agreement, stability and score-profile redundancy (ARTS-Hybrid;
    calibration.py)."""

    verifiers: dict[str, dict[str, Discrimination]]
    agreement: dict[str, dict[str, CrossAgreement]]  # "a vs b" -> criterion
    stability: dict[str, Num]
    redundancy: dict[str, dict[str, Num]]


class DecisionRecord(Block):
    kind: str
    criteria: list[str]
    value: bool | None
    sources: list[str]


class Wave(Block):
    wave: int
    probes: int
    cells: int
    verdicts: int
    verdicts_total: int
    verifier_calls: int
    open: list[DecisionRecord]
    grow: list[str]


class AdaptiveRecord(Block):
    """`adaptive`: an adaptive audit's settings, waves, and the decisions that settled or stayed open."""

    start_n: int
    max_n: int
    step: int
    confidence: float
    fail_on_sym: float | None
    waves: list[Wave]
    settled: list[DecisionRecord]
    at_budget: list[DecisionRecord]
    probes: int
    verdicts: int
    verifier_calls: int
    budget: int | None = None  # the call budget the audit was given
    stopped_by: Literal["settled", "max_n", "budget"] | None = None  # why it made no further wave
