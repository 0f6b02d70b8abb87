"""Pearson and Spearman correlations computed exactly, so that ties stay ties.

Equal correlations must rank equal: the synthetic-correlation baseline of probes whose scores are
permutations of one another gives every pair exactly the same correlation, and a float pipeline
turns those into slightly different numbers whose order is noise. Here the sums of squares and
products are exact (integers: every float is an integer times a power of two), r^2 is an exact
rational and r the float
of its square root: exactly equal correlations are equal floats, and Spearman's average ranks of
equal values are equal. A constant vector has no correlation (None), whatever its rounding noise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

MIN_PAIRS = 3


def exact_integers(values: np.ndarray) -> np.ndarray | list[int]:
    """The values times one common power of two, exactly: small integers (Likert scores, doubled
    ranks) as an int64 array, any other floats as Python integers (a float is an integer mantissa
    times a power of two). Correlations and partial correlations do not see the scale."""
    values = np.asarray(values, float)
    if np.all(values == np.round(values)) and np.abs(values).max(initial=0) < 2**31:
        return values.astype(np.int64)
    mantissa, exponent = np.frexp(values)
    ints = (mantissa * 2.0**53).astype(np.int64).tolist()  # exact: a float64 mantissa has 53 bits
    low = int(exponent.min())
    return [m << (int(e) - low) for m, e in zip(ints, exponent.tolist())]


def exact_dot(a: np.ndarray | list[int], b: np.ndarray | list[int]) -> int:
    """sum(a * b) exactly: in int64 where it cannot overflow, else in Python integers."""
    if (
        isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and len(a) * (int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) + 1) < 2**62
    ):
        return int(np.dot(a, b))
    return sum(int(p) * int(q) for p, q in zip(a, b))


def exact_sum(a: np.ndarray | list[int]) -> int:
    return int(a.sum()) if isinstance(a, np.ndarray) else sum(a)


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson r of two equal-length vectors without NaN; None for fewer than 3 values or a constant one."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < MIN_PAIRS:
        return None
    ex, ey = exact_integers(x), exact_integers(y)
    sx, sy = exact_sum(ex), exact_sum(ey)
    sxx, syy = n * exact_dot(ex, ex) - sx * sx, n * exact_dot(ey, ey) - sy * sy
    if sxx == 0 or syy == 0:
        return None
    sxy = n * exact_dot(ex, ey) - sx * sy
    return math.copysign(math.sqrt(float(Fraction(sxy * sxy, sxx * syy))), sxy) if sxy else 0.0


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman rho with average ranks for ties (twice the rank is an integer: exact)."""
    return pearson(2 * average_ranks(x), 2 * average_ranks(y))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1 with tied values given the mean of their ranks, per column of a 2-D array
    (scipy.stats.rankdata's 'average'; scipy.stats itself costs a second at every start)."""
    values = np.asarray(values)
    if values.ndim == 2:
        return np.stack([average_ranks(col) for col in values.T], axis=1).reshape(values.shape)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = ((starts + 1 + ends) / 2)[np.cumsum(first) - 1]
    return ranks


def constant_reason(x: np.ndarray, y: np.ndarray, names: tuple[str, str]) -> str | None:
    """Why no correlation is defined, or None where it is."""
    if len(x) < MIN_PAIRS:
        return f"fewer than {MIN_PAIRS} pairs"
    for values, name in zip((x, y), names):
        if np.all(values == values[0]):
            return f"the {name} is constant over the pairs"
    return None
