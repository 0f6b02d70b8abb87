"""From a score table (a DataFrame or a file) to one cell's AuditResult: resolve the rubric and
reference, pick the cell, add calibration and the rubric's weighted double-count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radar_local.calibration import calibration
from radar_local.common import to_json
from radar_local.errors import InputError
from radar_local.nuisance import WAYS
from radar_local.progress import say, stage_progress
from radar_local.rubric import HumanPairs, Rubric, load_rubric, resolve_reference
from radar_local.scale import LIKERT, Scale, range_scale
from radar_local.score_table import cells, check_criteria, read_scores, validate_scores
from radar_local.stats.audit import audit_cell
from radar_local.stats.bias import BIAS, Bias, nuisance_pairs, nuisance_table
from radar_local.stats.bootstrap import RESAMPLES
from radar_local.stats.coupling import TAU, LeakageDefinition, double_counted_share
from radar_local.stats.drift import drift
from radar_local.stats.halo import halo
from radar_local.stats.intervals import CHUNK as INTERVAL_CHUNK
from radar_local.stats.joint import Reading, read_joint
from radar_local.stats.jurors import JuryBlock, against_jurors, among_jurors
from radar_local.stats.probes import ProbeMatrix, probe_matrix
from radar_local.stats.raters import Measurement
from radar_local.stats.repeats import repeats as repeat_agreement
from radar_local.stats.result import AuditResult
from radar_local.stats.settings import StatsSettings
from radar_local.stats.stored import DoubleCount, Scales
from radar_local.stats.wording import wording

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
    reference: HumanPairs | None = None,
    generator: str | None = None,
    verifier: str | None = None,
    budget: bool = True,
    intended: set[frozenset[str]] | None = None,
    manipulation: dict[str, Any] | None = None,
    scale: Scale = LIKERT,
    halo_against: str | None = None,
    joint: Reading | None = None,
    repeats: Sequence[str] = (),
    paraphrases: Sequence[str] = (),
    unreasoned: str | None = None,
    jurors: Sequence[str] = (),
    measurements: dict[str, Measurement] | None = None,
    juror_errors: dict[str, np.ndarray] | None = None,
) -> AuditResult:
    """`settings`: tau, resamples, seed, level, the flags' thresholds and the leakage's definition, one object
    (stats/settings.py). `halo_against`: the same judge's per-criterion verifier label, where this one is its joint
    calls on the same probes (stats/halo.py); `joint`: where this verifier scores every criterion in one call,
    whose coupling its findings are about (stats/joint.py). `repeats`: the labels of its verdicts asked again
    (stats/repeats.py);
    `paraphrases`: of its judge under each other wording of its template (stats/wording.py); `unreasoned`: of its
    thinking judge answering at once, the ablation (stats/drift.py, "before" the reasoning).
    `manipulation`: the nuisance attributes' manipulation check (radar_local.nuisance), where the rewrites' texts
    were at hand; an attribute it found not steered gets no flag. Each criterion is on the rubric's scale for it,
    or on `scale` without a rubric. `jurors`: where this verifier is a jury, its jurors' labels in the table: the
    jury against each, and their agreement at each criterion's level of measurement (`measurements`, default
    ordinal), Kish's effective jurors from `juror_errors` (criterion -> jurors x labelled responses) where human
    labels give errors (stats/jurors.py)."""
    criteria = rubric.ids if rubric else list(pd.unique(df["criterion"]))
    check_criteria(df, criteria, path)
    gen, ver = select_cell(df, path, generator, verifier)
    cell = df[(df["generator"] == gen) & (df["verifier"] == ver)]
    rewrites = cell[cell["direction"].isin(WAYS)]  # nuisance pairs: judged apart from the coupling
    cell, df = cell[~cell["direction"].isin(WAYS)], df[~df["direction"].isin(WAYS)]
    if (cell["direction"] == "none").all():
        raise InputError(
            path,
            f"{gen} -> {ver} has only unconditioned ('none') probes; coupling needs probes "
            "steered + and - on each criterion",
        )
    scales = rubric.scales if rubric else dict.fromkeys(criteria, scale)
    pm = probe_matrix(df, criteria, gen, ver, [scales[c].span for c in criteria])
    tau, resamples, seed, level = settings.tau, settings.resamples, settings.seed, settings.level
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
            tau=tau,
            resamples=resamples,
            seed=seed,
            thresholds=settings.thresholds,
            level=level,
            budget=budget,
            advance=advance,
            definition=settings.leakage,
            screening=settings.screening,
        )
    spans = [scales[c].span for c in criteria]
    blocks: dict[str, Any] = {
        "rubric": rubric.id if rubric else None,
        "scales": Scales(footing=FOOTING, criteria={c: scales[c].name for c in criteria}),
        "calibration": calibration(df[df["generator"] == gen], criteria, scales),
    }
    if len(rewrites) or manipulation:
        steered = {a: m["steered"] for a, m in (manipulation or {}).items()}
        rows = nuisance_table(
            nuisance_pairs(rewrites, criteria),
            criteria,
            [float(core.self_effect[c]) for c in criteria],
            [bool(core.reliable[c]) for c in criteria],
            threshold=settings.bias_threshold,
            intended=intended,
            resamples=resamples,
            level=level,
            seed=seed,
            steered=steered,
            spans=spans,
        )
        blocks["bias"] = Bias(threshold=settings.bias_threshold, rows=rows, manipulation=to_json(manipulation))
    if rubric is not None:
        blocks["double_count"] = double_count(core, rubric)
    if halo_against is not None:
        per = probe_matrix(df, criteria, gen, halo_against, spans)
        blocks["halo"] = halo(per, pm, resamples=resamples, seed=seed, level=level)

    def asked(labels: Sequence[str]) -> list[ProbeMatrix]:  # the cell's verdicts, then each other asking of them
        return [pm, *(probe_matrix(df, criteria, gen, label, spans) for label in labels)]

    if repeats:
        blocks["repeats"] = repeat_agreement(
            asked(repeats), measurements or {}, resamples=resamples, seed=seed, level=level
        )
    levels = {c: [float(v) for v in scales[c].values] for c in criteria}
    if paraphrases:
        blocks["wording"] = wording(
            asked(paraphrases), levels, measurements or {}, resamples=resamples, seed=seed, level=level
        )
    if unreasoned is not None:
        blocks["thinking"] = drift(
            probe_matrix(df, criteria, gen, unreasoned, spans), pm, levels, measurements or {},
            resamples=resamples, seed=seed, level=level,
        )  # fmt: skip
    if jurors:
        blocks["jury"] = jury_block(
            df,
            pm,
            list(jurors),
            scales,
            measurements,
            juror_errors,
            tau=tau,
            resamples=resamples,
            seed=seed,
            level=level,
        )
    if joint is not None:
        blocks["pairs"], blocks["joint"] = read_joint(core.pairs, blocks.get("halo"), joint, core.family is not None)
    return replace(core, **blocks)


def jury_block(
    df: pd.DataFrame,
    jury: ProbeMatrix,
    jurors: list[str],
    scales: dict[str, Scale],
    measurements: dict[str, Measurement] | None,
    errors: dict[str, np.ndarray] | None,
    *,
    tau: float,
    resamples: int,
    seed: int,
    level: float,
) -> JuryBlock:
    """stats.json's `jury` block: the jury's worst coupling against each juror's, and the jurors' agreement."""
    criteria = list(jury.criteria)
    spans = [scales[c].span for c in criteria]
    mats = {j: probe_matrix(df, criteria, jury.generator, j, spans) for j in jurors}
    cell = df[(df["generator"] == jury.generator) & df["verifier"].isin(jurors)]
    wide = cell.pivot_table(
        index=["task_id", "target", "direction", "variant"],
        columns=["criterion", "verifier"],
        values="score",
        aggfunc="first",
        dropna=False,
    )
    missing = np.full(len(wide), np.nan)  # a juror with no score of a criterion
    scores = {
        c: np.vstack([wide[(c, j)].to_numpy(float) if (c, j) in wide.columns else missing for j in jurors])
        for c in criteria
    }
    return JuryBlock(
        jurors=jurors,
        coupling=against_jurors(jury, mats, tau=tau, resamples=resamples, seed=seed, level=level),
        agreement=among_jurors(
            scores,
            jurors,
            measurements or dict.fromkeys(criteria, "ordinal"),
            errors=errors,
            resamples=resamples,
            seed=seed,
            level=level,
        ),
    )


def double_count(result: AuditResult, rubric: Rubric) -> DoubleCount:
    """The rubric's weighted aggregate (its `weights`, else equal weights) and the share of it that
    double-counts through coupled, reliable pairs."""
    weights = {c: (rubric.weights or {}).get(c, 0.0 if rubric.weights else 1.0) for c in result.criteria}
    w = np.array([weights[c] for c in result.criteria], float)
    overall, share = double_counted_share(result.leakage.to_numpy(), result.reliable.to_numpy(), w)
    return DoubleCount.model_validate(
        to_json(
            {
                "weights": weights,
                "rubric_weights": rubric.weights is not None,
                "share": overall,
                "by_source": dict(zip(result.criteria, share)),
            }
        )
    )


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
