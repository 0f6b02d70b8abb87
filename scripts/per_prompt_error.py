"""How often a per-prompt audit (stats/per_prompt.py) confirms a finding that is false, and how often it finds a
planted one: a redundant item pair, a sign-confused pitfall, and the tag matrix's coverage.

The truth: tasks shaped like HealthBench's (K = 11 items, 3 of them pitfalls, each item one of 5 axis tags), every
verdict met / not met. A judge's verdict on item j of a probe steered d (+1 / -1) on item i is met when the latent
move * d * ([i = j] * reads_j + coupling_ij) + e > 0, e standard normal; move = 1.6 (a self-effect of 0.89).
reads_j is 1, -1 for a sign-confused item, 0 for a blind one; coupling_ij is `--pair` both ways for the planted
redundant pair (items 1 and 2 of the first prompt), `--tag-leak` from every item tagged axis:0 into every item tagged
axis:1 (the tag matrix's one non-zero cell, the same in every prompt), 0 elsewhere. Each replication is one audit
(T prompts, N probes a side) through stats/per_prompt.per_prompt.

    .venv/bin/python scripts/per_prompt_error.py --reps 200 --ns 5 10 20          # nothing planted: false findings
    .venv/bin/python scripts/per_prompt_error.py --reps 200 --ns 5 10 20 --plant  # planted pair, pitfall, tag cell

Reported per N: the share of audits with any confirmed finding (Wilson 95% interval), the false share among screened
pairs, the planted pair confirmed or screened, the planted pitfall's sign error confirmed or screened, and the tag
matrix's per-cell interval coverage (every cell; its truth is 0 but for the planted one). A pair is false where
nothing couples its items either way (the tag leak couples pairs of the first two axes one way: true findings).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local.rubric import Item
from radar_local.stats.per_prompt import CONFIRMED, per_prompt

MOVE = 1.6
K, PITFALLS, AXES = 11, 3, 5


def items_of(t: int) -> list[Item]:
    """Prompt t's items: the last PITFALLS negative, each item's axis its place mod AXES (every prompt alike)."""
    out = []
    for k in range(K):
        points = -float(1 + k % 5) if k >= K - PITFALLS else float(1 + k % 7)
        text = f"Prompt {t} item {k}"
        out.append(Item(id=f"p{t}_{k}", label=text, description=text, task=f"p{t}", points=points,
                        tags=(f"axis:{k % AXES}",)))  # fmt: skip
    return out


def simulate(prompts: int, n: int, rng: np.random.Generator, plant: bool, pair: float, tag_leak: float) -> tuple:
    """The score table, the items, and the coupled pairs (item ids, either way: a true redundant-pair finding)."""
    rows, items, coupled = [], [], set()
    for t in range(prompts):
        its = items_of(t)
        items += its
        reads = np.ones(K)
        coupling = np.zeros((K, K))
        if plant:
            tagged = [[f"axis:{x}" in it.tags for it in its] for x in range(2)]
            coupling[np.ix_(tagged[0], tagged[1])] = tag_leak
            np.fill_diagonal(coupling, 0)
            if t == 0:
                coupling[1, 2] = coupling[2, 1] = pair
                reads[K - 1] = -1  # the last pitfall, read backwards
        coupled |= {
            (its[a].id, its[b].id) for a in range(K) for b in range(a + 1, K) if coupling[a, b] or coupling[b, a]
        }
        for i in range(K):
            for d, sign in (("+", 1), ("-", -1)):
                latent = MOVE * sign * (np.eye(K)[i] * reads + coupling[i])
                met = (latent[None, :] + rng.standard_normal((n, K)) > 0).astype(float)
                for v in range(n):
                    rows += [(f"p{t}", its[i].id, d, v, its[j].id, met[v, j]) for j in range(K)]
    table = pd.DataFrame(rows, columns=["task_id", "target", "direction", "variant", "criterion", "score"])
    return table, items, coupled


def true_cell(s: int, t: int, plant: bool, tag_leak: float) -> float:
    """The tag matrix's true cell: D_ij = P(met | +) - P(met | -) of the latent, 0 where nothing couples them."""
    c = tag_leak if plant and (s, t) == (0, 1) else 0.0
    return float(stats.norm.cdf(MOVE * c) - stats.norm.cdf(-MOVE * c))


def wilson(k: int, n: int) -> tuple[float, float]:
    lo, hi = stats.binomtest(k, n).proportion_ci(method="wilson")
    return lo, hi


def run(n: int, args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed + n)
    any_confirmed = pair_found = pitfall_found = 0
    false_screened, screened = 0, 0
    covered, cells = 0, 0
    for rep in range(args.reps):
        table, items, coupled = simulate(args.prompts, n, rng, args.plant, args.pair, args.tag_leak)
        out = per_prompt(table, items, dict.fromkeys([i.id for i in items], 1.0), seed=rep)
        planted_pair = ("p0_1", "p0_2")
        false_pairs = [p for p in out.pairs if (p.a, p.b) not in coupled]  # a one-way tag leak couples a pair too
        false_signs = [r for r in out.items if r.sign_error and not (args.plant and r.id == f"p0_{K - 1}")]
        false_tags = [c for c in (out.tags["axis"].confirmed) if not (args.plant and c == ["axis:0", "axis:1"])]
        any_confirmed += (
            any(p.evidence == CONFIRMED for p in false_pairs)
            or any(r.sign_error == CONFIRMED for r in false_signs)
            or bool(false_tags)
        )
        screened += len(out.pairs)
        false_screened += len(false_pairs)
        pair_found += any((p.a, p.b) == planted_pair for p in out.pairs)
        pitfall_found += any(r.id == f"p0_{K - 1}" and r.sign_error for r in out.items)
        for s, row in out.tags["axis"].ci.items():
            for t, ci in row.items():
                if ci is None:
                    continue
                cells += 1
                truth = true_cell(int(s.split(":")[1]), int(t.split(":")[1]), args.plant, args.tag_leak)
                covered += ci[0] <= truth <= ci[1]
    reps = args.reps
    lo, hi = wilson(any_confirmed, reps)
    return {
        "n": n,
        "any_confirmed": any_confirmed / reps,
        "any_confirmed_ci": (round(lo, 3), round(hi, 3)),
        "false_share_of_screened": false_screened / screened if screened else None,
        "pair_found": pair_found / reps if args.plant else None,
        "pitfall_found": pitfall_found / reps if args.plant else None,
        "tag_coverage": covered / cells if cells else None,
    }


def truth_options(ap: argparse.ArgumentParser) -> None:
    """The simulated truth's options, shared by the per-prompt scripts: how many prompts, and what is planted."""
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--plant", action="store_true")
    ap.add_argument("--pair", type=float, default=0.6)
    ap.add_argument("--tag-leak", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--ns", type=int, nargs="+", default=[5])
    truth_options(ap)
    args = ap.parse_args()
    for n in args.ns:
        start = time.time()
        print({**run(n, args), "seconds": round(time.time() - start, 1)}, flush=True)


if __name__ == "__main__":
    main()
