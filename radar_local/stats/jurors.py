"""A jury against its jurors: the jury's worst coupling against each juror's on the same probes, and how much the
jurors agree (stats.json's `jury` block).

Worst coupling is the largest leakage over ordered pairs whose source passes the reliability gate under both the
jury and the juror (the MaxCoupling of eq. 10-11 on the pairs both can speak to). A maximum is no smooth function
of the data: a bootstrap interval of the difference of two maxima missed the truth (coverage 0.87 where 0.95 was
asked, scripts/jury_error.py). So the difference is written as max_p min_q (jury's leakage on pair p - juror's on
pair q), and one simultaneous band (stats/intervals.simultaneous, max-t) over all those paired differences, from
the same Rao-Wu resamples of probes for both judges (as stats/paired.py), bounds it: where the band holds, the
difference lies between the max-min of the band's lower ends and that of its upper ends, so a flag ("below",
"above": the bounds exclude 0) is wrong only where the band fails. The band is at level 1 - (1 - level) / k over
the k jurors (Bonferroni), so a flag is wrong in at most 1 - level of audits whichever juror it names.
`below_best`: the jury's worst coupling lies below that of the juror whose own is lowest (at the point estimate),
beyond those bounds.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, Strata, unit_bootstrap
from radar_local.stats.correlation import spearman
from radar_local.stats.coupling import TAU
from radar_local.stats.exact import exact_point
from radar_local.stats.intervals import percentile_interval, simultaneous
from radar_local.stats.paired import same_probes
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.raters import Measurement, alpha, effective_jurors
from radar_local.stats.stored import Block, Evidence, Interval, Num

BELOW, ABOVE = "below", "above"
METHOD = (
    "max-min bounds from one simultaneous band over the paired differences jury(p) - juror(q) on the pairs both "
    "gate as reliable (max-t over paired Rao-Wu resamples of probes, Student's t at the design df), Bonferroni "
    "over the jurors"
)
ERRORS_FROM_SCORES = (
    "no human labels: each juror's scores centred on its own mean stand in for its errors, so shared signal counts "
    "as shared error and the estimate is a lower bound"
)
ERRORS_FROM_LABELS = (
    "errors against the mean human label of each labelled response (over the labelled criteria; the others' rows "
    "use centred scores, a lower bound)"
)


class JurorRow(Block):
    juror: str
    probes: int
    pairs: int  # the ordered pairs both judges gate as reliable
    juror_worst: Num
    jury_worst: Num
    difference: Num  # jury minus juror
    ci: Interval | None
    flag: Literal["below", "above"] | None


class JurorCoupling(Block):
    """The jury's worst coupling against each juror's."""

    level: float
    family_level: float  # Bonferroni over the jurors
    resamples: int
    method: str
    jurors: list[JurorRow]
    best_juror: str | None
    below_best: bool | None


class EffectiveJurors(Block):
    """Kish's effective number of independent jurors (stats/raters.effective_jurors)."""

    effective: Num
    jurors: int
    mean_error_correlation: Num
    pairs: int
    errors: Literal["labels", "scores"] | None = None  # per criterion: what the errors are


class CriterionAgreement(Block):
    level_of_measurement: Measurement
    probes: int
    alpha: Num  # Krippendorff's, among the jurors
    alpha_ci: Interval | None
    correlations: dict[str, Num]  # pairwise Spearman, "a / b"
    effective_jurors: EffectiveJurors


class JurorAgreement(Block):
    level: float
    resamples: int
    criteria: dict[str, CriterionAgreement]
    effective_jurors: EffectiveJurors | None  # pooled
    errors: str  # what stood in for the jurors' errors


class PairSide(Block):
    sym: Num
    flags: list[str]
    evidence: dict[str, Evidence | None] | None
    upstream: str | None
    downstream: str | None


class JudgeSide(Block):
    """A judge as the side-by-side table shows it (radar_local/jury.side_by_side)."""

    self_effect: dict[str, Num]
    reliable: dict[str, bool]
    leakage: dict[str, dict[str, Num]]  # off the diagonal
    pairs: dict[str, PairSide]  # "a / b"


class JuryBlock(Block):
    """stats.json's `jury`: the jury against its jurors, their agreement, and how the jury was made."""

    jurors: list[str]  # those that finished
    coupling: JurorCoupling
    agreement: JurorAgreement
    aggregate: str | None = None
    min_jurors: int | None = None
    failed: dict[str, str] | None = None  # juror -> why
    side_by_side: dict[str, JudgeSide] | None = None  # the jury, then each juror


