"""Per-prompt rubrics (issue 63): each task's own items, each steered present (+) and absent (-) and every item of
the task graded on every probe.

For items i, j of one prompt, the leakage D_ij is item j's mean verdict on probes steered + on i minus on probes
steered - on i, on the 0-1 footing of j's scale (for met / not met: the change in j's met rate); D_ii is i's
self-effect. A pitfall is steered + by committing it, and a judge that reads it says "met" then: its self-effect
is positive like any item's, and a negative one is a **sign error** (the judge reads the item backwards).

Every test is an exact permutation test (stats/permutation.py) within the prompt: the probes are the units, as an
item belongs to one prompt. Findings, each over the audit's whole family of its kind; the three kinds that confirm
(sign errors, redundant pairs, tag cells) share the audit's error, (1 - level) / 3 each, so that with nothing
planted an audit confirms any finding at most 1 - level of the time:
- an item's **gate**: it reads when its self-effect reaches tau (the point estimate, compared exactly, as the
  coupling's gate), listed with its text where it does not;
- a **sign error** (D_ii < 0) is `confirmed` by Holm's procedure over every item of the audit at its share of the
  family-wise error, `screened` by Benjamini-Hochberg at the false discovery rate `fdr`;
- a **redundant pair** (Sym_ij = (D_ij + D_ji) / 2 > 0, both leakages tested on their joint law; two items of a
  prompt, or an item and a shared criterion within its prompt) is `confirmed` by Holm over every pair of every
  prompt, `screened` by Benjamini-Hochberg over the same.
Pooled over prompts (the resampling units; Student's t over the prompts' values, df = prompts - 1): the tag x tag
leakage matrix (each cell the prompts' mean of D_ij over their items i of the row's tag and j != i of the column's;
`confirmed` by Holm over the cells on an exact sign-flip test over prompts), the pitfalls' sign-error rate ((1 - D_ii)
/ 2 on met / not met: the share of verdicts on the wrong side) and the score's double counting: steering item i
moves the task's score (points met / positive points) by its own points x D_ii plus the others' points x D_ij;
the share of those moves that is not the item's own (the leaked move taken in the direction of the item's own:
sum of leaked / sum of (|own| + leaked) over a prompt's items).

An adaptive audit (radar_local/adaptive.py) grows a prompt's probes wave after wave while its own findings are open,
so an item's N is chosen by the data. Its tests stay exact: each p-value is its last look's times `looks`, the
looks its prompt could have had (Bonferroni over every N the waves can reach: whichever N they stopped at, a false
finding needed some N's p-value below 1/looks of its bound). The pooled findings read the first wave's probes only
(`first`), the design fixed before any verdict: a prompt grown because its leakage looked large by chance would
otherwise pull the prompts' mean. `unsettled` names what keeps a prompt growing: each hypothesis of its own
(its items' sign errors, its pairs) that Bonferroni over the prompt's own hypotheses passes at PROMPT_SCREEN, or
that the audit's screening passes, and that the audit has not confirmed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from radar_local.rubric import Criterion, Item
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.coupling import TAU
from radar_local.stats.exact import at_least
from radar_local.stats.intervals import ends, t_interval
from radar_local.stats.permutation import K, Split, factor, holm, p_lower, p_sign_flip, p_sum_upper
from radar_local.stats.screening import benjamini_hochberg
from radar_local.stats.stored import Block, Interval, Matrix, Num

if TYPE_CHECKING:
    import pandas as pd

FDR = 0.10  # the screening rate of sign errors and redundant pairs, where the audit sets none
KINDS = 3  # sign errors, redundant pairs, tag cells: the audit's error (1 - level) split among them
PROMPT_SCREEN = Fraction(1, 2)  # an adaptive wave grows a prompt whose own family passes a hypothesis at this level
SIGN_ERROR, PAIR = "sign error", "redundant pair"
CONFIRMED, SCREENED = "confirmed", "screened"
METHOD = (
    "exact permutation tests within each prompt; confirmed: Holm over the audit's family of the kind at a third of "
    "the level's error (sign errors, pairs, tag cells); "
    "screened: Benjamini-Hochberg at the false discovery rate"
)


class ItemRow(Block):
    id: str
    task: str
    text: str
    points: float
    tags: list[str]
    self_effect: Num  # D_ii on the 0-1 footing
    probes: list[int]  # scored probes steered + and - on it
    reads: bool  # the gate: the self-effect reaches tau
    p_reversed: float  # the permutation p-value of D_ii < 0
    sign_error: str | None  # confirmed / screened, or None
    own: Num  # its points x D_ii over the task's positive points: the score move that is its own
    leaked: Num  # the other items' points x D_ij over the same: the move that is not


class PairRow(Block):
    task: str
    a: str
    b: str
    a_text: str
    b_text: str
    leak_ab: Num
    leak_ba: Num
    sym: Num
    asym: Num
    p: float  # of Sym > 0
    evidence: str  # confirmed / screened


class TagMatrix(Block):
    tags: list[str]
    leakage: Matrix  # source tag -> target tag: the prompts' mean leakage
    ci: dict[str, dict[str, Interval | None]]
    prompts: dict[str, dict[str, int]]
    confirmed: list[list[str]]  # [source, target] cells Holm confirms on the sign-flip test over prompts


class Unsettled(Block):
    """A hypothesis an adaptive audit's next wave follows: its prompt's own family passes it, unconfirmed."""

    task: str
    kind: str  # sign error / redundant pair
    items: list[str]
    p: float  # this look's p-value, before the looks


class Reach(Block):
    """Whether a kind's findings can be confirmed at all at the audit's design: the smallest p-value its tests can
    give (every probe on the extreme side) against Holm's first bound over the kind's family, compared exactly."""

    floor: float
    bound: float
    tests: int
    confirmable: bool


class PerPrompt(Block):
    """stats.json's `per_prompt`: a per-prompt rubric's items, their sign errors, redundant pairs, the tag matrix and
    the score's double counting (stats/per_prompt.py)."""

    level: float
    fdr: float
    tau: float
    method: str
    prompts: int
    items: list[ItemRow]
    unread: list[str]  # items failing the gate
    pairs_tested: int
    pairs: list[PairRow]  # the redundant pairs confirmed or screened
    sign_error_rate: Num  # pooled over the pitfalls: the share of their verdicts on the wrong side
    sign_error_ci: Interval | None
    double_count: Num  # pooled share of the score's moves that is not the steered item's own
    double_count_ci: Interval | None
    double_count_by_prompt: dict[str, Num]
    tags: dict[str, TagMatrix]  # one matrix per tag family (the text before a tag's colon: HealthBench's axis)
    reach: dict[str, Reach] = {}  # sign_errors, pairs: whether the design can confirm one (stats.json before: {})
    looks: int = 1  # an adaptive audit's: each test's p-value is multiplied by them
    pooled_below: int | None = None  # an adaptive audit's first wave: the pooled findings read variants below it
    unsettled: list[Unsettled] = []  # an adaptive audit's: what its next wave follows


