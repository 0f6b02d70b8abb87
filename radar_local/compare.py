"""Diff two audits of a rubric: which pairs moved beyond their confidence intervals, which criteria
crossed the reliability gate, and whether a policy ceiling on Sym is crossed."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from radar_local.common import json_number
from radar_local.errors import InputError
from radar_local.inputs import read_json
from radar_local.stats.attacks import Attacks, PairAttacks
from radar_local.stats.bias import beyond
from radar_local.stats.decisions import POLICY, decisions, settle_n
from radar_local.stats.exact import decimal
from radar_local.stats.flags import Thresholds
from radar_local.stats.item_pairs import ItemPairs
from radar_local.stats.pairwise import Pairwise
from radar_local.stats.pairwise_audit import KIND, PairwiseAudit
from radar_local.stats.per_prompt import PerPrompt
from radar_local.stats.repeats import Repeats
from radar_local.stats.result import AuditResult, read_stats
from radar_local.stats.stored import Interval
from radar_local.stats.wording import Wording

T = TypeVar("T")


def load_stats(path: str | Path) -> AuditResult | PairwiseAudit:
    """A run directory's stats.json, or a stats JSON file itself, checked before use."""
    path = Path(path)
    file = path / "stats.json" if path.is_dir() else path
    if not file.is_file():
        raise InputError(
            path, "no stats.json here; pass a run directory from `radar audit` or a `radar stats --json` file"
        )
    data = read_json(file, "pass the stats.json of a finished audit")
    if data.get("kind") != KIND and ("pairs" not in data or "reliable" not in data):
        raise InputError(file, "is not a RADAR stats file (no 'pairs' or 'reliable')")
    return read_stats(data, file)


def _disjoint(ci_a: tuple | None, ci_b: tuple | None) -> bool:
    if ci_a is None or ci_b is None or any(x != x for x in (*ci_a, *ci_b)):
        return False
    return ci_a[1] < ci_b[0] or ci_b[1] < ci_a[0]


