"""How often a pairwise judge's per-prompt audit (stats/item_pairs.py) confirms a finding that is false, and how often
it finds a planted one: a redundant item pair, a pitfall read as a quality, a position bias; the tag matrix's
coverage.

The truth: tasks shaped like HealthBench's (K = 11 items, 3 of them pitfalls, each item one of 5 axis tags). Each
item's N pairs are asked about every item of the prompt in both orders. Asked about item j of a pair steered on
item i, the judge picks the response better on i when
    u = MOVE * ([i = j] * reads_j + coupling_ij) + s * position + r + e > 0,
s = +1 where that response is shown first and -1 where second, r ~ N(0, pair_sd^2) one draw per pair (the judge
liking one of the pair's two responses on every question: what makes a pair, not a verdict, the unit), e standard
normal per verdict; MOVE = 1.6. reads_j is 1, or -1 for the planted pitfall read as a quality; coupling_ij is
`--pair` both ways for the planted redundant pair (items 1 and 2 of the first prompt) and `--tag-leak` from every
item tagged axis:0 into every item tagged axis:1, 0 elsewhere. `--position` is the first slot's pull (a nuisance
where `--plant` is off and it is not 0: it moves no finding but the position's).

    .venv/bin/python scripts/item_pairs_error.py --reps 200 --ns 5 10 20                 # nothing planted
    .venv/bin/python scripts/item_pairs_error.py --reps 200 --ns 5 10 20 --position 0.3  # a position bias alone
    .venv/bin/python scripts/item_pairs_error.py --reps 200 --ns 5 10 20 --plant         # pair, pitfall, tag cell

Reported per N: the share of audits with any false confirmed finding (sign error, pair, tag cell, and the position
where none is planted; Wilson 95% interval), the false share among screened pairs, the planted pair and pitfall
confirmed or screened, the position bias confirmed, the pooled pitfall rate's coverage and the tag matrix's per-cell
coverage (every cell; its truth is 0 but for the planted one).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# the same prompts as the pointwise audit's
from per_prompt_error import MOVE, PITFALLS, K, items_of, truth_options, wilson

from radar_local.rubric import Item
from radar_local.stats.item_pairs import item_pairs
from radar_local.stats.pairwise import DOWN_FIRST, UP_FIRST, A, B, PairVerdicts


def coupling_of(t: int, its: list[Item], args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    reads, coupling = np.ones(K), np.zeros((K, K))
    if args.plant:
        tagged = [[f"axis:{x}" in it.tags for it in its] for x in range(2)]
        coupling[np.ix_(tagged[0], tagged[1])] = args.tag_leak
        np.fill_diagonal(coupling, 0)
        if t == 0:
            coupling[1, 2] = coupling[2, 1] = args.pair
            reads[K - 1] = -1  # the last pitfall, read as a quality
    return reads, coupling


def simulate(n: int, rng: np.random.Generator, args: argparse.Namespace) -> tuple:
    """The verdicts, the tasks, the items, and the coupled pairs (item ids, either way: a true pair finding)."""
    cols: list[list[np.ndarray]] = [[] for _ in range(6)]  # task, source, variant, asked, order, choice
    items, coupled = [], set()
    for t in range(args.prompts):
        its = items_of(t)
        items += its
        reads, coupling = coupling_of(t, its, args)
        coupled |= {
            (its[a].id, its[b].id) for a in range(K) for b in range(a + 1, K) if coupling[a, b] or coupling[b, a]
        }
        worse_up = np.array([it.pitfall for it in its])
        src, var, ask, order = (x.ravel() for x in np.meshgrid(range(K), range(n), range(K), (0, 1), indexing="ij"))
        r = rng.normal(0, args.pair_sd, (K, n))[src, var]
        first = np.where(order == 0, 1.0, -1.0)  # the better response shown first in order 0 (up first, or not)
        better_first = np.where(worse_up[src], -first, first)
        u = MOVE * (np.where(src == ask, reads[ask], 0) + coupling[src, ask]) + better_first * args.position + r
        chose_better = u + rng.standard_normal(len(u)) > 0
        slot_a = chose_better == (better_first > 0)
        for c, x in zip(cols, (np.full(len(u), t), src + t * K, var, ask + t * K, order, np.where(slot_a, A, B))):
            c.append(x)
    task, source, variant, asked, order, choice = (np.concatenate(c) for c in cols)
    ids = tuple(it.id for it in items)
    order = np.where(order == 0, UP_FIRST, DOWN_FIRST)
    verdicts = PairVerdicts(ids, task, source, variant, asked, order, choice)
    return verdicts, [f"p{t}" for t in range(args.prompts)], items, coupled


def true_effect(coupling: float, reads: float, position: float, pair_sd: float) -> float:
    """E[v]: the mean over the two orders of P(better) - P(worse) for the latent's move."""
    scale = np.sqrt(1 + pair_sd**2)
    m = MOVE * (coupling + reads)
    return float(np.mean([2 * stats.norm.cdf((m + s * position) / scale) - 1 for s in (1, -1)]))


