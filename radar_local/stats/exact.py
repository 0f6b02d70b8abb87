"""Point estimates in exact rational arithmetic (eq. 1-6), for every comparison with a threshold.

Likert scores make every point estimate a rational number. In floats, 0.6 - 0.2 is
0.39999999999999997, so a self-effect of exactly tau = 0.40 would fail the gate (App. C asks for
SelfEffect >= tau). Here each estimate stays a Fraction wherever it meets a threshold (the gate,
the flags) and is rounded to float once, correctly, for output. Rounding is monotone, so a stored
value compared with a threshold read from a decimal (`--fail-on-sym 0.6`) keeps its side of it.
Thresholds are taken as the decimals the user wrote: 0.4 means 2/5, not the binary 0.4000000000000000222.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import Coupling, LeakageDefinition, self_effect

Q = Fraction | None  # an exact value, or None where it is undefined


def decimal(x: float) -> Fraction:
    """The threshold the user wrote: float 0.4 -> 2/5 (its shortest decimal repr)."""
    return Fraction(repr(float(x)))


def at_least(value: Q, threshold: float) -> bool:
    return value is not None and value >= decimal(threshold)


def at_most(value: Q, threshold: float) -> bool:
    return value is not None and value <= decimal(threshold)


def _mean(values: list[Q]) -> Q:
    vals = [v for v in values if v is not None]
    return sum(vals, Fraction(0)) / len(vals) if vals else None


def _sd(values: list[Q]) -> float | None:
    """Population sd over tasks (eq. 6); undefined with fewer than two tasks, never a reassuring 0."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return None
    mean = sum(vals, Fraction(0)) / len(vals)
    return sqrt(sum(((v - mean) ** 2 for v in vals), Fraction(0)) / len(vals))


