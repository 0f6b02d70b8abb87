"""The rows and lines the report outline is made of (outline.py): numbers, intervals, flags and findings as text."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.joint import beyond

if TYPE_CHECKING:
    from radar_local.records import RunInfo
    from radar_local.stats.order import OrderEffects
    from radar_local.stats.pairwise import HumanPairs
    from radar_local.stats.pairwise_audit import PairwiseAudit
    from radar_local.stats.repeats import RepeatCriterion
    from radar_local.stats.result import AuditResult


def num(x: float | None, digits: int = 2, signed: bool = True) -> str:
    if x is None or x != x:  # None or NaN: undefined
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def interval(ci: tuple | list | None) -> str:
    if not ci or ci[0] is None or ci[0] != ci[0]:
        return ""
    return f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


EVIDENCE_TEXT = {"coupled": "coupled (direction open)", "screened": "screened (false discovery rate)"}


def flag_text(pair: dict, flags: list[str] | None = None) -> str:
    """Every flag of a pair (or those named), each with its evidence where the audit has intervals, e.g.
    'directional (a -> b) confirmed, tradeoff possible'."""
    named = {
        "directional": f"directional ({pair.get('upstream')} -> {pair.get('downstream')})",
        "gated": "gated (unreliable criterion)",
    }
    evidence = pair.get("evidence") or {}
    return ", ".join(
        named.get(f, f) + (f" {EVIDENCE_TEXT.get(evidence[f], evidence[f])}" if f in evidence else "")
        for f in (pair["flags"] if flags is None else flags)
    )


def injection_line(info: RunInfo) -> str:
    """How many probes address the judge, where, and whether the statistics use them."""
    inj = info.injection
    if inj is None:
        return "Probes addressing the judge: not checked (run stored before this check existed)."
    if not inj.flagged:
        return f"No probe of {inj.probes} addresses the judge or asks for a score."
    where = ", ".join(f"{k}: {n}" for k, n in inj.by_target_direction.items())
    use = (
        "excluded from the statistics"
        if inj.excluded
        else "kept in the statistics (set exclude_flagged_probes: true to leave them out)"
    )
    return f"{inj.flagged} of {inj.probes} probes address the judge or ask for a score ({where}); {use}."


def pair_records(result: AuditResult) -> list[dict]:
    return result.pairs.to_dict("records")


def verdict(result: AuditResult) -> list[str]:
    """Plain sentences a reviewer reads first."""
    lines = [f"Warning: {w}." for w in result.warnings]
    if result.unreliable:
        names = ", ".join(
            f"{g.criterion} ({g.reason}{'' if g.evidence is None else '; ' + g.evidence})" for g in result.unreliable
        )
        lines.append(
            f"{len(result.unreliable)} of {len(result.criteria)} criteria fail the reliability gate: {names}; "
            "no coupling is claimed for them."
        )
    lines += findings(result)
    if not lines:
        lines.append("No pair crosses the flag thresholds.")
    return lines


def findings(result: AuditResult) -> list[str]:
    """Confirmed flags first, with the family level they hold at; then coupled pairs (Sym confirmed, direction
    open), screened flags (a false discovery rate, where asked for) and possible flags, each with the probes that
    would settle it; without intervals, the point estimate's flags, saying so."""
    flagged = [p for p in pair_records(result) if p["flags"] and p["flags"] != ["gated"]]
    lead = [] if (said := joint_line(result)) is None or not flagged else [said]

    def line(p: dict, flags: list[str]) -> str:
        return f"{p['a']} / {p['b']}: {flag_text(p, flags)}, Sym {num(p['sym'])}, Asym {num(p['asym'], signed=False)}"

    if result.family is None:
        return lead + [f"{line(p, p['flags'])} (point estimate: no intervals, bootstrap 0)." for p in flagged]
    fam = result.family
    held = (
        f"family-wise {fam['level']:.0%}: gates first, then {fam['cells']} one-sided bounds on the pairs"
        if fam.get("pair_level") is not None
        else f"simultaneous {fam['level']:.0%} intervals over the cell's {fam['cells']} self-effects, leakages, "
        "Sym and Asym (family-wise)"
    )
    out = lead
    for p in flagged:
        flags = [f for f, e in p["evidence"].items() if e == "confirmed"]
        if flags:
            out.append(f"{line(p, flags)}: confirmed ({held}).")
    if flagged and not out:
        out.append(f"No flag is confirmed ({held}).")
    now = result.probes.min_per_stratum

    def settle(p: dict) -> str:
        n = p.get("settle_n")
        if n is not None and n == n:
            return f"about {int(n)} probes per stratum would settle it if the estimates hold (now {now})"
        return "no affordable N settles it: an estimate at or near its threshold"

    for p in flagged:
        flags = [f for f, e in p["evidence"].items() if e == "coupled"]
        if flags:
            out.append(
                f"{line(p, flags)}: Sym >= {result.thresholds['cluster_sym']} and both gates confirmed ({held}); "
                f"which way it runs: {settle(p)}."
            )
    screen = fam.get("screening")
    for p in flagged:
        flags = [f for f, e in p["evidence"].items() if e == "screened"]
        if flags and screen:
            out.append(
                f"Screened, not confirmed: {line(p, flags)} passes Benjamini-Hochberg at a false discovery rate of "
                f"{screen['fdr']:.0%} over {screen['hypotheses']} flag hypotheses (about that share of screened "
                f"flags are noise); {settle(p)}."
            )
    demoted = {(a, b) for a, b in result.joint.demoted} if result.joint is not None else set()
    for p in flagged:
        flags = [f for f, e in p["evidence"].items() if e == "possible"]
        if flags and (p["a"], p["b"]) in demoted:  # its family bounds settle the joint judge's, not the rubric's
            out.append(f"Possible, from joint calls the halo may make: {line(p, flags)}; an audit per criterion "
                       "settles it.")  # fmt: skip
        elif flags:
            out.append(f"Possible, not settled by the family bounds: {line(p, flags)}; {settle(p)}.")
    return out