def compare(
    before: AuditResult | PairwiseAudit,
    after: AuditResult | PairwiseAudit,
    fail_on_sym: float | None = None,
    fail_on_bias: float | None = None,
    after_path: object = "the second audit",
    *,
    sym_confirmed: float | None = None,
    bias_confirmed: float | None = None,
    fail_on_changed: float | None = None,
    fail_on_wording: bool = False,
    fail_on_pairwise: bool = False,
    fail_on_sign_errors: bool = False,
    fail_on_attack: tuple[str, ...] = (),
) -> dict:
    if isinstance(before, PairwiseAudit) or isinstance(after, PairwiseAudit):
        given = {
            "--fail-on-sym": fail_on_sym,
            "--fail-on-bias": fail_on_bias,
            "--sym-confirmed": sym_confirmed,
            "--bias-confirmed": bias_confirmed,
            "--fail-on-changed": fail_on_changed,
            "--fail-on-wording": fail_on_wording or None,
        }
        option = next((name for name, value in given.items() if value is not None), None)
        if option is not None:
            where = after_path if isinstance(after, PairwiseAudit) else "the first audit"
            raise InputError(where, f"is a pairwise audit (pairwise.only: no pointwise verdict), so {option} "
                             "cannot hold; gate it with --fail-on-pairwise")  # fmt: skip
        return compare_pairwise(before, after, after_path, fail_on_pairwise, fail_on_attack, fail_on_sign_errors)
    earlier = {frozenset((p["a"], p["b"])): p for p in before.pairs.to_dict("records")}
    rows = []
    for p in after.pairs.to_dict("records"):
        q = earlier.get(frozenset((p["a"], p["b"])))
        if q is None:
            continue
        rows.append(
            {
                "a": p["a"],
                "b": p["b"],
                "sym_before": json_number(q["sym"]),
                "sym_after": json_number(p["sym"]),
                "delta": json_number(p["sym"] - q["sym"]),
                "ci_before": q["sym_ci"],
                "ci_after": p["sym_ci"],
                "moved": _disjoint(q["sym_ci"], p["sym_ci"]),
                "flags_before": q["flags"],
                "flags_after": p["flags"],
                "reliable_after": p["reliable"],
            }
        )
    shared = [c for c in after.criteria if c in before.reliable.index]
    gate = [
        {"criterion": c, "reliable_before": bool(before.reliable[c]), "reliable_after": bool(after.reliable[c])}
        for c in shared
        if before.reliable[c] != after.reliable[c]
    ]
    violations = []
    if fail_on_sym is not None:
        # Every reliable pair of `after`, whether or not `before` has it (a renamed criterion is no loophole).
        # Stored Sym is the exact value correctly rounded, and the policy is the decimal correctly rounded:
        # rounding is monotone, so comparing the two floats keeps the exact values' order (stats/exact.py).
        violations = [
            {"a": p["a"], "b": p["b"], "sym_after": p["sym"]}
            for p in after.pairs.to_dict("records")
            if p["reliable"] and p["sym"] == p["sym"] and p["sym"] >= fail_on_sym
        ]
    bias = bias_changes(before, after)
    bias_violations = []
    if fail_on_bias is not None:
        # Every measured, steered, non-intended cell of `after` whose interval excludes 0 at |sensitivity| >= the
        # policy; the stored sensitivity is the exact mean rounded once, so the float order holds (as for Sym).
        measured = [
            r
            for r in after.bias_rows
            if r.flag != "intended" and r.steered is not False and r.sensitivity is not None and r.ci
        ]
        if not measured:  # a policy on a bias nobody measured would pass by default
            raise InputError(
                after_path,
                "measured no judge bias (no steered nuisance attribute with an interval), so --fail-on-bias "
                "cannot hold; audit with `nuisance:` in the config, or drop the option",
            )
        bias_violations = [
            {"attribute": r.attribute, "criterion": r.criterion, "sensitivity": r.sensitivity}
            for r in measured
            if _off_zero(r.ci) and r.sensitivity is not None and abs(r.sensitivity) >= fail_on_bias
        ]
    consistency = consistency_violations(after, fail_on_changed, fail_on_wording, after_path)
    consistency += pairwise_violations(after, after_path) if fail_on_pairwise else []
    consistency += sign_error_violations(before, after, after_path) if fail_on_sign_errors else []
    consistency += attack_violations(after, fail_on_attack, after_path) if fail_on_attack else []
    unsettled = sign_error_reach(after) if fail_on_sign_errors else []
    evidence = {
        "sym": None if sym_confirmed is None else sym_evidence(after, sym_confirmed, after_path),
        "bias": None if bias_confirmed is None else bias_evidence(after, bias_confirmed, after_path),
    }
    return {
        "evidence": evidence,
        "outcome": outcome(
            [v for v in evidence.values() if v is not None] + [{"outcome": OPEN} for _ in unsettled[:1]],
            bool(violations or bias_violations or consistency),
        ),
        "consistency_violations": consistency,
        "open": unsettled,
        "pairs": rows,
        "moved": [r for r in rows if r["moved"]],
        "bias": bias,
        "bias_moved": [r for r in bias if r["moved"]],
        "fail_on_bias": fail_on_bias,
        "bias_violations": bias_violations,
        "gate_changes": gate,
        "fail_on_sym": fail_on_sym,
        "violations": violations,
        "only_before": sorted(set(before.criteria) - set(after.criteria)),
        "only_after": sorted(set(after.criteria) - set(before.criteria)),
        **pairwise_changes(before.measured(Pairwise), after.measured(Pairwise)),
    }


