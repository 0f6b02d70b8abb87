"""Known-answer and property tests of the coupling statistics (paper eq. 1-11)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from radar_local.auditing import run_audit
from radar_local.stats.audit import audit_cell
from radar_local.stats.bootstrap import Strata
from radar_local.stats.coupling import coupling, global_summaries, leakage
from radar_local.stats.exact import exact_point
from radar_local.stats.intervals import intervals
from radar_local.stats.probes import probe_matrix
from tests.conftest import planted_config, probes, table


def test_known_answer_two_criteria(two_criteria_table):
    # Normalized scores p = S/4.
    # target a, +: a = (4, 4) -> 1.00;   b = (3, 1) -> (0.75 + 0.25)/2 = 0.50
    # target a, -: a = (0, 2) -> 0.25;   b = (1, 1) -> 0.25
    #   SelfEffect(a) = 1.00 - 0.25 = 0.75;  GenCoupling(a->b) = 0.50 - 0.25 = 0.25
    #   Leakage(a->b) = 0.25 / 0.75 = 1/3
    # target b, +: a = (3, 3) -> 0.75;   b = (4, 4) -> 1.00
    # target b, -: a = (1, 1) -> 0.25;   b = (0, 2) -> 0.25
    #   SelfEffect(b) = 0.75;  GenCoupling(b->a) = 0.50;  Leakage(b->a) = 0.50 / 0.75 = 2/3
    # Sym = (1/3 + 2/3)/2 = 0.5;  Asym = |1/3 - 2/3| = 1/3
    # GlobalPos = mean(1/3, 2/3) = 0.5; GlobalTension = 0; MaxCoupling = 2/3
    pm = probe_matrix(two_criteria_table, ["a", "b"], "g", "v")
    r = audit_cell(pm, resamples=0, budget=False).to_json()
    assert r["self_effect"] == pytest.approx({"a": 0.75, "b": 0.75})
    assert r["leakage"]["a"]["b"] == pytest.approx(1 / 3)
    assert r["leakage"]["b"]["a"] == pytest.approx(2 / 3)
    assert r["leakage"]["a"]["a"] == r["leakage"]["b"]["b"] == 1.0
    (pair,) = r["pairs"]
    assert pair["sym"] == pytest.approx(0.5) and pair["asym"] == pytest.approx(1 / 3)
    assert r["global"]["positive"] == pytest.approx(0.5)
    assert r["global"]["tension"] == pytest.approx(0.0)
    assert r["global"]["max_coupling"] == pytest.approx(2 / 3)
    assert r["reliable"] == {"a": True, "b": True}


def test_task_aggregation_mean_and_sd():
    # Task t1: a+ b-scores (4) vs a- (2): GenCoupling(a->b) = (1 - 0.5) = 0.5, SelfEffect(a) = 1 -> 0.5
    # Task t2: a+ b (3) vs a- (2): GenCoupling = 0.25 -> leakage 0.25
    # eq. 5: mean = (0.5 + 0.25)/2 = 0.375;  eq. 6: sd = |0.5 - 0.25| / 2 = 0.125
    rows = []
    for task, b_hi in (("t1", 4), ("t2", 3)):
        rows += probes(task, "a", "+", [{"a": 4, "b": b_hi}]) + probes(task, "a", "-", [{"a": 0, "b": 2}])
        rows += probes(task, "b", "+", [{"a": 2, "b": 4}]) + probes(task, "b", "-", [{"a": 2, "b": 0}])
    r = audit_cell(probe_matrix(table(rows), ["a", "b"], "g", "v"), resamples=0, budget=False).to_json()
    assert r["leakage"]["a"]["b"] == pytest.approx(0.375)
    assert r["leakage_sd"]["a"]["b"] == pytest.approx(0.125)
    assert r["leakage_by_task"]["t1"]["a"]["b"] == pytest.approx(0.5)
    assert r["leakage"]["b"]["a"] == pytest.approx(0.0)


def test_gate_flags_weak_and_negative_self_effects():
    # a: + scores 2, - scores 1 -> SelfEffect 0.25 < tau 0.4: unreliable
    # b: + scores 0, - scores 4 -> SelfEffect -1: negative, excluded
    # c: + 4, - 0 -> SelfEffect 1: reliable
    crit = ["a", "b", "c"]
    rows = (
        probes("t", "a", "+", [{"a": 2, "b": 2, "c": 2}])
        + probes("t", "a", "-", [{"a": 1, "b": 2, "c": 0}])
        + probes("t", "b", "+", [{"a": 2, "b": 0, "c": 2}])
        + probes("t", "b", "-", [{"a": 2, "b": 4, "c": 2}])
        + probes("t", "c", "+", [{"a": 3, "b": 2, "c": 4}])
        + probes("t", "c", "-", [{"a": 1, "b": 2, "c": 0}])
    )
    r = audit_cell(probe_matrix(table(rows), crit, "g", "v"), resamples=0, budget=False).to_json()
    assert r["reliable"] == {"a": False, "b": False, "c": True}
    reasons = {u["criterion"]: u["reason"] for u in r["flags"]["unreliable"]}
    assert reasons == {"a": "self-effect below tau=0.4", "b": "negative self-effect (failed intervention)"}
    assert {(p["a"], p["b"]): p["flags"] for p in r["pairs"]} == {
        ("a", "b"): ["gated"],
        ("a", "c"): ["gated"],
        ("b", "c"): ["gated"],
    }
    # Only the reliable row c counts in the globals: c->a = (0.75-0.25)/1 = 0.5, c->b = 0.
    assert r["global"]["max_coupling"] == pytest.approx(0.5)
    assert r["global"]["positive"] == pytest.approx(0.25)
    # The negative row is undefined rather than a sign-flipped ratio.
    assert r["leakage"]["b"]["a"] is None


def test_zero_self_effect_is_undefined_not_infinite():
    means = np.zeros((1, 2, 2, 2))  # every stratum mean 0: SelfEffect 0
    assert np.isnan(leakage(means)).all()


def _random_means(draw_shape=(3, 4)):
    t, k = draw_shape
    return arrays(np.float64, (t, k, 2, k), elements=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))


@settings(max_examples=60, deadline=None)
@given(_random_means())
def test_diagonal_leakage_is_one_where_defined(means):
    lk = leakage(means)
    se = np.diagonal(means[..., 0, :] - means[..., 1, :], axis1=-2, axis2=-1)
    diag = np.diagonal(lk, axis1=-2, axis2=-1)
    assert np.all(diag[se > 0] == 1.0)
    assert np.all(np.isnan(diag[se <= 0]))


@settings(max_examples=60, deadline=None)
@given(_random_means(), st.floats(0.1, 10), st.floats(-5, 5))
def test_coupling_metrics_invariant_under_affine_rescaling(means, scale, shift):
    # Only the gate (an absolute threshold on the normalized scale) is not rescaled; compare ungated values.
    a, b = coupling(means, tau=0.0), coupling(means * scale + shift, tau=0.0)
    np.testing.assert_allclose(a.leakage, b.leakage, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.sym, b.sym, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.asym, b.asym, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(_random_means())
def test_sym_is_symmetric_and_asym_nonnegative(means):
    c = coupling(means)
    np.testing.assert_array_equal(c.sym, np.swapaxes(c.sym, -1, -2))
    assert np.all(np.nan_to_num(c.asym) >= 0)


def test_bootstrap_draws_one_less_than_each_stratum_holds():
    """Rao-Wu with m = n - 1: a resampled stratum mean has the unbiased variance s^2/n, where n draws
    give (n-1)/n of it. Two probes per stratum: a replicate is one of them, so the + mean is 1.0 or 0.5
    (variance 1/16 = s^2/n), never their average."""
    strata = Strata.from_probes(
        probe_matrix(
            table(probes("t", "a", "+", [{"a": 4}, {"a": 2}]) + probes("t", "a", "-", [{"a": 0}, {"a": 0}])),
            ["a"],
            "g",
            "v",
        )
    )
    iv = intervals(strata, exact_point(strata), 0.4, 400, seed=1)
    assert iv.df.tolist() == [2.0]  # 4 probes on a's own criterion minus its 2 strata
    assert iv.self_effect[0].tolist() == [0.5, 1.0]  # t(2) tails: the extreme replicates
    w = strata.bootstrap_weights(np.random.default_rng(0), 1000)
    assert set(w.sum(axis=1)) == {2.0} and set(w[:, :2].sum(axis=1)) == {1.0}


def test_bootstrap_is_seeded_and_stratified(two_criteria_table):
    strata = Strata.from_probes(probe_matrix(two_criteria_table, ["a", "b"], "g", "v"))
    exact = exact_point(strata)
    first, again = intervals(strata, exact, 0.4, 50, seed=3), intervals(strata, exact, 0.4, 50, seed=3)
    np.testing.assert_array_equal(first.leakage, again.leakage)
    w = strata.bootstrap_weights(np.random.default_rng(0), 100)
    # Every resample redraws one probe less than each stratum holds, from that stratum only.
    for rows, size in zip(strata.slices(), strata.sizes):
        np.testing.assert_array_equal(w[:, rows].sum(axis=1), size - 1)
    assert w.sum(axis=1).tolist() == [4.0] * 100 and len(set(map(bytes, w))) > 1


def test_subsets_draw_distinct_probes_per_stratum(two_criteria_table):
    strata = Strata.from_probes(probe_matrix(two_criteria_table, ["a", "b"], "g", "v"))
    w = strata.subset_weights(np.random.default_rng(0), 30, 1)
    assert set(np.unique(w)) == {0.0, 1.0}
    for rows in strata.slices():
        np.testing.assert_array_equal(w[:, rows].sum(axis=1), 1)
    with pytest.raises(ValueError, match="exceeds"):
        strata.subset_weights(np.random.default_rng(0), 1, 3)


def test_global_summaries_known_answer():
    # Leakage off-diagonals of one reliable 3x3 matrix: 0.5, -0.25, 0.0, 1.0, -0.75, 0.25
    # GlobalPos = (0.5 + 0 + 0 + 1 + 0 + 0.25)/6 = 0.29166..; Tension = (0.25 + 0.75)/6 = 0.1666..; Max = 1.0
    from radar_local.stats.coupling import Coupling

    lk = np.array([[[1, 0.5, -0.25], [0.0, 1, 1.0], [-0.75, 0.25, 1]]])
    c = Coupling(np.ones((1, 3)), np.ones((1, 1, 3)), lk, np.zeros_like(lk), lk[:, None], np.ones((1, 3), bool))
    g = global_summaries(c)
    assert g["positive"][0] == pytest.approx(1.75 / 6)
    assert g["tension"][0] == pytest.approx(1.0 / 6)
    assert g["max_coupling"][0] == pytest.approx(1.0)


def test_double_counted_share_known_answer():
    from radar_local.stats.coupling import double_counted_share

    # weights a = 1, b = 0.5; l_ab = 0.5, l_ba = 0.2, both reliable.
    # source a: through b = 0.5 * 0.5 = 0.25 -> share 0.25 / (1 + 0.25) = 0.2
    # source b: through a = 1 * 0.2 = 0.2    -> share 0.2 / (0.5 + 0.2) = 2/7
    # overall: (1 * 0.25 + 0.5 * 0.2) / (1 * 1.25 + 0.5 * 0.7) = 0.35 / 1.6 = 0.21875
    leak = np.array([[1.0, 0.5], [0.2, 1.0]])
    overall, share = double_counted_share(leak, np.array([True, True]), np.array([1.0, 0.5]))
    assert overall == pytest.approx(0.21875) and share == pytest.approx([0.2, 2 / 7])
    # a gated target counts nothing; a tradeoff (negative leakage) does not double-count
    overall, share = double_counted_share(
        np.array([[1.0, -0.5], [0.2, 1.0]]), np.array([True, False]), np.array([1.0, 1.0])
    )
    assert overall == 0.0 and share[0] == 0.0 and np.isnan(share[1])


def _three_tasks_table(b_shift_t2: int = 3):
    """Source a's self-effects per task 1, 0.75, -0.25 (0-1 footing); b's shifts on a's probes 1, b_shift_t2/4, 0."""
    import pandas as pd

    rows = []
    a_scores = {"t1": (4, 0), "t2": (3, 0), "t3": (0, 1)}
    b_on_a = {"t1": (4, 0), "t2": (b_shift_t2, 0), "t3": (2, 2)}
    for t in a_scores:
        for d, k in (("+", 0), ("-", 1)):
            rows += [("g", "v", t, "a", d, "0", "a", a_scores[t][k]), ("g", "v", t, "a", d, "0", "b", b_on_a[t][k])]
            rows += [("g", "v", t, "b", d, "0", "b", 4 - 4 * k), ("g", "v", t, "b", d, "0", "a", 2)]
    return pd.DataFrame(rows, columns=["generator", "verifier", "task_id", "target", "direction", "variant",
                                       "criterion", "score"])  # fmt: skip


