"""The paired family's text (outline.py): repeats, wording and thinking, each a paired comparison of one judge
with itself asked again, reworded, or without its reasoning."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.text import CI, interval, num
from radar_local.stats.drift import Drift
from radar_local.stats.repeats import Repeats
from radar_local.stats.wording import Wording

if TYPE_CHECKING:
    from radar_local.stats.repeats import RepeatCriterion
    from radar_local.stats.result import AuditResult


REPEATS_HEAD = ["criterion", "probes", "changed", CI, "alpha", CI, "noise sd", CI, "noise share", CI, "unscored"]


def _askings(c: RepeatCriterion) -> list[str]:
    """A criterion's verdicts asked several times (repeats, wordings): probes, changed, alpha, sd, each with CI."""
    return [
        c.criterion,
        str(c.probes),
        num(c.changed, signed=False),
        interval(c.changed_ci),
        num(c.alpha),
        interval(c.alpha_ci),
        num(c.noise_sd, signed=False),
        interval(c.noise_sd_ci),
    ]


def repeats_rows(result: AuditResult) -> list[list[str]]:
    r = result.measured(Repeats)
    return [
        [*_askings(c), num(c.noise_share, signed=False), interval(c.noise_share_ci), str(c.unscored)]
        for c in (r.criteria if r else [])
    ]


def repeats_line(result: AuditResult) -> str | None:
    """How far the judge agrees with itself when each verdict is asked again, and what its noise costs."""
    r = result.measured(Repeats)
    if not r:
        return None
    noisy = [c for c in r.criteria if c.changed_ci is not None and (c.changed_ci[0] or 0) > 0]
    found = (
        f"the verdicts change between askings on {', '.join(c.criterion for c in noisy)} (interval above 0): the "
        "judge's own noise is the 'noise share' of those criteria's verdict variance, which every self-effect and "
        "leakage carries, and averaging the askings would divide it by their number"
        if noisy
        else "no criterion's verdicts change between askings beyond chance: the judge agrees with itself"
    )
    return (
        f"Each verdict of {r.probes} probes asked {len(r.labels)} times ({', '.join(r.labels)}), greedy, in another "
        f"order and so in other batches; {found}."
    )


WORDING_HEAD = ["criterion", "probes", "changed", CI, "alpha", CI, "sd across wordings", CI, "largest flip rate"]


def wording_rows(result: AuditResult) -> list[list[str]]:
    w = result.measured(Wording)
    if not w:
        return []
    flips = {
        c.criterion: max(
            (1 - r.exact for d in w.against for r in d.criteria if r.criterion == c.criterion and r.exact is not None),
            default=None,
        )
        for c in w.agreement.criteria
    }
    return [[*_askings(c), num(flips[c.criterion], signed=False)] for c in w.agreement.criteria]


THINKING_HEAD = [
    "criterion",
    "probes",
    "self-effect without",
    "with reasoning",
    "change",
    CI,
    "unscored without / with",
]


def thinking_rows(result: AuditResult) -> list[list[str]]:
    d = result.measured(Drift)
    return [
        [
            c.criterion,
            str(c.probes),
            num(c.self_effect_before),
            num(c.self_effect_after),
            num(c.self_effect_change),
            interval(c.self_effect_change_ci),
            f"{c.unscored_before} / {c.unscored_after}",
        ]
        for c in (d.criteria if d else [])
    ]


def thinking_line(result: AuditResult) -> str | None:
    """What the judge's reasoning changes, from its ablation: the same probes scored by it answering at once."""
    d = result.measured(Drift)
    if not d:
        return None

    def beyond(ci: tuple | list | None) -> int:  # +1 above 0, -1 below, 0 holds 0 (or undefined)
        lo, hi = (ci or (None, None))[:2]
        return 1 if lo is not None and lo > 0 else -1 if hi is not None and hi < 0 else 0

    moved = {+1: "rises", -1: "falls"}
    effects = [
        f"{c.criterion} {moved[way]} by {num(c.self_effect_change)} {interval(c.self_effect_change_ci)}"
        for c in d.criteria
        if (way := beyond(c.self_effect_change_ci))
    ]
    leaks = [f"{p.source} -> {p.target} {p.flag} by {num(p.change)} {interval(p.ci)}" for p in d.pairs if p.flag]
    lost = sum(c.unscored_after for c in d.criteria)
    return (
        f"The same {d.probes} probes scored by the judge with its reasoning and answering at once ('{d.before}'), "
        f"paired ({d.level:.0%} intervals, {d.resamples} resamples of probes): "
        + (
            f"self-effects that change (interval per criterion): {'; '.join(effects)}"
            if effects
            else "no self-effect changes beyond its interval"
        )
        + "; "
        + (
            f"leakages that move beyond the simultaneous band over the ordered pairs: {'; '.join(leaks)}"
            if leaks
            else "no leakage moves beyond the simultaneous band over the ordered pairs"
        )
        + f"; mean leakage change {num(d.index)} {interval(d.index_ci)}".rstrip()
        + (
            f". Reasoning left {lost} verdicts unscored (over its budget or unended) that answering at once scored"
            if lost
            else ""
        )
        + "."
    )


def wording_line(result: AuditResult) -> str | None:
    """How far the verdicts and the leakages move when the judge's template is worded otherwise."""
    w = result.measured(Wording)
    if not w:
        return None
    moved = [
        f"{p.source} -> {p.target} {p.flag} by {num(p.change)} {interval(p.ci)} under '{d.after}'"
        for d in w.against
        for p in d.pairs
        if p.flag
    ]
    shifted = [c.criterion for c in w.agreement.criteria if c.changed_ci is not None and (c.changed_ci[0] or 0) > 0]
    return (
        f"The same {w.agreement.probes} probes scored under {len(w.templates)} wordings of the judge's template "
        f"({', '.join(w.templates)}): "
        + (
            f"the verdicts move with the wording on {', '.join(shifted)}"
            if shifted
            else "no criterion's verdicts move with the wording beyond chance"
        )  # fmt: skip
        + "; "
        + (
            f"leakages that move beyond their simultaneous band: {'; '.join(moved)}: a finding on them depends on "
            "how the judge is asked"
            if moved
            else "no leakage moves beyond its simultaneous band under another wording"
        )
        + "."
    )
