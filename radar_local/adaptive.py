"""Adaptive audits: probes spent where a decision is still open, in waves (config `adaptive`).

Wave 1 gives every (task, criterion, direction) `start_n` probes, and the unconditioned probes all
they get. After each wave the audit is computed with intervals at `confidence`; the decisions those
intervals leave open (stats/decisions.py: gates, flags, a Sym policy) name the criteria whose probes
would settle them, and the next wave adds `step` probes to every (task, direction) of those criteria,
up to `max_n`. The audit stops when every decision is settled or every open one's strata are full.

A per-prompt rubric (tasks with their own items) grows by prompt: a wave adds `step` probes to every stratum of a
prompt whose own findings are open (stats/per_prompt.py's `unsettled`: a sign error or a redundant pair its prompt's
own family passes, which the audit has not confirmed), and to every prompt while a shared criterion's decision is
open, so that all of a prompt's strata have one N at every wave; its exact tests count the looks
(stats/per_prompt.py).

A probe is variant v of its stratum under the same key as in a fixed audit with n = max_n, so a fixed
run at that n and an adaptive run share every probe they both have (plan.GenerationRequest). Waves
are a deterministic function of the stored verdicts (the bootstrap is seeded), so a re-run replays
the stored waves without a call and goes on where it stopped; Run.waves_path records each wave for
run.json, the report and Run.probes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

from radar_local.common import Loose
from radar_local.config import Adaptive, AuditConfig
from radar_local.errors import InputError
from radar_local.inputs import read_model
from radar_local.plan import Plan, Stratum
from radar_local.rubric import Rubric
from radar_local.stats.decisions import Decision, decisions
from radar_local.stats.flags import COUPLED, Thresholds
from radar_local.stats.per_prompt import CONFIRMED, PAIR, PROMPT_SCREEN, SIGN_ERROR, PerPrompt
from radar_local.stats.result import AuditResult
from radar_local.stats.stored import AdaptiveRecord

COUNTERS = (  # a stage's counters that add up over waves
    "calls prompt_tokens output_tokens seconds prompt_tokens_cached prompt_tokens_computed prompt_tokens_floor"
).split()


class Waves(Loose):
    """adaptive.json, as far as it is read back."""

    sizes: dict[str, int]


def first_sizes(config: AuditConfig, plan: Plan) -> dict[Stratum, int]:
    start = config.adaptive.start_n  # type: ignore[union-attr]
    return {stratum: (plan.planned_size(stratum) if stratum[2] == "none" else start) for stratum in plan.strata()}


def first_wave_problem(spec: Adaptive, rubric: Rubric) -> str | None:
    """Why a per-prompt rubric's first wave at start_n cannot open a sign error of its largest prompt, in one line
    (its smallest p-value, 1 / C(2 start_n, start_n), times the prompt's own hypotheses above PROMPT_SCREEN: that
    prompt would never grow); else None."""
    own = Counter(it.task for it in rubric.items)
    if not own:
        return None
    k = max(own.values())
    shared = len(rubric.shared)
    tests = k + k * (k - 1) // 2 + k * shared  # its items' sign errors and its pairs (stats/per_prompt.py)

    def opens(n: int) -> bool:
        return Fraction(tests, math.comb(2 * n, n)) <= PROMPT_SCREEN

    if opens(spec.start_n):
        return None
    enough = next((n for n in range(spec.start_n, spec.max_n + 1) if opens(n)), None)
    return (
        f"adaptive.start_n {spec.start_n}: a first wave cannot open a sign error of a prompt with {k} items (its "
        f"smallest p-value 1/{math.comb(2 * spec.start_n, spec.start_n)} times its {tests} hypotheses is above the "
        f"prompt's screen {PROMPT_SCREEN}, docs/adaptive.md): "
        + (f"start_n >= {enough} can" if enough else f"no start_n up to max_n {spec.max_n} can; raise both")
    )


def recorded_sizes(config: AuditConfig, plan: Plan, path: Path) -> dict[Stratum, tuple[int, int]]:
    """Variants (0, n) per stratum up to the last wave recorded in `path` (the first wave's before any)."""
    sizes = first_sizes(config, plan)
    if path.is_file():
        recorded = read_model(path, Waves).sizes
        strata = {_key(c): c for c in sizes}
        unknown = next((key for key in recorded if key not in strata), None)
        if unknown is not None:
            raise InputError(
                path,
                f"names a stratum {unknown!r} that this config does not plan; re-run the audit into a new directory",
            )
        for key, n in recorded.items():  # a hand-edited size would plan that many probes: never past the plan's
            stratum = strata[key]
            most = sizes[stratum] if stratum[2] == "none" else config.adaptive.max_n  # type: ignore[union-attr]
            if not 1 <= n <= most:
                raise InputError(
                    path,
                    f"gives stratum {key!r} {n} probes, outside 1..{most} of this config; "
                    "re-run the audit into a new directory",
                )
            sizes[stratum] = n
    return {stratum: (0, n) for stratum, n in sizes.items()}


def awaited(result: AuditResult, fail_on_sym: float | None) -> list[Decision]:
    """The decisions the waves settle: every gate, flag and Sym policy of the shared criteria, and a per-prompt
    rubric's sign errors and redundant pairs. A coupling is evidence for a directional or cluster flag, not a
    finding of its own to wait for."""
    found = []
    if result.criteria:
        found = [d for d in decisions(result, Thresholds(**result.thresholds), fail_on_sym) if d.kind != COUPLED]
    return found + prompt_decisions(result.per_prompt)


def prompt_decisions(found: PerPrompt | None) -> list[Decision]:
    """A per-prompt rubric's: each confirmed sign error and redundant pair settled, each hypothesis its prompt still
    follows (`unsettled`) open, resting on its prompt's probes (its sources: the task)."""
    if found is None:
        return []
    confirmed = [Decision(SIGN_ERROR, (r.id,), True, ()) for r in found.items if r.sign_error == CONFIRMED]
    confirmed += [Decision(PAIR, (r.a, r.b), True, ()) for r in found.pairs if r.evidence == CONFIRMED]
    return confirmed + [Decision(u.kind, tuple(u.items), None, (u.task,)) for u in found.unsettled]


def calls_per_probe(rubric: Rubric, joint: bool) -> Callable[[Stratum], int]:
    """A stratum's verifier calls a probe: one for a joint judge, else one per criterion its task is graded on."""
    graded: dict[str, int] = {}

    def calls(stratum: Stratum) -> int:
        task = stratum[0]
        if task not in graded:
            graded[task] = 1 if joint else len(rubric.criteria_of(task))
        return graded[task]

    return calls


def within_budget(sizes: dict[Stratum, int], calls: Callable[[Stratum], int], budget: int | None) -> bool:
    """Whether the verifier calls a wave plan (every probe of `sizes`, `calls` each) stay within budget."""
    return budget is None or sum(n * calls(stratum) for stratum, n in sizes.items()) <= budget


def grown(sizes: dict[Stratum, int], still_open: list[Decision], by_prompt: bool) -> set[str]:
    """What the open decisions grow: their criteria, or with `by_prompt` (a per-prompt rubric) their prompts, every
    prompt where a shared criterion's decision is open."""
    if by_prompt and any(d.kind not in (SIGN_ERROR, PAIR) for d in still_open):
        return {task for task, _, _ in sizes}
    return {c for d in still_open for c in d.sources}


def grow(sizes: dict[Stratum, int], sources: set[str], step: int, max_n: int, by_prompt: bool = False) -> dict:
    """The next wave's sizes: `step` more probes for each directed stratum of a source (a criterion, or with
    `by_prompt` a task), up to max_n."""
    place = 0 if by_prompt else 1
    return {
        stratum: min(max_n, n + step) if stratum[2] != "none" and stratum[place] in sources else n
        for stratum, n in sizes.items()
    }


def wave_record(
    wave: int,
    have: dict[Stratum, int],
    sizes: dict[Stratum, int],
    score: dict,
    waves: list[dict],
    still_open: list[Decision],
    max_n: int,
    by_prompt: bool = False,
) -> dict:
    """One wave for adaptive.json: what it added, the verdicts it made, what it left open and grows (criteria, or
    with `by_prompt` prompts)."""
    sources = grown(sizes, still_open, by_prompt)
    return {
        "wave": wave,
        "probes": sum(sizes[c] - have.get(c, 0) for c in sizes),
        "cells": sum(sizes[c] > have.get(c, 0) for c in sizes),
        "verdicts": score["requests"] - (waves[-1]["verdicts_total"] if waves else 0),
        "verdicts_total": score["requests"],
        "verifier_calls": score["calls"],  # made by this run: 0 for a wave replayed from the store
        "open": [d.to_json() for d in still_open],
        "grow": sorted(sources & {c for c, n in _smallest(sizes, by_prompt).items() if n < max_n}),
    }


def waves_record(sizes: dict[Stratum, int], waves: list[dict]) -> dict:
    """adaptive.json: the sizes of the strata after the last wave, and every wave."""
    return {"sizes": {_key(c): n for c, n in sizes.items()}, "waves": waves}


def adaptive_record(
    spec: Adaptive,
    waves: list[dict],
    found: list[Decision],
    sizes: dict[Stratum, int],
    scores: list[dict],
    stopped_by: str | None = None,
) -> AdaptiveRecord:
    """run.json's and stats.json's `adaptive`: the settings, the waves, what settled and what stayed open."""
    record = {
        "start_n": spec.start_n,
        "max_n": spec.max_n,
        "step": spec.step,
        "confidence": spec.confidence,
        "fail_on_sym": spec.fail_on_sym,
        "waves": waves,
        "settled": [d.to_json() for d in found if d.value is not None],
        "at_budget": [d.to_json() for d in found if d.value is None],  # open, with every stratum at max_n
        "probes": sum(sizes.values()),
        "verdicts": waves[-1]["verdicts_total"],
        "verifier_calls": sum(s["calls"] for s in scores),
        "budget": spec.budget,
        "stopped_by": stopped_by,
    }
    return AdaptiveRecord.model_validate(record)


def merged_stages(stages: dict[str, list[dict]]) -> dict:
    """run.json's stages of an adaptive audit: each stage's counters over its waves."""
    out = {name: merged(infos) for name, infos in stages.items()}
    out["generate"]["requests"] = sum(i["requests"] for i in stages["generate"])
    return out


def merged(infos: list[dict]) -> dict:
    """One stage's counters over its waves: sums of the counts, the last wave's settings and totals."""
    out = dict(infos[-1])
    for key in COUNTERS:
        values = [i[key] for i in infos if i.get(key) is not None]
        out[key] = round(sum(values), 3) if values else None
    if out.get("prompt_tokens_computed") is not None and out.get("prompt_tokens_cached") is not None:
        total = out["prompt_tokens_computed"] + out["prompt_tokens_cached"]
        out["prefix_cache_hit_rate"] = round(out["prompt_tokens_cached"] / total, 4) if total else None
    if out.get("prompt_tokens_floor") and out.get("prompt_tokens_computed") is not None:
        out["computed_over_floor"] = round(out["prompt_tokens_computed"] / out["prompt_tokens_floor"], 4)
    out["waves"] = len(infos)
    return out


def _smallest(sizes: dict[Stratum, int], by_prompt: bool) -> dict[str, int]:
    """Each criterion's (or with `by_prompt`, each task's) fewest probes in a directed stratum."""
    out: dict[str, int] = {}
    for (task, target, direction), n in sizes.items():
        if direction != "none":
            key = task if by_prompt else target
            out[key] = min(out.get(key, n), n)
    return out


def _key(stratum: Stratum) -> str:
    return "\t".join(stratum)
