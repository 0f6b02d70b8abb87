"""Judge bias (paired rewrites) and a reward model's profile, as text (outline.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num
from radar_local.stats.bias import Bias
from radar_local.stats.reward import RewardProfile

if TYPE_CHECKING:
    from radar_local.stats.result import AuditResult


NUISANCE_HEAD = ["attribute", "criterion", "pairs", "sensitivity", CI, "bias share", "flag"]


def nuisance_rows(result: AuditResult) -> list[list[str]]:
    return [
        [
            r.attribute,
            r.criterion,
            str(r.pairs),
            num(r.sensitivity),
            interval(r.ci),
            num(r.bias_share, signed=False),
            " ".join(x for x in (r.flag, r.evidence) if x),
        ]
        for r in result.bias_rows
    ]


def nuisance_line(result: AuditResult) -> str | None:
    """Which criteria move with an attribute no criterion should reward, beyond the threshold."""
    n = result.measured(Bias)
    if not n:
        return None

    def cells(evidence: str) -> list[str]:
        return [
            f"{r.criterion} with {r.attribute} ({num(r.sensitivity)})"
            for r in n.rows
            if r.flag == "biased" and (r.evidence or "possible") == evidence
        ]

    confirmed, possible = cells("confirmed"), cells("possible")
    checked = n.manipulation or {}
    attributes = sorted({r.attribute for r in n.rows} | set(checked))
    found = f"confirmed: {'; '.join(confirmed) or 'none'}" + (f"; possible: {'; '.join(possible)}" if possible else "")
    unmoved = [f"{a} ({m['passed']} of {m['pairs']} pairs moved)" for a, m in checked.items() if not m["steered"]]
    gated = f" Not steered, so nothing is claimed: {', '.join(unmoved)}." if unmoved else ""
    return (
        f"Judge bias over {', '.join(attributes)} (up - down rewrites, 0-1 scale, flagged at |sensitivity| >= "
        f"{n.threshold}; confirmed where the simultaneous {n.level:.0%} interval over every attribute x criterion "
        f"cell lies beyond it, possible where only the point does): {found}.{gated}"
    )


REWARD_HEAD = [
    "criterion",
    "pairs",
    "steer effect (reward sd)",
    CI,
    "family band",
    "verdict",
    "Spearman with the judge",
]


def reward_rows(result: AuditResult) -> list[list[str]]:
    r = result.measured(RewardProfile)
    return [
        [c.criterion, str(c.pairs), num(c.effect), interval(c.ci), interval(c.band), c.verdict, num(c.agreement)]
        for c in (r.criteria if r else [])
    ]


def reward_line(result: AuditResult) -> str | None:
    """The reward model: which criteria move its reward, and which it does not see."""
    r = result.measured(RewardProfile)
    if r is None:
        return None
    if not r.sd:
        return (
            f"The reward model {r.model} gave the same reward to all {r.probes - r.unscored} probes it scored: its "
            "reward carries nothing, and no effect is read (a broken head, or a server that answers a constant)"
        )
    moves = [f"{c.criterion} {num(c.effect)}" for c in r.criteria if c.verdict == "moves"]
    blind = [c.criterion for c in r.criteria if c.verdict == "blind"]
    return (
        f"The reward model {r.model} scored {r.probes - r.unscored} of {r.probes} probes (sd {num(r.sd, signed=False)}"
        f", the unit of each effect; family-wise {r.level:.0%} over the {len(r.criteria)} criteria): "
        + (f"a steer moves its reward on {', '.join(moves)}" if moves else "no steer moves its reward beyond chance")
        + (
            f"; it does not see {', '.join(blind)} (each effect confirmed within +-{r.margin:g} sd)"
            if blind
            else "; no criterion is confirmed unseen"
        )
    )