def per_prompt(
    table: pd.DataFrame,
    items: Sequence[Item],
    spans: Mapping[str, float],
    *,
    shared: Sequence[Criterion] = (),
    tau: float = TAU,
    level: float = LEVEL,
    fdr: float | None = None,
    seed: int = 0,
    looks: int = 1,
    first: int | None = None,
) -> PerPrompt:
    """The per-prompt audit of a score table's item verdicts (columns task_id, target, direction, variant,
    criterion, score): `items` the rubric's items, `shared` its criteria every task is graded on (each paired with
    each item of each prompt: an item and a shared criterion can be redundant too), `spans` the scale span of each
    item and shared criterion. An adaptive audit's `looks` and `first` wave: the module's docstring."""
    fdr = FDR if fdr is None else fdr
    by_task: dict[str, list[Item]] = {}
    for it in items:
        by_task.setdefault(it.task, []).append(it)
    members = [*items, *shared]
    rows = table[table["direction"].isin(("+", "-")) & table["target"].isin([m.id for m in members])]
    factors = {m.id: factor(rows.loc[rows["criterion"] == m.id, "score"].to_numpy(float)) for m in members}
    splits = _splits(rows, by_task, shared, factors)
    effects = _effects(splits, spans, factors)
    if first is None:
        pooled_effects = effects
    else:  # an adaptive audit's first wave: its variants 0 .. first - 1 (the score table holds them as text)
        wave = rows[rows["variant"].map(lambda v: str(v).isdigit() and int(v) < first)]
        pooled_effects = _effects(_splits(wave, by_task, shared, factors), spans, factors)

    reversed_raw = {it.id: p_lower(splits[it.task, it.id, it.id], seed) for it in items}
    reversed_p = {k: over_looks(p, looks) for k, p in reversed_raw.items()}
    sign = evidence_of(reversed_p, level, fdr)
    pair_raw, pair_rows = {}, {}
    for task, its in by_task.items():
        for x, a in enumerate(its):
            for b in [*its[x + 1 :], *shared]:
                span_a = _int_span(spans[b.id], factors[b.id])  # D_ab is on b's footing, D_ba on a's
                span_b = _int_span(spans[a.id], factors[a.id])
                key = (task, a.id, b.id)
                a_to_b, b_to_a = splits[task, a.id, b.id], splits[task, b.id, a.id]
                pair_raw[key] = p_sum_upper(a_to_b, span_a, b_to_a, span_b, seed)
                pair_rows[key] = (task, a, b)
    pair_p = {k: over_looks(p, looks) for k, p in pair_raw.items()}
    pair_evidence = evidence_of(pair_p, level, fdr)
    sign_floors = [
        looks * p_lower(s.extreme(False), seed) for it in items if (s := splits[it.task, it.id, it.id]).testable
    ]
    pair_floors = [
        looks * p_sum_upper(splits[task, a.id, b.id].extreme(True), 1, splits[task, b.id, a.id].extreme(True), 1, seed)
        for task, a, b in pair_rows.values()
    ]
    reach = {
        kind: r
        for kind, floors, tests in (("sign_errors", sign_floors, len(items)), ("pairs", pair_floors, len(pair_p)))
        if (r := reach_of(floors, tests, level)) is not None
    }
    found = []
    for key, evidence in pair_evidence.items():
        task, a, b = pair_rows[key]
        ab, ba = _num(effects[task][a.id, b.id]), _num(effects[task][b.id, a.id])
        sym = None if ab is None or ba is None else (ab + ba) / 2
        asym = None if ab is None or ba is None else (ab - ba) / 2
        found.append(PairRow(task=task, a=a.id, b=b.id, a_text=a.description, b_text=b.description, leak_ab=ab,
                             leak_ba=ba, sym=sym, asym=asym, p=float(pair_p[key]), evidence=evidence))  # fmt: skip
    found.sort(key=lambda r: (r.evidence != CONFIRMED, r.p))

    moves = {task: _moves(its, effects[task]) for task, its in by_task.items()}
    pooled_moves = {task: _moves(its, pooled_effects[task]) for task, its in by_task.items()}
    item_rows = []
    for it in items:
        own, leaked = moves[it.task][it.id]
        d = effects[it.task][it.id, it.id]
        s = splits[it.task, it.id, it.id]
        item_rows.append(
            ItemRow(
                id=it.id,
                task=it.task,
                text=it.description,
                points=it.points,
                tags=list(it.tags),
                self_effect=_num(d),
                probes=[s.up, s.down],
                reads=at_least(d, tau),
                p_reversed=float(reversed_p[it.id]),
                sign_error=sign.get(it.id),
                own=own,
                leaked=leaked,
            )  # fmt: skip
        )
    pitfall_rates = {}
    for task, its in by_task.items():
        values = [
            (1 - float(d)) / 2 for it in its if it.pitfall and (d := pooled_effects[task][it.id, it.id]) is not None
        ]
        if values:
            pitfall_rates[task] = float(np.mean(values))
    shares = {task: _share(m.values()) for task, m in pooled_moves.items()}
    rate, rate_ci = pooled(list(pitfall_rates.values()), level)
    share, share_ci = pooled([v for v in shares.values() if v is not None], level)
    return PerPrompt(
        level=level,
        fdr=fdr,
        tau=tau,
        method=METHOD,
        prompts=len(by_task),
        items=item_rows,
        unread=[r.id for r in item_rows if not r.reads],
        pairs_tested=len(pair_p),
        pairs=found,
        sign_error_rate=rate,
        sign_error_ci=within_0_1(rate_ci),
        double_count=share,
        double_count_ci=share_ci,
        double_count_by_prompt=shares,
        tags=tag_matrices(by_task, pooled_effects, level, seed),
        reach=reach,
        looks=looks,
        pooled_below=first,
        unsettled=[]
        if first is None
        else unsettled(by_task, (reversed_raw, sign), (pair_raw, pair_evidence), pair_rows),
    )


