"""A pairwise judge of a per-prompt rubric (issues 46 + 63): each task's own items asked of its steered pairs.

A pair is an item's up- and down-steered responses of one variant. Asked "which is better on item b?", the better
response on b is known where the pair was steered on b: the one that does what b describes for an item of positive
points, the one that does not for a pitfall (negative points: committing it costs the response its points). Every
pair is asked about every item of its task (and each shared criterion) in both orders, so per pair and question the
net preference v = (verdicts for the response better on the steered item - verdicts for the other) / 2 lies in
[-1, 1] (a tie or an unscored verdict counts 0). Over an item a's N pairs, e_ab is the mean of v when asked about
b: e_aa is a's pairwise self-effect, e_ab (b != a) how far a steer on a moves the judge's preference on b.

Where the judge cannot tell a pair's two responses apart, swapping which of them is called the better one turns v
into -v, so v is symmetric about 0 whatever the judge's position bias (its two orders cancel it): every test is an
exact sign-flip test over the pairs (stats/permutation.p_sign_flip), the pair the unit (its two orders and its
questions share its responses). The findings, each over the audit's family of its kind, four kinds sharing the
audit's error (1 - level) / 4 each (Holm confirms, Benjamini-Hochberg screens at `fdr`):
- an item's **gate**: the judge reads it when e_aa reaches PAIR_TAU (the point estimate, exactly);
- a **sign error**: e_aa < 0, the judge prefers the response worse on the item (a pitfall read as a quality);
- a **redundant pair** (two items of a prompt, or an item and a shared criterion): e_ab + e_ba > 0, the two
  leakages' pairs flipped together;
- the **tag matrix** (stats/per_prompt.tag_matrices on e_ab);
- the **position bias**: the first slot's rate over decisive verdicts minus 1/2, tested on (first - second) / 2
  per pair, symmetric where the order a pair is shown in does not move the judge.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from radar_local.rubric import Criterion, Item
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.exact import at_least
from radar_local.stats.pairwise import PAIR_TAU, TIE, UP_FIRST, A, B, PairVerdicts
from radar_local.stats.per_prompt import (
    CONFIRMED,
    FDR,
    PairRow,
    Reach,
    TagMatrix,
    evidence_of,
    over_looks,
    pooled,
    reach_of,
    tag_matrices,
    within_0_1,
)
from radar_local.stats.permutation import holm, p_sign_flip
from radar_local.stats.stored import Block, Interval, Num

KINDS = 4  # sign errors, redundant pairs, tag cells, position: the audit's error split among them
METHOD = (
    "exact sign-flip tests over each item's pairs; confirmed: Holm over the audit's family of the kind at a quarter "
    "of the level's error (sign errors, pairs, tag cells, position); screened: Benjamini-Hochberg at the false "
    "discovery rate"
)


class ItemPreference(Block):
    id: str
    task: str
    text: str
    points: float
    pairs: int  # pairs steered on it asked about it
    self_effect: Num  # e_aa: the net preference for the response better on it
    reads: bool  # the gate: the self-effect reaches PAIR_TAU
    p_reversed: float  # the sign-flip p-value of e_aa < 0
    sign_error: str | None  # confirmed / screened, or None
    overall: Num = None  # where asked: the net preference overall of its pairs, for the response better on it


class ItemPosition(Block):
    first_slot: Num  # the pairs' mean rate of the first slot over their decisive verdicts
    bias: Num  # first_slot - 1/2
    ci: Interval | None  # Student t over the pairs
    p: float  # the sign-flip p-value of 'the order moves the judge'
    confirmed: bool  # at its kind's share of the level
    flip_rate: Num  # questions whose two orders, both decisive, prefer different responses
    ties: Num  # the share of scored verdicts that are ties
    unscored: int


class ItemPairs(Block):
    """stats.json's `item_pairs`: a pairwise judge of a per-prompt rubric (stats/item_pairs.py)."""

    verdicts: int
    level: float
    fdr: float
    tau: float
    method: str
    prompts: int
    items: list[ItemPreference]
    unread: list[str]  # items failing the gate
    pairs_tested: int
    pairs: list[PairRow]  # the redundant pairs confirmed or screened
    sign_error_rate: Num  # pooled over the pitfalls: the share of their verdicts preferring the worse response
    sign_error_ci: Interval | None
    tags: dict[str, TagMatrix]
    position: ItemPosition
    reach: dict[str, Reach] = {}  # sign_errors, pairs: whether the design can confirm one
    judge: str | None = None  # the pairwise judge's own model, where it is not the audit's verifier
    looks: int = 1  # an adaptive audit's: each test's p-value is multiplied by them (stats/per_prompt.py)
    pooled_below: int | None = None  # an adaptive audit's first wave: the pooled findings read the pairs below it