def test_the_report_counts_each_sources_tasks_with_a_self_effect_at_or_below_zero():
    """Issue 43 item 4 (part): on a table whose source self-effects are 1, 0.75 and -0.25 (0-1 footing), the ratio
    of means keeps the third task: a -> b = (1 + 0.75 + 0) / (1 + 0.75 - 0.25) = 7/6; the report says the
    definition and counts that task."""
    from radar_local.analysis import analyze
    from radar_local.report.outline import audit_sections
    from radar_local.report.text import LEAKAGE_DEFINITION, self_effect_rows

    result = analyze(_three_tasks_table(), bootstrap=0)
    assert result.leakage.loc["a", "b"] == pytest.approx(7 / 6)
    counts = {row[0]: row[-1] for row in self_effect_rows(result)}
    assert counts == {"a": "1 of 3", "b": "0 of 3"}
    assert LEAKAGE_DEFINITION in str(audit_sections(result))


def test_leakage_paper_is_eq5_on_a_hand_computed_table(tmp_path):
    """Issue 43 item 4: `leakage: paper` reports eq. 5, the mean of the per-task ratios over the tasks whose source
    self-effect is positive. b's shifts on a's probes 1, 1/4, 0 over a's self-effects 1, 3/4, -1/4:
      ratio of means: (1 + 1/4 + 0) / (1 + 3/4 - 1/4) = (5/4) / (3/2) = 5/6;
      eq. 5: mean(1/1, (1/4)/(3/4)) over t1, t2 (t3's self-effect is negative) = (1 + 1/3) / 2 = 2/3."""
    import json

    from radar_local.analysis import analyze
    from radar_local.report.outline import audit_sections
    from radar_local.report.text import PAPER_DEFINITION
    from tests.conftest import invoke

    table = _three_tasks_table(b_shift_t2=1)
    ours, paper = analyze(table, bootstrap=0), analyze(table, bootstrap=200, leakage="paper")
    assert ours.leakage.loc["a", "b"] == pytest.approx(5 / 6) and paper.leakage.loc["a", "b"] == pytest.approx(2 / 3)
    assert paper.leakage_definition == "paper" and paper.leakage_ci is not None
    assert PAPER_DEFINITION in str(audit_sections(paper))
    path = tmp_path / "scores.csv"
    table.to_csv(path, index=False)
    res = invoke("stats", path, "--leakage", "paper", "--json", tmp_path / "out.json", "--bootstrap", "0")
    assert res.exit_code == 0, res.output
    stored = json.loads((tmp_path / "out.json").read_text())
    assert stored["leakage_definition"] == "paper" and stored["leakage"]["a"]["b"] == pytest.approx(2 / 3)
    result = run_audit(planted_config(leakage="paper", n=2, bootstrap=20), tmp_path / "run")
    assert result.leakage_definition == "paper"
