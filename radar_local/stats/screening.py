"""A screening mode: the pair flags that Benjamini-Hochberg passes at a false discovery rate (issue 43, item 1).

The family-wise bounds (stats/intervals.gatekept) make `confirmed` mean that no claim of the audit is wrong with
95% probability. A team screening a rubric for pairs to look at may accept that a share of what it looks at is
noise: `screening: 0.05` marks a flag of the point estimate `screened` when Benjamini & Hochberg's (1995, JRSS-B
57:289) step-up procedure passes its hypothesis at that false discovery rate, a word of its own, never
`confirmed` (and never read by a CI policy, which read the family bounds).

Each flag is one hypothesis per ordered pair where it has a direction: `directional` i -> j (l_ij >= 0.5 and
l_ij - l_ji >= 0.25), `tradeoff` i -> j (l_ij <= -0.2), and per pair `bidirectional cluster` (Sym >= 0.5 and
-0.25 < l_ij - l_ji < 0.25): 5 per pair, 50 at K = 5. A flag needs both gates too, so each hypothesis is an
intersection-union test (Berger 1982): its p-value is the largest of its one-sided t tests' (each gate's
self-effect >= tau among them), which is valid whatever their dependence. Each test is the family's own
studentization: (estimate - threshold) / the bootstrap scale of stats/intervals._scale, against Student's t at
the quantity's design df. BH controls the false discovery rate for independent or positively dependent p-values
(Benjamini & Yekutieli 2001); these are mostly positively dependent but not all (a leakage's directional and its
tradeoff hypothesis pull apart), so the rate is measured by simulation (scripts/power_levers.py, the
`screening` rows of docs/benchmarks/statistics.md). The step-up comparison p_(k) <= k q / m is exact.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

import numpy as np
from scipy import special

from radar_local.stats.exact import at_least, at_most, decimal
from radar_local.stats.flags import CLUSTER, DIRECTIONAL, TRADEOFF, Thresholds

METHOD = (
    "Benjamini-Hochberg step-up over the pair flags' hypotheses (directional and tradeoff per ordered pair, "
    "cluster per pair), each an intersection-union of one-sided t tests, gates included"
)

Hypothesis = tuple[str, int, int]  # (flag, i, j): directional and tradeoff from source i to j; a cluster i < j
K = TypeVar("K", bound=Hashable)


def one_sided(x: Fraction | float | None, scale: float, df: float, threshold: float, claim: str) -> float:
    """The p-value of the claim `x >= threshold` (claim ">="; also "<=", and the strict ">" and "<"): Student's t
    at df of (x - threshold) / scale. A quantity that cannot vary (scale 0) is its point, compared exactly; one
    undefined (None, NaN), or resting on no df, has p = 1."""
    if x is None or not (np.isfinite(float(x)) and np.isfinite(scale) and df > 0):
        return 1.0
    if scale == 0:
        v = Fraction(x)
        holds = {
            ">=": at_least(v, threshold),
            ">": not at_most(v, threshold),
            "<=": at_most(v, threshold),
            "<": not at_least(v, threshold),
        }[claim]
        return 0.0 if holds else 1.0
    z = (float(x) - threshold) / scale
    return float(special.stdtr(df, -z if claim.startswith(">") else z))


def p_values(
    self_effect: Sequence[Fraction | float | None],
    leakage: Sequence[Sequence[Fraction | float | None]],
    scale: Mapping[str, np.ndarray],
    df: np.ndarray,
    tau: float,
    th: Thresholds = Thresholds(),
) -> dict[Hypothesis, float]:
    """Every pair flag's hypothesis and its intersection-union p-value. The estimates are exact (stats/exact.py's
    Fractions; None: undefined) or floats (a simulation's); `scale`: each quantity's bootstrap scale
    (self_effect (K,), leakage, sym and diff (K, K): stats/intervals.Bounds.scale); `df`: each source's design df."""
    k = len(self_effect)
    gate = [one_sided(self_effect[i], scale["self_effect"][i], df[i], tau, ">=") for i in range(k)]
    out: dict[Hypothesis, float] = {}
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            both, pair_df = max(gate[i], gate[j]), df[i] + df[j]
            leak, back = leakage[i][j], leakage[j][i]
            diff = None if leak is None or back is None else leak - back
            s_leak, s_diff = scale["leakage"][i, j], scale["diff"][i, j]
            out[DIRECTIONAL, i, j] = max(
                both,
                one_sided(leak, s_leak, df[i], th.directional_leak, ">="),
                one_sided(diff, s_diff, pair_df, th.directional_asym, ">="),
            )
            out[TRADEOFF, i, j] = max(both, one_sided(leak, s_leak, df[i], th.tradeoff_leak, "<="))
            if i < j:  # Sym >= cluster_sym, and |l_ij - l_ji| < directional_asym (two one-sided tests)
                sym = None if diff is None else (leak + back) / 2  # type: ignore[operator]
                out[CLUSTER, i, j] = max(
                    both,
                    one_sided(sym, scale["sym"][i, j], pair_df, th.cluster_sym, ">="),
                    one_sided(diff, s_diff, pair_df, -th.directional_asym, ">"),
                    one_sided(diff, s_diff, pair_df, th.directional_asym, "<"),
                )
    return out


def benjamini_hochberg(p: Mapping[K, float | Fraction], fdr: float) -> set[K]:
    """The hypotheses the step-up procedure rejects at false discovery rate `fdr`: the k smallest p-values, k the
    largest rank with p_(k) <= k fdr / m, compared exactly."""
    if not p:
        return set()
    ranked = sorted(p.items(), key=lambda kv: kv[1])
    m, q = len(ranked), decimal(fdr)
    passed = 0
    for rank, (_, value) in enumerate(ranked, start=1):
        if Fraction(value) <= rank * q / m:
            passed = rank
    return {key for key, _ in ranked[:passed]}