def unsettled(
    by_task: Mapping[str, list[Item]],
    signs: tuple[Mapping[str, Fraction], Mapping[str, str]],
    pairs: tuple[Mapping[tuple[str, str, str], Fraction], Mapping[tuple[str, str, str], str]],
    pair_rows: Mapping[tuple[str, str, str], tuple[str, Item | Criterion, Item | Criterion]],
) -> list[Unsettled]:
    """Each prompt's hypotheses an adaptive wave follows: unconfirmed, and passed by Bonferroni over the prompt's own
    hypotheses at PROMPT_SCREEN (this look's p-values), or screened by the audit. `signs`, `pairs`: each
    hypothesis's p-value at this look and its evidence over the audit."""
    (sign_p, sign_evidence), (pair_p, pair_evidence) = signs, pairs
    own: dict[str, list[tuple[str, list[str], Fraction, str | None]]] = {t: [] for t in by_task}
    for task, its in by_task.items():
        own[task] += [(SIGN_ERROR, [it.id], sign_p[it.id], sign_evidence.get(it.id)) for it in its]
    for key, (task, a, b) in pair_rows.items():
        own[task].append((PAIR, [a.id, b.id], pair_p[key], pair_evidence.get(key)))
    return [
        Unsettled(task=task, kind=kind, items=ids, p=float(p))
        for task, hypotheses in own.items()
        for kind, ids, p, evidence in hypotheses
        if evidence != CONFIRMED and (evidence == SCREENED or p * len(hypotheses) <= PROMPT_SCREEN)
    ]


