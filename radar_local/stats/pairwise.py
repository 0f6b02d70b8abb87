"""A pairwise judge audited with the probes' own ground truth (issue 46): the statistics.

A pair is one stratum's up- and down-steered responses of one variant: steered on criterion C, the up response is
the better one on C by construction. Asked "which is better on D?" in both orders (A/B swapped), a judge's
verdicts give, per (C, D):

- p_CD: the probability it prefers the up response, the mean of its two orders' rates (so a position bias cancels
  in p and is measured apart); a tie is counted as a tie, never as a half preference: p is over decisive verdicts;
- the pairwise self-effect s_C = 2 p_CC - 1 (0: chance, 1: always right) and the gate s_C >= tau;
- the pairwise leakage l_CD = (2 p_CD - 1) / s_C: how far a steer on C moves the judge's preference on D, as a
  share of how far it moves its preference on C (the pointwise leakage's shift over self-effect, on the
  preference scale), with Sym, Asym and the flags of stats/flags.pair_flags;
- position: the first slot's rate over decisive verdicts minus 1/2, and the flip rate (the share of pairs whose
  two orders, both decisive, prefer different responses); ties: their share.

Inference: the units are the pairs (task, C, variant), each carrying all its questions; a replicate redraws the
pairs within each (task, C) stratum (bootstrap.stratified_counts: Rao-Wu's n - 1 draws). Each interval is at its
design df (a source's quantities rest on its own pairs less its strata, a pair's on both sources', the position's
on every pair): a leakage's studentized (point +- t times the replicates' scale: a ratio over few pairs is skewed,
and its percentile interval leaned off the truth), a rate's an expanded percentile interval (inside its bounds); the
family is one max-t band (intervals.simultaneous) over the K gates' self-effects, the K(K-1) leakages, each pair's
difference and Sym, and the position bias, at the same design df, so a confirmed gate, leakage, pair flag or
position bias holds at the family level together. Error rates, power and coverage are scripts/pairwise_error.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL, RESAMPLES, stratified_counts
from radar_local.stats.flags import Thresholds, pair_flags
from radar_local.stats.intervals import (
    ends,
    excludes,
    expanded_interval,
    simultaneous,
    studentized_interval,
    with_wilson,
    z_critical,
)
from radar_local.stats.stored import Block, Interval, Num, PairCoupling

A, B, TIE = 0, 1, 2  # a verdict's choice; -1: unscored
UP_FIRST, DOWN_FIRST = 0, 1  # the order a pair was shown in
PAIR_TAU = 0.2  # the gate: a pairwise self-effect (2 x accuracy - 1) of at least this


@dataclass(frozen=True)
class PairVerdicts:
    """One pairwise judge's verdicts, one row each: the pair (task, source C, variant), the criterion asked (an
    index of `criteria`), the order shown and the choice."""

    criteria: tuple[str, ...]
    task: np.ndarray
    source: np.ndarray
    variant: np.ndarray
    asked: np.ndarray  # a criterion's index, or len(criteria) for "overall"
    order: np.ndarray
    choice: np.ndarray
    # per row, how the same judge's pointwise verdicts rank the pair on the criterion asked: +1 the up response
    # higher, -1 the down one, 0 equal or not scored (None: no pointwise verdicts at hand)
    pointwise: np.ndarray | None = None

    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """(unit of each row, stratum of each unit), units laid out stratum after stratum."""
        keys = np.stack([self.task, self.source, self.variant], axis=1)
        pairs, unit = np.unique(keys, axis=0, return_inverse=True)
        _, stratum = np.unique(pairs[:, :2], axis=0, return_inverse=True)
        order = np.argsort(stratum, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return rank[unit.ravel()], stratum[order].ravel()


class PairwiseCriterion(Block):
    criterion: str
    pairs: int  # pairs steered on it that were asked about it
    accuracy: Num  # p_CC: the up response preferred when asked about C
    self_effect: Num  # 2 p_CC - 1
    self_effect_ci: Interval | None
    band: Interval | None
    gate: str  # passed (the band's low end >= tau), failed (its high end < tau) or open


class PairwiseLeak(Block):
    source: str
    target: str
    leakage: Num
    ci: Interval | None
    band: Interval | None
    confirmed: bool  # both gates passed and the band excludes 0: a steer on the source moves the preference


class PairwisePair(PairCoupling):
    flags: list[str]  # stats/flags.pair_flags of the point estimate
    evidence: dict[str, str]  # flag -> confirmed (the family band settles it) or possible


class Driver(Block):
    criterion: str
    shift: Num  # 2 p - 1 of the overall preference for the pairs steered on it
    ci: Interval | None
    share: Num  # its share of the criteria's positive shifts: what the judge's "better" is made of


class Position(Block):
    first_slot: Num  # the first slot's rate over decisive verdicts
    bias: Num  # first_slot - 1/2
    ci: Interval | None
    band: Interval | None
    confirmed: bool  # the band excludes 0
    flip_rate: Num  # pairs whose two orders, both decisive, prefer different responses
    flip_ci: Interval | None
    ties: Num  # the share of scored verdicts that are ties
    unscored: int


class HumanPairs(Block):
    """The pairwise judge against the team's pairwise labels (labels.py): each labelled question (a pair and the
    criterion asked, or overall) asked in both orders; the raters' choice is their majority (a split or a tie
    decides nothing)."""

    source: str
    questions: int
    decided: int  # questions the raters' majority decides
    agreement: Num  # of the judge's decisive verdicts on those, the share preferring the raters' choice
    ci: Interval | None
    ties: Num  # the judge's ties among its scored verdicts on the labelled questions
    unscored: int
    raters_agree: Num = None  # where two or more raters decided a question: the share of rater pairs that agree
    criteria: dict[str, Num] = {}  # the agreement per criterion asked


class Pairwise(Block):
    verdicts: int
    level: float
    resamples: int
    tau: float
    critical: Num  # the family band's critical value
    criteria: list[PairwiseCriterion]
    leakage: list[PairwiseLeak]
    pairs: list[PairwisePair]
    position: Position
    overall: list[Driver] | None = None  # where the pairs were asked about overall quality too
    pointwise_agreement: Num = None  # decisive verdicts preferring what the verifier's pointwise verdicts rank higher
    pointwise_agreement_ci: Interval | None = None
    humans: HumanPairs | None = None  # against the team's pairwise labels, where a labels file has them
    judge: str | None = None  # the pairwise judge's own model, where it is not the audit's verifier


@dataclass(frozen=True)
class _Counts:
    """Per unit (pair) the sums every statistic is a ratio of: a replicate's value is its weights times these."""

    up: np.ndarray  # (U, K, K, 2): decisive verdicts preferring up, by (source, asked, order)
    decisive: np.ndarray  # (U, K, K, 2)
    first: np.ndarray  # (U,): decisive verdicts choosing the first slot
    decided: np.ndarray  # (U,): decisive verdicts
    flips: np.ndarray  # (U,): questions whose two decisive orders prefer different responses
    both: np.ndarray  # (U,): questions with both orders decisive
    agree: np.ndarray  # (U,): decisive verdicts preferring the response the pointwise verdicts rank higher
    ranked: np.ndarray  # (U,): decisive verdicts on questions the pointwise verdicts rank


