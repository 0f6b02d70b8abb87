"""Intervals for every reported quantity that hold their level at the few probes per stratum RADAR uses.

The plain stratified percentile bootstrap covers a nominal 95% only 89-90% of the time at N = 5 probes
per stratum (scripts/coverage.py): a resampled stratum mean has the plug-in variance, (n-1)/n of the
unbiased one, and normal tails where an estimate from a few probes has Student-t tails. Two fixes:

1. Rao & Wu's (1988, JASA 83:231) bootstrap for stratified samples with m_h = n_h - 1: each
   stratum's resample draws n_h - 1 of its n_h probes with replacement, so a resampled stratum mean
   has the unbiased variance s_h^2 / n_h, and every replicate is still a plain mean of scores (its
   decisions can be exact).
2. Expanded percentiles (Hesterberg 2015, The American Statistician 69:371, §4.2): the interval ends
   are the bootstrap quantiles at Phi(-t) and Phi(t), t = t_{df, 1 - alpha/2}, instead of alpha/2 and
   1 - alpha/2, with df the design degrees of freedom of the probes a quantity rests on, probes minus
   strata (Korn & Graubard 1999, Analysis of Health Surveys, §5.2): a source's self-effect and leakages
   rest on its own 2T strata, a pair on both sources', the globals on all.

Decisions inside a replicate (the gate, a source's positive self-effect in a task) are exact (see
exact.resample_decisions). A replicate's value is the exact point estimate plus its deviation from the
data's value computed in the same float arithmetic, and a probe equal to its stratum's mean deviates by
exactly 0: a resample equal to the data makes the data's decisions, and the interval of a quantity that
cannot vary is the point itself.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy import special

from radar_local.stats.bootstrap import LEVEL, Strata
from radar_local.stats.coupling import Coupling, coupling, global_summaries
from radar_local.stats.exact import ExactPoint, at_least, resample_decisions, to_float
from radar_local.stats.stored import Interval

METHOD = "stratified bootstrap of n_h - 1 draws (Rao-Wu), expanded percentiles at design df (Hesterberg)"


CHUNK = 100  # resamples computed at once: memory grows with probes x CHUNK, not with all resamples


@dataclass(frozen=True)
class Intervals:
    """(low, high) in the last axis; NaN where a quantity is undefined or rests on no degree of freedom."""

    self_effect: np.ndarray  # (K, 2)
    leakage: np.ndarray  # (K, K, 2)
    sym: np.ndarray  # (K, K, 2)
    asym: np.ndarray  # (K, K, 2), the image under |.| of the interval of l_ij - l_ji
    global_: dict[str, np.ndarray]  # key -> (2,): GlobalPos only (NO_INTERVAL says why not the others)
    df: np.ndarray  # (K,) design degrees of freedom of each source
    undefined: dict[str, np.ndarray]  # self_effect (K,), leakage (K, K): resamples where a defined value was not
    family: Bounds  # the bounds that confirm a flag or settle a decision (gates first, then pairs)


# A min, max or positive part over cells is not a smooth statistic, and the percentile bootstrap fails there
# (issue 29's simulation: Tension covered 0.48-0.90 in 31 of 36 cells, max coupling 0.68-0.72 where three
# leakages tie at the maximum, both 0.00-0.07 on an all-zero truth): these are reported without one.
NO_INTERVAL = {
    "tension": "no interval: a mean of negative parts over cells, where the bootstrap covers 0.48-0.90",
    "max_coupling": "no interval: a maximum over cells, where the bootstrap covers 0.68-0.72 at ties",
}


def intervals(
    strata: Strata,
    exact: ExactPoint,
    tau: float,
    resamples: int,
    seed: int,
    level: float = LEVEL,
    *,
    small_sample: bool = True,
    chunk: int = CHUNK,
    advance: Callable[[int], None] | None = None,
) -> Intervals:
    """`small_sample=False` is the plain percentile bootstrap, for scripts/coverage.py to compare against."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    r = replicates(strata, exact, tau, resamples, seed, small_sample=small_sample, chunk=chunk, advance=advance)

    def each(q: Quantity) -> np.ndarray:
        return expanded_interval(*q, level)

    return Intervals(
        self_effect=each(r.self_effect),
        leakage=each(r.leakage),
        sym=each(r.sym),
        asym=_absolute(each(r.diff)),
        global_={key: each(q) for key, q in r.global_.items() if key not in NO_INTERVAL},
        df=r.df,
        undefined={  # resamples an interval rests on fewer of: never dropped without a count
            "self_effect": _undefined(r.self_effect[0], r.self_effect[1]),
            "leakage": _undefined(r.leakage[0], r.leakage[1]),
        },
        family=gatekept(r, tau, level),
    )


