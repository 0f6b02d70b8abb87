"""Example probes for the most coupled pairs and the most biased nuisance cells, drawn from the audited set
(radar_local.audited): only records the audit itself used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.nuisance import DOWN, UP, WAYS, rewrite_pairs
from radar_local.report.text import flag_text, pair_records

if TYPE_CHECKING:
    from radar_local.audited import AuditedSet
    from radar_local.stats.result import AuditResult


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars] + " [...]"


def example_probes(result: AuditResult, records: AuditedSet, pairs: int = 3, max_chars: int = 700) -> list[dict]:
    """For each of the top pairs (a, b): the a+ probe scored highest on b and the a- probe scored lowest."""
    return [
        {
            "a": p["a"],
            "b": p["b"],
            "sym": p["sym"],
            "flags": flag_text(p),
            "probes": pair_examples(result, records, p["a"], p["b"], max_chars),
        }
        for p in pair_records(result)[:pairs]
    ]


def pair_examples(result: AuditResult, records: AuditedSet, a: str, b: str, max_chars: int = 700) -> list[dict]:
    """The probe steered up on a that the verifier scored highest on b, and the one steered down on a
    scored lowest on b, each with its scores and the verifier's rationales for a and b."""
    verdicts = records.verdicts_by_probe.get(result.verifier, {})
    score_on_b = lambda p: verdicts[p.key][b].score or 0.0
    shown = []
    for direction, pick in (("+", max), ("-", min)):
        scored = [
            p
            for p in records.probes
            if p.target == a
            and p.direction == direction
            and b in verdicts.get(p.key, {})
            and verdicts[p.key][b].score is not None
        ]
        if not scored:
            continue
        probe = pick(scored, key=score_on_b)
        scores = verdicts[probe.key]
        shown.append(
            {
                "task_id": probe.task_id,
                "target": a,
                "direction": direction,
                "text": _cut(probe.text, max_chars),
                "scores": {c: scores[c].score for c in result.criteria if c in scores},
                "rationale": {c: scores[c].rationale for c in (a, b) if c in scores},
            }
        )
    return shown


def nuisance_examples(result: AuditResult, records: AuditedSet, cells: int = 3, max_chars: int = 500) -> list[dict]:
    """For the (attribute, criterion) cells that moved most (biased first): the pair whose up and down
    rewrites the verifier scored furthest apart on that criterion, with its rationales."""
    rows = [r for r in result.bias_rows if r.sensitivity is not None]
    rows.sort(key=lambda r: (r.flag != "biased", -abs(r.sensitivity or 0.0)))
    verdicts = records.verdicts_by_probe.get(result.verifier, {})
    pairs = rewrite_pairs(list(records.rewrites))
    shown = []
    for r in rows[:cells]:
        crit = r.criterion
        scored = [  # (pair, its up and down verdicts on the criterion)
            (pair, up, down)
            for (attribute, _, _), pair in pairs.items()
            if attribute == r.attribute and len(pair) == 2
            for up, down in [(verdicts.get(pair[w].key, {}).get(crit) for w in WAYS)]
            if up is not None and down is not None and up.score is not None and down.score is not None
        ]
        if not scored:
            continue
        pair, up, down = max(scored, key=lambda s: abs(s[1].score - s[2].score))  # type: ignore[operator]
        shown.append(
            {
                **r.model_dump(include={"attribute", "criterion", "sensitivity", "flag"}),
                "task_id": pair[UP].task_id,
                **{
                    way: {"text": _cut(pair[way].text, max_chars), "score": v.score, "rationale": v.rationale}
                    for way, v in ((UP, up), (DOWN, down))
                },
            }
        )
    return shown
