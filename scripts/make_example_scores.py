"""Write the bundled example score table used by `make demo` before any model runs.

Usage: python scripts/make_example_scores.py [--out PATH]
"""

import argparse
from pathlib import Path

from radar_local.rubric import load_benchmark
from radar_local.score_table import write_scores
from radar_local.synthetic import HELPSTEER2_PLANTED, planted_table

BUNDLED = Path(__file__).resolve().parents[1] / "radar_local" / "benchmarks" / "example_helpsteer2.csv"

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=BUNDLED)
    out = ap.parse_args().out
    bench = load_benchmark("helpsteer2")
    table = planted_table(
        bench.rubric.ids, [t.id for t in bench.tasks], HELPSTEER2_PLANTED, n=5, n_unconditioned=10, seed=7
    )
    write_scores(table, out)
    print(f"wrote {len(table)} rows to {out}")
