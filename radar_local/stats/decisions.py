"""Which of an audit's decisions its intervals have settled, and which probes would settle the rest.

A decision is the gate of a criterion, a flag of a pair (directional, bidirectional cluster,
tradeoff; stats/flags.py), a pair's coupling (both gates and Sym >= cluster_sym, its direction open) or a Sym
policy (`--fail-on-sym`). Each is a condition on self-effects,
leakages, Sym and Asym against thresholds. Read over the intervals, each comparison is true (the
whole interval is on its side), false (the whole interval is on the other) or open, and the
conditions combine in Kleene's three-valued logic: `a and b` is settled false as soon as one of
them is. An open decision names the criteria whose probes move its open comparisons: a leakage
l_ij rests on source i's probes, Sym and Asym of a pair on both sources', a gate on its own.
Interval ends are compared with the thresholds as the user wrote them, exactly (stats/exact.py).

The bounds are the family's (stats/intervals.gatekept): gates first, then every pair's claims at the level
the gates leave, so the chance that any confirmed claim is wrong stays within 1 - level however many pairs
there are. A flag of the point estimate is `confirmed` when its decision is settled true; a directional pair
or a cluster is `coupled` when only its coupling is; `possible` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import pandas as pd
from scipy import special

from radar_local.stats.exact import decimal
from radar_local.stats.flags import (
    CLUSTER,
    CONFIRMED,
    COUPLED,
    DIRECTIONAL,
    GATED,
    POSSIBLE,
    SCREENED,
    TRADEOFF,
    Thresholds,
)
from radar_local.stats.result import AuditResult

GATE, POLICY = "gate", "sym policy"


@dataclass(frozen=True)
class Tri:
    """A three-valued truth: True, False or None (open), with the criteria that would settle it."""

    value: bool | None
    sources: frozenset[str] = frozenset()

    def __and__(self, other: Tri) -> Tri:
        if self.value is False or other.value is False:
            return Tri(False)
        if self.value and other.value:
            return Tri(True)
        return Tri(None, self.sources | other.sources)

    def __or__(self, other: Tri) -> Tri:
        if self.value or other.value:
            return Tri(True)
        if self.value is False and other.value is False:
            return Tri(False)
        return Tri(None, self.sources | other.sources)

    def __invert__(self) -> Tri:
        return Tri(None if self.value is None else not self.value, self.sources)


def interval_at_least(interval: tuple[float, float] | None, threshold: float, sources: frozenset[str]) -> Tri:
    """value >= threshold over the interval; open where it straddles or is undefined."""
    if interval is None or any(x is None or x != x for x in interval):
        return Tri(None, sources)
    low, high = (Fraction(x) for x in interval)
    if low >= decimal(threshold):
        return Tri(True)
    if high < decimal(threshold):
        return Tri(False)
    return Tri(None, sources)


def interval_at_most(interval: tuple[float, float] | None, threshold: float, sources: frozenset[str]) -> Tri:
    """value <= threshold over the interval; open where it straddles or is undefined."""
    if interval is None or any(x is None or x != x for x in interval):
        return Tri(None, sources)
    low, high = (Fraction(x) for x in interval)
    if high <= decimal(threshold):
        return Tri(True)
    if low > decimal(threshold):
        return Tri(False)
    return Tri(None, sources)


@dataclass(frozen=True)
class Decision:
    kind: str  # gate, coupled, directional, bidirectional cluster, tradeoff, sym policy
    criteria: tuple[str, ...]  # the criterion of a gate, the pair of a flag
    value: bool | None  # None: still open
    sources: tuple[str, ...]  # criteria whose probes would settle it (empty once settled)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "criteria": list(self.criteria), "value": self.value, "sources": list(self.sources)}


def decisions(
    result: AuditResult, thresholds: Thresholds = Thresholds(), fail_on_sym: float | None = None, more: float = 1.0
) -> list[Decision]:
    """Every decision of the audit read over its family intervals (stats/intervals.py, which need bootstrap
    resamples). `more` > 1 asks what they would settle with `more` times the probes per stratum if every
    estimate held: each half-width scaled by 1/sqrt(more) and by Student's t at the larger design df."""
    if result.family is None:
        raise ValueError("deciding from intervals needs bootstrap resamples (bootstrap > 0)")
    crit, th, fam = result.criteria, thresholds, result.family
    narrow = _narrowing(result, more)

    def ci(interval: list[float | None] | None, point: float, *sources: str) -> tuple[float, float] | None:
        if interval is None or interval[0] is None or interval[1] is None:
            return None
        low, high = float(interval[0]), float(interval[1])
        if more == 1:
            return low, high
        f = narrow(sources)
        return point - (point - low) * f, point + (high - point) * f

    gate = {
        c: interval_at_least(ci(fam["self_effect"][c], result.self_effect[c], c), result.tau, frozenset([c]))
        for c in crit
    }
    out = [_decision(GATE, (c,), gate[c]) for c in crit]
    for p in result.pairs.to_dict("records"):
        a, b = p["a"], p["b"]
        both, one, other = frozenset([a, b]), frozenset([a]), frozenset([b])
        l_ab, l_ba = ci(fam["leakage"][a][b], p["leak_ab"], a), ci(fam["leakage"][b][a], p["leak_ba"], b)
        sym, asym = ci(fam["sym"][a][b], p["sym"], a, b), ci(fam["asym"][a][b], p["asym"], a, b)
        reliable = gate[a] & gate[b]
        steep = interval_at_least(asym, th.directional_asym, both)
        coupled = interval_at_least(sym, th.cluster_sym, both)
        flags = {
            COUPLED: coupled,
            DIRECTIONAL: steep
            & (interval_at_least(l_ab, th.directional_leak, one) | interval_at_least(l_ba, th.directional_leak, other)),
            CLUSTER: coupled & ~steep,
            TRADEOFF: interval_at_most(l_ab, th.tradeoff_leak, one) | interval_at_most(l_ba, th.tradeoff_leak, other),
        }
        if fail_on_sym is not None:
            flags[POLICY] = interval_at_least(sym, fail_on_sym, both)
        for kind, flag in flags.items():  # a gated pair carries no flag: `reliable` false settles it
            out.append(_decision(kind, (a, b), reliable & flag))
    return out