def compare_pairwise(
    before: AuditResult | PairwiseAudit,
    after: AuditResult | PairwiseAudit,
    where: object,
    policy: bool,
    attacks: tuple[str, ...] = (),
    sign_errors: bool = False,
) -> dict:
    """Two audits where one asked its judge only pairs: their pairwise blocks diffed, and the pairwise policy,
    --fail-on-attack and --fail-on-sign-errors on `after` (the same keys as compare's, the pointwise ones empty)."""
    violations = pairwise_violations(after, where) if policy else []
    violations += attack_violations(after, attacks, where) if attacks else []
    violations += sign_error_violations(before, after, where) if sign_errors else []
    unsettled = sign_error_reach(after) if sign_errors else []
    return {
        "evidence": {"sym": None, "bias": None},
        "outcome": outcome([{"outcome": OPEN} for _ in unsettled[:1]], bool(violations)),
        "consistency_violations": violations,
        "open": unsettled,
        **{key: [] for key in ("pairs", "moved", "bias", "bias_moved", "bias_violations", "gate_changes")},
        "violations": [],
        "fail_on_sym": None,
        "fail_on_bias": None,
        "only_before": sorted(set(before.criteria) - set(after.criteria)),
        "only_after": sorted(set(after.criteria) - set(before.criteria)),
        **pairwise_changes(before.measured(Pairwise), after.measured(Pairwise)),
    }


def pairwise_changes(before: Pairwise | None, after: Pairwise | None) -> dict[str, list[dict]]:
    """The pairwise leakages both audits measured whose intervals are disjoint, and the pairwise gates that
    changed (passed, failed or open); none where either asked no pairs."""
    if before is None or after is None:
        return {"pairwise_moved": [], "pairwise_gates": []}
    earlier = {(x.source, x.target): x for x in before.leakage}
    moved = [
        {
            "source": x.source,
            "target": x.target,
            "leakage_before": q.leakage,
            "leakage_after": x.leakage,
            "ci_before": q.ci,
            "ci_after": x.ci,
        }
        for x in after.leakage
        if (q := earlier.get((x.source, x.target))) is not None
        and _disjoint(None if q.ci is None else tuple(q.ci), None if x.ci is None else tuple(x.ci))
    ]
    gates = {c.criterion: c.gate for c in before.criteria}
    changed = [
        {"criterion": c.criterion, "gate_before": gates[c.criterion], "gate_after": c.gate}
        for c in after.criteria
        if c.criterion in gates and gates[c.criterion] != c.gate
    ]
    return {"pairwise_moved": moved, "pairwise_gates": changed}


def held(block: T | None, where: object, missing: str) -> T:
    """What a policy reads, or one line saying why it cannot hold (`missing`): the audit measured nothing for it."""
    if block is None:
        raise InputError(where, missing)
    return block


def consistency_violations(after: AuditResult, changed: float | None, wording: bool, where: object) -> list[str]:
    """The consistency policies on `after`, a line each that fails: a criterion whose verdicts changed between
    askings on at least `changed` of the repeated probes (the point estimate: a count over probes, compared as
    --fail-on-sym is), and, with `wording`, a leakage that moves beyond its simultaneous band under a paraphrase
    of the judge's template (stats/drift.py's flag, one band per paraphrase)."""
    out = []
    if changed is not None:
        repeats = held(after.measured(Repeats), where, "asked no verdict again, so --fail-on-changed cannot hold; "
                       "audit with `consistency: {repeats: R}` in the config, or drop the option")  # fmt: skip
        out += [
            f"{c.criterion}: verdicts changed between askings on {c.changed:.0%} of {c.probes} probes (>= {changed})"
            for c in repeats.criteria
            if c.changed is not None and c.changed >= changed
        ]
    if wording:
        reworded = held(after.measured(Wording), where, "reworded no template, so --fail-on-wording cannot hold; give "
                        "the judge `paraphrases:` in the config, or drop the option")  # fmt: skip
        out += [
            f"{p.source} -> {p.target} {p.flag} by {p.change:+.2f} under '{d.after}' (beyond its simultaneous band)"
            for d in reworded.against
            for p in d.pairs
            if p.flag and p.change is not None
        ]
    return out


