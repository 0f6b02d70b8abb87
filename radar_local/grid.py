"""Generators x verifiers (paper §4.2): each generator's probes are generated once and re-scored by
every verifier; self-pairs are excluded by default. Each generator gets an ordinary run directory
under the grid's folder, so every cell is also an ordinary audit."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np

from radar_local.judges import calibration
from radar_local.scores import read_scores
from radar_local.config import GridConfig, ModelSpec, resolve_inputs, with_absolute_paths
from radar_local.pipeline import EnginePool, finish, generate_stage, score_stage, snapshot_config
from radar_local.stats.audit import to_json
from radar_local.store import Store, slug, stats_file

STABLE_SD = 0.15  # a pair whose Sym varies less than this across cells couples at the rubric level


def run_grid(grid: GridConfig, out: str | Path, base: Path, progress: bool = True) -> dict:
    grid = with_absolute_paths(grid, base)
    rubric, tasks, reference = resolve_inputs(grid, base)
    out = Path(out)
    todo = grid.cells()
    stores = {g.label: Store(out / slug(g.label)) for g in grid.generators}
    stages: dict[tuple[str, str], dict] = {}
    pool = EnginePool()
    try:
        for g in grid.generators:  # stage 1: each generator once
            cfg = grid.cell(g, grid.verifiers[0])
            snapshot_config(cfg, stores[g.label])
            gen = generate_stage(cfg, rubric, tasks, stores[g.label], pool, progress)
            for v in grid.verifiers:
                stages[(g.label, v.label)] = {"generate": gen}
        for v in grid.verifiers:  # stage 2: each verifier loaded once, scoring every generator's probes
            for g in (g for g, vv in todo if vv is v):
                stages[(g.label, v.label)]["score"] = score_stage(grid.cell(g, v), v, rubric, tasks, stores[g.label], pool,
                                                                  progress)
    finally:
        pool.close()
    results = []
    for g, v in todo:
        result = finish(grid.cell(g, v), v, rubric, tasks, reference, stores[g.label], stages[(g.label, v.label)],
                        stats_name=stats_file(v.label))
        results.append(result)
    summary = grid_summary(results)
    summary["calibration"] = {g.label: calibration(read_scores(out / slug(g.label) / "scores.csv"), rubric.ids)
                              for g in grid.generators if (out / slug(g.label) / "scores.csv").is_file()}
    Store(out).write_json("grid.json", summary)
    return summary


def grid_summary(results: list[dict]) -> dict:
    """Table 9-style agreement per cell, distances between verifiers' leakage matrices, and how
    stable each pair's coupling is across cells (rubric-level vs judge-specific, §3.5)."""
    table = [{"generator": r["generator"], "verifier": r["verifier"], **(r.get("agreement") or {}),
              "reliable_criteria": sum(r["reliable"].values())} for r in results]
    crit = results[0]["criteria"]

    def leakage(r: dict) -> np.ndarray:
        m = np.array([[np.nan if r["leakage"][a][b] is None else r["leakage"][a][b] for b in crit] for a in crit], float)
        m[~np.array([r["reliable"][a] for a in crit])] = np.nan  # gated rows are not evidence
        np.fill_diagonal(m, np.nan)
        return m

    verifiers = sorted({r["verifier"] for r in results})
    distance: dict[str, dict[str, float | None]] = {v: {} for v in verifiers}
    for v1, v2 in itertools.product(verifiers, repeat=2):
        gaps = []
        for g in {r["generator"] for r in results}:
            a = next((r for r in results if (r["generator"], r["verifier"]) == (g, v1)), None)
            b = next((r for r in results if (r["generator"], r["verifier"]) == (g, v2)), None)
            if a and b:
                d = leakage(a) - leakage(b)
                if np.isfinite(d).any():
                    gaps.append(float(np.sqrt(np.nanmean(d**2))))
        distance[v1][v2] = float(np.mean(gaps)) if gaps else np.nan

    pairs = []
    for i, j in itertools.combinations(range(len(crit)), 2):
        syms = []
        for r in results:
            p = next(p for p in r["pairs"] if {p["a"], p["b"]} == {crit[i], crit[j]})
            if p["reliable"] and p["sym"] is not None:
                syms.append(p["sym"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, sd = (float(np.mean(syms)), float(np.std(syms))) if syms else (np.nan, np.nan)
        kind = None
        if len(syms) >= 2:
            kind = "rubric-level" if sd < STABLE_SD else "judge-specific"
        pairs.append({"a": crit[i], "b": crit[j], "sym_mean": mean, "sym_sd": sd, "cells": len(syms), "stability": kind})
    pairs.sort(key=lambda p: -np.nan_to_num(p["sym_mean"], nan=-np.inf))
    return to_json({"cells": table, "verifier_distance": distance, "pairs": pairs, "criteria": crit})
