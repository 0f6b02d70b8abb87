"""The rows and lines the report outline is made of (outline.py): numbers, intervals, flags and findings as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.stats.halo import Halo
from radar_local.stats.joint import JointCalls
from radar_local.stats.stored import DoubleCount

if TYPE_CHECKING:
    from radar_local.records import RunInfo
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
    if len(result.criteria) == 1:
        lines.append(one_criterion_line(result))
    elif not lines and result.criteria:  # without shared criteria, the findings are the items' (per_prompt_text)
        lines.append("No pair crosses the flag thresholds.")
    return lines


def one_criterion_line(result: AuditResult) -> str:
    """A rubric of one criterion (issue 63): whether the judge reads it, from its gate; it has no coupling."""
    (c,) = result.criteria
    ci = result.self_effect_ci
    said = f"self-effect {num(result.self_effect[c])}" + (
        "" if ci is None else f", {at_level(CI, result.bootstrap.level)} {interval(tuple(ci.loc[c]))}"
    )
    evidence = "" if result.gate_evidence is None else f" ({result.gate_evidence[c]})"
    reads = (
        f"the judge reads it: {said}, at or above tau = {result.tau}{evidence}"
        if result.reliable[c]
        else f"the judge does not read it reliably: {said}, tau = {result.tau}{evidence}"
    )
    return (
        f"{c}: {reads}. A rubric of one criterion has no coupling to measure: what the audit says of it is this "
        "gate and, where it made rewrites, the judge bias below."
    )


def finding_cell(result: AuditResult, line: str) -> list[str] | None:
    """The leakage a finding is about (its flagged pair's upstream -> downstream), or None (a warning, a gate)."""
    for p in pair_records(result):
        if line.find(f"{p['a']} / {p['b']}:") != -1:
            up, down = p.get("upstream"), p.get("downstream")
            return [up, down] if isinstance(up, str) and isinstance(down, str) else [p["a"], p["b"]]
    return None


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
    demoted = {(a, b) for a, b in j.demoted} if (j := result.measured(JointCalls)) is not None else set()
    for p in flagged:
        flags = [f for f, e in p["evidence"].items() if e == "possible"]
        if flags and (p["a"], p["b"]) in demoted:  # its family bounds settle the joint judge's, not the rubric's
            out.append(f"Possible, from joint calls the halo may make: {line(p, flags)}; an audit per criterion "
                       "settles it.")  # fmt: skip
        elif flags:
            out.append(f"Possible, not settled by the family bounds: {line(p, flags)}; {settle(p)}.")
    return out


# ---- one row builder for the console, Markdown and HTML renderers ----

CI = "{level} CI"  # a column of intervals, at the level of the audit's (at_level writes it in)


def at_level(text: str, level: float) -> str:
    """`text` with the level of the intervals it names written in: a head or title that says CI."""
    return text.replace("{level}", f"{level:.0%}")


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


def double_count_line(result: AuditResult) -> str | None:
    """What share of the rubric's weighted aggregate counts one movement twice through coupling."""
    d = result.measured(DoubleCount)
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


ADAPTIVE_HEAD = ["wave", "probes added", "verifier calls", "open decisions", "grown next (criteria; prompts)"]


def adaptive_rows(result: AuditResult) -> list[list[str]]:
    return [
        [str(w.wave), str(w.probes), str(w.verifier_calls), str(len(w.open)), ", ".join(w.grow) or "-"]
        for w in (result.adaptive.waves if result.adaptive else [])
    ]


def adaptive_line(result: AuditResult) -> str | None:
    a = result.adaptive
    if not a:
        return None
    items = result.per_prompt.items if result.per_prompt else []
    cells = 2 * (len(result.tasks) * len(result.criteria) + len(items))
    share = a.probes / (cells * a.max_n) if cells else 0.0
    open_ = "; ".join(f"{d.kind} {'/'.join(d.criteria)}" for d in a.at_budget) or "none"
    grows = (
        f"a prompt's every (item, direction) together while its own findings are open, its tests over "
        f"{result.per_prompt.looks} looks"
        if result.per_prompt
        else f"decisions at {a.confidence:.0%} confidence"
    )
    return (
        f"Adaptive audit: {len(a.waves)} waves from {a.start_n} to at most {a.max_n} probes per (task, "
        f"{'item' if items else 'criterion'}, direction), {a.probes} probes ({share:.0%} of a fixed n = "
        f"{a.max_n}); {grows}: {len(a.settled)} settled, {len(a.at_budget)} open "
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


def joint_line(result: AuditResult) -> str | None:
    """Where a joint judge's findings come from, in one line beside them: its reading and what its halo check
    found (stats/joint.py)."""
    j, h = result.measured(JointCalls), result.measured(Halo)
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
