"""Flags that hold: simultaneous (family-wise) intervals, confirmed and possible flags, and their error rate
on a judge with no coupling at all (issue 29)."""

import copy
import math

import numpy as np
import pytest
from scipy import stats

from radar_local.auditing import run_audit
from radar_local.report.text import findings
from radar_local.stats.audit import audit_cell
from radar_local.stats.decisions import decisions, evidence
from radar_local.stats.intervals import Replicates, gatekept, simultaneous
from radar_local.stats.probes import probe_matrix
from radar_local.synthetic import planted_table
from tests.conftest import planted_config

CRIT = ["a", "b", "c", "d"]


def test_a_family_of_one_is_a_students_t_interval():
    deltas = np.random.default_rng(0).normal(0, 0.1, (4000, 1))
    band, critical = simultaneous(np.array([0.3]), deltas, np.array([10.0]), 0.95)
    assert critical == pytest.approx(1.96, abs=0.08)
    assert band[0] == pytest.approx([0.3 - stats.t.ppf(0.975, 10) * 0.1, 0.3 + stats.t.ppf(0.975, 10) * 0.1], abs=0.01)


def test_a_larger_family_widens_every_interval_as_its_maximum_needs():
    """50 independent normal quantities: Sidak's critical value, 3.29, not each one's 1.96."""
    deltas = np.random.default_rng(1).normal(0, 1, (4000, 50))
    band, critical = simultaneous(np.zeros(50), deltas, np.full(50, np.inf), 0.95)
    assert critical == pytest.approx(stats.norm.ppf(1 - (1 - 0.95 ** (1 / 50)) / 2), abs=0.1)
    assert (band[:, 1] > 3).all() and (band[:, 0] < -3).all()


def test_a_quantity_that_cannot_vary_is_its_point_and_one_never_defined_has_no_interval():
    deltas = np.random.default_rng(2).normal(0, 1, (500, 3))
    deltas[:, 1] = 0.0
    deltas[:, 2] = np.nan
    band, _ = simultaneous(np.array([0.0, 0.7, 0.2]), deltas, np.full(3, 20.0), 0.95)
    assert band[1].tolist() == [0.7, 0.7] and np.isnan(band[2]).all() and band[0, 0] < -2


def audit(coupling: np.ndarray, n: int, seed: int = 1, noise: float = 1.0):
    df = planted_table(CRIT, ["t1", "t2", "t3"], coupling, n=n, seed=seed, noise=noise)
    return audit_cell(probe_matrix(df, CRIT, "sim-generator", "sim-verifier"), budget=False)


@pytest.fixture(scope="module")
def coupled():
    """a -> b leaks 0.8 (directional), c -> d -0.5 (a tradeoff), b -> c 0.3 (no flag)."""
    m = np.eye(4)
    m[0, 1], m[2, 3], m[1, 2] = 0.8, -0.5, 0.3
    return m


def test_flags_are_confirmed_when_the_family_settles_them_and_possible_otherwise(coupled):
    """At N = 10 the tradeoff is settled and the directional pair is not; every possible flag names the
    probes per stratum that would settle it, and one fewer would not."""
    r = audit(coupled, 10)
    assert r.pair("c", "d")["evidence"] == {"tradeoff": "confirmed"}
    ab = r.pair("a", "b")
    assert ab["flags"] == ["directional"] and ab["evidence"] == {"directional": "possible"}
    n = ab["settle_n"]
    assert n > r.probes.min_per_stratum

    def settled(m: int) -> bool | None:
        return next(
            d.value for d in decisions(r, more=m / 10) if d.kind == "directional" and set(d.criteria) == {"a", "b"}
        )

    assert settled(n) is True and settled(n - 1) is not True
    assert not any(p["evidence"] for p in r.pairs.to_dict("records") if not p["flags"])  # no flag, no evidence
    js = r.to_json()
    # one-sided tails: each self-effect's upper one, each leakage both ways, l_ij - l_ji at every ordered pair, Sym
    # both ways
    assert js["family"]["cells"] == 4 + 2 * 12 + 12 + 2 * 6 and js["family"]["level"] == 0.95
    assert js["family"]["gate_level"] == pytest.approx(1 - 0.05 / 4) and js["family"]["pair_level"] == pytest.approx(
        0.95
    )
    assert js["flags"]["gates"] == dict.fromkeys(CRIT, "confirmed")  # every gate passed, each settled