def _splits(
    rows: pd.DataFrame, by_task: Mapping[str, list[Item]], shared: Sequence[Criterion], factors: Mapping[str, int]
) -> dict[tuple[str, str, str], Split]:
    """Each prompt's (task, source, target) split of the target's scores into probes steered + and - on the source:
    every ordered pair of its items, and each item with each shared criterion both ways."""
    cells = {key: g for key, g in rows.groupby(["task_id", "target", "direction", "criterion"], sort=False)}

    def split(task: str, source: str, target: str) -> Split:
        def scores(d: str) -> np.ndarray:
            g = cells.get((task, source, d, target))
            return np.array([], float) if g is None else g.sort_values("variant")["score"].to_numpy(float)

        return Split.of(scores("+"), scores("-"), factors[target])

    return {
        (task, a.id, b.id): split(task, a.id, b.id)
        for task, its in by_task.items()
        for a, b in [*itertools.product(its, its), *itertools.product(its, shared), *itertools.product(shared, its)]
    }


def _effects(
    splits: Mapping[tuple[str, str, str], Split], spans: Mapping[str, float], factors: Mapping[str, int]
) -> dict[str, dict[tuple[str, str], Fraction | None]]:
    """Each prompt's leakages D_ab (self-effects where a = b) on the 0-1 footing of the target's scale."""
    out: dict[str, dict[tuple[str, str], Fraction | None]] = {}
    for (task, a, b), s in splits.items():
        d = s.difference()
        out.setdefault(task, {})[a, b] = None if d is None else d / (Fraction(repr(spans[b])) * factors[b])
    return out


