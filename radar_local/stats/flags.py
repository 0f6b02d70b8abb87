"""Audit flags: which pairs and criteria a reviewer should look at first (RADAR §5.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


def pair_flag(l_ab: float, l_ba: float, reliable: bool, th: Thresholds = Thresholds()) -> str | None:
    """One label per pair: 'gated', 'directional', 'bidirectional cluster', 'tradeoff' or None."""
    if not reliable or np.isnan(l_ab) or np.isnan(l_ba):
        return "gated"
    sym, asym = (l_ab + l_ba) / 2, abs(l_ab - l_ba)
    if asym >= th.directional_asym and max(l_ab, l_ba) >= th.directional_leak:
        return "directional"
    if sym >= th.cluster_sym and asym < th.directional_asym:
        return "bidirectional cluster"
    if min(l_ab, l_ba) <= th.tradeoff_leak:
        return "tradeoff"
    return None


def upstream(a: str, b: str, l_ab: float, l_ba: float) -> tuple[str, str]:
    """(upstream, downstream): the source whose leakage into the other is larger."""
    return (a, b) if l_ab >= l_ba else (b, a)