def test_a_family_interval_ending_exactly_at_a_threshold_settles_it(coupled):
    """Ends compared with the thresholds as written: 0.5 is at_least 0.5; the float just below is not."""
    r = audit(coupled, 20)
    fam = r.family
    for c in CRIT:
        fam["self_effect"][c] = [0.6, 0.9]  # every gate settled
    fam["leakage"]["a"]["b"], fam["asym"]["a"]["b"], fam["asym"]["b"]["a"] = [0.5, 0.9], [0.25, 0.9], [0.25, 0.9]

    def directional(result) -> bool | None:
        return next(d.value for d in decisions(result) if d.kind == "directional" and set(d.criteria) == {"a", "b"})

    assert directional(r) is True
    below = copy.deepcopy(r)
    below.family["leakage"]["a"]["b"][0] = math.nextafter(0.5, 0)
    below.family["leakage"]["b"]["a"] = [0.0, 0.1]
    assert directional(below) is None
    steep = copy.deepcopy(r)
    steep.family["asym"]["a"]["b"][0] = steep.family["asym"]["b"]["a"][0] = math.nextafter(0.25, 0)
    assert directional(steep) is None


def replicates_of(self_effect: list[float], sd: float, k: int = 3, seed: int = 0) -> Replicates:
    """Hand-made replicates: independent normal deviations of sd `sd` for every quantity, design df 20."""
    rng = np.random.default_rng(seed)
    se = np.array(self_effect)
    leak = np.full((k, k), 0.2)
    np.fill_diagonal(leak, 1.0)

    def q(point: np.ndarray) -> tuple:
        return point, rng.normal(0, sd, (2000,) + point.shape), np.full(point.shape, 20.0)

    return Replicates(q(se), q(leak), q((leak + leak.T) / 2), q(leak - leak.T), {}, np.full(k, 20.0))


def test_the_gates_are_tested_first_and_the_pairs_get_the_level_they_leave():
    """Parallel gatekeeping: a gate passes on its one-sided bound at alpha/K; the pairs run at alpha x passed/K."""
    r = replicates_of([0.9, 0.9, 0.1], 0.01)
    b = gatekept(r, 0.4)
    t = stats.t.ppf(1 - 0.05 / 3, 20)
    assert b.gate_low == pytest.approx(np.array([0.9, 0.9, 0.1]) - t * 0.01, abs=0.002)
    assert b.pair_level == pytest.approx(0.05 * 2 / 3)
    every = gatekept(replicates_of([0.9, 0.9, 0.9], 0.01), 0.4)
    assert every.pair_level == pytest.approx(0.05) and every.critical < b.critical  # more level, a narrower bound
    none = gatekept(replicates_of([0.1, 0.1, 0.1], 0.01), 0.4)
    assert none.pair_level == 0 and np.isinf(none.leakage[0, 1]).all()  # no level left: nothing is confirmed


def test_a_gate_bound_exactly_at_tau_passes_and_the_float_below_does_not():
    """A self-effect that cannot vary is its own bound: 0.4 passes tau = 0.4 (compared as written), the float just
    below it does not, and the pair family's level follows."""
    at = replicates_of([0.4, 0.9, 0.9], 0.01)
    at.self_effect[1][:, 0] = 0.0
    assert gatekept(at, 0.4).pair_level == pytest.approx(0.05)
    below = replicates_of([math.nextafter(0.4, 0), 0.9, 0.9], 0.01)
    below.self_effect[1][:, 0] = 0.0
    assert gatekept(below, 0.4).pair_level == pytest.approx(0.05 * 2 / 3)


def test_a_pair_whose_sym_is_settled_and_direction_open_is_coupled(coupled):
    """Sym's lower bound clears 0.5 with both gates while Asym straddles 0.25: the directional flag is `coupled`,
    not `possible`; with Sym's bound below 0.5 it is `possible` again."""
    r = audit(coupled, 20)
    fam = r.family
    for c in CRIT:
        fam["self_effect"][c] = [0.6, 0.9]
    fam["leakage"]["a"]["b"], fam["leakage"]["b"]["a"] = [0.6, 1.2], [0.3, 0.9]
    fam["sym"]["a"]["b"] = fam["sym"]["b"]["a"] = [0.5, 0.9]
    fam["asym"]["a"]["b"] = fam["asym"]["b"]["a"] = [0.1, 0.6]
    r = evidence(r)
    assert r.pair("a", "b")["evidence"] == {"directional": "coupled"}
    assert "coupled (direction open)" in "\n".join(findings(r))
    fam["sym"]["a"]["b"] = fam["sym"]["b"]["a"] = [math.nextafter(0.5, 0), 0.9]
    r = evidence(r)
    assert r.pair("a", "b")["evidence"] == {"directional": "possible"}