# ---- one row builder for the console, Markdown and HTML renderers ----

CI = f"{LEVEL:.0%} CI"  # the level every interval of a report is at
SELF_EFFECT_HEAD = ["criterion", "self-effect", CI, "reliable", "tasks <= 0"]
PAIR_HEAD = ["pair", "l_ab", "l_ba", "Sym", f"Sym {CI}", "Asym", "human r", "flag"]


def self_effect_rows(result: AuditResult) -> list[list[str]]:
    ci = result.self_effect_ci
    return [
        [
            c,
            num(result.self_effect[c]),
            interval(None if ci is None else tuple(ci.loc[c])),
            ("yes" if result.reliable[c] else "no")
            + ("" if result.gate_evidence is None else f", {result.gate_evidence[c]}"),
            _non_positive(result, c),
        ]
        for c in result.criteria
    ]


def _non_positive(result: AuditResult, criterion: str) -> str:
    """'n of T': the tasks whose self-effect on this criterion was 0 or below (its leakage row keeps them)."""
    by_task = result.self_effect_by_task[criterion].dropna()
    return f"{int((by_task <= 0).sum())} of {len(by_task)}"


LEAKAGE_DEFINITION = (
    "Each leakage is the source's mean shift of the target over its mean self-effect across tasks (a ratio of "
    "means, so tasks count by their self-effect; the paper's eq. 5 averages per-task ratios instead, which a "
    "task whose intervention barely moved its criterion can dominate). Tasks whose own self-effect was 0 or "
    "below stay in it: the self-effects table counts them."
)
PAPER_DEFINITION = (
    "Each leakage is the paper's eq. 5 (`leakage: paper`): the mean over tasks of the per-task ratio of the "
    "target's shift to the source's self-effect, over the tasks where that self-effect is positive (the "
    "self-effects table counts the others, which it leaves out)."
)


def leakage_definition(result: AuditResult) -> str:
    return PAPER_DEFINITION if result.leakage_definition == "paper" else LEAKAGE_DEFINITION


def leakage_rows(result: AuditResult) -> tuple[list[str], list[list[str]]]:
    head = ["source"] + result.criteria
    return head, [
        [a + ("" if result.reliable[a] else " (gated)")] + [num(result.leakage.loc[a, b]) for b in result.criteria]
        for a in result.criteria
    ]


def pair_rows(result: AuditResult) -> list[tuple[list[str], bool]]:
    """(cells, reliable) per pair, ranked as stored."""
    return [
        (
            [
                f"{p['a']} / {p['b']}",
                num(p["leak_ab"]),
                num(p["leak_ba"]),
                num(p["sym"]),
                interval(p["sym_ci"]),
                num(p["asym"], signed=False),
                num(p["human_r"]),
                flag_text(p),
            ],
            p["reliable"],
        )
        for p in pair_records(result)
    ]