def _counts(v: PairVerdicts, unit: np.ndarray, units: int) -> _Counts:
    k = len(v.criteria)
    decisive = (v.choice == A) | (v.choice == B)
    up = decisive & ((v.choice == A) == (v.order == UP_FIRST))
    shape = (units, k, k + 1, 2)  # the asked axis: each criterion, then overall
    ups, dec = np.zeros(shape), np.zeros(shape)
    index = (unit, v.source, v.asked, v.order)
    np.add.at(ups, index, up)
    np.add.at(dec, index, decisive)
    first, decided = np.zeros(units), np.zeros(units)
    np.add.at(first, unit, decisive & (v.choice == A))
    np.add.at(decided, unit, decisive)
    answered = dec.sum(axis=1)  # (U, K asked, 2): a unit has one source
    preferred = ups.sum(axis=1)
    both = (answered > 0).all(axis=-1)
    flips = both & (preferred[..., 0] != preferred[..., 1])
    agree, ranked = np.zeros(units), np.zeros(units)
    if v.pointwise is not None:
        rank = decisive & (v.pointwise != 0)
        np.add.at(ranked, unit, rank)
        np.add.at(agree, unit, rank & (up == (v.pointwise > 0)))
    return _Counts(
        ups, dec, first, decided, flips.sum(axis=1).astype(float), both.sum(axis=1).astype(float), agree, ranked
    )


