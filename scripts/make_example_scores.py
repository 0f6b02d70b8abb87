"""Write the bundled example score table used by `make demo` before any model runs.

Usage: python scripts/make_example_scores.py
"""

from pathlib import Path

from radar_local.rubric import load_benchmark
from radar_local.score_table import write_scores
from radar_local.synthetic import HELPSTEER2_PLANTED, planted_table

if __name__ == "__main__":
    bench = load_benchmark("helpsteer2")
    table = planted_table(
        bench.rubric.ids, [t.id for t in bench.tasks], HELPSTEER2_PLANTED, n=5, n_unconditioned=10, seed=7
    )
    out = Path(__file__).resolve().parents[1] / "radar_local" / "benchmarks" / "example_helpsteer2.csv"
    write_scores(table, out)
    print(f"wrote {len(table)} rows to {out}")
