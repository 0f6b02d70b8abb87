"""A pairwise judge's text (outline.py, radar pairwise): its self-effects and gates, what drives its overall
preference, its leakages and pair flags."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num
from radar_local.stats.pairwise import Pairwise

if TYPE_CHECKING:
    from radar_local.stats.pairwise import HumanPairs
    from radar_local.stats.pairwise_audit import PairwiseAudit
    from radar_local.stats.result import AuditResult


PAIRWISE_HEAD = ["criterion", "pairs", "accuracy", "pairwise self-effect", CI, "gate"]


def pairwise_rows(result: AuditResult | PairwiseAudit) -> list[list[str]]:
    p = result.measured(Pairwise)
    return [
        [
            c.criterion,
            str(c.pairs),
            num(c.accuracy, signed=False),
            num(c.self_effect),
            interval(c.self_effect_ci),
            c.gate,
        ]
        for c in (p.criteria if p else [])
    ]


DRIVERS_HEAD = ["criterion steered", "moves the overall preference (2p - 1)", CI, "share of the preference"]


def driver_rows(result: AuditResult | PairwiseAudit) -> list[list[str]]:
    """What a pairwise judge's overall preference is made of: each criterion's steer, where it was asked overall."""
    p = result.measured(Pairwise)
    return [
        [d.criterion, num(d.shift), interval(d.ci), num(d.share, signed=False)]
        for d in (p.overall if p is not None and p.overall else [])
    ]


def pairwise_line(result: AuditResult | PairwiseAudit) -> str | None:
    """The verifier asked pairwise: what moves its preference, and where it sits on the first slot."""
    p = result.measured(Pairwise)
    if p is None:
        return None
    moved = [f"{x.source} -> {x.target} {num(x.leakage)} {interval(x.ci)}" for x in p.leakage if x.confirmed]
    flagged = [f"{q.a} / {q.b}: {f} {e}" for q in p.pairs for f, e in q.evidence.items() if e == "confirmed"]
    pos = p.position
    slot = f"the first slot is chosen at {num(pos.first_slot, signed=False)} (bias {num(pos.bias)} {interval(pos.ci)})"
    own = p.judge is None  # else pairwise's own model, its agreement read against the verifier's verdicts
    who, ranker = ("The verifier", "its own") if own else (f"The pairwise judge {p.judge}", "the verifier's")
    if p.criteria:
        opening = (
            f"{who} asked which of each pair (a stratum's up- and down-steered responses) is better, in both "
            f"orders ({p.verdicts} verdicts; family-wise {p.level:.0%} over gates, leakages, pairs and position): "
            + (
                f"a steer moves its preference beyond chance on {'; '.join(moved)}"
                if moved
                else "no steer moves its preference on another criterion beyond chance"
            )  # fmt: skip
            + (f"; confirmed flags: {'; '.join(flagged)}" if flagged else "")
        )
    else:  # asked only which is better overall: no gate or leakage to read; the position is the family's one finding
        opening = (
            f"{who} asked only which of each pair (a stratum's up- and down-steered responses) is better overall, in "
            f"both orders ({p.verdicts} verdicts; its questions name no criterion, so no pairwise gate or leakage is "
            f"read; the steers that move its preference are in the table, each with its own {p.level:.0%} interval)"
        )
    return (
        opening
        + f"; {slot}, "
        + ("a position bias, confirmed" if pos.confirmed else "no position bias confirmed")
        + (
            " (one pair a stratum: no interval has a spread to rest on, so nothing is confirmed; ask pairs: 2 or more)"
            if p.resamples and pos.band is None
            else ""
        )
        + f"; the two orders disagree on {num(pos.flip_rate, signed=False)} of the pairs; ties "
        f"{num(pos.ties, signed=False)}, unscored {pos.unscored}"
        + (
            f"; it prefers the response {ranker} pointwise verdicts rank higher in "
            f"{num(p.pointwise_agreement, signed=False)} {interval(p.pointwise_agreement_ci)} of the verdicts where "
            "they rank the pair"
            if p.pointwise_agreement is not None
            else ""
        )
        + (_against_raters(p.humans) if p.humans is not None else "")
        + (
            (
                "; its overall preference is made of "
                + ", ".join(f"{d.criterion} {num(d.share, signed=False)}" for d in p.overall if d.share is not None)
                + " (each criterion's share of the steers that move it)"
                if any(d.share is not None for d in p.overall)
                else "; no steer moves its overall preference"
            )
            if p.overall
            else ""
        )
        + "."
    )


PAIRWISE_LEAKAGE_HEAD = ["steered", "asked", "pairwise leakage", CI, "confirmed"]


def pairwise_leakage_rows(p: Pairwise) -> list[list[str]]:
    """The pairwise leakage matrix, one row per (steered, asked) criterion: a judge asked only pairs has no other."""
    return [[x.source, x.target, num(x.leakage), interval(x.ci), "yes" if x.confirmed else "no"] for x in p.leakage]


PAIRWISE_PAIR_HEAD = ["pair", "l_ab", "l_ba", "Sym", "Asym", "flag"]


def pairwise_pair_rows(p: Pairwise) -> list[list[str]]:
    return [
        [
            f"{q.a} / {q.b}",
            num(q.leak_ab),
            num(q.leak_ba),
            num(q.sym),
            num(q.asym),
            ", ".join(f"{f} ({q.evidence[f]})" if f in q.evidence else f for f in q.flags) or "-",
        ]
        for q in p.pairs
    ]


def pairwise_findings(p: Pairwise) -> list[str]:
    """A judge asked only pairs: what its family confirms (leakages, pair flags, position bias) and the criteria
    its gate does not read, else that nothing is confirmed."""
    level = f"family-wise {p.level:.0%}"
    out = [
        f"{x.source} -> {x.target}: a steer on {x.source} moves the judge's preference on {x.target} (pairwise "
        f"leakage {num(x.leakage)} {interval(x.ci)}, confirmed {level})"
        for x in p.leakage
        if x.confirmed
    ]
    out += [
        f"{q.a} / {q.b}: {f} (confirmed {level})" for q in p.pairs for f, e in q.evidence.items() if e == "confirmed"
    ]
    if p.position.confirmed:
        out.append(
            f"position: the first slot is chosen at {num(p.position.first_slot, signed=False)} (bias "
            f"{num(p.position.bias)} {interval(p.position.ci)}, confirmed {level})"
        )
    for gate, says in (("failed", "cannot tell"), ("open", "is not shown to tell")):
        unread = [f"{c.criterion} {num(c.self_effect)}" for c in p.criteria if c.gate == gate]
        if unread:
            out.append(
                f"the judge {says} the up-steered response from the down-steered one on {', '.join(unread)} "
                f"(pairwise self-effects; gate {gate} at tau = {p.tau}, {level}): its preferences there are not read"
            )
    return out or [f"no pairwise finding is confirmed ({level} over gates, leakages, pairs and position)"]


def _against_raters(h: HumanPairs) -> str:
    """The pairwise judge against the team's pairwise labels, in one clause."""
    ceiling = (
        f"; the raters agree among themselves on {num(h.raters_agree, signed=False)} of their pairs"
        if h.raters_agree is not None
        else ""
    )
    return (
        f"; on your {h.decided} pairwise labels the raters decide ({Path(h.source).name}), it prefers their choice in "
        f"{num(h.agreement, signed=False)} {interval(h.ci)} of its decisive verdicts (ties "
        f"{num(h.ties, signed=False)}, unscored {h.unscored}){ceiling}"
    )
