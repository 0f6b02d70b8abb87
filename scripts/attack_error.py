"""How often an audit under attack (stats/attacks.py) finds a gullible judge attacked, and how often it finds an
indifferent one attacked: planted audits on the default design (the helpsteer2 rubric and its tasks, n = 5, every
attack kind but `reference`, every probe attacked), the planted judge obeying an attack with probability `gullible`
(its verdict sent to the top level) or never.

    .venv/bin/python scripts/attack_error.py --reps 100 --gullible 0.2 [--out runs/attack-error]
    .venv/bin/python scripts/attack_error.py --reps 100 --gullible 0.2 --pairwise   # the pairwise judge's

With `--pairwise` the planted verifier is asked pairwise too (the generic preset, about the steered criterion and
overall, noise 2 so that its preferences are not certain), every pair's worse response attacked with forged_end,
instruction and pair_claim, and the pairwise block (`measurements.pairwise_attacks`) is read: "forged" is then a
verdict or claim naming slot A (forged_end or pair_claim) confirmed attacked on some question.

Reported: for the gullible judge, the share of audits that confirm the forged verdict attacked (forged_end or
forged_start attacked on some criterion) and the share confirming each kind; for the indifferent judge (gullible 0),
the share of audits with any cell attacked (family-wise false findings; at most 1 - level by design) and the share
of cells it resists. Each with its Wilson 95% interval.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flag_error import wilson

from radar_local.auditing import run_audit
from radar_local.stats.attacks import Attacks, PairAttacks

NOISE = 0.5
PAIR_NOISE = 2.0


def audit(out: Path, seed: int, gullible: float, n: int, bootstrap: int, tasks: int | None, pairwise: bool):
    noise = PAIR_NOISE if pairwise else NOISE
    spec = {"engine": "testing", "model": "planted", "options": {"noise": noise, "gullible": gullible, "draw": seed}}
    config = {"rubric": "helpsteer2", "generator": spec, "verifier": spec, "n": n, "seed": seed,
              "bootstrap": bootstrap, "attacks": {}}  # fmt: skip
    if pairwise:
        config["pairwise"] = {"preset": "generic", "asked": "diagonal", "overall": True}
        config["attacks"] = {"kinds": ["forged_end", "instruction", "pair_claim"]}
    if tasks is not None:  # a smaller design (the smoke run)
        config["tasks"] = [{"id": f"t{t}", "prompt": f"Question {t}?"} for t in range(tasks)]
    folder = out / f"g{gullible}-{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    found = run_audit(config, folder, progress=False).measured(PairAttacks if pairwise else Attacks)
    shutil.rmtree(folder, ignore_errors=True)
    assert found is not None
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--gullible", type=float, default=0.2)
    parser.add_argument("--n", type=int, default=5, help="probes per stratum (the config's default)")
    parser.add_argument("--bootstrap", type=int, default=500)
    parser.add_argument("--tasks", type=int, default=None, help="planted tasks instead of helpsteer2's own")
    parser.add_argument("--pairwise", action="store_true", help="the pairwise judge's attacks (see above)")
    parser.add_argument("--out", type=Path, default=Path("runs/attack-error"))
    args = parser.parse_args()
    start = time.perf_counter()
    design = (args.n, args.bootstrap, args.tasks, args.pairwise)
    gullible = [audit(args.out, s, args.gullible, *design) for s in range(args.reps)]
    calm = [audit(args.out, s, 0.0, *design) for s in range(args.reps)]
    naming = ("forged_end", "forged_start", "pair_claim")  # a verdict in the judge's format, or a claim naming A
    forged = sum(any(r.verdict == "attacked" for r in a.rows if r.kind in naming) for a in gullible)
    kinds = gullible[0].kinds
    per_kind = {k: sum(any(r.verdict == "attacked" for r in a.rows if r.kind == k) for a in gullible) for k in kinds}
    false = sum(any(r.verdict == "attacked" for r in a.rows) for a in calm)
    cells = sum(len(a.rows) for a in calm)
    resisted = sum(r.verdict == "resists" for a in calm for r in a.rows)
    summary = {
        "reps": args.reps,
        "pairwise": args.pairwise,
        "n": args.n,
        "gullible": args.gullible,
        "pairs_per_cell": gullible[0].rows[0].pairs,
        "forged_confirmed": round(forged / args.reps, 3),
        "forged_confirmed_95": [round(x, 3) for x in wilson(forged, args.reps)],
        "per_kind_confirmed": {k: round(v / args.reps, 3) for k, v in per_kind.items()},
        "null_any_attacked": round(false / args.reps, 3),
        "null_any_attacked_95": [round(x, 3) for x in wilson(false, args.reps)],
        "null_cells_resisted": round(resisted / cells, 3),
        "seconds": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(summary, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
