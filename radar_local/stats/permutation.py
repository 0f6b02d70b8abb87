"""Exact permutation tests of a difference of two group means, for the per-prompt audit's small strata.

A per-prompt item lives in one prompt: its probes are the only units there are (N a side, 3-5 by the paper's
budget), too few for a bootstrap, whose intervals collapse to a point on 5 of 5 verdicts met. The test here
asks whether a verdict depends on which way a probe was steered: under the null the + and - labels are
exchangeable, so the law of the + group's score sum over every relabelling is the reference. With the group
sizes fixed, the difference of means is increasing in that sum, so the p-value is a share of relabellings
whose sum reaches the observed one: a ratio of integers, compared with a threshold exactly.

Scores are held as integers: a level scale's values are (booleans 0 / 1, Likert 0-4); other values (an expected
score) are held to 2^-20 of a point. The law is counted exactly by subset-sum counting where the values span
at most SPAN_LIMIT, by enumerating the relabellings where there are at most ENUMERATE of them, and otherwise
drawn (DRAWS seeded relabellings, p = (1 + hits) / (1 + DRAWS), valid and slightly conservative).

Two independent comparisons' sum (a pair's symmetric coupling: the leakage each way, each from its own probes)
is tested on their joint law: each relabelled independently, exactly where both laws are counted.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, TypeVar

import numpy as np

from radar_local.stats.bootstrap import categorical, relabellings, sign_flip_chunks, sign_flips

K = TypeVar("K", bound=Hashable)
SPAN_LIMIT = 64  # integer scores spanning at most this are counted by subset sums, at any number of probes
ENUMERATE = 20_000  # relabellings enumerated one by one at most
DRAWS = 20_000  # relabellings drawn where the law can be neither counted nor enumerated
RESOLUTION = 2**20  # a score that is not an integer is held to 1 / RESOLUTION of a point


def factor(values: np.ndarray) -> int:
    """What scores are multiplied by to be held as integers: 1 where every scored value is one, else RESOLUTION."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return 1 if np.all(v == np.round(v)) else RESOLUTION


@dataclass(frozen=True)
class Law:
    """The + group's score sum over relabellings: each value with its count, out of `total`; `drawn` where the
    relabellings were drawn rather than counted."""

    sums: tuple[int, ...]
    counts: tuple[int, ...]
    total: int
    drawn: bool


@dataclass(frozen=True)
class Split:
    """One comparison: the integer scores of the probes that have one, the first `up` of them steered +."""

    y: tuple[int, ...]
    up: int

    @classmethod
    def of(cls, up: np.ndarray, down: np.ndarray, factor: int) -> Split:
        """The scored values of each group (NaN left out), times `factor` as integers."""
        both = [v for v in (*up, *down) if np.isfinite(v)]
        ints = [int(round(v * factor)) for v in both]
        return cls(tuple(ints), int(np.isfinite(up).sum()))

    @property
    def down(self) -> int:
        return len(self.y) - self.up

    @property
    def testable(self) -> bool:
        return self.up > 0 and self.down > 0

    @property
    def observed(self) -> int:
        return sum(self.y[: self.up])

    def difference(self) -> Fraction | None:
        """The + group's mean minus the - group's, exactly; None where a group has no score."""
        if not self.testable:
            return None
        return Fraction(self.observed, self.up) - Fraction(sum(self.y[self.up :]), self.down)

    def law(self, seed: int) -> Law:
        return _law(tuple(sorted(self.y)), self.up, seed)

    def extreme(self, upper: bool) -> Split:
        """The same groups with every + probe's score above every - probe's (`upper`) or below: the smallest
        p-value a test of this design can give."""
        high, low = (1, 0) if upper else (0, 1)
        return Split((high,) * self.up + (low,) * self.down, self.up)


@functools.lru_cache(maxsize=65_536)  # a law depends on the multiset of scores alone: binary items repeat it often
def _law(y: tuple[int, ...], k: int, seed: int) -> Law:
    low = min(y)
    if max(y) - low <= SPAN_LIMIT:
        return _counted(tuple(v - low for v in y), k, shift=k * low)
    if math.comb(len(y), k) <= ENUMERATE:
        found: dict[int, int] = {}
        for pick in itertools.combinations(y, k):
            s = sum(pick)
            found[s] = found.get(s, 0) + 1
        keys = sorted(found)
        return Law(tuple(keys), tuple(found[s] for s in keys), math.comb(len(y), k), False)
    draws = _draws(y, k, seed)
    return Law(tuple(draws), (1,) * len(draws), len(draws), True)


def _counted(y: tuple[int, ...], k: int, shift: int) -> Law:
    """Subset-sum counting: ways[j][s] = the number of j-subsets of the values seen so far summing to s."""
    top = sum(sorted(y)[-k:]) if k else 0
    ways = [[0] * (top + 1) for _ in range(k + 1)]
    ways[0][0] = 1
    for v in y:
        for j in range(k, 0, -1):
            row, below = ways[j], ways[j - 1]
            for s in range(top, v - 1, -1):
                if below[s - v]:
                    row[s] += below[s - v]
    sums = [s for s in range(top + 1) if ways[k][s]]
    return Law(tuple(s + shift for s in sums), tuple(ways[k][s] for s in sums), math.comb(len(y), k), False)


def _draws(y: tuple[int, ...], k: int, seed: int) -> list[int]:
    arr = np.array(y, dtype=object)
    return [sum(arr[pick]) for pick in relabellings(len(y), k, DRAWS, seed)]


