"""Benchmark: a synthetic 1,000,000-row score table through `radar stats` with 500 resamples.

Usage: .venv/bin/python scripts/bench_stats.py [--rows 1000000] [--format csv|parquet]
Prints wall time of the whole command (read, validate, pivot, bootstrap, budget, print), and its ratio to a bare
pandas read of the same file and a group-by of its scores per stratum and criterion (the floor any tool pays:
issue 60 item 25 found the ratio grown from 9.2 to 13.3 after the CSV cells' formula guard was read cell by cell).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from radar_local.score_table import write_scores
from radar_local.synthetic import planted_table

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--format", choices=["csv", "parquet"], default="csv")
    ap.add_argument("--bootstrap", type=int, default=500)
    args = ap.parse_args()
    k, tasks = 8, [f"task{i}" for i in range(5)]
    n = int(np.ceil(args.rows / (k * len(tasks) * k * 2)))
    rng = np.random.default_rng(0)
    planted = np.eye(k) + np.triu(rng.uniform(-0.2, 0.8, (k, k)), 1) * (rng.random((k, k)) < 0.4)
    crit = [f"c{i}" for i in range(k)]
    df = planted_table(crit, tasks, planted, n=n, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"scores.{args.format}"
        write_scores(df, path)
        cmd = [
            sys.executable,
            "-m",
            "radar_local.cli",
            "stats",
            str(path),
            "--bootstrap",
            str(args.bootstrap),
            "--json",
            str(Path(tmp) / "s.json"),
        ]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        start = time.perf_counter()
        read = pd.read_parquet(path) if args.format == "parquet" else pd.read_csv(path, dtype={"variant": str})
        read.groupby(["generator", "verifier", "task_id", "target", "direction", "criterion"])["score"].mean()
        floor = time.perf_counter() - start
    print(
        f"rows={len(df):,} criteria={k} tasks={len(tasks)} probes/stratum={n} format={args.format} "
        f"resamples={args.bootstrap}: radar stats wall time {wall:.2f} s, {wall / floor:.1f}x a pandas read and "
        f"group-by ({floor:.2f} s)"
    )