def global_line(result: AuditResult) -> str:
    g = result.global_
    return f"Global: positive {num(g['positive'])}, tension {num(g['tension'])}, max coupling {num(g['max_coupling'])}."


def scores_line(result: AuditResult) -> str:
    """Which kind of verdict the statistics read: the paper's integers or expected scores."""
    if result.probes.score_values == "continuous":
        return (
            "Scores: continuous expected scores (scoring mode 'expected': the probability-weighted mean of the "
            "verifier's score tokens)."
        )
    named = result.scales.criteria if result.scales else {}
    if any(name != "0-4" for name in named.values()):
        scales = ", ".join(f"{c} {name}" for c, name in named.items())
        return (
            f"Scores: verdicts on each criterion's own scale ({scales}), each put on its 0-1 range (a difference "
            "of mean scores over the scale's span), so tau and the flag thresholds mean what they mean on 0-4."
        )
    return "Scores: integer verdicts on the 0-4 scale (scoring mode 'reasoned', the paper's protocol, or a score file)."


HALO_HEAD = ["source -> target", "per-criterion", "joint", "joint - per-criterion", CI, "flag"]


def halo_rows(result: AuditResult) -> list[list[str]]:
    return [
        [
            f"{p.source} -> {p.target}",
            num(p.per_criterion),
            num(p.joint),
            num(p.difference),
            interval(p.ci),
            {"adds": "joint adds coupling", "removes": "joint removes coupling"}.get(p.flag or "", ""),
        ]
        for p in (result.halo.pairs if result.halo else [])
    ]


def joint_line(result: AuditResult) -> str | None:
    """Where a joint judge's findings come from, in one line beside them: its reading and what its halo check
    found (stats/joint.py)."""
    j, h = result.joint, result.halo
    if j is None:
        return None
    index = f"halo index {num(h.index)} {interval(h.index_ci)}".rstrip() if h is not None else ""
    if j.reading == "deployed":
        measured = f"the call format's share of it: {index}" if h is not None else "its halo was not measured"
        return f"Joint judge read as deployed (reading: deployed): its halo is part of the coupling below ({measured})."
    demoted = ", ".join(f"{a} / {b}" for a, b in j.demoted)
    if not j.checked:
        return (
            "Joint calls (one call scores every criterion) with no halo check: the judge's halo could make criteria "
            f"move together, so no pair is confirmed from them{f' (demoted to possible: {demoted})' if demoted else ''}"
            "; add judge: {halo_check: 0.1} to measure it, or read the judge as deployed (reading: deployed)."
        )
    if demoted:
        return (
            f"Joint calls: the halo check found joint calls moving the coupling ({index}, or a pair's band): "
            f"{demoted} demoted to possible, since the judge's call format rather than the rubric may make them; "
            "an audit per criterion settles them."
        )
    return (
        f"Joint calls: the halo check found no halo on the pairs below ({index}, no pair's band beyond 0): their "
        "findings rest on joint verdicts the check does not contradict."
    )


def halo_line(result: AuditResult) -> str | None:
    """What scoring every criterion in one call adds to the coupling of the same judge's per-criterion calls."""
    h = result.halo
    if not h:
        return None
    adds = [f"{p.source} -> {p.target}" for p in h.pairs if p.flag == "adds"]
    index = f"halo index {num(h.index)} {interval(h.index_ci)}".rstrip()
    side = beyond(h.index_ci)  # the index's interval above (+1) or below (-1) 0
    found = (
        f"joint calls add coupling beyond the {h.level:.0%} simultaneous band on {', '.join(adds)}: a joint "
        "flag there may be the judge's halo, not the rubric's coupling (the per-criterion audit settles it)"
        if adds
        else "no single pair's coupling rises beyond its simultaneous band, but the index's interval lies "
        f"{'above' if side > 0 else 'below'} 0: joint calls move the coupling overall"
        if side
        else "no pair's coupling rises beyond its simultaneous band under joint calls"
    )
    return (
        f"The same {h.probes} probes scored by '{h.per_criterion}' (one call per criterion) and "
        f"'{h.joint}' (one call for all criteria): {index} (the mean joint-minus-per-criterion leakage over "
        f"ordered pairs); {found}."
    )


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
    return [
        [*_askings(c), num(c.noise_share, signed=False), interval(c.noise_share_ci), str(c.unscored)]
        for c in (result.repeats.criteria if result.repeats else [])
    ]


