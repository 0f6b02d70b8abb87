"""Findings: what in an audit an edit may address (a cluster, a directional or tradeoff pair, a criterion
the verifier cannot read), and the flagged pairs left alone because they are intended."""

from __future__ import annotations

from dataclasses import dataclass

from radar_local.report.text import interval
from radar_local.stats.flags import CLUSTER, DIRECTIONAL, TRADEOFF
from radar_local.stats.result import AuditResult


@dataclass(frozen=True)
class Finding:
    kind: str  # cluster, directional, tradeoff, unreadable, bias
    criteria: tuple[str, ...]
    text: str


def diagnose(result: AuditResult, intended: set[frozenset]) -> tuple[list[Finding], list[str]]:
    """Findings an edit may address, and the flagged pairs left alone because they are intended."""
    findings = [
        Finding(
            "unreadable",
            (g.criterion,),
            f"{g.criterion}: {g.reason}; this verifier cannot observe the description as written",
        )
        for g in result.unreliable
    ]
    left_alone = []
    for p in result.pairs.to_dict("records"):
        flags = [f for f in p["flags"] if f in (CLUSTER, DIRECTIONAL, TRADEOFF)]
        if not flags:
            continue
        pair = f"{p['a']} / {p['b']}"
        if frozenset((p["a"], p["b"])) in intended:
            left_alone.append(f"{pair} ({', '.join(flags)}): intended, left alone")
            continue
        moves = (
            f"leakage {p['a']} -> {p['b']} {p['leak_ab']:+.2f}, {p['b']} -> {p['a']} {p['leak_ba']:+.2f}, "
            f"Sym {p['sym']:+.2f} {interval(p['sym_ci'])}".rstrip()
        )
        for flag in flags:
            kind = {CLUSTER: "cluster", DIRECTIONAL: "directional", TRADEOFF: "tradeoff"}[flag]
            what = {
                "cluster": "the two move together both ways: possible double counting",
                "directional": f"{p['upstream']} drives {p['downstream']}",
                "tradeoff": "raising one lowers the other",
            }[kind]
            level = (p.get("evidence") or {}).get(flag)
            findings.append(Finding(kind, (p["a"], p["b"]), f"{pair}: {what} ({moves}){f', {level}' if level else ''}"))
    for r in result.bias_rows:
        if r.flag == "intended":
            left_alone.append(f"{r.criterion} with {r.attribute}: intended, left alone")
        elif r.flag == "biased":
            moves = f"{r.sensitivity:+.2f} {interval(r.ci)}".rstrip()
            findings.append(
                Finding(
                    "bias",
                    (r.criterion,),
                    f"{r.criterion}: the verifier rewards {r.attribute} ({moves} between rewrites that change "
                    f"only {r.attribute}); describe {r.criterion} so that {r.attribute} alone earns nothing",
                )
            )
    return findings, left_alone