def sign_error_violations(
    before: AuditResult | PairwiseAudit, after: AuditResult | PairwiseAudit, where: object
) -> list[str]:
    """The items `after` confirms a sign error on (Holm over its items: stats/per_prompt.py, or its pairwise judge's
    stats/item_pairs.py) that `before` did not confirm: a judge upgrade that reads a pitfall backwards."""
    pairs = after.measured(ItemPairs)
    held(_pointwise_items(after) or pairs, where, "audited no per-prompt rubric (tasks with their own items), so "
         "--fail-on-sign-errors cannot hold; drop the option")  # fmt: skip
    out = []
    for now, was, said in (
        (_pointwise_items(after), _pointwise_items(before), " is read backwards"),
        (pairs, before.measured(ItemPairs), ": the pairwise judge prefers the response worse on it"),
    ):
        if now is None:
            continue
        known = {r.id for r in was.items if r.sign_error == "confirmed"} if was is not None else set()
        out += [
            f"item {r.id} of task {r.task}{said} (a sign error confirmed, p = {r.p_reversed:.2g}): '{r.text[:60]}'"
            for r in now.items
            if r.sign_error == "confirmed" and r.id not in known
        ]
    return out


def attack_violations(after: AuditResult | PairwiseAudit, kinds: tuple[str, ...], where: object) -> list[str]:
    """Each attack of `kinds` that `after` confirms moves its judge (its family band above 0 on a criterion), or its
    pairwise judge (on a question): a line each (stats/attacks.py)."""
    blocks = [b for b in (after.measured(Attacks), after.measured(PairAttacks)) if b is not None]
    found = held(blocks or None, where, "attacked no probe, so --fail-on-attack cannot hold; give the config "
                 "`attacks:`, or drop the option")  # fmt: skip
    tried = sorted({k for b in found for k in b.kinds})
    missing = [k for k in kinds if k not in tried]
    if missing:
        raise InputError(where, f"did not try the attack '{missing[0]}' (it tried {', '.join(tried)}); "
                         "name one of those, or add it to the config's attacks.kinds")  # fmt: skip
    return [
        f"attack {r.kind} moves {'the pairwise judge on ' if isinstance(b, PairAttacks) else ''}{r.criterion} by "
        f"{r.lift:+.2f} (confirmed: its family band lies above 0)"
        for b in found
        for r in b.of()
        if r.kind in kinds and r.verdict == "attacked" and r.lift is not None
    ]


def _pointwise_items(r: AuditResult | PairwiseAudit) -> PerPrompt | None:
    """An audit's per-prompt block of pointwise verdicts: a judge asked only pairs has none."""
    return r.per_prompt if isinstance(r, AuditResult) else None


def sign_error_reach(after: AuditResult | PairwiseAudit) -> list[str]:
    """Why --fail-on-sign-errors cannot fail on `after`, where its design can confirm no sign error at all (N too
    small for its family of items): the policy is open, not passed."""
    pairs = after.measured(ItemPairs)
    reaches = [
        (what, r)
        for what, block in (("probes", _pointwise_items(after)), ("pairs (its pairwise judge)", pairs))
        if block is not None and (r := block.reach.get("sign_errors")) is not None and not r.confirmable
    ]
    return [
        f"no sign error can be confirmed at this design (the smallest p-value its {what} can give, {r.floor:.2g}, "
        f"is above Holm's first bound over its {r.tests} items, {r.bound:.2g}): audit with a larger n"
        for what, r in reaches
    ]


def pairwise_violations(after: AuditResult | PairwiseAudit, where: object) -> list[str]:
    """The pairwise policy on `after`, a line each that fails: a confirmed position bias, leakage or flag of its
    pairwise judge (stats/pairwise.py: each on the family band over gates, leakages, pairs and position)."""
    p = held(after.measured(Pairwise), where, "asked no pairs, so --fail-on-pairwise cannot hold; give the config "
             "`pairwise:`, or drop the option")  # fmt: skip
    out = (
        [f"pairwise position bias {p.position.bias:+.2f} (confirmed)"]
        if p.position.confirmed and p.position.bias
        else []
    )
    out += [
        f"pairwise leakage {x.source} -> {x.target} {x.leakage:+.2f} (confirmed)"
        for x in p.leakage
        if x.confirmed and x.leakage is not None
    ]
    out += [
        f"pairwise {q.a} / {q.b}: {f} (confirmed)" for q in p.pairs for f, e in q.evidence.items() if e == "confirmed"
    ]
    return out


PASS, FAIL, OPEN = "pass", "fail", "open"
EXIT = {PASS: 0, FAIL: 1, OPEN: 3}  # 2 is bad input, as for every command