CLEAN_REPS = 40  # at a true rate of 5%, more than 5 of 40 happens 4.8% of the time (binomial)


@pytest.mark.thorough  # the procedure's mechanics are checked above on hand-made replicates; this is 40 whole audits
def test_a_judge_with_no_coupling_confirms_no_flag_though_its_point_estimates_raise_many(tmp_path):
    """The planted engine with no coupling, at the paper's N = 3 (K = 5 criteria, 3 tasks): the point estimate
    raises a flag in most audits (the issue measured 88-96%), confirmed flags stay within the family's 5%."""
    tasks = [{"id": f"t{i}", "prompt": f"Customer request number {i}: reply to it."} for i in range(3)]
    raised = confirmed = family_held = cell_held = 0
    for seed in range(CLEAN_REPS):
        cfg = planted_config(options={"noise": 1.0}, tasks=tasks, n=3, seed=seed, bootstrap=200)
        r = run_audit(cfg, tmp_path / str(seed), progress=False)
        evidence = [e for p in r.pairs.to_dict("records") for f, e in (p["evidence"] or {}).items() if f != "gated"]
        raised += bool(evidence)
        confirmed += "confirmed" in evidence or any(g.evidence == "confirmed" for g in r.unreliable)
        family_held += holds_zero(r.family["leakage"], r.family["sym"], r.family["asym"])
        js = r.to_json()
        pairs = {p["a"]: {p["b"]: p["ci"]["sym"]} for p in js["pairs"]}
        cell_held += holds_zero(js["leakage_ci"], pairs, {})
    assert raised >= CLEAN_REPS / 2, raised  # point flags would fail the next line
    assert confirmed <= 5, confirmed
    # Every true leakage, Sym and Asym is 0: the family's intervals hold all 40 together as often as the
    # level says; one cell's 95% intervals do so far less often (the test's teeth for the family itself).
    assert family_held >= CLEAN_REPS - 5, family_held
    assert cell_held <= CLEAN_REPS - 10, cell_held


def holds_zero(*matrices: dict) -> bool:
    """Every off-diagonal interval {a: {b: [low, high]}} holds 0 (an interval left out claims nothing)."""
    return all(
        ci is None or ci[0] <= 0 <= ci[1] for m in matrices for a, row in m.items() for b, ci in row.items() if a != b
    )


BIAS_REPS = 100  # at a true rate of 5%, more than 9 of 100 happens 2.8% of the time (binomial)


def test_a_judge_with_no_bias_confirms_no_bias_across_the_attribute_by_criterion_family():
    """Five attributes x five criteria, two tasks of five pairs, no bias anywhere: the old rule (a cell's own
    interval excludes 0, the point reaches 0.1) flagged some cell in most audits (the issue: 20-28% with one
    attribute, more with five); a confirmed bias needs the family interval beyond the threshold."""
    from radar_local.stats.bias import NuisancePairs, nuisance_table

    old = confirmed = 0
    task = np.repeat([0, 1], 5)
    for rep in range(BIAS_REPS):
        rng = np.random.default_rng(rep)
        up, down = (np.clip(np.rint(2 + rng.normal(0, 1, (5, 10, 5))), 0, 4) for _ in range(2))
        pairs = [NuisancePairs(f"attr{a}", task, ("t0", "t1"), up[a] - down[a]) for a in range(5)]
        rows = nuisance_table(pairs, CRIT + ["e"], [0.7] * 5, [True] * 5, resamples=200, seed=rep)
        old += any(r.ci and (r.ci[0] > 0 or r.ci[1] < 0) and abs(r.sensitivity) >= 0.1 for r in rows)
        confirmed += any(r.evidence == "confirmed" for r in rows)
    assert old >= BIAS_REPS / 2, old  # the test's teeth: the old rule fails the next line
    assert confirmed <= 9, confirmed


