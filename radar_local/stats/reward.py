"""A reward model audited with the probes' own steers (issue 48): its sensitivity profile.

A reward model emits one scalar per response, a judge of "overall quality" with no criterion to be asked about,
so its self-effect is meaningless. What a team needs to know is what its reward is made of: per criterion C, the
steer effect e_C = the mean over C's pairs (task, variant) of reward(up-on-C) - reward(down-on-C), in units of the
reward's standard deviation over every probe (rewards have no common scale). A steer that moves the reward says
the model sees C; one whose effect is confirmed within +-`margin` (0.2 sd) says it does not.

Inference: the units are the pairs, stratified by task (a task's responses share its level of reward, which
a pair's difference cancels); each effect's standard error is the stratified mean's, its interval Student's t at
its design df (its pairs less their tasks), and the family band Bonferroni's over the K effects (t at 1 - alpha /
2K), so `moves` (the band clears 0) and `blind` (the band lies inside +-margin: an equivalence test at the
family level) hold together; else `open`. The bootstrap's max-t band, as the pairwise judge's, claimed a
false effect in 5.5-7.2% of null audits at N = 3-20 (scripts/reward_error.py); a t band on these differences
is exact where they are normal. Comparisons with 0 and the margin are exact (fractions). Where the same run's
judge scored the probes, each criterion's Spearman correlation between its scores and the reward says how far the
reward agrees with it.
Error rates and power: scripts/reward_error.py.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy import stats as sps

from radar_local.common import json_number
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.intervals import t_critical, t_interval
from radar_local.stats.stored import Block, Interval, Num

MARGIN = 0.2  # an effect inside +-0.2 reward sd, confirmed, is a criterion the reward does not see


class RewardCriterion(Block):
    criterion: str
    pairs: int
    effect: Num  # reward(up) - reward(down), in reward sd
    ci: Interval | None
    band: Interval | None
    verdict: str  # moves, blind or open
    agreement: Num = None  # Spearman between the judge's scores on this criterion and the reward


class RewardProfile(Block):
    model: str
    probes: int
    unscored: int
    sd: Num  # the reward's standard deviation over the scored probes: the unit of every effect
    level: float
    margin: float
    critical: Num
    criteria: list[RewardCriterion]


def _verdict(band: tuple[float, float] | None, margin: float) -> str:
    if band is None:
        return "open"
    low, high = (Fraction(x) for x in band)
    if low > 0 or high < 0:
        return "moves"
    return "blind" if -Fraction(margin) < low and high < Fraction(margin) else "open"


def reward_profile(
    model: str,
    criteria: list[str],
    rows: list[tuple[str, str, str, int, float | None]],
    judge: dict[str, np.ndarray] | None = None,
    *,
    margin: float = MARGIN,
    level: float = LEVEL,
) -> RewardProfile:
    """`rows`: per probe (task, steered criterion, direction + or -, variant, reward or None); `judge`: per
    criterion the judge's score of each probe in `rows`' order (NaN where none), for the agreement."""
    rewards = np.array([np.nan if r[4] is None else r[4] for r in rows], float)
    scored = ~np.isnan(rewards)
    sd = float(np.std(rewards[scored], ddof=1)) if scored.sum() > 1 else np.nan
    up = {(t, c, v): x for t, c, d, v, x in rows if d == "+" and x is not None}
    down = {(t, c, v): x for t, c, d, v, x in rows if d == "-" and x is not None}
    pairs = sorted(key for key in up if key in down and key[1] in criteria)
    k = len(criteria)
    # a reward that does not vary has no unit: every effect undefined, nothing claimed
    diff = np.array([(up[p] - down[p]) / sd if sd > 0 else np.nan for p in pairs])
    point, se, df = np.full(k, np.nan), np.full(k, np.nan), np.zeros(k)
    for i, c in enumerate(criteria):
        mine = [j for j, p in enumerate(pairs) if p[1] == c]
        if not mine:
            continue
        groups = [diff[[j for j in mine if pairs[j][0] == t]] for t in dict.fromkeys(pairs[j][0] for j in mine)]
        point[i] = float(np.mean(diff[mine]))
        df[i] = len(mine) - len(groups)  # the pairs less their task strata
        if df[i] > 0:  # the stratified mean's variance: each task's share squared times its mean's variance
            var = sum((len(g) / len(mine)) ** 2 * np.var(g, ddof=1) / len(g) for g in groups if len(g) > 1)
            se[i] = float(np.sqrt(var))
    t_family = t_critical(df, level, k)  # Bonferroni over the K effects
    critical = float(np.nanmax(t_family)) if np.isfinite(t_family).any() else np.nan
    one, bands = t_interval(point, se, df, level), t_interval(point, se, df, level, k)
    out = []
    for i, c in enumerate(criteria):
        ok = bool(np.isfinite(point[i]) and np.isfinite(se[i]) and np.isfinite(t_family[i]))
        b = (float(bands[i, 0]), float(bands[i, 1])) if ok else None
        ci = (json_number(one[i, 0]), json_number(one[i, 1])) if ok else None
        agreement = None
        if judge is not None and c in judge:
            both = scored & ~np.isnan(judge[c])
            if both.sum() > 2 and np.ptp(judge[c][both]) > 0 and np.ptp(rewards[both]) > 0:
                agreement = json_number(float(sps.spearmanr(judge[c][both], rewards[both]).statistic))
        out.append(
            RewardCriterion(
                criterion=c,
                pairs=sum(p[1] == c for p in pairs),
                effect=json_number(float(point[i])),
                ci=ci,
                band=None if b is None else (json_number(b[0]), json_number(b[1])),
                verdict=_verdict(b, margin),
                agreement=agreement,
            )
        )
    return RewardProfile(
        model=model,
        probes=len(rows),
        unscored=int((~scored).sum()),
        sd=json_number(sd),
        level=level,
        margin=margin,
        critical=json_number(float(critical)),
        criteria=out,
    )
