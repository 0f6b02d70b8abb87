"""Adaptive audits: probes spent where a decision is still open, in waves (config `adaptive`).

Wave 1 gives every (task, criterion, direction) `start_n` probes, and the unconditioned probes all
they get. After each wave the audit is computed with intervals at `confidence`; the decisions those
intervals leave open (stats/decisions.py: gates, flags, a Sym policy) name the criteria whose probes
would settle them, and the next wave adds `step` probes to every (task, direction) of those criteria,
up to `max_n`. The audit stops when every decision is settled or every open one's cells are full.

A probe is variant v of its cell under the same key as in a fixed audit with n = max_n, so a fixed
run at that n and an adaptive run share every probe they both have (plan.GenerationRequest). Waves
are a deterministic function of the stored verdicts (the bootstrap is seeded), so a re-run replays
the stored waves without a call and goes on where it stopped; Run.waves_path records each wave for
run.json, the report and Run.probes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from radar_local.common import Loose
from radar_local.errors import InputError
from radar_local.inputs import read_model
from radar_local.plan import Cell
from radar_local.stats.decisions import decisions
from radar_local.stats.flags import Thresholds

if TYPE_CHECKING:
    from radar_local.config import ModelSpec
    from radar_local.run import EnginePool, Run

COUNTERS = ("calls", "prompt_tokens", "output_tokens", "seconds", "prompt_tokens_cached", "prompt_tokens_computed",
            "prompt_tokens_floor")


class Waves(Loose):
    """adaptive.json, as far as it is read back."""

    sizes: dict[str, int]


def first_sizes(run: "Run") -> dict[Cell, int]:
    start = run.config.adaptive.start_n  # type: ignore[union-attr]
    return {cell: (run.plan.planned_size(cell) if cell[2] == "none" else start) for cell in run.plan.cells()}


def recorded_sizes(run: "Run") -> dict[Cell, tuple[int, int]]:
    """Variants (0, n) per cell up to the last recorded wave (the first wave's before any)."""
    sizes = first_sizes(run)
    if run.waves_path.is_file():
        recorded = read_model(run.waves_path, Waves).sizes
        cells = {_key(c): c for c in sizes}
        unknown = next((key for key in recorded if key not in cells), None)
        if unknown is not None:
            raise InputError(run.waves_path, f"names a cell {unknown!r} that this config does not plan; re-run the "
                                             "audit into a new directory")
        sizes.update({cells[key]: n for key, n in recorded.items()})
    return {cell: (0, n) for cell, n in sizes.items()}


def grow(sizes: dict[Cell, int], sources: set[str], step: int, max_n: int) -> dict[Cell, int]:
    """The next wave's sizes: `step` more probes for each directed cell of a source, up to max_n."""
    return {cell: min(max_n, n + step) if cell[2] != "none" and cell[1] in sources else n for cell, n in sizes.items()}


def run_waves(run: "Run", verifier: "ModelSpec", pool: "EnginePool", progress: bool) -> tuple[dict, dict]:
    """Generate and score wave after wave; (stages for run.json, the adaptive record)."""
    spec = run.config.adaptive
    assert spec is not None
    if not run.config.bootstrap:
        raise InputError(run.root / "config.yaml", "an adaptive audit decides from intervals: set bootstrap > 0")
    sizes, have = first_sizes(run), {cell: 0 for cell in run.plan.cells()}
    waves, stages = [], {"generate": [], "score": []}
    while True:
        requests = run.plan.generation_requests({c: (have[c], sizes[c] - have[c]) for c in sizes})
        stages["generate"].append(run.generate(pool, progress, requests))
        if not verifier.same_weights(run.config.generator):
            pool.close()  # free the generator before the verifier loads
        probes = run.stored_probes(run.plan.generation_requests({c: (0, n) for c, n in sizes.items()}))
        stages["score"].append(run.score(verifier, pool, progress, probes))
        result, _, _ = run.audit_result(verifier, probes, level=spec.confidence, budget=False)
        found = decisions(result, Thresholds(**result.thresholds), spec.fail_on_sym)
        still_open = [d for d in found if d.value is None]
        sources = {c for d in still_open for c in d.sources}
        following = grow(sizes, sources, spec.step, spec.max_n)
        waves.append({
            "wave": len(waves) + 1,
            "probes": sum(sizes[c] - have[c] for c in sizes),
            "cells": sum(sizes[c] > have[c] for c in sizes),
            "verdicts": stages["score"][-1]["requests"] - (waves[-1]["verdicts_total"] if waves else 0),
            "verdicts_total": stages["score"][-1]["requests"],
            "verifier_calls": stages["score"][-1]["calls"],  # made by this run: 0 for a wave replayed from the store
            "open": [d.to_json() for d in still_open],
            "grow": sorted(sources & {c for c, n in _by_criterion(sizes).items() if n < spec.max_n}),
        })
        run.store.write_json(run.waves_path.name, {"sizes": {_key(c): n for c, n in sizes.items()}, "waves": waves})
        if following == sizes:
            break
        have, sizes = sizes, following
    record = {
        "start_n": spec.start_n, "max_n": spec.max_n, "step": spec.step, "confidence": spec.confidence,
        "fail_on_sym": spec.fail_on_sym, "waves": waves,
        "settled": [d.to_json() for d in found if d.value is not None],
        "at_budget": [d.to_json() for d in still_open],  # open, with every cell that would settle it at max_n
        "probes": sum(sizes.values()), "verdicts": waves[-1]["verdicts_total"],
        "verifier_calls": sum(s["calls"] for s in stages["score"]),
    }
    out = {name: merged(infos) for name, infos in stages.items()}
    out["generate"]["requests"] = sum(i["requests"] for i in stages["generate"])
    return out, record


def merged(infos: list[dict]) -> dict:
    """One stage's counters over its waves: sums of the counts, the last wave's settings and totals."""
    out = dict(infos[-1])
    for key in COUNTERS:
        values = [i.get(key) for i in infos if i.get(key) is not None]
        out[key] = round(sum(values), 3) if values else None
    if out.get("prompt_tokens_computed") is not None and out.get("prompt_tokens_cached") is not None:
        total = out["prompt_tokens_computed"] + out["prompt_tokens_cached"]
        out["prefix_cache_hit_rate"] = round(out["prompt_tokens_cached"] / total, 4) if total else None
    if out.get("prompt_tokens_floor") and out.get("prompt_tokens_computed") is not None:
        out["computed_over_floor"] = round(out["prompt_tokens_computed"] / out["prompt_tokens_floor"], 4)
    out["waves"] = len(infos)
    return out


def _by_criterion(sizes: dict[Cell, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (_, target, direction), n in sizes.items():
        if direction != "none":
            out[target] = min(out.get(target, n), n)
    return out


def _key(cell: Cell) -> str:
    return "\t".join(cell)