def repeats_line(result: AuditResult) -> str | None:
    """How far the judge agrees with itself when each verdict is asked again, and what its noise costs."""
    r = result.repeats
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
    w = result.wording
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
        for c in (result.thinking.criteria if result.thinking else [])
    ]


def thinking_line(result: AuditResult) -> str | None:
    """What the judge's reasoning changes, from its ablation: the same probes scored by it answering at once."""
    d = result.thinking
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
    w = result.wording
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


ORDER_HEAD = ["criterion", "verdicts", "strata", "first minus later", CI, "flag"]


def order_rows(o: OrderEffects | None) -> list[list[str]]:
    return [
        [e.criterion, str(e.verdicts), str(e.strata), num(e.effect), interval(e.ci), "order" if e.flag else ""]
        for e in (o.effects if o else [])
    ]


def order_line(o: OrderEffects | None) -> str | None:
    """Whether a joint judge scores a criterion otherwise by the place it shows it at."""
    if o is None:
        return None
    moved = [e.criterion for e in o.effects if e.flag]
    compared = max((e.strata for e in o.effects), default=0)
    found = (
        f"shown first, {', '.join(moved)} score otherwise beyond the {o.level:.0%} band over the criteria: one call "
        "is not order-safe for this judge and rubric"
        if moved
        else "no stratum showed a criterion both first and later, so nothing about order was compared (order: "
        "balanced shows each criterion at each place)"
        if compared == 0
        else f"no criterion's score moves with its place beyond the {o.level:.0%} band over the criteria"
    )
    primed = [f"{p.source} before {p.target} moves it by {num(p.effect)} {interval(p.ci)}" for p in o.pairs if p.flag]
    leak = (
        f"order leakage beyond the band over the {len(o.pairs)} ordered pairs: {'; '.join(primed)} (a position "
        "effect shows here too: a criterion shown before another is never the other's first)"
        if primed
        else f"no criterion moves another's score by being shown before it, beyond the band over the {len(o.pairs)} "
        "ordered pairs"
    )
    return (
        f"Criterion order in '{o.verifier}''s joint calls, {o.probes} probes ({o.level:.0%} intervals over the "
        f"strata's contrasts; scores on the 0-1 footing): {found}; {leak}."
    )


PAIRWISE_HEAD = ["criterion", "pairs", "accuracy", "pairwise self-effect", CI, "gate"]


def pairwise_rows(result: AuditResult | PairwiseAudit) -> list[list[str]]:
    p = result.pairwise
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
    p = result.pairwise
    return [
        [d.criterion, num(d.shift), interval(d.ci), num(d.share, signed=False)]
        for d in (p.overall if p is not None and p.overall else [])
    ]


def pairwise_line(result: AuditResult | PairwiseAudit) -> str | None:
    """The verifier asked pairwise: what moves its preference, and where it sits on the first slot."""
    p = result.pairwise
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


def pairwise_leakage_rows(result: PairwiseAudit) -> list[list[str]]:
    """The pairwise leakage matrix, one row per (steered, asked) criterion: a judge asked only pairs has no other."""
    return [
        [x.source, x.target, num(x.leakage), interval(x.ci), "yes" if x.confirmed else "no"]
        for x in result.pairwise.leakage
    ]


PAIRWISE_PAIR_HEAD = ["pair", "l_ab", "l_ba", "Sym", "Asym", "flag"]


def pairwise_pair_rows(result: PairwiseAudit) -> list[list[str]]:
    return [
        [
            f"{q.a} / {q.b}",
            num(q.leak_ab),
            num(q.leak_ba),
            num(q.sym),
            num(q.asym),
            ", ".join(f"{f} ({q.evidence[f]})" if f in q.evidence else f for f in q.flags) or "-",
        ]
        for q in result.pairwise.pairs
    ]


def pairwise_findings(result: PairwiseAudit) -> list[str]:
    """A judge asked only pairs: what its family confirms (leakages, pair flags, position bias) and the criteria
    its gate does not read, else that nothing is confirmed."""
    p = result.pairwise
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


