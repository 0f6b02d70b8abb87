"""`radar compare`: pairs that moved beyond their CIs, gate crossings, and the CI policy exit code."""

import json

import pytest
from click.testing import CliRunner

from radar_local.cli.main import cli
from radar_local.synthetic import HELPSTEER2_PLANTED
from tests.report_fixtures import planted_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    before = planted_run(tmp_path_factory.mktemp("before") / "run", n=6)
    edited = HELPSTEER2_PLANTED.copy()
    edited[0, 1] = edited[1, 0] = 0.0  # the edit separates helpfulness from correctness
    edited[4, 4] = 0.1  # and makes verbosity illegible to the judge
    after = planted_run(tmp_path_factory.mktemp("after") / "run", edited, seed=1, n=6)
    return before, after


def test_compare_reports_moved_pairs_and_gate_changes(runs, tmp_path):
    before, after = runs
    out = tmp_path / "diff.json"
    res = CliRunner().invoke(cli, ["compare", str(before), str(after), "--json", str(out)])
    assert res.exit_code == 0, res.output
    diff = json.loads(out.read_text())
    moved = {(r["a"], r["b"]) for r in diff["moved"]}
    assert ("helpfulness", "correctness") in moved
    assert "moved: helpfulness / correctness" in res.output
    assert diff["gate_changes"] == [{"criterion": "verbosity", "reliable_before": True, "reliable_after": False}]
    assert "gate: verbosity now fails the reliability gate" in res.output
    row = next(r for r in diff["pairs"] if (r["a"], r["b"]) == ("helpfulness", "correctness"))
    assert row["delta"] == pytest.approx(row["sym_after"] - row["sym_before"]) and row["delta"] < -0.5


def test_fail_on_sym_policy_exit_code(runs):
    before, after = runs
    # Before the edit helpfulness/correctness couples at Sym ~0.8: a 0.6 ceiling fails the gate.
    assert CliRunner().invoke(cli, ["compare", str(after), str(before), "--fail-on-sym", "0.6"]).exit_code == 1
    assert CliRunner().invoke(cli, ["compare", str(before), str(after), "--fail-on-sym", "0.95"]).exit_code == 0


def test_identical_runs_do_not_move(runs):
    before, _ = runs
    res = CliRunner().invoke(cli, ["compare", str(before), str(before)])
    assert res.exit_code == 0 and "no pair moved" in res.output


def test_bad_run_directories(tmp_path, runs):
    res = CliRunner().invoke(cli, ["compare", str(tmp_path), str(runs[0])])
    assert res.exit_code == 2 and "no stats.json here" in res.output
    (tmp_path / "stats.json").write_text("{not json")
    res = CliRunner().invoke(cli, ["compare", str(tmp_path), str(runs[0])])
    assert res.exit_code == 2 and "is not valid JSON" in res.output


def test_fail_on_sym_counts_a_pair_that_only_the_second_run_has(runs, tmp_path):
    """A renamed criterion is no loophole: B's coupled pair fails the policy though A never had it."""
    before, after = runs
    renamed = tmp_path / "renamed.json"
    renamed.write_text((before / "stats.json").read_text().replace("correctness", "accuracy"))
    res = CliRunner().invoke(cli, ["compare", str(after), str(renamed), "--fail-on-sym", "0.6"])
    assert res.exit_code == 1 and "helpfulness / accuracy has Sym" in res.output


@pytest.mark.parametrize("command", ["compare", "repair"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_sym_policy_that_can_never_fail_is_refused(runs, command, value):
    before, after = runs
    args = [str(before), str(after)] if command == "compare" else [str(before)]
    res = CliRunner().invoke(cli, [command, *args, "--fail-on-sym", value])
    assert res.exit_code == 2 and "not a finite Sym ceiling" in res.output and len(res.output.strip().splitlines()) == 1
