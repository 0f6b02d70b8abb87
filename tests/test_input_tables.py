"""Score tables and stats files as radar reads them: malformed, fuzzed or of another schema, each one line and
exit 2; and a written score table that a spreadsheet reads as data, never as a formula."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from radar_local.auditing import run_audit
from radar_local.score_table import read_scores
from tests.conftest import invoke, one_line_exit_2, planted_config, probes, table
from tests.fuzzing import SETTINGS, broken, check, run

REPO = Path(__file__).resolve().parents[1]


SMALL_RUBRIC = REPO / "tests" / "data" / "small_rubric.yaml"


def valid_table() -> pd.DataFrame:
    rows = []
    for task in ("t1", "t2"):
        for target in ("a", "b"):
            for d, hi in (("+", 4), ("-", 0)):
                for v in range(2):
                    rows += [("g", "v", task, target, d, str(v), c, hi if c == target else 2) for c in ("a", "b")]
    return pd.DataFrame(
        rows, columns=["generator", "verifier", "task_id", "target", "direction", "variant", "criterion", "score"]
    )


@st.composite
def broken_tables(draw) -> pd.DataFrame:
    return broken(
        draw, valid_table().astype(str), 4, ["cell", "drop_col", "rename_col", "drop_rows", "dup_row", "extra_col"]
    )


FORMULAS = ['=HYPERLINK("http://x","y")', "@SUM(1+1)", "+1", "-cmd", "'=quoted"]


def test_stats_on_a_table_of_only_unconditioned_probes(tmp_path):
    path = tmp_path / "none.csv"
    table(probes("t", "", "none", [{"a": 1, "b": 2}, {"a": 3, "b": 2}])).to_csv(path, index=False)
    one_line_exit_2(invoke("stats", path), path, "only unconditioned ('none') probes")


@pytest.mark.parametrize(
    "content,needle",
    [
        ({"pairs": [], "reliable": {}}, "schema_version None"),
        ({"schema_version": 99, "pairs": [], "reliable": {}}, "upgrade radar_local"),
        (
            {"schema_version": 2, "pairs": [{"a": "x"}], "reliable": {}, "criteria": []},
            "is not a complete RADAR stats file",
        ),
        (
            {"schema_version": 2, "pairs": [], "reliable": {}, "criteria": ["x"]},
            "is not a complete RADAR stats file (key 'generator': Field required)",
        ),
    ],
)
def test_compare_on_json_without_the_expected_keys(tmp_path, content, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(content))
    one_line_exit_2(invoke("compare", bad, bad), bad, needle)


def test_report_on_stats_from_an_older_schema(tmp_path):
    from tests.report_fixtures import planted_run

    run = planted_run(tmp_path / "run")
    stats = json.loads((run / "stats.json").read_text())
    (run / "stats.json").write_text(json.dumps({**stats, "schema_version": 1}))
    one_line_exit_2(invoke("report", run), run / "stats.json", "schema_version 1")
    assert not (run / "report").exists()


def test_compare_on_deeply_nested_stats(tmp_path, finished_run):
    stats = tmp_path / "stats.json"
    stats.write_text("[" * 100_000 + "]" * 100_000)
    one_line_exit_2(invoke("compare", finished_run, stats), stats, "not valid JSON")


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda d: d["pairs"][0].update(a=["helpfulness"]), "key 'pairs.0.a': Input should be a valid string"),
        (lambda d: d["pairs"][0].update(ci={"sym": [], "asym": [0, 0]}), "key 'pairs.0.ci.sym.0': Field required"),
        (lambda d: d["pairs"][0].update(ci={"sym": [0.1], "asym": [0, 0]}), "key 'pairs.0.ci.sym.1': Field required"),
        (lambda d: d["pairs"][0].update(sym=10**400), "key 'pairs.0.sym': Input should be a finite number"),
        (lambda d: d["pairs"][0].update(sym="high"), "key 'pairs.0.sym': Input should be a valid number"),
    ],
)
def test_compare_on_stats_of_the_wrong_shape(finished_run, tmp_path, edit, needle):
    data = json.loads((finished_run / "stats.json").read_text())
    edit(data)
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps(data))
    one_line_exit_2(invoke("compare", finished_run, stats, "--fail-on-sym", "0.5"), stats, needle)


@SETTINGS
@given(df=broken_tables(), fmt=st.sampled_from(["csv", "parquet"]))
def test_malformed_score_tables(tmp_path_factory, df, fmt):
    tmp = tmp_path_factory.mktemp("t")
    path = tmp / f"scores.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.columns = [str(c) for c in df.columns]
        try:
            df.loc[:, ~df.columns.duplicated()].to_parquet(path, index=False)
        except (ValueError, TypeError):
            pytest.skip("pyarrow cannot store this frame")
    out = tmp / "stats.json"
    check(run("stats", path, "--bootstrap", 0, "--json", out), path, [out])


@SETTINGS
@given(data=st.binary(max_size=200), suffix=st.sampled_from([".csv", ".parquet"]))
def test_score_files_of_random_bytes(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("b") / f"scores{suffix}"
    path.write_bytes(data)
    check(run("stats", path, "--bootstrap", 0), path, [])


def test_no_cell_of_a_written_score_table_runs_as_a_formula_and_the_table_reads_back(tmp_path):
    tasks = [{"id": t, "prompt": f"Reply to customer {i}."} for i, t in enumerate(FORMULAS)]
    run_audit(planted_config(tasks=tasks, n=1, bootstrap=0), tmp_path / "run")
    table = tmp_path / "run" / "scores.csv"
    with table.open(newline="") as fh:
        cells = [cell for row in list(csv.reader(fh))[1:] for i, cell in enumerate(row) if i != 4]  # 4: direction
    assert cells and not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert set(read_scores(table)["task_id"]) == set(FORMULAS)  # read back as the tasks are named