def _estimates(c: _Counts, w: np.ndarray) -> dict[str, np.ndarray]:
    """Every quantity for weights w (B, U): self-effects (B, K), leakages (B, K, K), bias, flip rate (B,)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.einsum("bu,uijo->bijo", w, c.up) / np.einsum("bu,uijo->bijo", w, c.decisive)
        p = rate.mean(axis=-1)  # the two orders weighed alike: a position bias cancels
        shift = 2 * p - 1
        self_effect = np.diagonal(shift[:, :, :-1], axis1=1, axis2=2)
        # a source the judge does not tell apart (s_C <= 0: at chance, a small judge's coin, or backwards) scales no
        # leakage: undefined, as a pointwise leakage is (stats/exact.py), never the infinity of a ratio over 0
        leakage = np.where(self_effect[:, :, None] > 0, shift[:, :, :-1] / self_effect[:, :, None], np.nan)
        return {
            "self_effect": self_effect,
            "leakage": leakage,
            "overall": shift[:, :, -1],  # how far a steer on each criterion moves the overall preference
            "bias": (w @ c.first) / (w @ c.decided) - 0.5,
            "flip": (w @ c.flips) / (w @ c.both),
            "agreement": (w @ c.agree) / (w @ c.ranked),
        }


def pairwise(
    v: PairVerdicts,
    *,
    tau: float = PAIR_TAU,
    thresholds: Thresholds = Thresholds(),
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Pairwise:
    """The pairwise audit of `v`'s verdicts (see the module's docstring)."""
    k, crit = len(v.criteria), list(v.criteria)
    unit, stratum = v.units()
    units = len(stratum)
    c = _counts(v, unit, units)
    point = {key: value[0] for key, value in _estimates(c, np.ones((1, units))).items()}
    _, sizes = np.unique(stratum, return_counts=True)
    reps = _estimates(c, stratified_counts(np.random.default_rng(seed), sizes, resamples)) if resamples else None
    # asked about criteria (else only which is better overall: no gate, leakage or pair to read, nor in the family)
    named = bool((v.asked < k).any())
    off = ~np.eye(k, dtype=bool) & named
    upper = np.triu(np.ones((k, k), dtype=bool), 1) & named
    diff_point = point["leakage"] - point["leakage"].T
    sym_point = (point["leakage"] + point["leakage"].T) / 2
    parts = [  # the family: every quantity a confirmed finding reads
        (point["self_effect"], None if reps is None else reps["self_effect"], np.full(k, named)),
        (point["leakage"], None if reps is None else reps["leakage"], off),
        (diff_point, None if reps is None else reps["leakage"] - np.swapaxes(reps["leakage"], 1, 2), upper),
        (sym_point, None if reps is None else (reps["leakage"] + np.swapaxes(reps["leakage"], 1, 2)) / 2, upper),
        (np.atleast_1d(point["bias"]), None if reps is None else reps["bias"][:, None], np.ones(1, bool)),
    ]
    bands: list[np.ndarray] = []
    critical = np.nan
    if reps is not None:
        flat = np.concatenate([value[mask] for value, _, mask in parts])
        deltas = np.concatenate([r[:, mask] - value[mask] for value, r, mask in parts if r is not None], axis=1)
        # design df: a source's self-effect and leakages rest on its own pairs (units minus its strata), a pair's
        # difference and Sym on both sources', the position bias on every pair (as intervals.py's design df)
        per_source = _source_df(v, k)
        df_parts = [
            per_source,
            np.broadcast_to(per_source[:, None], (k, k)),
            per_source[:, None] + per_source[None, :],
            per_source[:, None] + per_source[None, :],
            np.array([float(units - len(sizes))]),
        ]
        df = np.concatenate([np.asarray(d, float)[mask] for d, (_, _, mask) in zip(df_parts, parts)])
        band, critical = simultaneous(flat, deltas, df, level)
        size = len(flat)
        start = 0
        for value, _, mask in parts:
            full = np.full(np.shape(value) + (2,), np.nan)
            full[mask] = band[start : start + mask.sum()]
            start += mask.sum()
            bands.append(full)

    per_source, all_df = _source_df(v, k), float(units - len(sizes))

    def ci(key: str, index: tuple[int, ...] = (), df: float = all_df) -> Interval | None:
        """A leakage's (an unbounded ratio, skewed over few pairs) studentized interval; a rate's (bounded: a
        self-effect, the bias, a share) expanded percentile interval, which stays inside its bounds; each at the
        quantity's design df."""
        if reps is None:
            return None
        value = np.asarray(point[key])
        at = int(np.ravel_multi_index(index, value.shape)) if index else 0
        x, deltas = float(value.ravel()[at]), reps[key].reshape(len(reps[key]), -1)[:, at] - value.ravel()[at]
        if key == "leakage":
            return studentized_interval(x, deltas, df, level)
        return ends(expanded_interval(np.asarray(x), deltas, df, level))

    decided = [int((c.decisive[:, i, i].sum(axis=-1) > 0).sum()) for i in range(k)]  # pairs a gate rests on
    verdicts = [int(c.decisive[:, i, i].sum()) for i in range(k)]  # their decisive verdicts, both orders
    se_band = bands[0] if bands else np.full((k, 2), np.nan)
    if bands:  # a judge right on every pair has replicates all at 1: keep the band the width its pairs allow
        for i in range(k):
            # the family's critical value, on the normal scale; Bonferroni's over its quantities where none varied
            family = float(critical) if np.isfinite(critical) else z_critical(level, size)
            z = family if per_source[i] > 0 else np.nan
            se_band[i] = with_wilson(se_band[i], point["self_effect"][i], verdicts[i], z)

    def self_effect_ci(i: int) -> Interval | None:
        got = ci("self_effect", (i,), per_source[i])
        if got is None or per_source[i] <= 0:
            return got
        z = z_critical(level)  # a score interval's
        return ends(with_wilson(np.asarray(got), point["self_effect"][i], verdicts[i], z))

    gates = ["passed" if se_band[i, 0] >= tau else "failed" if se_band[i, 1] < tau else "open" for i in range(k)]
    passed = [g == "passed" for g in gates]
    criteria = [
        PairwiseCriterion(
            criterion=name,
            pairs=decided[i],
            accuracy=json_number(float((point["self_effect"][i] + 1) / 2)),
            self_effect=json_number(float(point["self_effect"][i])),
            self_effect_ci=self_effect_ci(i),
            band=ends(se_band[i]),
            gate=gates[i],
        )
        for i, name in enumerate(crit)
        if named
    ]
    leak_band = bands[1] if bands else np.full((k, k, 2), np.nan)
    leakage = [
        PairwiseLeak(
            source=crit[i],
            target=crit[j],
            leakage=json_number(float(point["leakage"][i, j])),
            ci=ci("leakage", (i, j), per_source[i]),
            band=ends(leak_band[i, j]),
            confirmed=bool(passed[i] and passed[j] and (leak_band[i, j, 0] > 0 or leak_band[i, j, 1] < 0)),
        )
        for i in range(k)
        for j in range(k)
        if i != j and named
    ]
    pairs = [
        _pair(crit, i, j, point, bands[1:4] if bands else None, passed[i] and passed[j], thresholds)
        for i in range(k)
        for j in range(i + 1, k)
        if named
    ]
    bias_band = ends(bands[4][0]) if bands else None
    scored = v.choice >= 0
    position = Position(
        first_slot=json_number(float(point["bias"] + 0.5)),
        bias=json_number(float(point["bias"])),
        ci=ci("bias"),
        band=bias_band,
        confirmed=excludes(bias_band),
        flip_rate=json_number(float(point["flip"])),
        flip_ci=ci("flip"),
        ties=json_number(float((v.choice[scored] == TIE).mean()) if scored.any() else np.nan),
        unscored=int((~scored).sum()),
    )
    overall = None
    if (v.asked == k).any():
        shifts = np.asarray(point["overall"], float)
        positive = np.clip(np.nan_to_num(shifts), 0, None)
        overall = [
            Driver(
                criterion=name,
                shift=json_number(float(shifts[i])),
                ci=ci("overall", (i,), per_source[i]),
                share=json_number(float(positive[i] / positive.sum()) if positive.sum() > 0 else np.nan),
            )
            for i, name in enumerate(crit)
        ]
    return Pairwise(
        overall=overall,
        pointwise_agreement=json_number(float(point["agreement"])) if v.pointwise is not None else None,
        pointwise_agreement_ci=ci("agreement") if v.pointwise is not None else None,
        verdicts=len(v.choice),
        level=level,
        resamples=resamples,
        tau=tau,
        critical=json_number(float(critical)),
        criteria=criteria,
        leakage=leakage,
        pairs=pairs,
        position=position,
    )