def run(n: int, args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed + n)
    any_false = pair_found = pitfall_found = position_found = rate_covered = 0
    false_screened = screened = covered = cells = 0
    pitfall = f"p0_{K - 1}"
    for rep in range(args.reps):
        verdicts, tasks, items, coupled = simulate(n, rng, args)
        out = item_pairs(verdicts, tasks, items, seed=rep)
        false_pairs = [p for p in out.pairs if (p.a, p.b) not in coupled]
        false_signs = [r for r in out.items if r.sign_error and not (args.plant and r.id == pitfall)]
        false_tags = [c for c in out.tags["axis"].confirmed if not (args.plant and c == ["axis:0", "axis:1"])]
        any_false += (
            any(p.evidence == "confirmed" for p in false_pairs)
            or any(r.sign_error == "confirmed" for r in false_signs)
            or bool(false_tags)
            or (out.position.confirmed and args.position == 0)
        )
        screened += len(out.pairs)
        false_screened += len(false_pairs)
        pair_found += any((p.a, p.b) == ("p0_1", "p0_2") for p in out.pairs)
        pitfall_found += any(r.id == pitfall and r.sign_error for r in out.items)
        position_found += out.position.confirmed
        # the pooled pitfall rate: each prompt's (1 - e_aa) / 2 over its pitfalls; prompt 0's last read backwards
        right = (1 - true_effect(0, 1, args.position, args.pair_sd)) / 2
        wrong = (1 - true_effect(0, -1, args.position, args.pair_sd)) / 2
        per = [
            (wrong + (PITFALLS - 1) * right) / PITFALLS if args.plant and t == 0 else right for t in range(len(tasks))
        ]
        truth = float(np.mean(per))
        ci = out.sign_error_ci
        rate_covered += ci is not None and ci[0] <= truth <= ci[1]
        for s, row in out.tags["axis"].ci.items():
            for t, cell in row.items():
                if cell is None:
                    continue
                cells += 1
                leak = args.tag_leak if args.plant and (s, t) == ("axis:0", "axis:1") else 0.0
                covered += cell[0] <= true_effect(leak, 0, args.position, args.pair_sd) <= cell[1]
    reps = args.reps
    lo, hi = wilson(any_false, reps)
    return {
        "n": n,
        "any_false_confirmed": any_false / reps,
        "any_false_confirmed_ci": (round(lo, 3), round(hi, 3)),
        "false_share_of_screened": round(false_screened / screened, 3) if screened else None,
        "pair_found": pair_found / reps if args.plant else None,
        "pitfall_found": pitfall_found / reps if args.plant else None,
        "position_confirmed": position_found / reps,
        "pitfall_rate_coverage": rate_covered / reps,
        "tag_coverage": round(covered / cells, 3) if cells else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--ns", type=int, nargs="+", default=[5])
    truth_options(ap)
    ap.add_argument("--position", type=float, default=0.0)
    ap.add_argument("--pair-sd", type=float, default=0.5)
    args = ap.parse_args()
    for n in args.ns:
        start = time.time()
        print({**run(n, args), "seconds": round(time.time() - start, 1)}, flush=True)


if __name__ == "__main__":
    main()