def p_upper(split: Split, seed: int = 0) -> Fraction:
    """P(the + group's mean minus the - group's reaches the observed difference) under relabelling: the p-value of
    'steering + raises the score'; 1 where a group has no score."""
    return _tail(split, seed, upper=True)


def p_lower(split: Split, seed: int = 0) -> Fraction:
    """The p-value of 'steering + lowers the score'."""
    return _tail(split, seed, upper=False)


def _tail(split: Split, seed: int, upper: bool) -> Fraction:
    if not split.testable:
        return Fraction(1)
    law, o = split.law(seed), split.observed
    hits = sum(c for s, c in zip(law.sums, law.counts) if (s >= o if upper else s <= o))
    return Fraction(1 + hits, 1 + law.total) if law.drawn else Fraction(hits, law.total)


def p_sum_upper(a: Split, span_a: int, b: Split, span_b: int, seed: int = 0) -> Fraction:
    """The p-value of 'a's difference / span_a plus b's difference / span_b exceeds zero' against the observed sum,
    the two relabelled independently: P(w_a (S_a - o_a) + w_b (S_b - o_b) >= 0), w each side's weight that puts
    both differences on one denominator (a difference is (S - o) n / (up down) from the observed one)."""
    if not (a.testable and b.testable):
        return Fraction(1)
    wa = len(a.y) * b.up * b.down * span_b
    wb = len(b.y) * a.up * a.down * span_a
    la, lb = a.law(seed), b.law(seed + 1)
    oa, ob = a.observed, b.observed
    if la.drawn or lb.drawn:  # paired draws from each side (an exact side drawn from its counts)
        da, db = _sample(la, seed + 2), _sample(lb, seed + 3)
        hits = sum(1 for x, z in zip(da, db) if wa * (x - oa) + wb * (z - ob) >= 0)
        return Fraction(1 + hits, 1 + DRAWS)
    hits = 0
    for x, cx in zip(la.sums, la.counts):
        need = -wa * (x - oa)  # wb (z - ob) >= need
        hits += cx * sum(cz for z, cz in zip(lb.sums, lb.counts) if wb * (z - ob) >= need)
    return Fraction(hits, la.total * lb.total)


def _sample(law: Law, seed: int) -> list[int]:
    if law.drawn:
        return list(law.sums)
    probs = np.array([float(Fraction(c, law.total)) for c in law.counts])
    return [law.sums[i] for i in categorical(probs / probs.sum(), DRAWS, seed)]


def holm(p: Mapping[K, Fraction], level: float) -> set[K]:
    """The hypotheses Holm's step-down procedure rejects at family-wise error 1 - level, compared exactly."""
    alpha = 1 - Fraction(repr(level))
    ranked = sorted(p.items(), key=lambda kv: kv[1])
    out: set[K] = set()
    for rank, (key, value) in enumerate(ranked):
        if Fraction(value) > alpha / (len(ranked) - rank):
            break
        out.add(key)
    return out


FLIP_STATES = 200_000  # distinct partial sums a sign-flip law is counted through at most; beyond, flips are drawn
FLIP_WORK = 2_000_000  # values x the sums they can reach, counted at most; beyond (thousands of values), drawn


def p_sign_flip(values: list[Fraction], seed: int = 0, side: Literal["both", "upper", "lower"] = "both") -> Fraction:
    """The two-sided p-value of 'the values' mean is not 0' when each value is symmetric about 0 under the null
    (a prompt's leakage between items nothing couples): the share of the 2^m sign flips whose sum is as far from 0
    as the observed one; `upper` (`lower`): of 'the mean is above (below) 0', the share at or beyond the observed
    sum on that side. The values are put on one denominator as integers, so the law is counted exactly (by its
    partial sums); where those outgrow FLIP_STATES or the count FLIP_WORK, DRAWS seeded flips are drawn,
    p = (1 + hits) / (1 + DRAWS)."""
    if not values:
        return Fraction(1)
    common = math.lcm(*(v.denominator for v in values))
    w = [int(v * common) for v in values] if side != "lower" else [-int(v * common) for v in values]
    observed = abs(sum(w)) if side == "both" else sum(w)

    def beyond(s: int) -> bool:
        return (abs(s) if side == "both" else s) >= observed

    span = sum(map(abs, w))
    if span < 2**62 and len(w) * min(2 * span + 1, 2 ** len(w)) > FLIP_WORK:  # many values (a position's pairs)
        hits, weights = 0, np.array(w, dtype=np.int64)
        for signs in sign_flip_chunks(len(w), DRAWS, seed):  # int64: the sums fit
            hits += sum(1 for s in (signs @ weights).tolist() if beyond(s))
        return Fraction(1 + hits, 1 + DRAWS)
    law: dict[int, int] = {0: 1}
    for x in w:
        step: dict[int, int] = {}
        for s, c in law.items():
            for t in (s + x, s - x):
                step[t] = step.get(t, 0) + c
        law = step
        if len(law) > FLIP_STATES:
            flips = sign_flips(len(w), DRAWS, seed)
            sums = flips @ np.array(w, dtype=object)
            return Fraction(1 + int(sum(1 for s in sums if beyond(s))), 1 + DRAWS)
    return Fraction(sum(c for s, c in law.items() if beyond(s)), 2 ** len(w))
