"""From a score table (a DataFrame or a file) to one cell's AuditResult: resolve the rubric and reference, pick the
cell, audit its coupling, add calibration and each measurement the audit asked for (measures.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from radar_local.calibration import calibration
from radar_local.errors import InputError
from radar_local.measures import MEASUREMENTS, Asked, Measured
from radar_local.nuisance import WAYS
from radar_local.progress import say, stage_progress
from radar_local.rubric import HumanReference, Rubric, load_rubric, resolve_reference
from radar_local.scale import LIKERT, Scale, range_scale
from radar_local.score_table import cells, check_criteria, read_scores, validate_scores
from radar_local.stats.audit import audit_cell, items_only
from radar_local.stats.bias import BIAS
from radar_local.stats.bootstrap import RESAMPLES
from radar_local.stats.coupling import TAU, LeakageDefinition
from radar_local.stats.intervals import CHUNK as INTERVAL_CHUNK
from radar_local.stats.per_prompt import per_prompt
from radar_local.stats.probes import probe_matrix
from radar_local.stats.result import AuditResult
from radar_local.stats.settings import StatsSettings
from radar_local.stats.stored import Scales

FOOTING = "each criterion's 0-1 range: a difference of mean scores over its scale's span (highest minus lowest level)"


def select_cell(df: pd.DataFrame, path: object, generator: str | None, verifier: str | None) -> tuple[str, str]:
    found = [c for c in cells(df) if (generator in (None, c[0])) and (verifier in (None, c[1]))]
    if not found:
        raise InputError(
            path, f"no scores for generator={generator} verifier={verifier}; cells present: {_names(cells(df))}"
        )
    if len(found) > 1:
        raise InputError(
            path,
            f"holds {len(found)} generator -> verifier cells ({_names(found)}); pick one with --generator/--verifier",
        )
    return found[0]


LARGE_TABLE = 200_000  # rows from which `radar stats` says what it works through, and shows the bootstrap's progress
LARGE_FILE = 20 << 20  # bytes of a table file whose reading is announced


def _names(cs: list[tuple[str, str]]) -> str:
    return ", ".join(f"{g} -> {v}" for g, v in cs)


def stats_for_table(
    df: pd.DataFrame,
    path: object,
    settings: StatsSettings = StatsSettings(),
    *,
    rubric: Rubric | None = None,
    reference: HumanReference | None = None,
    generator: str | None = None,
    verifier: str | None = None,
    budget: bool = True,
    scale: Scale = LIKERT,
    asked: Asked = Asked(),
) -> AuditResult:
    """One cell's audit: its coupling (stats/audit.py), then each measurement the audit asked for (measures.py,
    in order). `settings`: tau, resamples, seed, level, the flags' thresholds and the leakage's definition, one
    object (stats/settings.py); `asked`: the verdicts of the other askings (repeats, wordings, a jury's jurors, ...).
    Each criterion is on the rubric's scale for it, or on `scale` without a rubric."""
    criteria = [c.id for c in rubric.shared] if rubric else list(pd.unique(df["criterion"]))
    check_criteria(df, rubric.ids if rubric else criteria, path)
    gen, ver = select_cell(df, path, generator, verifier)
    cell = df[(df["generator"] == gen) & (df["verifier"] == ver)]
    rewrites = cell[cell["direction"].isin(WAYS)]  # nuisance pairs: judged apart from the coupling
    cell, df = cell[~cell["direction"].isin(WAYS)], df[~df["direction"].isin(WAYS)]
    items = rubric.items if rubric else []
    found: dict[str, Any] = {}
    if items and rubric is not None:  # the tasks' own items: their per-prompt audit, apart from the shared coupling
        own = cell["criterion"].isin({i.id for i in items})
        spans = {c.id: float(rubric.scale_of(c.id).span) for c in rubric.criteria}
        s = settings
        found["per_prompt"] = per_prompt(
            cell, items, spans, shared=rubric.shared, tau=s.tau, level=s.level, fdr=s.screening, seed=s.seed,
            looks=s.looks, first=s.first_wave,
        )  # fmt: skip
        if not criteria:  # every task brings its own items: no shared criterion, no coupling across tasks
            return replace(items_only(cell[own], gen, ver, settings), rubric=rubric.id, **found)
        ids = {i.id for i in items}  # the shared audit reads shared criteria on probes steered on shared ones
        cell, df = (t[~(t["criterion"].isin(ids) | t["target"].isin(ids))] for t in (cell, df))
    if (cell["direction"] == "none").all():
        raise InputError(
            path,
            f"{gen} -> {ver} has only unconditioned ('none') probes; coupling needs probes "
            "steered + and - on each criterion",
        )
    scales = rubric.scales if rubric else dict.fromkeys(criteria, scale)
    pm = probe_matrix(df, criteria, gen, ver, [scales[c].span for c in criteria])
    resamples = settings.resamples
    large = len(df) >= LARGE_TABLE  # worth telling what the statistics work through, and for how long
    if large:
        say(
            f"stats: {len(df):,} rows, {len(pm.scores):,} probes; the bootstrap's time grows with probes x "
            f"resamples ({resamples}), its memory with probes x {INTERVAL_CHUNK} (one chunk of resamples)"
        )
    with stage_progress("stats: bootstrap resamples", resamples, enabled=large) as advance:
        core = audit_cell(
            pm,
            reference,
            tau=settings.tau,
            resamples=resamples,
            seed=settings.seed,
            thresholds=settings.thresholds,
            level=settings.level,
            budget=budget,
            advance=advance,
            definition=settings.leakage,
            screening=settings.screening,
        )
    blocks: dict[str, Any] = {
        "rubric": rubric.id if rubric else None,
        "scales": Scales(footing=FOOTING, criteria={c: scales[c].name for c in criteria}),
        "calibration": calibration(df[df["generator"] == gen], criteria, scales),
    }
    for measure in MEASUREMENTS:
        blocks |= measure(Measured(df, rewrites, pm, core, scales, rubric, settings, asked, blocks))
    return core.adding(**blocks, **found)


def analyze(
    table: pd.DataFrame | str | Path,
    *,
    rubric: Rubric | str | Path | None = None,
    human: str | Path | None = None,
    tau: float = TAU,
    bootstrap: int = RESAMPLES,
    seed: int = 0,
    scale: str | Scale = LIKERT,
    generator: str | None = None,
    verifier: str | None = None,
    bias_threshold: float = BIAS,
    leakage: LeakageDefinition = "ratio_of_means",
    screening: float | None = None,
) -> AuditResult:
    """The RADAR audit of a score table: a DataFrame in the long format, or a CSV / Parquet file.

    `rubric`: a Rubric, a bundled name or a rubric file (default: the table's criteria, in order);
    a bundled rubric brings its human reference unless `human` names another. `scale`: the table's scale
    ('1-10', or a Scale) where no rubric declares one; a rubric's own scales win. `screening`: a false discovery
    rate at which flags are also screened (stats/screening.py)."""
    rubric_arg = None if isinstance(rubric, Rubric) or rubric is None else str(rubric)
    rubric_obj = rubric if isinstance(rubric, Rubric) else load_rubric(rubric_arg) if rubric_arg else None
    if rubric_obj is not None and not rubric_obj.criteria:  # a per-prompt rubric's items live in its tasks
        raise InputError(
            rubric_arg or "rubric",
            "has no criteria to audit a score table on; a rubric whose items are its tasks' own is audited from its "
            "run directory (radar report RUN)",
        )
    where: object = "table" if isinstance(table, pd.DataFrame) else table
    try:
        scale = range_scale(scale) if isinstance(scale, str) else scale
    except ValueError as exc:
        raise InputError(where, str(exc)) from None
    declared = rubric_obj is not None and (
        "scale" in rubric_obj.model_fields_set or any(c.scale is not None for c in rubric_obj.criteria)
    )
    if rubric_obj is not None and not declared:  # a rubric that declares no scale is scored on the table's
        rubric_obj = rubric_obj.model_copy(update={"scale": scale})
    scales = rubric_obj.scales if rubric_obj is not None else scale
    declared_by = (  # a row off the rubric's declared scales names it
        rubric_arg or f"the rubric '{rubric_obj.id}'" if declared and rubric_obj is not None else None
    )
    if isinstance(table, pd.DataFrame):
        df = validate_scores(table, where, scales, declared_by=declared_by)
    else:
        size = Path(table).stat().st_size if Path(table).is_file() else 0
        if size >= LARGE_FILE:
            say(f"stats: reading {table} ({size / 2**20:,.0f} MiB)")
        df = read_scores(table, scales, declared_by)
    if human and rubric_obj is None:
        raise InputError(human, "a human reference needs a rubric (--rubric) so its pairs can be checked")
    return stats_for_table(
        df,
        where,
        StatsSettings(
            tau=tau,
            resamples=bootstrap,
            seed=seed,
            bias_threshold=bias_threshold,
            leakage=leakage,
            screening=screening,
        ),
        rubric=rubric_obj,
        reference=resolve_reference(rubric_obj, rubric_arg, str(human) if human else None),
        generator=generator,
        verifier=verifier,
        scale=scale,
    )
