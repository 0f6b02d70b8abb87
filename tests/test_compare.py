"""`radar compare`: pairs that moved beyond their CIs, gate crossings, and the CI policy exit code."""

import json
import math

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


def evidence_case(runs, tmp_path, sym: list[float], bias: list[float] | None = None):
    """RUN_B's stats with every gate settled, every pair's family Sym well below 0.5 but helpfulness /
    correctness's at `sym`, and, with `bias`, one nuisance cell whose family interval is `bias`."""
    _, after = runs
    stats = json.loads((after / "stats.json").read_text())
    fam = stats["family"]
    for c in stats["criteria"]:
        fam["self_effect"][c] = [0.6, 0.9]
        for d in stats["criteria"]:
            fam["sym"][c][d] = [-0.1, 0.1]
    fam["sym"]["helpfulness"]["correctness"] = fam["sym"]["correctness"]["helpfulness"] = sym
    for p in stats["pairs"]:
        p["reliable"] = True
    if bias is not None:
        row = {
            "attribute": "length",
            "criterion": "verbosity",
            "pairs": 20,
            "sensitivity": 0.05,
            "ci": [0.0, 0.1],
            "family_ci": bias,
            "ci_tasks": 2,
            "by_task": {},
            "bias_share": None,
            "flag": None,
            "evidence": None,
            "steered": True,
        }
        stats["measurements"]["bias"] = {"threshold": 0.1, "level": 0.95, "rows": [row], "manipulation": None}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(stats))
    return path


BELOW_HALF, BELOW_TENTH = math.nextafter(0.5, 0), math.nextafter(0.1, 0)


@pytest.mark.parametrize(
    "sym,code,says",
    [
        ([0.5, 0.8], 1, "Sym >= 0.5 confirmed"),  # the family's low end exactly at the ceiling: confirmed
        ([BELOW_HALF, 0.8], 3, "open against 0.5"),  # the float just below: open
        ([0.2, BELOW_HALF], 0, "(sym, 0.5): pass"),  # the whole interval below the ceiling: settled
        ([0.2, 0.5], 3, "open against 0.5"),  # its high end at the ceiling: not below it
    ],
)
def test_the_sym_evidence_policy_at_its_boundary_in_exact_arithmetic(runs, tmp_path, sym, code, says):
    before, _ = runs
    res = CliRunner().invoke(
        cli, ["compare", str(before), str(evidence_case(runs, tmp_path, sym)), "--sym-confirmed", "0.5"]
    )
    assert res.exit_code == code, res.output
    assert says in res.output


@pytest.mark.parametrize(
    "bias,code",
    [
        ([0.1, 0.3], 1),  # float 0.1 is above the decimal 1/10: confirmed beyond it
        ([BELOW_TENTH, 0.3], 3),
        ([-0.05, BELOW_TENTH], 0),
        ([-0.1, 0.05], 3),  # the low end at -0.1: not within (-0.1, 0.1)
        ([-0.3, -0.1], 1),  # beyond it on the other side
    ],
)
def test_the_bias_evidence_policy_at_its_boundary_in_exact_arithmetic(runs, tmp_path, bias, code):
    before, _ = runs
    case = evidence_case(runs, tmp_path, [-0.1, 0.1], bias)
    res = CliRunner().invoke(cli, ["compare", str(before), str(case), "--bias-confirmed", "0.1"])
    assert res.exit_code == code, res.output


def test_a_point_policy_failure_outranks_an_open_evidence_policy(runs, tmp_path):
    before, _ = runs
    case = evidence_case(runs, tmp_path, [BELOW_HALF, 0.8])
    res = CliRunner().invoke(cli, ["compare", str(before), str(case), "--sym-confirmed", "0.5", "--fail-on-sym", "0.1"])
    assert res.exit_code == 1 and "open against 0.5" in res.output


def test_an_evidence_policy_without_family_intervals_is_one_line(runs, tmp_path):
    before, after = runs
    stats = json.loads((after / "stats.json").read_text())
    del stats["family"]
    (tmp_path / "old.json").write_text(json.dumps(stats))
    res = CliRunner().invoke(cli, ["compare", str(before), str(tmp_path / "old.json"), "--sym-confirmed", "0.5"])
    assert res.exit_code == 2 and "has no family intervals" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["compare", str(before), str(after), "--bias-confirmed", "0.1"])
    assert res.exit_code == 2 and "measured no judge bias" in res.output
