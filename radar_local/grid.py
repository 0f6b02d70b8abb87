"""Generators x verifiers (paper §4.2): each generator's probes are generated once and re-scored by
every verifier; self-pairs are excluded by default. Each generator gets an ordinary run directory
under the grid's folder, so every cell is also an ordinary audit."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from radar_local.askings import reward_asking
from radar_local.auditing import conclude
from radar_local.common import slug, to_json
from radar_local.config import GridConfig, with_absolute_paths
from radar_local.errors import InputError
from radar_local.pool import EnginePool
from radar_local.report.build import write_report
from radar_local.report.grid_pages import grid_html, grid_markdown
from radar_local.resolved import judge_conflict, resolve, with_template
from radar_local.run import Run
from radar_local.scorers import score_cells, score_cells_on_cluster, score_own_pairs
from radar_local.stats.attacks import Attacks, PairAttacks
from radar_local.stats.item_pairs import ItemPairs
from radar_local.stats.pairwise import Pairwise
from radar_local.stats.raters import LabelsBlock
from radar_local.stats.result import AuditResult
from radar_local.stats.reward import RewardProfile
from radar_local.store import write_atomic

STABLE_SD = 0.15  # a pair whose Sym varies less than this across cells couples at the rubric level


def run_grid(grid: GridConfig, out: str | Path, base: Path, progress: bool = True, reports: bool = True) -> dict:
    """Every cell's audit and (with `reports`) its report, then grid.json, grid.md and grid.html in `out`."""
    grid = with_absolute_paths(grid, base)
    grid = grid.model_copy(update={"verifiers": [with_template(v, base) for v in grid.verifiers]})
    out = Path(out)
    todo = grid.cells()
    # One run directory per generator; its config names the generator's first verifier, whose
    # files are stats.json / report/, the others' stats.<label>.json / report-<label>/.
    cells = {
        g.label: resolve(grid.cell(g, next(v for gg, v in todo if gg is g)), base)
        for g in grid.generators
        if any(gg is g for gg, _ in todo)
    }
    for resolved in cells.values():  # each judge checked against the rubric before any model loads or file is made
        for v in grid.verifiers:
            if (problem := judge_conflict(grid, v, resolved.rubric, resolved.tasks)) is not None:
                raise InputError(base, problem)
    runs = {label: Run.create(resolved, out / slug(label)) for label, resolved in cells.items()}
    try:
        results = _audit_cells(grid, runs, todo, progress, reports)
    finally:
        for run in runs.values():
            run.close()
    summary = grid_summary(results)
    summary["level"] = results[0].bootstrap.level  # every cell's intervals are at the grid's one level
    # Every cell was scored before any finished, so each result's calibration covers all of its generator's judges.
    summary["calibration"] = {r.generator: r.calibration.stored() if r.calibration else None for r in results}
    write_atomic(out / "grid.json", json.dumps(summary, indent=2))
    write_atomic(out / "grid.md", grid_markdown(summary))
    write_atomic(out / "grid.html", grid_html(summary))
    return summary


def _audit_cells(grid: GridConfig, runs: dict[str, Run], todo: list, progress: bool, reports: bool) -> list:
    stages: dict[tuple[str, str], dict] = {}
    own_pair_judge = grid.pairwise is not None and grid.pairwise.verifier is not None
    with EnginePool(grid.cluster) as pool:
        for label, run in runs.items():  # stage 1: each generator once (on a cluster, on all its replicas)
            done = {"generate": run.generate(pool, progress)}
            if run.config.nuisance:  # the nuisance rewrites, by the same generator: every judge scores them
                done["rewrite"] = run.rewrite(pool, progress)
            rewarded = run.ask(reward_asking(run.config), pool, progress) if run.config.reward is not None else None
            if rewarded is not None:  # the reward model, on these probes
                done["reward"] = rewarded
            stages.update({(label, v.label): dict(done) for v in grid.verifiers})
        if grid.cluster is None:  # stage 2: each verifier loaded once, scoring every generator's probes
            score_cells(grid.verifiers, runs, todo, stages, pool, progress, pairs=not own_pair_judge)
    if grid.cluster is not None:
        score_cells_on_cluster(grid.verifiers, grid.cluster, runs, todo, stages, pairs=not own_pair_judge)
    if own_pair_judge:  # pairwise's own model, loaded once after the verifiers
        with EnginePool(grid.cluster) as pool:
            score_own_pairs(runs, todo, stages, pool, progress)
    judges = {g.label: [v.label for gg, v in todo if gg is g] for g in grid.generators}  # this grid's, no others
    results = [
        conclude(runs[g.label], v, stages[(g.label, v.label)], judges=judges[g.label], halo_against=grid.halo_base(v))
        for g, v in todo
    ]
    for (g, _), result in zip(todo, results) if reports else ():  # every cell an ordinary audit with its report
        write_report(runs[g.label], result=result)
    return results