Quantity = tuple[np.ndarray, np.ndarray, "np.ndarray | float"]  # (point, deltas (B, ...), df)


@dataclass(frozen=True)
class Replicates:
    """Every quantity's exact point, its bootstrap replicates' deviations from the data's value (B, ...) and the
    design df it rests on: what every interval and every multiple-testing procedure is read from."""

    self_effect: Quantity  # (K,)
    leakage: Quantity  # (K, K), source first
    sym: Quantity  # (K, K)
    diff: Quantity  # (K, K): l_ij - l_ji, whose magnitude is Asym
    global_: dict[str, Quantity]
    df: np.ndarray  # (K,) design degrees of freedom of each source


def replicates(
    strata: Strata,
    exact: ExactPoint,
    tau: float,
    resamples: int,
    seed: int,
    *,
    small_sample: bool = True,
    chunk: int = CHUNK,
    advance: Callable[[int], None] | None = None,
) -> Replicates:
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    center = _exact_means(strata, exact)  # (S, K) floats, correctly rounded
    deviations = strata.scores - np.repeat(center, strata.sizes, axis=0)  # 0 where a probe equals its mean

    base = coupling(
        strata.tensor(center[None]),
        tau,
        positive=exact.positive()[None],
        reliable=np.array([exact.reliable(tau)]),
        definition=exact.definition,
    )
    rng = np.random.default_rng(seed)
    parts = []
    for start in range(0, resamples, chunk):
        w = strata.bootstrap_weights(rng, min(chunk, resamples - start), small_sample)
        # Integer scores: a resampled mean is a correctly rounded ratio of exact sums, equal to the data's
        # where every probe is. Other floats: the data's mean plus the mean deviation, exactly 0 there.
        per_stratum = (
            strata.weighted_means(strata.scores, w)
            if strata.integral
            else center + strata.weighted_means(deviations, w)
        )
        means = strata.tensor(per_stratum)
        positive, reliable = resample_decisions(strata, w, tau, means)
        parts.append(coupling(means, tau, positive=positive, reliable=reliable, definition=exact.definition))
        if advance is not None:  # a long bootstrap's progress, told to whoever shows it
            advance(len(w))
    reps = _concat(parts)

    df = strata.design_df() if small_sample else np.full(strata.shape[1], np.inf)
    pair_df = df[:, None] + df[None, :]
    point = exact.coupling(tau)
    sym_point, diff_point = _pair_points(exact)
    glob_point, glob_base, glob_reps = global_summaries(point), global_summaries(base), global_summaries(reps)
    return Replicates(
        self_effect=(point.self_effect[0], reps.self_effect - base.self_effect, df),
        leakage=(point.leakage[0], reps.leakage - base.leakage, df[:, None]),
        sym=(sym_point, reps.sym - base.sym, pair_df),
        diff=(diff_point, _swap_diff(reps) - _swap_diff(base), pair_df),
        global_={key: (glob_point[key][0], glob_reps[key] - glob_base[key], df.sum()) for key in glob_point},
        df=df,
    )


Z_975 = 1.959963984540054  # the standard normal's 97.5% quantile


