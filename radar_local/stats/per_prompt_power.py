"""The power of a per-prompt design (`radar audit --plan`): how likely its exact tests (stats/per_prompt.py) confirm
a sign error or a redundant pair of a stated size at N probes a side, and the smallest N that reaches a target.

Confirmed is Holm's bound over the audit's family of the kind, at the kind's third of the audit's error
(stats/per_prompt.each_kind), over an adaptive audit's `looks` where it has them; for one true finding among
otherwise clean hypotheses Holm's first step, alpha / m, is the bound it meets, which this uses (slightly
conservative where other findings are true).
On met / not met:
- a **sign error** of size `wrong`: the judge's verdict is on the wrong side with probability `wrong` (met with
  probability 1 - wrong on `+` probes, `wrong` on `-` ones). Its power is exact: the sum over both groups' binomial
  counts of their probability where the permutation p-value meets the bound;
- a **redundant pair** of leakage `move` both ways: steering either item moves the other's met rate from
  (1 - move) / 2 to (1 + move) / 2. Its power is simulated (PAIR_DRAWS seeded draws of the four groups' counts).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy import stats

from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.per_prompt import each_kind
from radar_local.stats.permutation import Split, p_lower, p_sum_upper

PAIR_DRAWS = 400
TARGET = 0.8
MAX_N = 40  # the largest N --plan searches


def _split(up: int, down: int, n: int) -> Split:
    """n probes a side, `up` of the + group and `down` of the - group met (the values sorted: the law is the same)."""
    return Split.of(np.r_[np.ones(up), np.zeros(n - up)], np.r_[np.ones(down), np.zeros(n - down)], 1)


def sign_error_power(n: int, items: int, wrong: float = 0.9, level: float = LEVEL, looks: int = 1) -> float:
    bound = (1 - Fraction(repr(each_kind(level)))) / max(items, 1) / looks
    up, down = stats.binom.pmf(range(n + 1), n, 1 - wrong), stats.binom.pmf(range(n + 1), n, wrong)
    return float(sum(up[x] * down[y] for x in range(n + 1) for y in range(n + 1) if p_lower(_split(x, y, n)) <= bound))


def pair_power(n: int, pairs: int, move: float = 0.6, level: float = LEVEL, seed: int = 0, looks: int = 1) -> float:
    bound = (1 - Fraction(repr(each_kind(level)))) / max(pairs, 1) / looks
    rng = np.random.default_rng(seed)
    high, low = rng.binomial(n, (1 + move) / 2, (PAIR_DRAWS, 2)), rng.binomial(n, (1 - move) / 2, (PAIR_DRAWS, 2))
    hits = sum(
        p_sum_upper(_split(int(h[0]), int(lo[0]), n), 1, _split(int(h[1]), int(lo[1]), n), 1) <= bound
        for h, lo in zip(high, low)
    )
    return hits / PAIR_DRAWS


def smallest_n(power, start: int = 2) -> int | None:  # type: ignore[no-untyped-def]
    """The smallest N (from `start` to MAX_N) whose power(N) reaches TARGET; None if none does. Power grows with N
    but not monotonically on discrete tests: each N is tried in turn."""
    return next((n for n in range(start, MAX_N + 1) if power(n) >= TARGET), None)
