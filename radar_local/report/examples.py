"""Example probes for the most coupled pairs: the probe text, its scores and the verifier's rationales."""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.nuisance import WAYS
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


def nuisance_examples(result: AuditResult, store: Store, cells: int = 3, max_chars: int = 500) -> list[dict]:
    """For the (attribute, criterion) cells that moved most (biased first): the pair whose up and down
    rewrites the verifier scored furthest apart on that criterion, with its rationales."""
    rows = [r for r in (result.nuisance or {}).get("rows", []) if r["sensitivity"] is not None]
    rows.sort(key=lambda r: (r["flag"] != "biased", -abs(r["sensitivity"])))
    score_of = {
        (s["probe_key"], s["criterion"]): s
        for s in store.scores.values()
        if s["verifier"] == result.verifier and s["score"] is not None
    }
    cut = lambda text: text if len(text) <= max_chars else text[:max_chars] + " [...]"
    shown = []
    for r in rows[:cells]:
        pairs: dict[tuple[str, int], dict[str, dict]] = {}
        for p in store.probes.values():
            if p["target"] == r["attribute"] and p["direction"] in WAYS and p["generator"] == result.generator:
                if (p["key"], r["criterion"]) in score_of:
                    pairs.setdefault((p["task_id"], p["variant"]), {})[p["direction"]] = p
        whole = [pair for pair in pairs.values() if len(pair) == 2]
        if not whole:
            continue
        crit = r["criterion"]
        pair = max(
            whole,
            key=lambda p: abs(score_of[p["up"]["key"], crit]["score"] - score_of[p["down"]["key"], crit]["score"]),
        )
        shown.append(
            {
                **{k: r[k] for k in ("attribute", "criterion", "sensitivity", "flag")},
                "task_id": pair["up"]["task_id"],
                **{
                    way: {
                        "text": cut(pair[way]["text"]),
                        "score": score_of[pair[way]["key"], r["criterion"]]["score"],
                        "rationale": score_of[pair[way]["key"], r["criterion"]]["rationale"],
                    }
                    for way in WAYS
                },
            }
        )
    return shown