def against_jurors(
    jury: ProbeMatrix,
    jurors: dict[str, ProbeMatrix],
    *,
    tau: float = TAU,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> JurorCoupling:
    """Per juror: both worst couplings, their difference with its interval, and the flag."""
    family = 1 - (1 - level) / max(1, len(jurors))
    rows = []
    for label, juror in jurors.items():
        a, b = same_probes(juror, jury)
        sa, sb = Strata.from_probes(a), Strata.from_probes(b)
        ca, cb = exact_point(sa).coupling(tau), exact_point(sb).coupling(tau)
        k = len(a.criteria)
        pairs = ~np.eye(k, dtype=bool) & (ca.reliable[0] & cb.reliable[0])[:, None]
        pairs &= ~np.isnan(ca.leakage[0]) & ~np.isnan(cb.leakage[0])
        row: dict[str, Any] = {"juror": label, "probes": int(len(a.scores)), "pairs": int(pairs.sum())}
        worst_a, worst_b = _worst(ca.leakage, pairs), _worst(cb.leakage, pairs)
        row.update(juror_worst=json_number(worst_a[0]), jury_worst=json_number(worst_b[0]))
        point = worst_b[0] - worst_a[0]
        row.update(difference=json_number(point), ci=None, flag=None)
        if resamples and pairs.any():
            row.update(bounds(sa, sb, pairs, resamples, seed, family))
        rows.append(row)
    scored = [r for r in rows if r["juror_worst"] is not None]
    best = min(scored, key=lambda r: r["juror_worst"]) if scored else None
    return JurorCoupling(
        level=level,
        family_level=family,
        resamples=resamples,
        method=METHOD,
        jurors=[JurorRow(**r) for r in rows],
        best_juror=None if best is None else best["juror"],
        below_best=None if best is None else best["flag"] == BELOW,
    )


def bounds(juror: Strata, jury: Strata, pairs: np.ndarray, resamples: int, seed: int, level: float) -> dict[str, Any]:
    """The interval of jury-minus-juror worst coupling and its flag. The difference of two maxima is
    max_p min_q (jury's leakage on p - juror's on q) over the pairs both gate as reliable; one simultaneous band
    over every such paired difference (the same resamples for both judges: the jury's noise is partly the
    juror's, so differences are tighter than either leakage) bounds it by the same max-min of the band's ends."""
    w = juror.bootstrap_weights(np.random.default_rng(seed), resamples)

    def leak(strata: Strata, weights: np.ndarray) -> np.ndarray:
        return strata.leakage(weights)[:, pairs]

    ones = np.ones((1, len(juror.scores)))
    n = int(pairs.sum())
    point = (leak(jury, ones)[0][:, None] - leak(juror, ones)[0][None, :]).ravel()  # [p, q] flattened
    deltas = (leak(jury, w)[:, :, None] - leak(juror, w)[:, None, :]).reshape(len(w), n * n) - point
    rows, _ = np.nonzero(pairs)
    df = juror.design_df()[rows]
    band, _ = simultaneous(point, deltas, np.minimum.outer(df, df).ravel(), level)
    if np.isnan(band).any():
        return {"ci": None, "flag": None}
    low, high = (float(band[:, end].reshape(n, n).min(axis=1).max()) for end in (0, 1))
    # exact: the interval's float ends against 0
    flag = BELOW if Fraction(high) < 0 else ABOVE if Fraction(low) > 0 else None
    return {"ci": [low, high], "flag": flag}


def _worst(leakage: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """The largest leakage over `pairs` per replicate ((B, K, K) -> (B,)); NaN where no pair is defined."""
    vals = np.where(pairs, leakage, -np.inf)
    out = vals.reshape(len(vals), -1).max(axis=1)
    return np.where(np.isfinite(out), out, np.nan)


def among_jurors(
    scores: dict[str, np.ndarray],
    jurors: list[str],
    measurements: dict[str, Measurement],
    *,
    errors: dict[str, np.ndarray] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> JurorAgreement:
    """Per criterion: Krippendorff's alpha of the jurors (`scores[c]`: jurors x probes, NaN unscored) at the
    criterion's level with a percentile bootstrap interval over probes, pairwise Spearman correlations, and Kish's
    effective number of jurors from `errors[c]` (jurors x labelled responses) where human labels give errors,
    else from the centred scores (a lower bound); overall, pooled over the labelled criteria where there are any."""
    out: dict[str, Any] = {"level": level, "resamples": resamples, "criteria": {}}
    pooled: list[np.ndarray] = []  # errors against human labels, of the labelled criteria
    centred: list[np.ndarray] = []  # centred scores, of the others
    for c, data in scores.items():
        row: dict[str, Any] = {
            "level_of_measurement": measurements[c],
            "probes": int((~np.isnan(data)).any(axis=0).sum()),
        }
        row["alpha"] = json_number(alpha(data, measurements[c]))
        row["alpha_ci"] = None
        if resamples and data.shape[1]:
            reps = np.asarray(alpha(data, measurements[c], unit_bootstrap(data.shape[1], resamples, seed)))
            row["alpha_ci"] = percentile_interval(reps, level)
        pairs = itertools.combinations(range(len(data)), 2)
        row["correlations"] = {f"{jurors[i]} / {jurors[j]}": _spearman(data[i], data[j]) for i, j in pairs}
        labelled = errors is not None and c in errors
        err = errors[c] if errors is not None and labelled else _centred(data)
        row["effective_jurors"] = {**effective_jurors(err), "errors": "labels" if labelled else "scores"}
        out["criteria"][c] = row
        (pooled if labelled else centred).append(err)
    out["effective_jurors"] = effective_jurors(np.concatenate(pooled or centred, axis=1)) if scores else None
    out["errors"] = ERRORS_FROM_LABELS if pooled else ERRORS_FROM_SCORES
    return JurorAgreement.model_validate(out)


def _centred(data: np.ndarray) -> np.ndarray:
    """Each juror's scores less its own mean (NaN stays NaN)."""
    n = (~np.isnan(data)).sum(axis=1, keepdims=True)
    return data - np.nansum(data, axis=1, keepdims=True) / np.maximum(n, 1)


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    both = ~np.isnan(x) & ~np.isnan(y)
    return spearman(x[both], y[both])