def simultaneous(point: np.ndarray, deltas: np.ndarray, df: np.ndarray, level: float) -> tuple[np.ndarray, float]:
    """((M, 2) intervals, critical value) holding together at `level` over M quantities: point +- c_m s_m,
    with c the `level` quantile over the replicates of max_m |delta_m| / s_m (Westfall & Young 1993's max-t)
    carried to Student's t at df_m as the per-quantity intervals are (a one-quantity family gives about
    t_{df, 0.975} s). The scale s_m is quantity m's central 95% range of replicate deviations `deltas` (B, M)
    over 2 x 1.96: its sd where they are normal, wider where a ratio's tails are heavy (a resample's small
    self-effect), so one quantity's tails do not widen every other's (the interquartile range did: at K = 7
    and N = 3 its band was 5.2 times a cell's 95% interval and held 100% of the time, this one 2.8 and 98%,
    both with the mean of per-task ratios; with the ratio of means this one is 2.4 and 95%).
    A quantity undefined in a replicate does not enter that replicate's maximum (bootstrap.undefined
    counts them); one that cannot vary is its point; one never defined, or resting on no spread (design df 0: one
    unit a stratum), has no interval (NaN)."""
    point, df = np.asarray(point, float), np.asarray(df, float)
    scale = _scale(deltas)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: quantities never defined
        varies = (scale > 0) & ~np.isnan(point)
        z = np.abs(deltas[:, varies]) / scale[varies]
        largest = np.nanmax(np.where(np.isnan(z), -np.inf, z), axis=1) if varies.any() else np.zeros(0)
        largest = largest[np.isfinite(largest)]
        critical = float(np.quantile(largest, level)) if len(largest) else np.nan
        t = special.stdtrit(np.where(df > 0, df, np.nan), special.ndtr(critical))
        half = np.where(varies, t * scale, np.where(scale == 0, 0.0, np.nan))
    half = np.where(np.broadcast_to(df, point.shape) > 0, half, np.nan)  # one unit a stratum: no spread, no interval
    out = np.stack([point - half, point + half], axis=-1)
    return np.where(np.isnan(point)[:, None], np.nan, out), critical


def _undefined(point: np.ndarray, replicates: np.ndarray) -> np.ndarray:
    """Per cell, the resamples in which a value defined in the data is undefined (0 where the data's is)."""
    return np.where(np.isnan(point), 0, np.isnan(replicates).sum(axis=0))


def _exact_means(strata: Strata, exact: ExactPoint) -> np.ndarray:
    """(S, K) the data's stratum means, each the float nearest the exact mean (NaN = none scored)."""
    k = strata.shape[1]
    return np.array(
        [
            [np.nan if (m := exact.means[t][i][d][j]) is None else float(m) for j in range(k)]
            for t, i, d in zip(strata.task, strata.target, strata.direction)
        ]
    )


def _pair_points(exact: ExactPoint) -> tuple[np.ndarray, np.ndarray]:
    k = len(exact.leakage)
    sym, diff = np.full((k, k), np.nan), np.full((k, k), np.nan)
    for a in range(k):
        for b in range(k):
            lab, lba = exact.leakage[a][b], exact.leakage[b][a]
            if lab is not None and lba is not None:
                sym[a, b], diff[a, b] = to_float((lab + lba) / 2), to_float(lab - lba)
    return sym, diff


def _swap_diff(c: Coupling) -> np.ndarray:
    """l_ij - l_ji, the signed difference whose magnitude is Asym."""
    return c.leakage - np.swapaxes(c.leakage, -1, -2)


def _absolute(diff: np.ndarray) -> np.ndarray:
    """The interval of |d| from one of d: every |d| for d in it. Asym = |l_ij - l_ji| sits on a
    boundary at 0, where a percentile interval of |d| itself never reaches the truth of an
    unbiased pair; the image of the smooth difference's interval covers as often as that one does."""
    low, high = diff[..., 0], diff[..., 1]
    with np.errstate(invalid="ignore"):
        inner = np.where((low <= 0) & (high >= 0), 0.0, np.minimum(np.abs(low), np.abs(high)))
    return np.stack([inner, np.maximum(np.abs(low), np.abs(high))], axis=-1)


def _concat(parts: list[Coupling]) -> Coupling:
    return Coupling(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in Coupling.__dataclass_fields__})


