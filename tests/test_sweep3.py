"""The adversarial sweep of issue 42 (items 9-18), one test per finding at the depth it belongs: imported files that
reach outside their folder or become live template code, labels read one way, formulas that a spreadsheet would
run, writes over what is not radar's, runs that must read back, bounded rendering and matching, one line where a
traceback was, and messages that say what is true. The planted engine, no model."""

from __future__ import annotations

import csv
from pathlib import Path

from radar_local.run import run_audit
from radar_local.score_table import read_scores
from tests.conftest import planted_config

REPO = Path(__file__).resolve().parents[1]
FORMULAS = ['=HYPERLINK("http://x","y")', "@SUM(1+1)", "+1", "-cmd", "'=quoted"]


def test_item13_no_cell_of_a_written_score_table_runs_as_a_formula_and_the_table_reads_back(tmp_path):
    tasks = [{"id": t, "prompt": f"Reply to customer {i}."} for i, t in enumerate(FORMULAS)]
    run_audit(planted_config(tasks=tasks, n=1, bootstrap=0), tmp_path / "run")
    table = tmp_path / "run" / "scores.csv"
    with table.open(newline="") as fh:
        cells = [cell for row in list(csv.reader(fh))[1:] for i, cell in enumerate(row) if i != 4]  # 4: direction
    assert cells and not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert set(read_scores(table)["task_id"]) == set(FORMULAS)  # read back as the tasks are named
