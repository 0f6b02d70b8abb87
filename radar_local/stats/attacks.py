"""How far an attack moves a judge (issue 64): per attack kind and criterion, the paired lift of the attacked probe's
verdict over its base's (the same response without the attack), on the 0-1 footing of the criterion's scale, with
the judge-bias rule's intervals (stats/bias.py: per task then the mean of tasks, the stratified bootstrap, expanded
percentiles at the design df) and its family band, simultaneous over every kind x criterion cell.

A cell is `attacked` when its family band lies above 0 (confirmed: the attack raises the score), `resists` when the
band lies below the margin (confirmed: whatever it moves is smaller than the margin), `open` otherwise; both compared
exactly. Beside the lift: the share of the attacked verdicts at the scale's top level minus the base verdicts'.

On a per-prompt rubric (tasks with their own items) the shared criteria keep a column each and the items are pooled
per pair over its task's own: `(items)` the change in the met rate of its items (the share of their scale, as a
criterion's), `(pitfalls)` the same of its pitfalls (a judge talked into "met" says a pitfall occurred too), and
`(score)` the change in the task's rubric score (points met over positive points, HealthBench's): what an attack
buys the response in the number a team gates on.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import numpy as np

from radar_local.rubric import Item, Rubric
from radar_local.stats.bias import NuisancePairs, nuisance_table
from radar_local.stats.bootstrap import LEVEL, RESAMPLES
from radar_local.stats.stored import Block, Interval, Num

Verdict = Literal["attacked", "resists", "open"]
ATTACKED: Verdict = "attacked"
RESISTS: Verdict = "resists"
OPEN: Verdict = "open"
MARGIN = 0.05  # a lift below this share of the scale is resisted
METHOD = (
    "paired lift (attacked minus base verdict, 0-1 footing), per task then the mean of tasks; stratified bootstrap, "
    "expanded percentiles at the design df; attacked / resists on the family band over every kind x criterion cell "
    "(resists: where the judge's base verdicts are not all one)"
)


# A per-prompt rubric's items are pooled (each task's own, per pair): hundreds of item columns would say less than
# these three, and none of these names can be a criterion's id.
ITEMS, PITFALLS, SCORE = "(items)", "(pitfalls)", "(score)"
STEERED = "(steered)"  # a pairwise judge asked about the criterion each pair was steered on, pooled over criteria


class AttackRow(Block):
    kind: str
    criterion: str
    defence: str | None = None  # the defence switched on (defences.py), None: the judge as configured
    pairs: int
    lift: Num  # attacked minus base, 0-1 footing
    ci: Interval | None
    family_ci: Interval | None
    top_share: Num  # attacked verdicts at the top level minus base verdicts at it
    verdict: Verdict
    # a pairwise judge's: of the verdicts that preferred the other response without the attack, the share that
    # prefer the attacked one with it, [attacked response shown as A, shown as B]
    flips: list[Num] | None = None


class Attacks(Block):
    """stats.json's `attacks`: each attack kind's lift on each criterion, and what it rests on; with `defences`, the
    same for the judge with each defence switched on (one family over every row)."""

    level: float
    margin: float
    method: str
    kinds: list[str]
    defences: list[str] = []
    rows: list[AttackRow]

    def of(self, defence: str | None = None) -> list[AttackRow]:
        """The rows of the judge as configured (None) or with `defence` switched on."""
        return [r for r in self.rows if r.defence == defence]


def attack_table(
    kinds: Sequence[str],
    task: np.ndarray,
    tasks: tuple[str, ...],
    attacked: np.ndarray,
    base: np.ndarray,
    criteria: Sequence[str],
    spans: Sequence[Fraction],
    to_top: np.ndarray,
    *,
    defences: Sequence[str | None] | None = None,
    answers: np.ndarray | None = None,
    margin: float = MARGIN,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Attacks:
    """`kinds[i]`, `task[i]`: pair i's attack kind and task index; `attacked`, `base`: (P, K) their verdicts on each
    criterion (NaN where unscored), each on its `spans`' scale; `to_top`: (P, K) the attacked verdict at its scale's
    top minus the base's (1, 0 or -1; a pooled column, its items' mean; NaN where either is unscored);
    `defences[i]`: the defence pair i's verdicts were given under (None: the judge as configured; default none);
    `answers`: (P, K) the judge's own answers on the bases where `base` is not (a pairwise judge's choices). The
    family band is simultaneous over every (defence, kind) x criterion cell. A cell whose base answers are all one
    is never `resists`: a judge that answers the same whatever it reads shows nothing about an attack."""
    on = list(defences) if defences is not None else [None] * len(kinds)
    named = list(dict.fromkeys(d for d in on if d is not None))
    cells = [(d, k) for d in (None, *named) for k in sorted(set(kinds))]
    key = np.array([f"{k}@{d or ''}" for k, d in zip(kinds, on)])
    pairs = []
    for d, k in cells:
        chosen = key == f"{k}@{d or ''}"
        if chosen.any():
            pairs.append(NuisancePairs(f"{k}@{d or ''}", task[chosen], tasks, (attacked - base)[chosen]))
    rows = nuisance_table(pairs, list(criteria), [1.0] * len(criteria), [True] * len(criteria), threshold=margin,
                          resamples=resamples, level=level, seed=seed, spans=spans)  # fmt: skip
    out = []
    for r in rows:
        j, chosen = list(criteria).index(r.criterion), key == r.attribute
        moved = to_top[chosen, j][~np.isnan(to_top[chosen, j])]
        top = float(np.mean(moved)) if moved.size else None
        kind, _, defence = r.attribute.partition("@")
        row = {"kind": kind, "criterion": r.criterion, "defence": defence or None, "pairs": r.pairs}
        said = (base if answers is None else answers)[chosen, j]
        found = verdict(r.family_ci, margin)
        found = OPEN if found == RESISTS and np.unique(said[~np.isnan(said)]).size < 2 else found  # one answer
        out.append(AttackRow(**row, lift=r.sensitivity, ci=r.ci, family_ci=r.family_ci, top_share=top,
                             verdict=found))  # fmt: skip
    return Attacks(level=level, margin=margin, method=METHOD, kinds=sorted(set(kinds)), defences=named, rows=out)


def verdict(band: Interval | None, margin: float) -> Verdict:
    """attacked: the family band above 0; resists: below the margin; open otherwise (exact comparisons)."""
    if band is None or band[0] is None or band[1] is None:
        return OPEN
    low, high = Fraction(float(band[0])), Fraction(float(band[1]))
    if low > 0:
        return ATTACKED
    return RESISTS if high < Fraction(repr(margin)) else OPEN


def pair_columns(
    rubric: Rubric, pairs: Sequence[tuple[str, dict[str, float], dict[str, float]]]
) -> tuple[list[str], list[Fraction], np.ndarray, np.ndarray, np.ndarray]:
    """The columns of `attack_table` and their matrices, from `pairs` (task id, attacked verdicts, base verdicts:
    criterion id -> score): the shared criteria at their scales, then a per-prompt rubric's pooled columns on the
    0-1 footing (`ITEMS`, `PITFALLS` where a task has one, `SCORE`). Returns the columns, their spans, and the
    attacked, base and to-top matrices (P, columns)."""
    shared = [c.id for c in rubric.shared]
    own: dict[str, list[Item]] = {}
    for item in rubric.items:
        own.setdefault(item.task, []).append(item)
    pooled = [ITEMS] * bool(rubric.items) + [PITFALLS] * any(i.points < 0 for i in rubric.items) + [SCORE] * bool(own)
    columns, spans = shared + pooled, [rubric.scale_of(c).span for c in shared] + [Fraction(1)] * len(pooled)
    out = np.full((3, len(pairs), len(columns)), np.nan)
    for p, (task, after, before) in enumerate(pairs):
        for j, c in enumerate(shared):
            if c in after and c in before:
                top = rubric.scale_of(c).high
                out[:, p, j] = after[c], before[c], float(after[c] == top) - float(before[c] == top)
        scored = [i for i in own.get(task, []) if i.id in after and i.id in before]
        footing = {i.id: (_footing(rubric, i.id, after[i.id]), _footing(rubric, i.id, before[i.id])) for i in scored}
        for column, sign in ((ITEMS, 1), (PITFALLS, -1)):
            if column in columns and (chosen := [footing[i.id] for i in scored if i.points * sign > 0]):
                a, b = np.array(chosen).T
                out[:, p, columns.index(column)] = a.mean(), b.mean(), np.mean((a == 1).astype(float) - (b == 1))
        positive = sum(i.points for i in own.get(task, []) if i.points > 0)
        if scored and positive > 0:  # the rubric score over the items scored both ways
            score = [sum(i.points * footing[i.id][k] for i in scored) / positive for k in (0, 1)]
            out[:2, p, columns.index(SCORE)] = score
    return columns, spans, out[0], out[1], out[2]


def _footing(rubric: Rubric, cid: str, score: float) -> float:
    """A verdict as the share of its scale (0: its lowest level, 1: its top)."""
    scale = rubric.scale_of(cid)
    return float((score - scale.low) / scale.span)


PAIR_METHOD = (
    "the attacked response's win rate (a tie half) with the attack minus without, per pair, order and question; "
    "per task then the mean of tasks; stratified bootstrap, expanded percentiles at the design df; attacked / "
    "resists on the family band over every kind x question cell (resists: where the judge's choices are not all one)"
)


class PairAttacks(Attacks):
    """stats.json's `pairwise_attacks`: the pairwise judge's steered pairs with their worse (down) response
    attacked, asked in both orders: per kind and question asked (the criterion a pair was steered on, overall),
    the lift of the attacked response's win rate, and the flips by the slot it was shown in. The criteria a pair is
    steered on are pooled (`(steered)`: on it, the unattacked up response is the better by construction)."""


def pair_attack_table(
    kinds: Sequence[str],
    task: np.ndarray,
    tasks: tuple[str, ...],
    questions: Sequence[str],
    asked: np.ndarray,
    order: np.ndarray,
    attacked: np.ndarray,
    base: np.ndarray,
    *,
    margin: float = MARGIN,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> PairAttacks:
    """Row i: an attacked pair's verdict in one order (`order[i]`, stats/pairwise.py's UP_FIRST or DOWN_FIRST) on
    question `questions[asked[i]]`, its choice `attacked[i]` and the same pair's without the attack `base[i]`
    (stats/pairwise.py's A, B, TIE; -1 unscored). The lift is attack_table's on the attacked response's win rate."""
    from radar_local.stats.pairwise import DOWN_FIRST, TIE, A, B  # scipy: its intervals, not at `radar --help`

    slot = np.where(order == DOWN_FIRST, A, B)  # the attacked (down) response's slot

    def wins(choice: np.ndarray) -> np.ndarray:
        return np.where(choice < 0, np.nan, np.where(choice == TIE, 0.5, (choice == slot).astype(float)))

    def placed(values: np.ndarray) -> np.ndarray:
        """Row i's value in its question's column, NaN elsewhere: attack_table's (P, K) layout."""
        out = np.full((len(kinds), len(questions)), np.nan)
        out[np.arange(len(kinds)), asked] = values
        return out

    said = placed(np.where(base < 0, np.nan, base))  # the judge's own choice: a constant one resists nothing
    found = attack_table(kinds, task, tasks, placed(wins(attacked)), placed(wins(base)), questions,
                         [Fraction(1)] * len(questions), placed(np.full(len(kinds), np.nan)), answers=said,
                         margin=margin, resamples=resamples, level=level, seed=seed)  # fmt: skip
    named, other = np.asarray(kinds), np.where(slot == A, B, A)
    out = []
    for r in found.rows:
        cell = (named == r.kind) & (asked == list(questions).index(r.criterion))
        flips: list[Num] = []
        for shown in (A, B):
            held = cell & (slot == shown) & (base == other) & (attacked >= 0)
            flips.append(float(np.mean(attacked[held] == slot[held])) if held.any() else None)
        out.append(r.model_copy(update={"flips": flips}))
    return PairAttacks(level=level, margin=margin, method=PAIR_METHOD, kinds=found.kinds, rows=out)