def outcome(policies: list[dict], point_failed: bool = False) -> str:
    """fail when any policy (point or evidence) fails; open when none fails and an evidence policy is open."""
    return _worst({p["outcome"] for p in policies} | ({FAIL} if point_failed else set()))


def _worst(states: set[str]) -> str:
    return FAIL if FAIL in states else OPEN if OPEN in states else PASS


def sym_evidence(after: AuditResult, ceiling: float, where: object, skip: set[frozenset[str]] | None = None) -> dict:
    """The Sym policy on evidence: each pair's Sym against `ceiling` over the family intervals (reliable and
    Sym >= ceiling, stats/decisions.py): confirmed at or above fails; every pair settled below (or confirmed
    gated) passes; anything else is open, with the probes per stratum that would settle it."""
    family = held(after.family, where, "has no family intervals (bootstrap 0, or stats from before them); re-run "
                  "`radar stats` with bootstrap")  # fmt: skip
    found = [
        d
        for d in decisions(after, Thresholds(**after.thresholds), ceiling)
        if d.kind == POLICY and frozenset(d.criteria) not in (skip or set())
    ]
    rows = []
    for d in found:
        p = after.pair(*d.criteria)
        row = {"a": p["a"], "b": p["b"], "sym": p["sym"], "family": family["sym"][p["a"]][p["b"]]}
        if d.value is None:
            row["settle_n"] = settle_n(after, [(POLICY, d.criteria)], ceiling)
        rows.append({**row, "state": {True: FAIL, False: PASS, None: OPEN}[d.value]})
    return _policy("sym", ceiling, rows, family["level"])


def _off_zero(ci: Interval | None) -> bool:
    """The interval excludes 0 (an open end excludes nothing on its side)."""
    return ci is not None and ((ci[0] is not None and ci[0] > 0) or (ci[1] is not None and ci[1] < 0))


def bias_evidence(after: AuditResult, threshold: float, where: object) -> dict:
    """The bias policy on evidence: a cell whose family interval lies at or beyond +-threshold fails; one
    wholly inside it passes; one that straddles it (or has no interval) is open."""
    measured = [r for r in after.bias_rows if r.flag != "intended" and r.steered is not False]
    if not any(r.family_ci for r in measured):
        raise InputError(
            where,
            "measured no judge bias with family intervals (no steered nuisance attribute, or stats from before them), "
            "so a bias policy cannot hold; audit with `nuisance:` in the config, or drop the option",
        )
    limit, rows = decimal(threshold), []
    for r in measured:
        ci = r.family_ci
        if beyond(ci, threshold):
            state = FAIL
        elif ci and ci[0] is not None and ci[1] is not None and -limit < Fraction(ci[0]) and Fraction(ci[1]) < limit:
            state = PASS
        else:
            state = OPEN
        rows.append(
            {
                "attribute": r.attribute,
                "criterion": r.criterion,
                "sensitivity": r.sensitivity,
                "family": ci,
                "state": state,
            }
        )
    return _policy("bias", threshold, rows, None)


def _policy(kind: str, threshold: float, rows: list[dict], level: float | None) -> dict:
    return {
        "kind": kind,
        "threshold": threshold,
        "level": level,
        "outcome": _worst({r["state"] for r in rows}),
        "rows": rows,
    }


def bias_changes(before: AuditResult, after: AuditResult) -> list[dict]:
    """Each (attribute, criterion) both audits measured: its sensitivity before and after, and whether their
    intervals are disjoint."""
    earlier = {(r.attribute, r.criterion): r for r in before.bias_rows}
    out = []
    for r in after.bias_rows:
        q = earlier.get((r.attribute, r.criterion))
        if q is not None:
            ci_before, ci_after = (tuple(c) if c else None for c in (q.ci, r.ci))
            out.append(
                {
                    "attribute": r.attribute,
                    "criterion": r.criterion,
                    "sensitivity_before": q.sensitivity,
                    "sensitivity_after": r.sensitivity,
                    "ci_before": ci_before,
                    "ci_after": ci_after,
                    "moved": _disjoint(ci_before, ci_after),
                }
            )
    return out