def grid_summary(results: list[AuditResult]) -> dict:
    """Table 9-style agreement per cell, distances between verifiers' leakage matrices, and how
    stable each pair's coupling is across cells (rubric-level vs judge-specific, §3.5)."""
    table = [
        {
            "generator": r.generator,
            "verifier": r.verifier,
            **(r.agreement.stored() if r.agreement else {}),
            "reliable_criteria": int(r.reliable.sum()),
        }
        for r in results
    ]
    crit = results[0].criteria

    def leakage(r: AuditResult) -> np.ndarray:
        m = r.leakage.loc[crit, crit].to_numpy().copy()
        m[~r.reliable[crit].to_numpy()] = np.nan  # gated rows are not evidence
        np.fill_diagonal(m, np.nan)
        return m

    verifiers = sorted({r.verifier for r in results})
    distance: dict[str, dict[str, float | None]] = {v: {} for v in verifiers}
    for v1, v2 in itertools.product(verifiers, repeat=2):
        gaps = []
        for g in {r.generator for r in results}:
            a = next((r for r in results if (r.generator, r.verifier) == (g, v1)), None)
            b = next((r for r in results if (r.generator, r.verifier) == (g, v2)), None)
            if a and b:
                d = leakage(a) - leakage(b)
                if np.isfinite(d).any():
                    gaps.append(float(np.sqrt(np.nanmean(d**2))))
        distance[v1][v2] = float(np.mean(gaps)) if gaps else np.nan

    pairs: list[dict] = []
    for i, j in itertools.combinations(range(len(crit)), 2):
        syms = []
        for r in results:
            p = r.pair(crit[i], crit[j])
            if p["reliable"] and not np.isnan(p["sym"]):
                syms.append(p["sym"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, sd = (float(np.mean(syms)), float(np.std(syms))) if syms else (np.nan, np.nan)
        kind = None
        if len(syms) >= 2:
            kind = "rubric-level" if sd < STABLE_SD else "judge-specific"
        pairs.append(
            {"a": crit[i], "b": crit[j], "sym_mean": mean, "sym_sd": sd, "cells": len(syms), "stability": kind}
        )
    pairs.sort(key=lambda p: -np.nan_to_num(p["sym_mean"], nan=-np.inf))
    return to_json(
        {
            "cells": table,
            "verifier_distance": distance,
            "pairs": pairs,
            "criteria": crit,
            "bias": bias_by_cell(results),
            "judges": judge_ranking(results),
            "pairwise": pairwise_by_cell(results),
            "reward": reward_by_cell(results),
            "per_prompt": per_prompt_by_cell(results),
            "attacks": attacks_by_cell(results),
        }
    )


def pairwise_by_cell(results: list[AuditResult]) -> list[dict]:
    """Each cell's judge asked pairwise (config.pairwise), one row per cell: the judges side by side on the gates
    they pass, the leakages confirmed, their position bias and order flips, and agreement with pairwise labels."""
    rows = []
    for r in results:
        if (p := r.measured(Pairwise)) is None:
            continue
        humans = p.humans
        rows.append(
            {
                "generator": r.generator,
                "verifier": r.verifier,
                "pairwise_judge": p.judge or r.verifier,
                "gates_passed": sum(c.gate == "passed" for c in p.criteria),
                "criteria": len(p.criteria),
                "confirmed_leakage": [f"{x.source} -> {x.target}" for x in p.leakage if x.confirmed],
                "position_bias": p.position.bias,
                "position_ci": p.position.ci,
                "position_confirmed": p.position.confirmed,
                "flip_rate": p.position.flip_rate,
                "agreement_with_labels": None if humans is None else humans.agreement,
            }
        )
    return rows


def per_prompt_by_cell(results: list[AuditResult]) -> list[dict]:
    """Each cell's per-prompt audit (tasks with their own items, stats/per_prompt.py), one row per cell: the judges
    side by side on the same items, what each cannot read, reads backwards and counts twice."""
    return [
        {
            "generator": r.generator,
            "verifier": r.verifier,
            "items": len(p.items),
            "unread": len(p.unread),
            "sign_errors": [x.id for x in p.items if x.sign_error == "confirmed"],
            "redundant_pairs": sum(x.evidence == "confirmed" for x in p.pairs),
            "double_count": p.double_count,
            "pairwise": None if (q := r.measured(ItemPairs)) is None else _item_pairs_cell(q),
        }
        for r in results
        if (p := r.per_prompt) is not None
    ]


def _item_pairs_cell(q: ItemPairs) -> dict:
    """A cell's pairwise judge of the items (stats/item_pairs.py): what it cannot tell apart, prefers backwards."""
    return {
        "unread": len(q.unread),
        "sign_errors": [x.id for x in q.items if x.sign_error == "confirmed"],
        "redundant_pairs": sum(x.evidence == "confirmed" for x in q.pairs),
        "position_bias": q.position.bias,
        "position_confirmed": q.position.confirmed,
    }


def attacks_by_cell(results: list[AuditResult]) -> list[dict]:
    """Each cell's judge under attack (config.attacks, stats/attacks.py), one row per cell and attack kind: the
    judges side by side on the same attacks, the criteria it moves (confirmed) and resists, its largest lift; its
    pairwise judge's beside them (the attack named '<kind> (pairwise)', its questions for criteria)."""
    rows = []
    for r in results:
        for attacks, said in ((r.measured(Attacks), "{}"), (r.measured(PairAttacks), "{} (pairwise)")):
            for kind in attacks.kinds if attacks is not None else []:
                mine = [x for x in attacks.of() if x.kind == kind]  # type: ignore[union-attr]
                lifts = [x.lift for x in mine if x.lift is not None]
                rows.append({"generator": r.generator, "verifier": r.verifier, "attack": said.format(kind),
                             "attacked": [x.criterion for x in mine if x.verdict == "attacked"],
                             "resists": [x.criterion for x in mine if x.verdict == "resists"], "criteria": len(mine),
                             "largest_lift": max(lifts) if lifts else None})  # fmt: skip
    return rows


def reward_by_cell(results: list[AuditResult]) -> list[dict]:
    """The reward model (config.reward) on each cell's probes, one row per cell: the criteria whose steer moves
    it (with the effect, in reward sd) and those it is confirmed not to see (one profile per generator's probes),
    and its mean Spearman with the cell's judge over the criteria."""
    rows = []
    for r in results:
        if (w := r.measured(RewardProfile)) is None:
            continue
        agreement = [c.agreement for c in w.criteria if c.agreement is not None]
        rows.append(
            {
                "generator": r.generator,
                "verifier": r.verifier,
                "model": w.model,
                "moves": {c.criterion: c.effect for c in w.criteria if c.verdict == "moves"},
                "blind": [c.criterion for c in w.criteria if c.verdict == "blind"],
                "agreement_with_judge": float(np.mean(agreement)) if agreement else None,
            }
        )
    return rows


def judge_ranking(results: list[AuditResult]) -> list[dict]:
    """The grid's judges ranked on coupling and on agreement with the human labels together: per verifier, its
    worst coupling (MaxCoupling, eq. 10-11, averaged over its cells; lower ranks first) and its mean quadratic
    kappa with the labels over the labelled criteria and cells (higher ranks first); the order is by the mean of
    the two ranks (the agreement rank breaking ties), or by the coupling rank alone without labels."""
    rows: list[dict[str, Any]] = []
    for v in sorted({r.verifier for r in results}):
        mine = [r for r in results if r.verifier == v]
        worst = [r.global_["max_coupling"] for r in mine if not np.isnan(r.global_["max_coupling"])]
        labelled = [lab for r in mine if (lab := r.measured(LabelsBlock)) is not None]
        kappas = [row.kappa for lab in labelled for row in lab.judges.get(v, {}).values() if row.kappa is not None]
        rows.append(
            {
                "verifier": v,
                "worst_coupling": float(np.mean(worst)) if worst else None,
                "kappa": float(np.mean(kappas)) if kappas else None,
                "cells": len(mine),
            }
        )

    def rank(key: str, sign: int) -> dict[str, int]:
        """Competition ranking (1, 1, 3): equal values share the best rank, whatever the judges' order."""
        values = [sign * r[key] for r in rows if r[key] is not None]
        return {r["verifier"]: 1 + sum(v < sign * r[key] for v in values) for r in rows if r[key] is not None}

    by_coupling, by_agreement = rank("worst_coupling", 1), rank("kappa", -1)
    for r in rows:
        r["rank_coupling"], r["rank_agreement"] = by_coupling.get(r["verifier"]), by_agreement.get(r["verifier"])
        ranks = [x for x in (r["rank_coupling"], r["rank_agreement"]) if x is not None]
        r["rank"] = sum(ranks) / len(ranks) if ranks else None
    inf = float("inf")
    rows.sort(key=lambda r: (r["rank"] or inf, r["rank_agreement"] or inf, r["verifier"]))
    return rows


def bias_by_cell(results: list[AuditResult]) -> list[dict]:
    """Each cell's judge bias, one row per (attribute, criterion): judges side by side on what they reward
    that no criterion asks for."""
    return [
        {
            "generator": r.generator,
            "verifier": r.verifier,
            **row.model_dump(mode="json", include={"attribute", "criterion", "sensitivity", "ci", "flag"}),
            "evidence": row.evidence,
        }
        for r in results
        for row in r.bias_rows
    ]
