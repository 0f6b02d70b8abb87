"""How an adaptive per-prompt audit (radar_local/adaptive.py: waves grow whole prompts while their own findings are
open; each exact test counts the looks) trades probes for findings against fixed-N audits of the same truth.

The truth and judge are scripts/per_prompt_error.py's (tasks shaped like HealthBench's: 11 items, 3 pitfalls, met /
not met; `--plant`: a redundant pair of latent 0.6 and a pitfall read backwards in the first prompt, a tag leak of
0.3 in every prompt). Each replication draws every probe up to max_n, then runs the waves through the audit's own
code: per_prompt at each prompt's N (looks and first wave as an adaptive config sets them), prompt_decisions, grown
and grow, until no prompt grows.

    .venv/bin/python scripts/adaptive_items_error.py --reps 200 --design 6 3 15           # nothing planted
    .venv/bin/python scripts/adaptive_items_error.py --reps 200 --design 6 3 15 --plant   # planted

Reported per design (start_n step max_n): the share of audits confirming any false finding (Wilson 95%), the false
share of the screened pairs, the planted pair and pitfall found (confirmed or screened; and confirmed alone), the
tag matrix's coverage (first wave), the mean N a prompt ended at, its verifier calls as a share of a fixed audit at
max_n, and the waves.
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from per_prompt_error import K, simulate, true_cell, truth_options, wilson

from radar_local.adaptive import grow, grown, prompt_decisions
from radar_local.config import Adaptive
from radar_local.stats import per_prompt as per_prompt_module
from radar_local.stats.per_prompt import CONFIRMED, per_prompt

PLANTED_PAIR, PLANTED_PITFALL = ("p0_1", "p0_2"), f"p0_{K - 1}"


def waves(table, items, spec: Adaptive, seed: int) -> tuple:
    """The adaptive audit of one replication's probes: its last per_prompt block, each prompt's N, the waves."""
    sizes = {(it.task, it.id, d): spec.start_n for it in items for d in ("+", "-")}
    for wave in range(1, spec.looks + 1):
        n_of = {task: n for (task, _, _), n in sizes.items()}
        shown = table[table["variant"] < table["task_id"].map(n_of)]
        out = per_prompt(shown, items, dict.fromkeys([i.id for i in items], 1.0), seed=seed, looks=spec.looks,
                         first=spec.start_n)  # fmt: skip
        still_open = [d for d in prompt_decisions(out) if d.value is None]
        following = grow(sizes, grown(sizes, still_open, True), spec.step, spec.max_n, True)
        if following == sizes:
            return out, n_of, wave
        sizes = following
    raise AssertionError("the waves outran their looks")


def run(design: list[int], args: argparse.Namespace) -> dict:
    spec = Adaptive(start_n=design[0], step=design[1], max_n=design[2])
    rng = np.random.default_rng(args.seed + spec.max_n)
    any_confirmed = pair_found = pair_confirmed = pitfall_found = pitfall_confirmed = 0
    false_kinds = {"pairs": 0, "sign_errors": 0, "tag_cells": 0}  # audits confirming a false finding of each kind
    false_screened = screened = covered = cells = 0
    ns: list[float] = []
    rounds: list[int] = []
    for rep in range(args.reps):
        table, items, coupled = simulate(args.prompts, spec.max_n, rng, args.plant, args.pair, args.tag_leak)
        out, n_of, wave = waves(table, items, spec, rep)
        ns.append(float(np.mean(list(n_of.values()))))
        rounds.append(wave)
        false_pairs = [p for p in out.pairs if (p.a, p.b) not in coupled]
        false_signs = [r for r in out.items if r.sign_error and not (args.plant and r.id == PLANTED_PITFALL)]
        false_tags = [c for c in out.tags["axis"].confirmed if not (args.plant and c == ["axis:0", "axis:1"])]
        kinds = {
            "pairs": any(p.evidence == CONFIRMED for p in false_pairs),
            "sign_errors": any(r.sign_error == CONFIRMED for r in false_signs),
            "tag_cells": bool(false_tags),
        }
        any_confirmed += any(kinds.values())
        for kind, found_one in kinds.items():
            false_kinds[kind] += found_one
        screened += len(out.pairs)
        false_screened += len(false_pairs)
        found = [p.evidence for p in out.pairs if (p.a, p.b) == PLANTED_PAIR]
        pair_found += bool(found)
        pair_confirmed += found == [CONFIRMED]
        sign = [r.sign_error for r in out.items if r.id == PLANTED_PITFALL]
        pitfall_found += bool(sign[0])
        pitfall_confirmed += sign[0] == CONFIRMED
        for s, row in out.tags["axis"].ci.items():
            for t, ci in row.items():
                if ci is not None:
                    cells += 1
                    truth = true_cell(int(s.split(":")[1]), int(t.split(":")[1]), args.plant, args.tag_leak)
                    covered += ci[0] <= truth <= ci[1]
    reps = args.reps
    lo, hi = wilson(any_confirmed, reps)
    planted = args.plant
    return {
        "design": f"{spec.start_n}-{spec.max_n} step {spec.step} ({spec.looks} looks), screen "
        f"{per_prompt_module.PROMPT_SCREEN}",
        "any_confirmed": any_confirmed / reps,
        "any_confirmed_ci": (round(lo, 3), round(hi, 3)),
        "false_by_kind": false_kinds,
        "false_share_of_screened": round(false_screened / screened, 3) if screened else None,
        "pair_found": pair_found / reps if planted else None,
        "pair_confirmed": pair_confirmed / reps if planted else None,
        "pitfall_found": pitfall_found / reps if planted else None,
        "pitfall_confirmed": pitfall_confirmed / reps if planted else None,
        "tag_coverage": round(covered / cells, 4) if cells else None,
        "mean_n": round(float(np.mean(ns)), 2),
        "calls_vs_fixed_max_n": round(float(np.mean(ns)) / spec.max_n, 3),
        "waves": round(float(np.mean(rounds)), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--design", type=int, nargs=3, action="append", metavar=("START_N", "STEP", "MAX_N"))
    truth_options(ap)
    ap.add_argument("--screen", type=Fraction, default=None, help="a prompt's screen other than the audit's, to weigh")
    args = ap.parse_args()
    if args.screen is not None:  # the trade-off the default rests on: more prompts grow, more findings open
        per_prompt_module.PROMPT_SCREEN = args.screen
    for design in args.design or [[6, 3, 15]]:
        start = time.time()
        print({**run(design, args), "seconds": round(time.time() - start, 1)}, flush=True)


if __name__ == "__main__":
    main()