def item_pairs(
    verdicts: PairVerdicts,
    tasks: Sequence[str],
    items: Sequence[Item],
    shared: Sequence[Criterion] = (),
    *,
    level: float = LEVEL,
    fdr: float | None = None,
    seed: int = 0,
    looks: int = 1,
    first: int | None = None,
) -> ItemPairs:
    """The per-prompt pairwise audit of `verdicts` (their `criteria` the shared criteria and items by id, their
    `task` indices into `tasks`): every pair steered on an item, or asked about one. An adaptive audit's `looks`
    and `first` wave: as stats/per_prompt.py's (each test's p-value times the looks; the pitfall rate, the tag matrix
    and the position read the first wave's pairs)."""
    fdr = FDR if fdr is None else fdr
    ids = list(verdicts.criteria)
    members = {m.id: m for m in (*items, *shared)}
    worse_up = np.array([isinstance(m := members.get(c), Item) and m.pitfall for c in ids])  # a pitfall: down
    decisive = (verdicts.choice == A) | (verdicts.choice == B)
    chose_up = (verdicts.choice == A) == (verdicts.order == UP_FIRST)
    better = np.where(decisive, np.where(chose_up != worse_up[verdicts.source], 1, -1), 0)
    twice: dict[tuple[str, str, str], dict[int, int]] = {}  # (task, source, asked) -> variant -> 2 v
    for t, s, a, variant, b in zip(verdicts.task, verdicts.source, verdicts.asked, verdicts.variant, better):
        cell = twice.setdefault((tasks[t], ids[s], ids[a] if a < len(ids) else "overall"), {})
        cell[int(variant)] = cell.get(int(variant), 0) + int(b)
    values = {key: [Fraction(x, 2) for _, x in sorted(cell.items())] for key, cell in twice.items()}

    def v(task: str, a: str, b: str) -> list[Fraction]:
        """The pairs' v, variant by variant, steered on `a` and asked about `b`."""
        return values.get((task, a, b), [])

    def mean(task: str, a: str, b: str, of: dict[tuple[str, str, str], list[Fraction]] = values) -> Fraction | None:
        got = of.get((task, a, b), [])
        return sum(got, Fraction(0)) / len(got) if got else None

    by_task: dict[str, list[Item]] = {}
    for it in items:
        by_task.setdefault(it.task, []).append(it)

    def effects_of(of: dict[tuple[str, str, str], list[Fraction]]) -> dict[str, dict[tuple[str, str], Fraction | None]]:
        return {
            task: {(a.id, b.id): mean(task, a.id, b.id, of) for a, b in itertools.product(its, its)}
            for task, its in by_task.items()
        }

    effects, kept = effects_of(values), np.ones(len(verdicts.choice), bool)
    pooled_effects = effects
    if first is not None:  # an adaptive audit's first wave
        pooled_effects = effects_of(
            {k: [Fraction(x, 2) for w, x in sorted(c.items()) if w < first] for k, c in twice.items()}
        )
        kept = np.asarray(verdicts.variant, dtype=int) < first
    reversed_p = {it.id: over_looks(p_sign_flip(v(it.task, it.id, it.id), seed, "lower"), looks) for it in items}
    sign = evidence_of(reversed_p, level, fdr, KINDS)
    pair_p: dict[tuple[str, str, str], Fraction] = {}
    pair_rows: dict[tuple[str, str, str], tuple[Criterion, Criterion]] = {}
    for task, its in by_task.items():
        for x, a in enumerate(its):
            for b in [*its[x + 1 :], *shared]:
                to_b, to_a = v(task, a.id, b.id), v(task, b.id, a.id)
                if to_b and to_a:  # both asked (asked: all)
                    joint = [e / len(to_b) for e in to_b] + [e / len(to_a) for e in to_a]
                    pair_p[task, a.id, b.id] = over_looks(p_sign_flip(joint, seed, "upper"), looks)
                    pair_rows[task, a.id, b.id] = (a, b)
    found = []
    for key, ev in evidence_of(pair_p, level, fdr, KINDS).items():
        (task, _, _), (a, b) = key, pair_rows[key]
        ab, ba = float(mean(task, a.id, b.id) or 0), float(mean(task, b.id, a.id) or 0)  # both asked: neither None
        texts = {"a_text": a.description, "b_text": b.description}
        found.append(PairRow(task=task, a=a.id, b=b.id, **texts, leak_ab=ab, leak_ba=ba, sym=(ab + ba) / 2,
                             asym=(ab - ba) / 2, p=float(pair_p[key]), evidence=ev))  # fmt: skip
    found.sort(key=lambda r: (r.evidence != CONFIRMED, r.p))
    rows = []
    for it in items:
        own = effects[it.task][it.id, it.id]
        overall = mean(it.task, it.id, "overall")
        rows.append(
            ItemPreference(
                id=it.id,
                task=it.task,
                text=it.description,
                points=it.points,
                pairs=len(v(it.task, it.id, it.id)),
                self_effect=None if own is None else float(own),
                reads=at_least(own, PAIR_TAU),
                p_reversed=float(reversed_p[it.id]),
                sign_error=sign.get(it.id),
                overall=None if overall is None else float(overall),
            )  # fmt: skip
        )
    wrong = {  # per prompt, its pitfalls' share of verdicts preferring the worse response
        task: [(1 - float(e)) / 2 for it in its if it.pitfall and (e := pooled_effects[task][it.id, it.id]) is not None]
        for task, its in by_task.items()
    }
    rates = [float(np.mean(w)) for w in wrong.values() if w]
    rate, rate_ci = pooled(rates, level)
    floors = [Fraction(looks, 2**r.pairs) for r in rows if r.pairs]  # every pair of an item at -1: 2^-N
    pair_floors = [Fraction(looks, 2 ** (len(v(t, a, b)) + len(v(t, b, a)))) for t, a, b in pair_p]
    reach = {
        kind: r
        for kind, f, tests in (("sign_errors", floors, len(items)), ("pairs", pair_floors, len(pair_p)))
        if (r := reach_of(f, tests, level, KINDS)) is not None
    }
    return ItemPairs(
        verdicts=len(verdicts.choice),
        level=level,
        fdr=fdr,
        tau=PAIR_TAU,
        method=METHOD,
        prompts=len(by_task),
        items=rows,
        unread=[r.id for r in rows if not r.reads],
        pairs_tested=len(pair_p),
        pairs=found,
        sign_error_rate=rate,
        sign_error_ci=within_0_1(rate_ci),
        tags=tag_matrices(by_task, pooled_effects, level, seed, KINDS),
        position=_position(verdicts, level, seed, kept),
        reach=reach,
        looks=looks,
        pooled_below=first,
    )