def _source_df(v: PairVerdicts, k: int) -> np.ndarray:
    """(K,) each source's design df: its pairs minus its (task, source) strata."""
    keys = np.unique(np.stack([v.task, v.source, v.variant], axis=1), axis=0)
    pairs = np.bincount(keys[:, 1], minlength=k)
    strata = np.bincount(np.unique(keys[:, :2], axis=0)[:, 1], minlength=k)
    return (pairs - strata).astype(float)


def _pair(
    crit: Sequence[str],
    i: int,
    j: int,
    point: dict[str, Any],
    bands: list[np.ndarray] | None,
    gated: bool,
    th: Thresholds,
) -> PairwisePair:
    """A pair's flags on its point estimate, each confirmed where the family band settles its condition."""
    l_ab, l_ba = float(point["leakage"][i, j]), float(point["leakage"][j, i])
    defined = not (np.isnan(l_ab) or np.isnan(l_ba))
    flags = pair_flags(Fraction(l_ab), Fraction(l_ba), gated, th) if defined else ["gated"]
    evidence = {}
    if bands is not None and defined:
        leak, diff, sym = bands
        up = (i, j) if l_ab >= l_ba else (j, i)
        settled = {
            "directional": abs_low(diff[i, j]) >= th.directional_asym and leak[up][0] >= th.directional_leak,
            "bidirectional cluster": sym[i, j, 0] >= th.cluster_sym and abs_high(diff[i, j]) < th.directional_asym,
            "tradeoff": min(leak[i, j, 1], leak[j, i, 1]) <= th.tradeoff_leak,
        }
        evidence = {f: "confirmed" if gated and settled.get(f, False) else "possible" for f in flags if f != "gated"}
    return PairwisePair(
        a=crit[i],
        b=crit[j],
        leak_ab=json_number(l_ab),
        leak_ba=json_number(l_ba),
        sym=json_number((l_ab + l_ba) / 2),
        asym=json_number(abs(l_ab - l_ba)),
        flags=flags,
        evidence=evidence,
    )


