"""Example probes for the most coupled pairs: the probe text, its scores and the verifier's rationales."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.report.text import flag_text, pair_records
from radar_local.store import Store

if TYPE_CHECKING:
    from radar_local.stats.result import AuditResult


def example_probes(result: AuditResult, store: Store, pairs: int = 3, max_chars: int = 700) -> list[dict]:
    """For each of the top pairs (a, b): the a+ probe scored highest on b and the a- probe scored lowest."""
    return [
        {
            "a": p["a"],
            "b": p["b"],
            "sym": p["sym"],
            "flags": flag_text(p),
            "probes": pair_examples(result, store, p["a"], p["b"], max_chars),
        }
        for p in pair_records(result)[:pairs]
    ]


def pair_examples(result: AuditResult, store: Store, a: str, b: str, max_chars: int = 700) -> list[dict]:
    """The probe steered up on a that the verifier scored highest on b, and the one steered down on a
    scored lowest on b, each with its scores and the verifier's rationales for a and b."""
    by_probe: dict[str, dict[str, dict]] = {}
    for s in store.scores.values():
        if s["verifier"] == result.verifier:
            by_probe.setdefault(s["probe_key"], {})[s["criterion"]] = s
    shown = []
    for direction, pick in (("+", max), ("-", min)):
        scored = [
            p
            for p in store.probes.values()
            if p["target"] == a
            and p["direction"] == direction
            and p["generator"] == result.generator
            and by_probe.get(p["key"], {}).get(b, {}).get("score") is not None
        ]
        if not scored:
            continue
        probe = pick(scored, key=lambda p: by_probe[p["key"]][b]["score"])
        scores = by_probe[probe["key"]]
        text = probe["text"]
        shown.append(
            {
                "task_id": probe["task_id"],
                "target": a,
                "direction": direction,
                "text": text if len(text) <= max_chars else text[:max_chars] + " [...]",
                "scores": {c: scores[c]["score"] for c in result.criteria if c in scores},
                "rationale": {c: scores[c]["rationale"] for c in (a, b) if c in scores},
            }
        )
    return shown