def test_one_weak_task_cannot_make_a_flag():
    """Issue 29: a task whose own self-effect was 0.083 made that task's leakage -3.0, the pair's Sym point
    lay outside its own interval and was flagged a tradeoff. The leakage is now the ratio of the mean shift
    to the mean self-effect over tasks, in which each task enters linearly."""
    from radar_local.analysis import stats_for_table
    from radar_local.stats.settings import StatsSettings
    from tests.conftest import probes, table

    rows = []
    for t in ("t1", "t2"):
        rows += probes(t, "a", "+", [{"a": 4, "b": 2}, {"a": 4, "b": 2}, {"a": 3, "b": 3}])
        rows += probes(t, "a", "-", [{"a": 0, "b": 2}, {"a": 1, "b": 2}, {"a": 0, "b": 2}])
    rows += probes("t3", "a", "+", [{"a": 2, "b": 1}, {"a": 2, "b": 1}, {"a": 3, "b": 1}])  # a barely moves
    rows += probes("t3", "a", "-", [{"a": 2, "b": 2}, {"a": 2, "b": 2}, {"a": 2, "b": 2}])  # b drops 1 point
    for t in ("t1", "t2", "t3"):
        rows += probes(t, "b", "+", [{"a": 2, "b": 4}, {"a": 2, "b": 4}, {"a": 3, "b": 3}])
        rows += probes(t, "b", "-", [{"a": 2, "b": 0}, {"a": 2, "b": 1}, {"a": 2, "b": 0}])
    r = stats_for_table(table(rows), "t.csv", StatsSettings(resamples=400, seed=0))
    assert r.self_effect_by_task.loc["t3", "a"] == pytest.approx(1 / 12) and r.reliable["a"]
    assert r.leakage_by_task["t3"].loc["a", "b"] == pytest.approx(-3.0)  # eq. 2 in that task, as the table shows
    # (1/12 + 1/12 - 1/4) / (10/12 + 10/12 + 1/12) = -1/21; the mean of the per-task ratios was -0.93
    assert r.leakage.loc["a", "b"] == pytest.approx(-1 / 21)
    pair = r.pair("a", "b")
    assert "tradeoff" not in pair["flags"] and pair["sym_ci"][0] <= pair["sym"] <= pair["sym_ci"][1]


def test_audit_plan_states_what_the_design_can_confirm_and_calls_nothing(tmp_path):
    """`radar audit --plan`: the smallest truths confirmed with 80% probability, before any call; more probes
    per stratum confirm smaller ones (scripts/flag_error.py --plan-check measures them against audits)."""
    import yaml
    from click.testing import CliRunner

    from radar_local.cli.main import cli
    from radar_local.stats.power import critical, minimum_confirmed

    cfg = tmp_path / "c.yaml"
    spec = {"engine": "testing", "model": "planted"}
    out = tmp_path / "never"
    base = {"rubric": "helpsteer2", "generator": spec, "verifier": spec, "out": str(out)}
    cfg.write_text(yaml.safe_dump({**base, "n": 20, "unconditioned": 10, "nuisance": ["length"]}))
    res = CliRunner().invoke(cli, ["audit", str(cfg), "--plan"])
    assert res.exit_code == 0, res.output
    assert "No call is made" in res.output and "a directional pair: leakage >=" in res.output
    assert "a judge bias (5 attribute x criterion cells): |sensitivity| >=" in res.output
    assert not out.exists()
    few = minimum_confirmed(5, 5, 15)
    many = minimum_confirmed(5, 5, 30)
    assert many.directional < few.directional and many.self_effect < few.self_effect
    assert critical(50, math.inf) == pytest.approx(stats.norm.ppf(0.95 ** (1 / 50)))  # Sidak for 50 one-sided tails
    cfg.write_text(yaml.safe_dump({**base, "n": 5}))
    res = CliRunner().invoke(cli, ["audit", str(cfg), "--plan"])
    assert "a directional pair: not at this N" in res.output
    assert "both gates are confirmed in only" in res.output  # why: a flag needs its pair's gates confirmed too
    assert minimum_confirmed(5, 5, 5).gates < 0.8 < minimum_confirmed(5, 5, 20).gates
    # the cheapest designs for the paper's findings, in calls, whatever this design can do
    assert "Cheapest design confirming a directional leakage of 0.7 with 80% power: N = " in res.output
    assert "Cheapest design confirming a coupled pair of Sym 0.7 with 80% power: N = " in res.output


def test_one_probe_a_stratum_confirms_nothing_and_says_so(tmp_path):
    """Issue 60 item 14: with n: 1 every stratum's resample is its one probe, the replicates cannot vary and the
    bounds shrank to the point estimate: a judge's noise was reported as confirmed gates and tradeoffs. A quantity
    resting on no spread (design df 0) has no bound: nothing is settled, and a warning says why."""
    result = run_audit(planted_config(n=1, bootstrap=100, options={"noise": 0.5}), tmp_path / "run")
    assert set(result.gate_evidence.values()) == {"possible"}
    assert not any("confirmed" in (p["evidence"] or {}).values() for p in result.pairs.to_dict("records"))
    assert any("strata hold one probe" in w and "n: 2 or more" in w for w in result.warnings)