def over_looks(p: Fraction, looks: int) -> Fraction:
    """A p-value at the N an adaptive audit's waves stopped at, valid whatever they chose: times the looks they could
    have taken (Bonferroni over every N they can reach), at most 1."""
    return min(Fraction(1), p * looks)


def reach_of(floors: list[Fraction], tests: int, level: float, kinds: int = KINDS) -> Reach | None:
    """The smallest of a kind's attainable p-values against Holm's first bound over its `tests`."""
    if not floors:
        return None
    bound = (1 - Fraction(repr(each_kind(level, kinds)))) / tests  # as holm() compares its first hypothesis
    floor = min(floors)
    return Reach(floor=float(floor), bound=float(bound), tests=tests, confirmable=floor <= bound)


def within_0_1(interval: Interval | None) -> Interval | None:
    """A rate's interval, its ends kept within 0-1."""
    if interval is None or interval[0] is None or interval[1] is None:
        return interval
    return ends((max(0.0, interval[0]), min(1.0, interval[1])))


def _int_span(span: float, f: int) -> int:
    """A scale's span in the integer units its scores are held in (a span is an integer or a decimal)."""
    exact = Fraction(repr(span)) * f
    return exact.numerator if exact.denominator == 1 else round(exact)


def _num(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def each_kind(level: float, kinds: int = KINDS) -> float:
    """The level each kind of finding is confirmed at, so that the audit's claims hold together at `level`
    (Bonferroni over the `kinds` families, each Holm's)."""
    return 1 - (1 - level) / kinds


def evidence_of(p: Mapping[K, Fraction], level: float, fdr: float, kinds: int = KINDS) -> dict[K, str]:
    """Each hypothesis Holm confirms at its kind's share of the level, or else Benjamini-Hochberg screens at `fdr`."""
    confirmed = holm(dict(p), each_kind(level, kinds))
    screened: set[K] = benjamini_hochberg(p, fdr) - confirmed
    return {**dict.fromkeys(screened, SCREENED), **dict.fromkeys(confirmed, CONFIRMED)}


def _moves(its: list[Item], effects: Mapping[tuple[str, str], Fraction | None]) -> dict[str, tuple[Num, Num]]:
    """Per steered item: the task score's move that is its own, and the one leaked into the other items."""
    positive = sum(it.points for it in its if it.points > 0)
    out: dict[str, tuple[Num, Num]] = {}
    for a in its:
        d = effects[a.id, a.id]
        own = None if d is None or positive <= 0 else a.points * float(d) / positive
        rest = [b.points * float(e) for b in its if b.id != a.id and (e := effects[a.id, b.id]) is not None]
        out[a.id] = (own, sum(rest) / positive if positive > 0 else None)
    return out


def _share(moves: Iterable[tuple[Num, Num]]) -> float | None:
    """The share of a prompt's score moves that is not the steered items' own: each item's leaked move taken in the
    direction of its own (so noise, either way, averages out), over its own move's size plus that."""
    known = [(own, leaked) for own, leaked in moves if own is not None and leaked is not None and own != 0]
    along = [leaked * np.sign(own) for own, leaked in known]
    total = sum(abs(own) for own, _ in known) + sum(along)
    return float(sum(along) / total) if total > 0 else None


def pooled(values: list[float], level: float, family: int = 1) -> tuple[Num, Interval | None]:
    """The prompts' mean and its Student t interval (df = prompts - 1); no interval from fewer than two."""
    if not values:
        return None, None
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, None
    se = float(np.std(values, ddof=1)) / np.sqrt(len(values))
    return mean, ends(t_interval(mean, se, len(values) - 1, level, family))


MAX_TAGS = 12  # a tag family with more tags than this (HealthBench's cluster:*, one per theme) has no matrix


def family(tag: str) -> str:
    """A tag's family: the text before its colon (`axis:accuracy` is of `axis`), or the tag itself."""
    return tag.split(":", 1)[0] if ":" in tag else ""


def tag_matrices(
    by_task: Mapping[str, list[Item]],
    effects: Mapping[str, Mapping[tuple[str, str], Fraction | None]],
    level: float,
    seed: int,
    kinds: int = KINDS,
) -> dict[str, TagMatrix]:
    """One matrix per tag family of 2 to MAX_TAGS tags, each tag in two prompts or more (tags without a family are
    one family, named "")."""
    prompts_of: dict[str, set[str]] = {}
    for task, its in by_task.items():
        for it in its:
            for tag in it.tags:
                prompts_of.setdefault(tag, set()).add(task)
    families: dict[str, set[str]] = {}
    for tag, where in prompts_of.items():  # a tag of one prompt has nothing to pool
        if len(where) >= 2:
            families.setdefault(family(tag), set()).add(tag)
    kept = {name: sorted(tags) for name, tags in sorted(families.items()) if 2 <= len(tags) <= MAX_TAGS}
    values = {name: _cell_values(by_task, effects, tags) for name, tags in kept.items()}
    p = {(name, cell): p_sign_flip(v, seed) for name, cells in values.items() for cell, v in cells.items()}
    confirmed = holm(p, each_kind(level, kinds))  # one family: every cell of every matrix
    return {
        name: _tag_matrix(tags, values[name], level, sorted(c for n, c in confirmed if n == name))
        for name, tags in kept.items()
    }


def _cell_values(
    by_task: Mapping[str, list[Item]], effects: Mapping[str, Mapping[tuple[str, str], Fraction | None]], tags: list[str]
) -> dict[tuple[str, str], list[Fraction]]:
    """Each cell's value in each prompt that has one: the mean leakage from its items of the row's tag into its other
    items of the column's."""
    values: dict[tuple[str, str], list[Fraction]] = {}
    for task, its in by_task.items():
        for s in tags:
            for t in tags:
                cell = [
                    e
                    for a in its
                    for b in its
                    if a.id != b.id and s in a.tags and t in b.tags and (e := effects[task][a.id, b.id]) is not None
                ]
                if cell:
                    values.setdefault((s, t), []).append(sum(cell, Fraction(0)) / len(cell))
    return values


def _tag_matrix(
    tags: list[str], values: Mapping[tuple[str, str], list[Fraction]], level: float, confirmed: list[tuple[str, str]]
) -> TagMatrix:
    """Each cell: the prompts' mean and its t interval; `confirmed` where Holm's procedure over every cell rejects
    'its mean is 0' on the exact sign-flip test over prompts (a prompt's value is symmetric about 0 where nothing
    couples its items: its + and - probes are exchangeable)."""
    leakage: Matrix = {s: {} for s in tags}
    ci: dict[str, dict[str, Interval | None]] = {s: {} for s in tags}
    prompts: dict[str, dict[str, int]] = {s: {} for s in tags}
    for (s, t), vals in values.items():
        leakage[s][t], ci[s][t] = pooled([float(v) for v in vals], level)
        prompts[s][t] = len(vals)
    return TagMatrix(tags=tags, leakage=leakage, ci=ci, prompts=prompts, confirmed=[[s, t] for s, t in confirmed])
