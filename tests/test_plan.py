"""`radar audit --plan`: what it counts (every juror and call mode), the scale its spreads are on, and a pilot run's
spreads, self-effects and within-probe correlation."""

from __future__ import annotations

import pytest
import yaml

from radar_local.auditing import run_audit
from tests.conftest import planted_config


def test_plan_counts_every_juror_and_call_mode(tmp_path):
    from tests.conftest import invoke

    spec = {"engine": "testing", "model": "p"}
    jury = {"jury": [{**spec, "model": m} for m in ("a", "b", "c")]}
    both = {**spec, "judge": {"template": "{{ response }} {{ criteria }}", "calls": ["per-criterion", "joint"]}}
    checked = {**spec, "judge": {"template": "{{ response }} {{ criteria }}", "calls": "joint", "halo_check": 0.3}}
    lines = {}
    for name, verifier in (("one", spec), ("jury", jury), ("both", both), ("checked", checked), ("repeated", spec)):
        config = tmp_path / f"{name}.yaml"
        extra = {"consistency": {"repeats": 3, "share": 0.3}} if name == "repeated" else {}
        config.write_text(yaml.safe_dump(planted_config(verifier=verifier, n=3, **extra)))
        res = invoke("audit", config, "--plan")
        assert res.exit_code == 0, res.output
        lines[name] = next(line for line in res.output.splitlines() if line.startswith("Plan:"))
    probes = 5 * 2 * 2 * 3  # helpsteer2's 5 criteria x 2 tasks x 2 directions x N = 3
    assert f"{probes} directed probes, {probes * 5} verdicts in {probes * 5} calls." in lines["one"]
    assert f"{probes * 5 * 3} verdicts in {probes * 5 * 3} calls (3 scoring passes" in lines["jury"]
    assert f"{probes * 5 * 2} verdicts in {probes * 5 + probes} calls (2 scoring passes" in lines["both"]
    sampled = probes // 3  # ceil(0.3 x 3) = 1 probe of each stratum of 3
    assert f"{probes * 5 + sampled * 5} verdicts in {probes + sampled * 5} calls (2 scoring passes" in lines["checked"]
    # two repeats of the first ceil(0.3 x 3) = 1 probe of each stratum, per criterion
    repeated = probes * 5 + 2 * sampled * 5
    assert f"{repeated} verdicts in {repeated} calls (3 scoring passes" in lines["repeated"]


def test_plan_reads_spreads_on_the_rubrics_own_scale(tmp_path):
    """Issue 43 item 3 (part): --plan divides by the rubric's scale span; a 0-1 rubric got the 0-4 plan."""
    from tests.conftest import invoke

    def plan(scale: str, *extra: str) -> list[str]:
        rubric = tmp_path / f"{scale.count('0')}.yaml"
        rubric.write_text(
            f"id: r\nname: r\nscale: {scale}\ncriteria:\n"
            "  - {id: a, label: A, description: The first.}\n  - {id: b, label: B, description: The second.}\n"
        )
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump(planted_config(rubric=str(rubric), n=10)))
        res = invoke("audit", config, "--plan", *extra)
        assert res.exit_code == 0, res.output
        return [line for line in res.output.splitlines() if line.startswith("  a ")]

    likert, binary = plan("{min: 0, max: 4}"), plan("{levels: {'no': 0, 'yes': 1}}")
    assert likert == binary  # a quarter of each span by default: the same design, the same truths
    assert plan("{min: 0, max: 4}", "--plan-sd", "2") == plan("{levels: {'no': 0, 'yes': 1}}", "--plan-sd", "0.5")
    assert likert != plan("{min: 0, max: 4}", "--plan-sd", "2")


