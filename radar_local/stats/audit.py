"""One cell's audit: coupling, bootstrap CIs, flags, agreement, baselines and probe budget, as an
AuditResult (whose to_json() is the content of `radar stats --json` and a run's stats.json)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from radar_local.common import json_number, to_json
from radar_local.scoring import continuous_scores
from radar_local.stats import baselines
from radar_local.stats.agreement import agreement
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, Strata
from radar_local.stats.budget import probe_budget
from radar_local.stats.coupling import TAU, LeakageDefinition, global_summaries
from radar_local.stats.decisions import evidence
from radar_local.stats.exact import ExactPoint, exact_point, to_float
from radar_local.stats.flags import DIRECTIONAL, Thresholds, pair_flags, upstream
from radar_local.stats.intervals import FAMILY_METHOD, METHOD, NO_INTERVAL, Bounds, Intervals, intervals
from radar_local.stats.per_prompt import METHOD as PER_PROMPT_METHOD
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.result import PAIR_COLUMNS, AuditResult, Gate
from radar_local.stats.screening import METHOD as SCREENING_METHOD
from radar_local.stats.screening import benjamini_hochberg, p_values
from radar_local.stats.settings import StatsSettings
from radar_local.stats.stored import Baselines, BudgetRow, ProbeCounts, ReferenceAgreement, Resampling, Unscored


def audit_cell(
    pm: ProbeMatrix,
    reference: dict[frozenset[str], float] | None = None,
    *,
    tau: float = TAU,
    resamples: int = RESAMPLES,
    seed: int = 0,
    thresholds: Thresholds = Thresholds(),
    budget: bool = True,
    level: float = LEVEL,
    advance: Callable[[int], None] | None = None,
    definition: LeakageDefinition = "ratio_of_means",
    screening: float | None = None,
) -> AuditResult:
    """`advance(k)`: told after each k bootstrap resamples (a progress bar's). `definition`: the leakage over
    tasks (coupling.LeakageDefinition). `screening`: a false discovery rate at which flags are also screened
    (stats/screening.py; None: no screening)."""
    crit = list(pm.criteria)
    k = len(crit)
    if not pm.directed.any():
        raise ValueError("the cell has no + or - probes; coupling needs directed probes")
    strata = Strata.from_probes(pm)
    exact = exact_point(strata, definition)
    point = exact.coupling(tau)
    iv = intervals(strata, exact, tau, resamples, seed, level, advance=advance) if resamples else None
    undefined = None if iv is None else _undefined(iv, crit)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    ref_vec = None if reference is None else np.array([reference[frozenset((crit[a], crit[b]))] for a, b in pairs])

    se, lk, ok = point.self_effect[0], point.leakage[0], point.pair_reliable[0]
    glob = {key: v[0] for key, v in global_summaries(point).items()}
    ci: dict[str, Any] = (
        {}
        if iv is None
        else {
            "self_effect": iv.self_effect,
            "leakage": iv.leakage,
            "sym": iv.sym,
            "asym": iv.asym,
            "global": iv.global_,
        }
    )

    screened = None if iv is None or screening is None else _screen(exact, iv, crit, tau, thresholds, screening)
    pair_rows = []
    for idx, (a, b) in enumerate(pairs):
        l_ab, l_ba = exact.leakage[a][b], exact.leakage[b][a]
        flags = pair_flags(l_ab, l_ba, bool(ok[a, b]), thresholds)
        ups = upstream(crit[a], crit[b], l_ab, l_ba) if DIRECTIONAL in flags else (None, None)
        pair_rows.append(
            {
                "a": crit[a],
                "b": crit[b],
                "leak_ab": lk[a, b],
                "leak_ba": lk[b, a],
                "sym": to_float((l_ab + l_ba) / 2) if l_ab is not None and l_ba is not None else np.nan,
                "asym": to_float(abs(l_ab - l_ba)) if l_ab is not None and l_ba is not None else np.nan,
                "reliable": bool(ok[a, b]),
                "flags": flags,
                "sym_ci": tuple(ci["sym"][a, b]) if ci else None,
                "asym_ci": tuple(ci["asym"][a, b]) if ci else None,
                "human_r": np.nan if ref_vec is None else ref_vec[idx],
                "upstream": ups[0],
                "downstream": ups[1],
                "evidence": None,
                "settle_n": None,
            }
        )
    pair_rows.sort(key=lambda r: (not r["reliable"], -np.nan_to_num(r["sym"], nan=-np.inf)))
    unscored = _unscored(pm, strata)
    tasks = list(pm.tasks)

    def frame(m: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(m, index=crit, columns=crit, dtype=float)

    result = AuditResult(
        generator=pm.generator,
        verifier=pm.verifier,
        criteria=crit,
        tasks=tasks,
        tau=tau,
        leakage_definition=definition,
        bootstrap=Resampling.model_validate(
            {
                "resamples": resamples,
                "seed": seed,
                "level": level,
                "method": METHOD,
                "df": None if iv is None else dict(zip(crit, iv.df.tolist())),
                **({} if undefined is None else {"undefined": undefined, "no_interval": NO_INTERVAL}),
            }
        ),
        probes=ProbeCounts(
            directed=int(pm.directed.sum()),
            unconditioned=int((~pm.directed).sum()),
            min_per_stratum=int(strata.sizes.min()),
            unscored_cells=int(np.isnan(pm.scores).sum()),
            score_values="continuous" if continuous_scores(pm.scores) else "integer",
        ),
        unscored=Unscored.model_validate(unscored),
        warnings=_warnings(unscored, pm, resamples) + ([] if undefined is None else _thin(undefined, resamples)),
        self_effect=pd.Series(se, index=crit, dtype=float),
        self_effect_ci=pd.DataFrame(ci["self_effect"], index=crit, columns=["low", "high"]) if ci else None,
        reliable=pd.Series(point.reliable[0], index=crit, dtype=bool),
        self_effect_by_task=pd.DataFrame(point.self_effect_by_task[0], index=tasks, columns=crit, dtype=float),
        leakage=frame(lk),
        leakage_ci=(frame(ci["leakage"][..., 0]), frame(ci["leakage"][..., 1])) if ci else None,
        leakage_sd=frame(point.leakage_sd[0]),
        leakage_by_task={t: frame(point.leakage_by_task[0, ti]) for ti, t in enumerate(tasks)},
        pairs=pd.DataFrame(pair_rows, columns=PAIR_COLUMNS),
        global_={key: float(v) for key, v in glob.items()},
        global_ci={key: tuple(v) for key, v in ci["global"].items()} if ci else None,
        thresholds=vars(thresholds),
        unreliable=[_gate(c, exact.self_effect[i], tau) for i, c in enumerate(crit) if not point.reliable[0, i]],
        baselines=Baselines.model_validate(to_json(_baselines(pm, pairs, ref_vec))),
        agreement=None
        if ref_vec is None
        else ReferenceAgreement.model_validate(to_json(agreement(_gated_sym(pair_rows, pairs, ok, crit), ref_vec))),
        family=None if iv is None else family_json(iv.family, crit, screened),
        budget=[
            BudgetRow.model_validate(row)
            for row in to_json(probe_budget(strata, pairs, ref_vec, point, tau=tau, seed=seed, definition=definition))
        ]
        if budget
        else None,
    )
    return result if iv is None else evidence(result, thresholds, None if screened is None else screened[1])


def _gated_sym(
    pair_rows: list[dict[str, Any]], pairs: list[tuple[int, int]], ok: np.ndarray, crit: list[str]
) -> np.ndarray:
    """Each pair's Sym in `pairs`' order, NaN where a gate failed: what the human reference is compared with."""
    sym = {(r["a"], r["b"]): r["sym"] for r in pair_rows}
    return np.array([sym[crit[a], crit[b]] if ok[a, b] else np.nan for a, b in pairs], float)


def _screen(
    exact: ExactPoint, iv: Intervals, crit: list[str], tau: float, th: Thresholds, fdr: float
) -> tuple[dict[str, Any], set[tuple[str, tuple[str, str]]]]:
    """The screening block of the family and the (flag, pair) its Benjamini-Hochberg step passes, each pair in
    the rubric's order as the pair rows name it."""
    p = p_values(exact.self_effect, exact.leakage, iv.family.scale, iv.df, tau, th)
    passed = benjamini_hochberg(p, fdr)
    block = {"fdr": fdr, "method": SCREENING_METHOD, "hypotheses": len(p), "passed": len(passed)}
    return block, {(flag, (crit[min(i, j)], crit[max(i, j)])) for flag, i, j in passed}


def family_json(f: Bounds, crit: list[str], screened: tuple[dict[str, Any], Any] | None = None) -> dict[str, Any]:
    def ci(v: np.ndarray) -> list[float | None] | None:
        return [float(v[0]), float(v[1])] if np.isfinite(v).all() else None  # none, or unbounded: open

    return {
        **({} if screened is None else {"screening": screened[0]}),
        "level": f.level,
        "method": FAMILY_METHOD,
        "cells": f.cells,
        "critical": json_number(f.critical),
        "gate_level": 1 - (1 - f.level) / len(crit),
        "pair_level": 1 - f.pair_level,
        "self_effect": {c: ci(f.self_effect[i]) for i, c in enumerate(crit)},
        **{
            key: {a: {b: ci(m[i, j]) for j, b in enumerate(crit)} for i, a in enumerate(crit)}
            for key, m in (("leakage", f.leakage), ("sym", f.sym), ("asym", f.asym))
        },
    }


def _gate(criterion: str, self_effect: Fraction | None, tau: float) -> Gate:
    """Why a criterion is gated (App. C): no evidence, a failed intervention, or too weak a move."""
    if self_effect is None:
        cause, reason = "unscored", "no scored probes in a direction (every answer unscored or missing)"
    elif self_effect < 0:
        cause, reason = "negative", "negative self-effect (failed intervention)"
    else:
        cause, reason = "below_tau", f"self-effect below tau={tau}"
    return Gate(criterion, None if self_effect is None else float(self_effect), cause, reason)


def _unscored(pm: ProbeMatrix, strata: Strata) -> dict[str, Any]:
    """Strata (task, target, direction) with no scored answer on their own target, per task."""
    t_count, k = strata.shape
    scored = {
        (int(strata.task[s]), int(strata.target[s]), int(strata.direction[s]))
        for s, rows in enumerate(strata.slices())
        if not np.isnan(strata.scores[rows, strata.target[s]]).all()
    }
    per_task = {pm.tasks[t]: sum((t, i, d) not in scored for i in range(k) for d in (0, 1)) for t in range(t_count)}
    return {
        "verdicts": int(np.isnan(pm.scores).sum()),
        "verdicts_total": int(pm.scores.size),
        "strata": sum(per_task.values()),
        "strata_total": t_count * k * 2,
        "tasks": {t: n for t, n in per_task.items() if n},
    }


def _undefined(iv: Intervals, crit: list[str]) -> dict[str, dict[str, int]]:
    """The resamples in which a defined self-effect or leakage was undefined, by cell (none: left out)."""
    se, lk = iv.undefined["self_effect"], iv.undefined["leakage"]
    return {
        "self_effect": {c: int(se[i]) for i, c in enumerate(crit) if se[i]},
        "leakage": {f"{a}->{b}": int(lk[i, j]) for i, a in enumerate(crit) for j, b in enumerate(crit) if lk[i, j]},
    }


THIN = 0.05  # the share of resamples a value may be undefined in before its interval is said to rest on fewer


def _thin(undefined: dict[str, dict[str, int]], resamples: int) -> list[str]:
    cells = {**undefined["self_effect"], **undefined["leakage"]}
    thin = {cell: n for cell, n in cells.items() if n > THIN * resamples}
    if not thin:
        return []
    worst, n = max(thin.items(), key=lambda kv: kv[1])
    return [
        f"{len(thin)} self-effect or leakage interval(s) rest on fewer resamples: the value was undefined in more "
        f"than {THIN:.0%} of them (a source's self-effect not positive in every task), at worst {worst} in {n} of "
        f"{resamples}"
    ]


def _warnings(unscored: dict[str, Any], pm: ProbeMatrix, resamples: int) -> list[str]:
    out = []
    if unscored["verdicts"]:
        out.append(
            f"{unscored['verdicts']} of {unscored['verdicts_total']} verdicts are unscored (the verifier's "
            "answer did not parse, or the probe was not scored on that criterion)"
        )
    if unscored["strata"]:
        tasks = ", ".join(f"{t} ({n})" for t, n in unscored["tasks"].items())
        out.append(
            f"{unscored['strata']} of {unscored['strata_total']} strata (task, target, direction) have no scored "
            f"answer on their target, in {len(unscored['tasks'])} of {len(pm.tasks)} tasks: {tasks}; "
            "their self-effects and leakages are undefined"
        )
    directed = pm.directed
    _, sizes = np.unique(np.stack([pm.task[directed], pm.target[directed], pm.direction[directed]]), axis=1,
                         return_counts=True)  # fmt: skip
    if resamples and len(sizes) and sizes.min() < 2:
        out.append(
            f"{int((sizes < 2).sum())} of {len(sizes)} strata hold one probe: a quantity resting on them has no "
            "spread to bound it, so no interval exists and nothing resting on them is confirmed (audit with n: 2 "
            "or more)"
        )
    return out


def _baselines(pm: ProbeMatrix, pairs: list[tuple[int, int]], ref_vec: np.ndarray | None) -> dict[str, Any]:
    unconditioned = pm.scores[~pm.directed]
    sample = unconditioned if len(unconditioned) >= 3 else pm.scores
    mats = {
        "synthetic_correlation": baselines.synthetic_correlation(unconditioned) if len(unconditioned) else None,
        "whitening_redundancy": baselines.whitening_redundancy(sample),
        "score_profile_redundancy": baselines.score_profile_redundancy(sample),
    }
    out: dict[str, Any] = {"sample": "unconditioned probes" if sample is unconditioned else "all probes"}
    for name, mat in mats.items():
        vec = None if mat is None else np.array([mat[a, b] for a, b in pairs])
        out[name] = None if vec is None else {f"{pm.criteria[a]}/{pm.criteria[b]}": v for (a, b), v in zip(pairs, vec)}
        if ref_vec is not None and vec is not None:
            out.setdefault("agreement", {})[name] = agreement(vec, ref_vec)
    return out


def items_only(table: pd.DataFrame, generator: str, verifier: str, settings: StatsSettings) -> AuditResult:
    """The audit of a rubric without shared criteria (every task brings its own items): no shared coupling, so its
    result names no criterion; what it found is its `per_prompt` block. `table`: the cell's item verdicts."""
    directed = table[table["direction"].isin(("+", "-"))]
    probes = directed.drop_duplicates(["task_id", "target", "direction", "variant"])
    strata = probes.groupby(["task_id", "target", "direction"]).size()
    unscored = directed[directed["score"].isna()]
    tasks = sorted(pd.unique(table["task_id"]).tolist())
    empty = pd.DataFrame(dtype=float)
    return AuditResult(
        generator=generator,
        verifier=verifier,
        criteria=[],
        tasks=tasks,
        tau=settings.tau,
        bootstrap=Resampling(
            resamples=settings.resamples, seed=settings.seed, level=settings.level, method=PER_PROMPT_METHOD, df=None
        ),
        probes=ProbeCounts(
            directed=len(probes),
            unconditioned=0,
            min_per_stratum=int(strata.min()) if len(strata) else 0,
            unscored_cells=len(unscored),
            score_values="continuous" if continuous_scores(directed["score"].to_numpy(float)) else "integer",
        ),
        unscored=Unscored(
            verdicts=len(unscored),
            verdicts_total=len(directed),
            strata=0,
            strata_total=len(strata),
            tasks={t: int(n) for t, n in unscored.groupby("task_id").size().items()},
        ),
        warnings=[],
        self_effect=pd.Series(dtype=float),
        self_effect_ci=None,
        reliable=pd.Series(dtype=bool),
        self_effect_by_task=pd.DataFrame(index=tasks, dtype=float),
        leakage=empty,
        leakage_ci=None,
        leakage_sd=empty,
        leakage_by_task={},
        pairs=pd.DataFrame(columns=PAIR_COLUMNS),
        global_={"positive": float("nan"), "tension": float("nan"), "max_coupling": float("nan")},
        global_ci=None,
        thresholds=vars(settings.thresholds),
        unreliable=[],
        baselines=Baselines(
            sample="none", synthetic_correlation=None, whitening_redundancy=None, score_profile_redundancy=None
        ),  # fmt: skip
    )