def _narrowing(result: AuditResult, more: float) -> Callable[[tuple[str, ...]], float]:
    """The factor a half-width resting on `sources`' probes shrinks by at `more` times the probes per stratum:
    1/sqrt(more), times the ratio of Student's t at the family's tail at the larger and the present design df."""
    n, df, tail = result.probes.min_per_stratum, result.bootstrap.df or {}, result.family or {}
    critical = tail.get("critical")
    p = special.ndtr(critical) if critical else None

    def factor(sources: tuple[str, ...]) -> float:
        now = sum(df.get(c) or 0.0 for c in sources)
        if now <= 0 or n < 2 or p is None:
            return more**-0.5
        later = now * (n * more - 1) / (n - 1)
        return float(more**-0.5 * special.stdtrit(later, p) / special.stdtrit(now, p))

    return factor


MOST = 1000  # the most probes per stratum a projection names


def evidence(
    result: AuditResult,
    thresholds: Thresholds = Thresholds(),
    screened: set[tuple[str, tuple[str, str]]] | None = None,
) -> AuditResult:
    """The result with every flag of the point estimate marked `confirmed` (its family intervals settle it),
    `coupled`, `screened` (among `screened`'s (flag, pair): passed at a false discovery rate, stats/screening.py)
    or `possible`: pairs' `evidence` and `settle_n` (the probes per stratum that would settle their unconfirmed
    flags if the estimates held; None beyond MOST or at a threshold), and each gate's."""
    settled = {(d.kind, d.criteria): d.value for d in decisions(result, thresholds)}
    rows = []
    for p in result.pairs.to_dict("records"):
        pair = (p["a"], p["b"])
        if GATED in p["flags"]:  # confirmed when either criterion's gate is settled false
            failed = settled[GATE, (p["a"],)] is False or settled[GATE, (p["b"],)] is False
            level = {GATED: CONFIRMED if failed else POSSIBLE}
        else:
            level = {
                f: _level(f, settled[f, pair], settled[COUPLED, pair], (f, pair) in (screened or ()))
                for f in p["flags"]
            }
        possible = [f for f, v in level.items() if v != CONFIRMED and f != GATED]
        rows.append((level, settle_n(result, [(f, pair) for f in possible], None, thresholds) if possible else None))
    pairs = result.pairs.copy()
    pairs["evidence"] = [r[0] for r in rows]
    pairs["settle_n"] = pd.Series([r[1] for r in rows], index=pairs.index, dtype=object)
    return replace(
        result,
        pairs=pairs,
        # a criterion's gate, passed or failed, settled by its family interval or not
        gate_evidence={c: CONFIRMED if settled[GATE, (c,)] is not None else POSSIBLE for c in result.criteria},
        unreliable=[
            replace(g, evidence=CONFIRMED if settled[GATE, (g.criterion,)] is False else POSSIBLE)
            for g in result.unreliable
        ],
    )


def _level(flag: str, settled: bool | None, coupled: bool | None, screened: bool) -> str:
    if settled:
        return CONFIRMED
    if coupled and flag in (DIRECTIONAL, CLUSTER):
        return COUPLED
    return SCREENED if screened else POSSIBLE


def settle_n(
    result: AuditResult,
    keys: list[tuple[str, tuple[str, ...]]],
    fail_on_sym: float | None = None,
    thresholds: Thresholds = Thresholds(),
) -> int | None:
    """The fewest probes per stratum (at most MOST) at which the family would settle every decision in `keys`
    ((kind, criteria)) if every estimate held; None beyond MOST (an estimate at or near its threshold)."""
    n = result.probes.min_per_stratum

    def settles(m: int) -> bool:
        found = {(d.kind, d.criteria): d.value for d in decisions(result, thresholds, fail_on_sym, more=m / n)}
        return all(found[k] is not None for k in keys)

    if not settles(MOST):
        return None
    low, high = n, MOST  # settles(high); not settles(low)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if settles(mid) else (mid, high)
    return high


def _decision(kind: str, criteria: tuple[str, ...], t: Tri) -> Decision:
    return Decision(kind, criteria, t.value, tuple(sorted(t.sources)) if t.value is None else ())