def test_plan_reads_a_pilot_runs_spreads_and_self_effects(tmp_path):
    """Issue 43 item 3 (part): --plan on a run directory that holds an audit uses its observed within-stratum
    score sd and mean self-effect instead of the assumed ones; the options still override them."""
    import pandas as pd

    from radar_local.stats.power import pilot_spreads
    from tests.conftest import invoke

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(planted_config(n=3, bootstrap=0, options={"noise": 0.8})))
    before = invoke("audit", config, "--plan", "--out", tmp_path / "run")
    assert before.exit_code == 0 and "Observed" not in before.output
    run_audit(planted_config(n=3, bootstrap=0, options={"noise": 0.8}), tmp_path / "run")
    after = invoke("audit", config, "--plan", "--out", tmp_path / "run")
    observed = after.output.splitlines()[0]
    assert observed.startswith(f"Observed in {tmp_path / 'run'}: score sd ") and "mean self-effect" in observed
    sd, sd_target = pilot_spreads(pd.read_csv(tmp_path / "run" / "scores.csv", dtype={"variant": str}))
    assert f"score sd {sd:.2f}, on the targeted criterion {sd_target:.2f}" in observed
    assert f"spread {sd:g} points of the 0-4 scale within a stratum ({sd_target:g} on the criterion it targets)" in (
        after.output
    )
    assert "spread 1 points" in invoke("audit", config, "--plan", "--out", tmp_path / "run", "--plan-sd", "1").output
    # the wall time at the pilot's own pace (run.json's seconds per call); unknown before any pilot on this engine
    assert "calls at " in after.output and f"the pace of {tmp_path / 'run'} (its run.json)" in after.output
    assert "Expected wall time: unknown before a pilot on this engine" in before.output
    # known answer: two strata targeting a, scored (1, 3) and (2, 2, 5) on a: pooled var (2 + 6) / (1 + 2); on b
    # (0, 4) and (1, 1, 1): (8 + 0) / (1 + 2); a lone probe's stratum adds nothing
    scores = {"a": ((1, 3), (2, 2, 5)), "b": ((0, 4), (1, 1, 1))}
    rows = [
        ("g", "v", "t", "a", d, str(i), c, s)
        for c, both in scores.items()
        for d, ss in zip("+-", both)
        for i, s in enumerate(ss)
    ] + [("g", "v", "u", "b", "+", "0", c, 2) for c in "ab"]
    columns = ["generator", "verifier", "task_id", "target", "direction", "variant", "criterion", "score"]
    assert pilot_spreads(pd.DataFrame(rows, columns=columns)) == pytest.approx(((8 / 3) ** 0.5, (8 / 3) ** 0.5))
    assert pilot_spreads(pd.DataFrame(rows[:5], columns=columns)) == (None, pytest.approx((8 / 3) ** 0.5))


def test_plan_splits_the_spreads_a_shift_and_a_self_effect_rest_on():
    """Issue 43: a self-effect and its gate rest on the targeted criterion's spread, a shift on the others', and a
    criterion a leakage pushes spreads between the two; one spread for both (the plan before) is the special case."""
    from radar_local.stats.power import minimum_confirmed

    one = minimum_confirmed(5, 5, 20, sd=1.0, self_effect=0.69, rho=0.4)
    assert minimum_confirmed(5, 5, 20, sd=1.0, sd_target=1.0, self_effect=0.69, rho=0.4) == one
    steadier = minimum_confirmed(5, 5, 20, sd=1.0, sd_target=0.77, self_effect=0.69, rho=0.4)
    assert steadier.self_effect < one.self_effect and steadier.gates >= one.gates
    assert steadier.directional < one.directional and steadier.coupled < one.coupled
    # the others' spread alone moves the pairs, not the gate
    wider = minimum_confirmed(5, 5, 20, sd=1.2, sd_target=0.77, self_effect=0.69, rho=0.4)
    assert wider.self_effect == steadier.self_effect and wider.directional > steadier.directional


@pytest.mark.parametrize(("other", "rho"), [((2, 4), 0.9), ((4, 2), 0.0), ((1, 2), 0.9)])
def test_plan_reads_a_pilots_within_probe_correlation(other, rho):
    """Issue 43: the correlation of a probe's residual on its target with its residuals on the other criteria,
    pooled over strata, clipped to [0, 0.9] (a negative one is taken as 0: conservative)."""
    import pandas as pd

    from radar_local.stats.power import pilot_correlation

    rows = [("g", "v", "t", "a", "+", str(i), "a", s) for i, s in enumerate((1, 3))]
    rows += [("g", "v", "t", "a", "+", str(i), "b", s) for i, s in enumerate(other)]
    columns = ["generator", "verifier", "task_id", "target", "direction", "variant", "criterion", "score"]
    assert pilot_correlation(pd.DataFrame(rows, columns=columns)) == pytest.approx(rho)


def test_a_plans_wall_time_is_its_calls_at_a_measured_pace():
    """Issue 43 item 3: the expected wall time is the design's generations and verdict calls at seconds per call
    measured on the engine (a pilot's run.json; a stage that made no call gives no pace)."""
    from types import SimpleNamespace as Stage

    from radar_local.stats.power import Pace, pilot_pace

    assert Pace(0.5, 0.25, "x").seconds(100, 400) == 150
    pace = pilot_pace({"generate": Stage(seconds=30.0, calls=100), "score": Stage(seconds=50.0, calls=500)}, "r")
    assert pace == Pace(0.3, 0.1, "r (its run.json)")
    assert pilot_pace({"generate": Stage(seconds=3.0, calls=10), "score": Stage(seconds=0.0, calls=0)}, "r") is None


