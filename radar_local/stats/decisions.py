"""Which of an audit's decisions its intervals have settled, and which probes would settle the rest.

A decision is the gate of a criterion, a flag of a pair (directional, bidirectional cluster,
tradeoff; stats/flags.py) or a Sym policy (`--fail-on-sym`). Each is a condition on self-effects,
leakages, Sym and Asym against thresholds. Read over the intervals, each comparison is true (the
whole interval is on its side), false (the whole interval is on the other) or open, and the
conditions combine in Kleene's three-valued logic: `a and b` is settled false as soon as one of
them is. An open decision names the criteria whose probes move its open comparisons: a leakage
l_ij rests on source i's probes, Sym and Asym of a pair on both sources', a gate on its own.
Interval ends are compared with the thresholds as the user wrote them, exactly (stats/exact.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from radar_local.stats.exact import decimal
from radar_local.stats.flags import CLUSTER, DIRECTIONAL, TRADEOFF, Thresholds
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


def at_least(interval: tuple[float, float] | None, threshold: float, sources: frozenset[str]) -> Tri:
    """value >= threshold over the interval; open where it straddles or is undefined."""
    if interval is None or any(x is None or x != x for x in interval):
        return Tri(None, sources)
    low, high = (Fraction(x) for x in interval)
    if low >= decimal(threshold):
        return Tri(True)
    if high < decimal(threshold):
        return Tri(False)
    return Tri(None, sources)


def at_most(interval: tuple[float, float] | None, threshold: float, sources: frozenset[str]) -> Tri:
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
    kind: str  # gate, directional, bidirectional cluster, tradeoff, sym policy
    criteria: tuple[str, ...]  # the criterion of a gate, the pair of a flag
    value: bool | None  # None: still open
    sources: tuple[str, ...]  # criteria whose probes would settle it (empty once settled)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "criteria": list(self.criteria), "value": self.value, "sources": list(self.sources)}


def decisions(
    result: AuditResult, thresholds: Thresholds = Thresholds(), fail_on_sym: float | None = None
) -> list[Decision]:
    """Every decision of the audit read over its intervals (which need bootstrap resamples)."""
    if result.self_effect_ci is None or result.leakage_ci is None:
        raise ValueError("deciding from intervals needs bootstrap resamples (bootstrap > 0)")
    crit, th = result.criteria, thresholds
    gate = {
        c: at_least(
            _ci(result.self_effect_ci.loc[c, "low"], result.self_effect_ci.loc[c, "high"]), result.tau, frozenset([c])
        )
        for c in crit
    }
    out = [_decision(GATE, (c,), gate[c]) for c in crit]
    low, high = result.leakage_ci
    for p in result.pairs.to_dict("records"):
        a, b = p["a"], p["b"]
        both, one, other = frozenset([a, b]), frozenset([a]), frozenset([b])
        l_ab, l_ba = _ci(low.loc[a, b], high.loc[a, b]), _ci(low.loc[b, a], high.loc[b, a])
        sym, asym = _ci(*(p["sym_ci"] or (None, None))), _ci(*(p["asym_ci"] or (None, None)))
        reliable = gate[a] & gate[b]
        steep = at_least(asym, th.directional_asym, both)
        flags = {
            DIRECTIONAL: steep
            & (at_least(l_ab, th.directional_leak, one) | at_least(l_ba, th.directional_leak, other)),
            CLUSTER: at_least(sym, th.cluster_sym, both) & ~steep,
            TRADEOFF: at_most(l_ab, th.tradeoff_leak, one) | at_most(l_ba, th.tradeoff_leak, other),
        }
        if fail_on_sym is not None:
            flags[POLICY] = at_least(sym, fail_on_sym, both)
        for kind, flag in flags.items():  # a gated pair carries no flag: `reliable` false settles it
            out.append(_decision(kind, (a, b), reliable & flag))
    return out


def _ci(low: float | None, high: float | None) -> tuple[float, float] | None:
    return None if low is None or high is None else (float(low), float(high))


def _decision(kind: str, criteria: tuple[str, ...], t: Tri) -> Decision:
    return Decision(kind, criteria, t.value, tuple(sorted(t.sources)) if t.value is None else ())
