"""Audit flags: which pairs and criteria a reviewer should look at first (RADAR §5.2)."""

from __future__ import annotations

from dataclasses import dataclass

from radar_local.stats.exact import Q, at_least, at_most

GATED, DIRECTIONAL, CLUSTER, TRADEOFF = "gated", "directional", "bidirectional cluster", "tradeoff"
# A flag's evidence: its family bounds settle it (stats/decisions.py); or, for a cluster or a directional pair, they
# settle only that the pair moves together (Sym >= cluster_sym, both gates: "coupled", its direction open); or it
# passes a false-discovery screening the user asked for (stats/screening.py: never family-wise); or only its point
# estimate crosses.
CONFIRMED, COUPLED, SCREENED, POSSIBLE = "confirmed", "coupled", "screened", "possible"
EVIDENCE = (CONFIRMED, COUPLED, SCREENED, POSSIBLE)


@dataclass(frozen=True)
class Thresholds:
    """Defaults reproduce the interpretations of the paper's Table 1.

    cluster_sym: Sym at or above which a symmetric pair is a bidirectional cluster.
    directional_asym: Asym at or above which a pair is directional rather than a cluster.
    directional_leak: the larger leakage a directional pair needs.
    tradeoff_leak: a leakage at or below this (negative) value is a tradeoff.
    """

    cluster_sym: float = 0.5
    directional_asym: float = 0.25
    directional_leak: float = 0.5
    tradeoff_leak: float = -0.2


def pair_flags(l_ab: Q, l_ba: Q, reliable: bool, th: Thresholds = Thresholds()) -> list[str]:
    """Every label that applies, compared in exact arithmetic: ['gated'] for a pair with an
    unreliable criterion; otherwise any of directional, bidirectional cluster, tradeoff.
    Leakages (0.75, -0.25) are both directional and a tradeoff."""
    if not reliable or l_ab is None or l_ba is None:
        return [GATED]
    sym, asym = (l_ab + l_ba) / 2, abs(l_ab - l_ba)
    flags = []
    if at_least(asym, th.directional_asym) and at_least(max(l_ab, l_ba), th.directional_leak):
        flags.append(DIRECTIONAL)
    if at_least(sym, th.cluster_sym) and not at_least(asym, th.directional_asym):
        flags.append(CLUSTER)
    if at_most(min(l_ab, l_ba), th.tradeoff_leak):
        flags.append(TRADEOFF)
    return flags


def upstream(a: str, b: str, l_ab: Q, l_ba: Q) -> tuple[str, str]:
    """(upstream, downstream): the source whose leakage into the other is larger (both defined)."""
    if l_ab is None or l_ba is None:
        raise ValueError(f"the direction of {a} / {b} needs both leakages")
    return (a, b) if l_ab >= l_ba else (b, a)