def ends(pair: np.ndarray | tuple[float | None, float | None] | list[float]) -> Interval | None:
    """An interval as a block stores it, from its two ends: None where either is undefined (None or NaN)."""
    low, high = (np.nan if x is None else float(x) for x in pair)
    return None if np.isnan(low) or np.isnan(high) else Interval(low, high)


def excludes(interval: Interval | None, value: float = 0.0) -> bool:
    """The interval lies wholly above or wholly below `value` (an undefined end excludes nothing)."""
    if interval is None or interval.low is None or interval.high is None:
        return False
    return interval.low > value or interval.high < value


def percentile_interval(replicates: np.ndarray, level: float) -> Interval | None:
    """The plain equal-tailed percentile interval (method: percentile) of the defined replicates; None where
    fewer than half are defined."""
    ok = replicates[~np.isnan(replicates)]
    if len(ok) < max(2, len(replicates) / 2):
        return None
    return ends(np.quantile(ok, [(1 - level) / 2, (1 + level) / 2]))


def expanded_interval(point: np.ndarray, deltas: np.ndarray, df: np.ndarray | float, level: float) -> np.ndarray:
    """point + the expanded quantiles of the replicates' deviations (axis 0) at design df; (..., 2)."""
    point = np.asarray(point, float)
    df = np.broadcast_to(np.asarray(df, float), point.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = special.stdtrit(np.where(df > 0, df, np.nan), 1 - (1 - level) / 2)  # Student's t quantile
    lower = special.ndtr(-t)  # the normal cdf
    lo, hi = _quantile(deltas, lower), _quantile(deltas, 1 - lower)
    out = np.stack([point + lo, point + hi], axis=-1)
    return np.where(np.isnan(point)[..., None], np.nan, out)


def t_critical(df: np.ndarray | float, level: float, family: int = 1) -> np.ndarray:
    """Student's t quantile of a two-sided interval at `level`, Bonferroni over `family` quantities (each at
    1 - (1 - level) / family); NaN where df < 1 (no spread to read)."""
    df = np.asarray(df, float)
    with np.errstate(invalid="ignore"):
        return special.stdtrit(np.where(df > 0, df, np.nan), 1 - (1 - level) / (2 * family))


def t_interval(
    point: np.ndarray | float, se: np.ndarray | float, df: np.ndarray | float, level: float, family: int = 1
) -> np.ndarray:
    """point +- t se (t_critical): (..., 2), NaN where the point, its standard error or df is undefined."""
    half = t_critical(df, level, family) * np.asarray(se, float)
    return np.stack([np.asarray(point, float) - half, np.asarray(point, float) + half], axis=-1)


def studentized_interval(point: float, deltas: np.ndarray, df: float, level: float) -> Interval | None:
    """point +- t_{df, 1 - alpha/2} s, s the replicates' scale (their central 95% range over 2 x 1.96, as the family
    bands'): symmetric about the point, so a skewed ratio's percentile interval does not lean off its truth (the
    pairwise leakage covered 89-92% with expanded percentiles at 3-5 pairs a stratum, 94% with this:
    scripts/pairwise_error.py). None where the scale or df is undefined."""
    scale = float(_scale(np.asarray(deltas, float)[:, None])[0])
    if not (np.isfinite(point) and np.isfinite(scale) and df > 0):
        return None
    half = float(special.stdtrit(df, 1 - (1 - level) / 2)) * scale
    return Interval(point - half, point + half)


def _quantile(samples: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Linear-interpolation quantile over axis 0 at a probability per element, ignoring NaN."""
    ordered = np.sort(samples, axis=0)  # NaN last
    n = (~np.isnan(samples)).sum(axis=0)
    pos = np.where(n > 0, np.nan_to_num(q) * (n - 1), 0.0)
    low = np.floor(pos).astype(int)
    high = np.minimum(low + 1, np.maximum(n - 1, 0))
    a = np.take_along_axis(ordered, low[None], axis=0)[0]
    b = np.take_along_axis(ordered, high[None], axis=0)[0]
    with np.errstate(invalid="ignore"):
        out = np.where(a == b, a, a + (pos - low) * (b - a))  # also where both are infinite
    return np.where((n > 0) & ~np.isnan(q), out, np.nan)


FAMILY_METHOD = (
    "gates first, then pairs (parallel gatekeeping): each gate one-sided at alpha/K (Bonferroni); the pair "
    "claims at alpha x (gates confirmed)/K in one one-sided max-t family (the replicates' largest studentized "
    "deviation, each quantity's scale its central 95% range over 2 x 1.96), turned into Student's t at each "
    "quantity's design df"
)


@dataclass(frozen=True)
class Bounds:
    """What decisions are read from: (low, high) per quantity, each end at the critical value of the family its
    claim is tested in. NaN: undefined; +-inf: the family had no level left to spend on it."""

    self_effect: np.ndarray  # (K, 2): low at the gate's level, high in the pair family (a confirmed failure)
    leakage: np.ndarray  # (K, K, 2), NaN on the diagonal
    sym: np.ndarray  # (K, K, 2)
    diff: np.ndarray  # (K, K, 2): l_ij - l_ji
    gate_low: np.ndarray  # (K,) = self_effect[:, 0]
    level: float
    pair_level: float  # the level the pair family was tested at: alpha x (gates confirmed) / K
    critical: float  # the pair family's max-t quantile (NaN: no level left)
    cells: int  # one-sided hypotheses in the pair family
    # each quantity's bootstrap scale (self_effect (K,), leakage, sym, diff (K, K)): its studentization, which a
    # screening's p-values read too (stats/screening.py)
    scale: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def asym(self) -> np.ndarray:
        """(K, K, 2): Asym's bounds, the image under |.| of l_ij - l_ji's."""
        return _absolute(self.diff)


def gatekept(r: Replicates, tau: float, level: float = LEVEL) -> Bounds:
    """Gates first, then pairs: parallel gatekeeping (Dmitrienko, Offen & Westfall 2003; Dmitrienko & Tamhane
    2007), the pairs tested at the level the gates leave.

    1. The gate family: each criterion's gate passes when its self-effect's one-sided lower bound at alpha/K
       (Bonferroni, Student's t at its design df) is at least tau, compared exactly. R = the gates confirmed.
    2. The pair family, at alpha x |R| / K: one max-t over the one-sided tails decisions read (each leakage
       both ways: directional and tradeoff; each l_ij - l_ji both ways: directional, and the cluster's
       equivalence; each Sym both ways: coupled and the Sym policy; each self-effect's upper tail: a confirmed
       failure). A pair's claims need both its gates in R as well (an intersection-union test).

    Why the family-wise error stays within alpha: with t gates truly failing, a wrong gate passes with
    probability at most t alpha/K; when none does, R holds only gates that truly pass, so the pair family
    runs at most at alpha (K - t)/K, and its errors add at most that: alpha in all. A gate is tested at alpha/K
    one-sided instead of inside a band over every quantity, and the pairs keep all of alpha when every gate is
    confirmed."""
    alpha = 1 - level
    quantities = {"self_effect": r.self_effect, "leakage": r.leakage, "diff": r.diff, "sym": r.sym}
    scales = {name: _scale(q[1]) for name, q in quantities.items()}
    point, _, df = r.self_effect
    k = len(point)
    with np.errstate(invalid="ignore"):
        t_gate = special.stdtrit(np.where(df > 0, df, np.nan), 1 - alpha / k)
    scale = scales["self_effect"]
    # a self-effect resting on no spread (design df 0: one probe a stratum) has no bound, so no gate is settled
    gate_low = np.where(np.isnan(point) | (df <= 0), np.nan, point - np.where(scale > 0, t_gate * scale, 0.0))
    passed = sum(at_least(Fraction(float(x)), tau) for x in gate_low if np.isfinite(x))
    pair_level = alpha * passed / k

    off = ~np.eye(k, dtype=bool)
    read = {  # the cells and tails decisions read: +1 a lower bound, -1 an upper bound
        "self_effect": (np.ones(k, bool), (-1,)),
        "leakage": (off, (1, -1)),
        "diff": (off, (1,)),  # l_ij - l_ji's lower bound at every ordered pair is both of its tails
        "sym": (np.triu(np.ones((k, k), bool), 1), (1, -1)),
    }
    tails, cells = [], 0
    for name, (mask, signs) in read.items():
        p, d, _ = quantities[name]
        s = scales[name]
        varies = mask & (s > 0) & ~np.isnan(p)
        tails += [sign * d[:, varies] / s[varies] for sign in signs]
        cells += len(signs) * int(np.sum(mask & ~np.isnan(p)))
    critical = _one_sided_critical(tails, 1 - pair_level) if pair_level > 0 else np.nan

    def bounds(name: str) -> np.ndarray:
        p, _, f = quantities[name]
        f = np.broadcast_to(np.asarray(f, float), np.shape(p))
        s = scales[name]
        with np.errstate(invalid="ignore"):
            t = special.stdtrit(np.where(f > 0, f, np.nan), special.ndtr(critical)) if np.isfinite(critical) else np.inf
            half = np.where(s > 0, t * s, np.where(s == 0, 0.0, np.nan))
        half = np.where(f > 0, half, np.nan)  # no spread to rest on (one probe a stratum): no bound
        out = np.stack([p - half, p + half], axis=-1)
        return np.where(np.isnan(p)[..., None], np.nan, out)

    se = bounds("self_effect")
    se[:, 0] = gate_low
    leak = bounds("leakage")
    leak[~off] = np.nan
    return Bounds(se, leak, bounds("sym"), bounds("diff"), gate_low, level, pair_level, float(critical), cells, scales)


def _scale(deltas: np.ndarray) -> np.ndarray:
    """Each quantity's scale: its replicates' central 95% range over 2 x 1.96 (see `simultaneous`), their sd
    where most replicates tie."""
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: quantities never defined
        low, high = np.nanpercentile(deltas, [2.5, 97.5], axis=0)
        scale = (high - low) / (2 * Z_975)
        return np.where(scale > 0, scale, np.nanstd(deltas, axis=0))


def _one_sided_critical(tails: list[np.ndarray], quantile: float) -> float:
    """The `quantile` of the replicates' largest signed studentized deviation over the tails, each (B, M) (max-t,
    one-sided: a lower bound errs when its estimate sits high, so its tail is +delta / s)."""
    z = np.concatenate(tails, axis=1) if tails else np.zeros((1, 0))
    if z.shape[1] == 0:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        largest = np.nanmax(np.where(np.isnan(z), -np.inf, z), axis=1)
    largest = largest[np.isfinite(largest)]
    return float(np.quantile(largest, quantile)) if len(largest) else np.nan


def with_wilson(interval: np.ndarray, self_effect: float, verdicts: int, z: float) -> np.ndarray:
    """A self-effect's interval widened to hold Wilson's score interval (Wilson 1927, JASA 22:209) for its accuracy
    (1 + s) / 2 over its decisive verdicts at `z`, on the self-effect's scale: the bootstrap's collapses to the point
    where every verdict is right (an accurate judge at 3-10 pairs a stratum: it covered 65-94%), Wilson's keeps the
    width the verdicts allow; the bootstrap's, which sees the pairs' and tasks' clustering, can be the wider."""
    pairs = verdicts
    if pairs < 1 or not np.isfinite(z) or np.isnan(interval).any() or not np.isfinite(self_effect):
        return interval
    p, zz = (1 + self_effect) / 2, z * z
    centre = (p + zz / (2 * pairs)) / (1 + zz / pairs)
    half = z * np.sqrt(p * (1 - p) / pairs + zz / (4 * pairs * pairs)) / (1 + zz / pairs)
    return np.array([min(interval[0], 2 * (centre - half) - 1), max(interval[1], 2 * (centre + half) - 1)])


def z_critical(level: float, family: int = 1) -> float:
    """The normal quantile of a two-sided interval at `level`, Bonferroni over `family` quantities (a score
    interval's, whose variance is its proportion's own, not estimated)."""
    return float(special.ndtri(1 - (1 - level) / (2 * family)))