def _position(verdicts: PairVerdicts, level: float, seed: int, kept: np.ndarray) -> ItemPosition:
    """The first slot's pull, per pair (task, source, variant): (first-slot choices - second-slot ones) / 2 over
    its decisive verdicts, tested by sign flips over the pairs; its two orders' disagreement, ties, unscored. Over
    the `kept` rows (an adaptive audit's first wave)."""
    task, source, variant, asked, order, choices = (
        getattr(verdicts, f)[kept] for f in ("task", "source", "variant", "asked", "order", "choice")
    )
    keys = [(int(t), int(s), int(v)) for t, s, v in zip(task, source, variant)]
    pull: dict[tuple[int, int, int], int] = {}
    firsts: dict[tuple[int, int, int], list[int]] = {}
    for key, choice in zip(keys, choices):
        if choice in (A, B):
            pull[key] = pull.get(key, 0) + (1 if choice == A else -1)
            firsts.setdefault(key, []).append(int(choice == A))
    p = p_sign_flip([Fraction(x, 2) for x in pull.values()], seed)
    bias, ci = pooled([float(np.mean(cs)) - 0.5 for cs in firsts.values()], level)  # the pairs' mean and its t
    both: dict[tuple[int, ...], dict[int, bool]] = {}  # (pair, asked) -> order -> chose up
    for key, question, shown, choice in zip(keys, asked, order, choices):
        if choice in (A, B):
            both.setdefault((*key, int(question)), {})[int(shown)] = (choice == A) == (shown == UP_FIRST)
    decided = [o for o in both.values() if len(o) == 2]
    scored = int(np.sum(choices >= 0))
    return ItemPosition(
        first_slot=None if bias is None else bias + 0.5,
        bias=bias,
        ci=ci,
        p=float(p),
        confirmed=bool(holm({"position": p}, 1 - (1 - level) / KINDS)),
        flip_rate=float(np.mean([o[0] != o[1] for o in decided])) if decided else None,
        ties=float(np.sum(choices == TIE)) / scored if scored else None,
        unscored=int(np.sum(choices < 0)),
    )
