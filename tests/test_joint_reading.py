"""A joint judge's findings are the rubric's, not its halo's (issue 61), on the planted engine end to end: a
halo made only by joint calls never reads as a confirmed finding without the report saying so."""

import json

import pytest
from pydantic import ValidationError

from radar_local.auditing import run_audit
from radar_local.judge import Judge
from radar_local.report.text import findings
from radar_local.stats.flags import CONFIRMED, COUPLED
from radar_local.stats.halo import Halo
from radar_local.stats.joint import JointCalls
from tests.test_judge import HALO_TASKS, config


def joint_audit(tmp_path, name, *, halo, coupling=None, **judge):
    options = {"noise": 0.5, "halo": halo, "coupling": coupling or {}}
    cfg = config(tmp_path, {"calls": "joint", **judge}, options=options, tasks=HALO_TASKS, n=6, bootstrap=300)
    return run_audit(cfg, tmp_path / name)


def settled(result) -> list[tuple[str, str]]:
    """The pairs with a flag the family settles (confirmed or coupled)."""
    return [
        (p["a"], p["b"])
        for p in result.pairs.to_dict("records")
        if any(e in (CONFIRMED, COUPLED) for e in (p.get("evidence") or {}).values())
    ]


def test_a_halo_with_no_coupling_confirms_no_pair_and_the_findings_say_why(tmp_path):
    """Halo 0.7, nothing coupled: read as the joint judge it is, every pair is coupled; read for the rubric (the
    default) the halo check finds the halo and no pair is confirmed, the first finding saying so."""
    deployed = joint_audit(tmp_path, "deployed", halo=0.7, halo_check=0.5, reading="deployed")
    assert len(settled(deployed)) == 3 and deployed.measured(JointCalls).demoted == []
    assert findings(deployed)[0].startswith("Joint judge read as deployed")
    result = joint_audit(tmp_path, "rubric", halo=0.7, halo_check=0.5)
    assert (
        result.measured(Halo).index > 0.3 and result.measured(JointCalls).adds and result.measured(JointCalls).checked
    )
    assert settled(result) == [] and len(result.measured(JointCalls).demoted) == 3
    lines = findings(result)
    assert lines[0].startswith("Joint calls: the halo check found joint calls moving the coupling (halo index +")
    assert not any("confirmed (" in line for line in lines), lines
    assert sum(line.startswith("Possible, from joint calls the halo may make") for line in lines) == 3
    stored = json.loads((tmp_path / "rubric" / "stats.json").read_text())["measurements"]["joint"]
    assert stored == {"reading": "rubric", "checked": True, "adds": True, "removes": False,
                      "demoted": result.measured(JointCalls).demoted}  # fmt: skip


def test_joint_calls_without_a_halo_check_confirm_nothing_for_the_rubric(tmp_path):
    result = joint_audit(tmp_path, "unchecked", halo=0.0, coupling={"Clarity": {"Accuracy": 1.0}})
    assert settled(result) == [] and result.measured(JointCalls).demoted and not result.measured(JointCalls).checked
    assert findings(result)[0].startswith("Joint calls (one call scores every criterion) with no halo check")


def test_a_check_that_finds_no_halo_keeps_a_true_coupling_confirmed(tmp_path):
    result = joint_audit(tmp_path, "clear", halo=0.0, halo_check=0.5, coupling={"Clarity": {"Accuracy": 1.0}})
    assert ("clarity", "accuracy") in settled(result) or ("accuracy", "clarity") in settled(result)
    assert result.measured(JointCalls).demoted == [] and not result.measured(JointCalls).adds
    lines = findings(result)
    assert lines[0].startswith("Joint calls: the halo check found no halo") and "confirmed (" in lines[1]


def test_reading_deployed_goes_with_joint_calls(tmp_path):
    with pytest.raises(ValidationError, match="reading: deployed reads a joint judge"):
        Judge(reading="deployed")
    assert Judge(calls=["per-criterion", "joint"], reading="deployed").reading == "deployed"