def double_count_line(result: AuditResult) -> str | None:
    """What share of the rubric's weighted aggregate counts one movement twice through coupling."""
    d = result.double_count
    if d is None or d.share is None:
        return None
    source = "its weights" if d.rubric_weights else "equal weights (the rubric sets none)"
    worst = max(((c, s) for c, s in d.by_source.items() if s is not None), key=lambda x: x[1])
    return (
        f"Weighted aggregate ({source}): {d.share:.0%} of its response to a steered criterion comes through "
        f"other, coupled criteria and is counted twice (most from {worst[0]}: {worst[1]:.0%})."
    )


def agreement_line(result: AuditResult) -> str | None:
    a = result.agreement
    if a is None:
        return None
    why = f" (no correlation: {a.reason})" if a.reason else ""
    return (
        f"Agreement with the human reference over {a.n_pairs} reliable pairs: Pearson {num(a.pearson)}, "
        f"Spearman {num(a.spearman)}{why}, MAE {num(a.mae, signed=False)}."
    )


ADAPTIVE_HEAD = ["wave", "probes added", "verifier calls", "open decisions", "criteria grown next"]


def adaptive_rows(result: AuditResult) -> list[list[str]]:
    return [
        [str(w.wave), str(w.probes), str(w.verifier_calls), str(len(w.open)), ", ".join(w.grow) or "-"]
        for w in (result.adaptive.waves if result.adaptive else [])
    ]


def adaptive_line(result: AuditResult) -> str | None:
    a = result.adaptive
    if not a:
        return None
    cells = 2 * len(result.tasks) * len(result.criteria)
    share = a.probes / (cells * a.max_n) if cells else 0.0
    open_ = "; ".join(f"{d.kind} {'/'.join(d.criteria)}" for d in a.at_budget) or "none"
    return (
        f"Adaptive audit: {len(a.waves)} waves from {a.start_n} to at most {a.max_n} probes per (task, "
        f"criterion, direction), {a.probes} probes ({share:.0%} of a fixed n = {a.max_n}); decisions at "
        f"{a.confidence:.0%} confidence: {len(a.settled)} settled, {len(a.at_budget)} open "
        f"{'within the budget of ' + str(a.budget) + ' verifier calls' if a.stopped_by == 'budget' else 'at max_n'} "
        f"({open_})."
    )


def cost_rows(info: RunInfo) -> list[list[str]]:
    """One row per stage; a score stage names its scoring mode, prefill says what the cache served."""
    rows = []
    for stage, s in info.stages.items():
        tps = s.output_tokens / s.seconds if s.seconds else None
        rate = f"{s.parse_rate:.1%}" if s.parse_rate is not None else "-"
        cache = f"{s.prefix_cache_hit_rate:.1%}" if s.prefix_cache_hit_rate is not None else "-"
        if s.prompt_tokens_cached is not None:
            cache += f" ({s.prompt_tokens_cached} cached, {s.prompt_tokens_computed} computed)"
        name = f"{stage} ({s.mode})" if s.mode else stage
        rows.append(
            [
                name,
                str(s.calls),
                str(s.prompt_tokens),
                str(s.output_tokens),
                f"{s.seconds:.1f}",
                num(tps, 0, signed=False),
                rate,
                cache,
            ]
        )
        for r in (s.cluster or {}).get("replicas", []):  # a cluster run: each replica's share
            rtps = r["output_tokens"] / r["seconds"] if r["seconds"] else None
            rows.append(
                [
                    f"  replica {r['replica']} on {r['ip']}" + (" (lost)" if r["lost"] else ""),
                    str(r["calls"]),
                    str(r["prompt_tokens"]),
                    str(r["output_tokens"]),
                    f"{r['seconds']:.1f}",
                    num(rtps, 0, signed=False),
                    "-",
                    "-",
                ]
            )
    return rows


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
    n = result.bias
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
        f"{n.threshold}; confirmed where the simultaneous {LEVEL:.0%} interval over every attribute x criterion "
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
    r = result.reward
    return [
        [c.criterion, str(c.pairs), num(c.effect), interval(c.ci), interval(c.band), c.verdict, num(c.agreement)]
        for c in (r.criteria if r else [])
    ]


def reward_line(result: AuditResult) -> str | None:
    """The reward model: which criteria move its reward, and which it does not see."""
    r = result.reward
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