def to_float(value: Fraction) -> float:
    """The nearest float; +-inf beyond a float's range (a leakage over a self-effect of 1e-305), never
    the OverflowError of float(Fraction)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def sqrt(value: Fraction) -> float:
    """The square root of a non-negative Fraction to float precision, in integers: a variance beyond a
    float's range (or below its smallest value) can have a root well within it."""
    n, d = value.numerator, value.denominator
    scale = max(0, 64 - (n * d).bit_length() // 2)  # at least 64 significant bits in the integer root
    return to_float(Fraction(math.isqrt(n * d << 2 * scale), d << scale))


def _diff(a: Q, b: Q) -> Q:
    return None if a is None or b is None else a - b


def _leak(shift: Q, self_effect: Q) -> Q:
    """Eq. 5: a shift over its source's self-effect; undefined without a positive self-effect."""
    return None if shift is None or self_effect is None or self_effect <= 0 else shift / self_effect


@dataclass(frozen=True)
class ExactPoint:
    """The point estimate of one cell; T tasks, K criteria, None = undefined."""

    self_effect_by_task: list[list[Q]]  # [t][i], eq. 1
    leakage_by_task: list[list[list[Q]]]  # [t][i][j], eq. 2; row i undefined where SelfEffect_t(i) <= 0
    self_effect: list[Q]  # [i], mean over the tasks where it is defined
    leakage: list[list[Q]]  # [i][j], mean shift over mean self-effect (coupling.ratio_of_means), or eq. 5
    leakage_sd: list[list[float | None]]  # [i][j], eq. 6
    means: list[list[list[list[Q]]]]  # [t][i][d][j], the normalized stratum means
    definition: LeakageDefinition = "ratio_of_means"  # how `leakage` is taken over tasks (coupling.py)

    def reliable(self, tau: float) -> list[bool]:
        return [at_least(se, tau) for se in self.self_effect]

    def positive(self) -> np.ndarray:
        """(T, K): the source's self-effect in the task is positive, so its leakage row is defined."""
        return np.array([[se is not None and se > 0 for se in row] for row in self.self_effect_by_task])

    def coupling(self, tau: float) -> Coupling:
        """The same estimate as float arrays with a batch axis of 1, each value correctly rounded."""
        return Coupling(
            self_effect=_floats([self.self_effect]),
            self_effect_by_task=_floats([self.self_effect_by_task]),
            leakage=_floats([self.leakage]),
            leakage_sd=_floats([self.leakage_sd]),
            leakage_by_task=_floats([self.leakage_by_task]),
            reliable=np.array([self.reliable(tau)]),
        )


def _floats(nested: Any) -> np.ndarray:
    def conv(x: Any) -> Any:
        if isinstance(x, list):
            return [conv(v) for v in x]
        return np.nan if x is None else to_float(x)

    return np.array(conv(nested), dtype=float)


def exact_sum(values: np.ndarray) -> Fraction:
    """The exact sum of float64 values (expected-mode scores are any floats): each value is an integer
    mantissa times a power of two, and the mantissas are summed as integers per exponent."""
    with np.errstate(invalid="ignore"):  # a value past int64 casts to nonsense, and fails the test below
        whole = values.astype(np.int64)
    if len(values) < 1 << 20 and (whole == values).all() and (np.abs(whole) < 1 << 32).all():
        return Fraction(int(whole.sum()))  # integer scores (every Likert verdict): the int64 sum cannot overflow
    mantissa, exponent = np.frexp(values)
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: a float64 mantissa has 53 bits
    total = Fraction(0)
    for e in np.unique(exponent):
        part = ints[exponent == e]
        high, low = part >> 26, part & ((1 << 26) - 1)  # halves, so millions of them sum without overflow
        total += Fraction((int(high.sum()) << 26) + int(low.sum())) * Fraction(2) ** (int(e) - 53)
    return total


def exact_point(strata: Strata, definition: LeakageDefinition = "ratio_of_means") -> ExactPoint:
    """Stratum means as Fractions of exact sums of the scores as read (integers, or the floats of
    expected-mode verdicts), divided by each criterion's scale span (the 0-1 footing), then eq. 1-6 in rational
    arithmetic; the leakage over tasks as `definition` says (eq. 5 for "paper": the mean of the defined per-task
    ratios)."""
    t_count, k = strata.shape
    means: list[list[list[list[Q]]]] = [[[[None] * k for _ in range(2)] for _ in range(k)] for _ in range(t_count)]
    for s, rows in enumerate(strata.slices()):
        block = strata.likert[rows]
        for j in range(k):
            col = block[:, j][~np.isnan(block[:, j])]
            if len(col):
                means[strata.task[s]][strata.target[s]][strata.direction[s]][j] = exact_sum(col) / (
                    len(col) * strata.spans[j]
                )

    se_t = [[_diff(means[t][i][0][i], means[t][i][1][i]) for i in range(k)] for t in range(t_count)]
    leak_t = [
        [[_leak(_diff(means[t][i][0][j], means[t][i][1][j]), se_t[t][i]) for j in range(k)] for i in range(k)]
        for t in range(t_count)
    ]
    return ExactPoint(
        self_effect_by_task=se_t,
        leakage_by_task=leak_t,
        self_effect=[_mean([se_t[t][i] for t in range(t_count)]) for i in range(k)],
        leakage=[
            [
                _ratio_of_means(means, i, j)
                if definition == "ratio_of_means"
                else _mean([leak_t[t][i][j] for t in range(t_count)])
                for j in range(k)
            ]
            for i in range(k)
        ],
        leakage_sd=[[_sd([leak_t[t][i][j] for t in range(t_count)]) for j in range(k)] for i in range(k)],
        means=means,
        definition=definition,
    )


def _ratio_of_means(means: list[list[list[list[Q]]]], i: int, j: int) -> Q:
    """coupling.ratio_of_means, exactly: summed shifts of C_j over summed self-effects of C_i, over the tasks
    where both are defined; undefined where the summed self-effect is not positive."""
    shift, effect, seen = Fraction(0), Fraction(0), False
    for task in means:
        s, e = _diff(task[i][0][j], task[i][1][j]), _diff(task[i][0][i], task[i][1][i])
        if s is not None and e is not None:
            shift, effect, seen = shift + s, effect + e, True
    return shift / effect if seen and effect > 0 else None


# A float64 stratum mean of scores in [0, 1] is off by at most a few units of 2^-53, and the
# self-effect and its mean over tasks add a few more: far inside this margin.
FLOAT_MARGIN = 1e-9


def resample_decisions(
    strata: Strata, weights: np.ndarray, tau: float, means: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(positive (B, T, K), reliable (B, K)) of the resamples or subsets that integer `weights` (B, P)
    select, from their float stratum `means` (default: computed here), exactly: floats decide where
    they lie beyond FLOAT_MARGIN of the threshold, the resample's exact point estimate where they do
    not. With integer scores a stratum mean is a correctly rounded ratio of exact integer sums, so the
    sign of a self-effect in a task is already exact in floats."""
    se_t = self_effect(strata.means(weights) if means is None else means)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.nanmean(se_t, axis=-2)
    positive, reliable = np.nan_to_num(se_t) > 0, np.nan_to_num(se, nan=-1.0) >= tau
    close = (np.abs(se - tau) <= FLOAT_MARGIN).any(axis=-1)
    if not strata.integral:
        close |= (np.abs(se_t) <= FLOAT_MARGIN).any(axis=(-2, -1))
    for b in np.flatnonzero(close):
        point = exact_point(strata.resample(weights[b]))  # its decisions alone: the definition does not enter
        positive[b], reliable[b] = point.positive(), point.reliable(tau)
    return positive, reliable