@pytest.mark.parametrize("config", ["quickstart", "helpsteer2"])
def test_plan_names_what_the_preflights_cost_confirms_with_joint_calls(tmp_path, config):
    """Issue 43 done-when: at the paper's preflight (N = 5 per criterion, 1,250 calls at K = T = 5) --plan names a
    confirmable directional pair and a coupled pair: joint calls with a 10% halo check buy N = 15 for that cost.
    The figures are minimum_confirmed's at N = 15 asked for 85% (issue 61: the halo check's false alarms, at most
    5% of audits, are priced in); a design that is already cheapest gets no such line."""
    from radar_local.stats.power import joint_n_at_cost, minimum_confirmed
    from tests.conftest import invoke

    assert [joint_n_at_cost(5, 5, c) for c in (1149, 1150, 1250, 1299, 1300)] == [12, 13, 15, 15, 16]
    spec = yaml.safe_load(open(f"configs/{config}.yaml"))
    spec.update(n=5, out=str(tmp_path / "run"))  # no pilot: a demo run at the config's own `out` would be one
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(spec))
    res = invoke("audit", path, "--plan")
    assert res.exit_code == 0, res.output
    at_n15 = minimum_confirmed(5, 5, 15, power=0.85)
    assert at_n15.directional > minimum_confirmed(5, 5, 15).directional
    assert res.output.splitlines()[-1] == (
        "At this design's cost (1250 calls), joint calls with a halo check of 10% (judge: {calls: joint, "
        f"halo_check: 0.1}}) score N = 15 probes a stratum: they confirm a directional leakage >= "
        f"{at_n15.directional:.2f} and a coupled pair of Sym >= {at_n15.coupled:.2f} with 80% power where the "
        "judge adds no halo."
    )
    assert "joint calls are planned at 85%: on a judge that adds no halo" in res.output
    spec["verifier"] = {**spec["verifier"], "judge": {"template": "{{ response }} {{ criteria }}", "calls": "joint"}}
    path.write_text(yaml.safe_dump(spec))
    assert "At this design's cost" not in invoke("audit", path, "--plan").output


def test_a_pilot_that_passed_no_gate_plans_no_finding(tmp_path):
    """Issue 60 item 24: the quickstart's 135M judge scores every probe alike (every self-effect 0), yet --plan
    assumed self-effects of 0.6 and a spread of 0.01 and promised a directional leakage "confirmed with 80% power"
    at N = 2. A pilot whose judge passed no gate says that no design confirms anything with it; --plan-self-effect
    still plans for another judge."""
    from tests.conftest import invoke

    spec = planted_config(n=3, bootstrap=0, tau=0.99, options={"noise": 2.0})
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(spec))
    result = run_audit(spec, tmp_path / "run")
    assert not result.reliable.any()
    plan = invoke("audit", config, "--plan", "--out", tmp_path / "run")
    assert plan.exit_code == 0, plan.output
    assert "passed no criterion's gate (tau = 0.99" in plan.output and "no design confirms anything" in plan.output
    assert "with 80% power" not in plan.output and "Plan: 5 criteria" in plan.output
    assumed = invoke("audit", config, "--plan", "--out", tmp_path / "run", "--plan-self-effect", "0.7").output
    assert "Cheapest design confirming" in assumed


def test_plan_counts_the_reward_models_calls(tmp_path):
    """--plan counts every call the audit makes: a reward model's too (one a probe, the unconditioned ones with
    them), which it left out before issue 62's one list."""
    from tests.conftest import invoke

    config = tmp_path / "reward.yaml"
    reward = {"engine": "testing", "model": "planted", "name": "rm"}
    config.write_text(yaml.safe_dump(planted_config(reward=reward, n=3, unconditioned=1)))
    res = invoke("audit", config, "--plan")
    assert res.exit_code == 0, res.output
    probes = 5 * 2 * 2 * 3 + 2  # helpsteer2's 5 criteria x 2 tasks x 2 directions x N = 3, one unconditioned a task
    assert f"Reward: {probes} more calls of the reward model rm, one a probe" in res.output
    run_audit(yaml.safe_load(config.read_text()), tmp_path / "run")
    assert run_stage_calls(tmp_path / "run", "reward") == probes  # what the audit then asked


def run_stage_calls(run, stage: str) -> int:
    import json

    return json.loads((run / "run.json").read_text())["stages"][stage]["calls"]