def abs_low(interval: np.ndarray) -> float:
    """The least |x| over the interval (0 where it holds 0)."""
    low, high = interval
    return 0.0 if low <= 0 <= high else min(abs(low), abs(high))


def abs_high(interval: np.ndarray) -> float:
    return max(abs(interval[0]), abs(interval[1]))


def against_raters(
    source: str,
    asked: Sequence[str],
    raters: np.ndarray,
    choice: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> HumanPairs:
    """The judge's pairwise verdicts against the raters'. `asked`: each question's criterion; `raters` (Q, 2): the
    raters choosing the question's first response, its second (ties left out); `choice` (Q, 2): the judge's
    verdict in order 0 (the first response shown as A) and order 1 (shown as B), A, B, TIE or -1 (unscored). The
    interval redraws the questions (an expanded percentile interval at Q - 1 df)."""
    majority = np.sign(raters[:, 0] - raters[:, 1])  # +1: the first response, -1: the second, 0: undecided
    decisive = (choice == A) | (choice == B)
    first = decisive & ((choice == A) == (np.arange(2) == UP_FIRST))  # the verdict prefers the first response
    counted = decisive & (majority != 0)[:, None]
    agree = (counted & (first == (majority > 0)[:, None])).sum(axis=1).astype(float)
    counted_n = counted.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = float(agree.sum() / counted_n.sum())
        interval = None
        if resamples and len(agree) > 1:
            w = stratified_counts(np.random.default_rng(seed), [len(agree)], resamples, small_sample=False)
            deltas = (w @ agree) / (w @ counted_n) - point
            low, high = expanded_interval(np.asarray(point), deltas, len(agree) - 1, level)
            interval = (json_number(float(low)), json_number(float(high)))
        pairs = raters.sum(axis=1) * (raters.sum(axis=1) - 1) / 2
        same = (raters * (raters - 1) / 2).sum(axis=1)
        agreeing = float(same.sum() / pairs.sum()) if pairs.sum() > 0 else np.nan
        per = {
            c: json_number(float(agree[np.asarray(asked) == c].sum() / counted_n[np.asarray(asked) == c].sum()))
            for c in dict.fromkeys(asked)
        }
    scored = choice >= 0
    return HumanPairs(
        source=source,
        questions=len(asked),
        decided=int((majority != 0).sum()),
        agreement=json_number(point),
        ci=interval if interval is None or None not in interval else None,
        ties=json_number(float((choice[scored] == TIE).mean()) if scored.any() else np.nan),
        unscored=int((~scored).sum()),
        raters_agree=json_number(agreeing),
        criteria=per,
    )
