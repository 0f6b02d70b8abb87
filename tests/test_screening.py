"""The screening mode (issue 43 item 1): Benjamini-Hochberg over the pair flags' hypotheses, its own evidence word
beside the family-wise `confirmed`; its false discovery rate is measured by scripts/power_levers.py."""

import math

import numpy as np
import pytest
from scipy import stats

from radar_local.report.text import findings
from radar_local.stats.audit import audit_cell
from radar_local.stats.flags import CLUSTER, DIRECTIONAL, TRADEOFF
from radar_local.stats.probes import probe_matrix
from radar_local.stats.screening import benjamini_hochberg, one_sided, p_values
from radar_local.synthetic import planted_table

CRIT = ["a", "b", "c", "d"]


def test_the_step_up_passes_the_k_smallest_p_values_below_their_rank_line_exactly():
    # ranks' lines at q = 0.05, m = 4: 0.0125, 0.025, 0.0375, 0.05
    assert benjamini_hochberg({"a": 0.01, "b": 0.02, "c": 0.03, "d": 0.5}, 0.05) == {"a", "b", "c"}
    # step-up: the first p misses its line (0.04 > 0.025) and still passes with the second (0.04 <= 0.05)
    assert benjamini_hochberg({"a": 0.04, "b": 0.04}, 0.05) == {"a", "b"}
    assert benjamini_hochberg({"a": 0.06, "b": 0.04}, 0.05) == set()
    # at the line exactly (binary fractions, so the float is the line): passed; the next float above: not
    assert benjamini_hochberg({"a": 0.125, "b": 0.25}, 0.25) == {"a", "b"}
    assert benjamini_hochberg({"a": 0.125, "b": math.nextafter(0.25, 1)}, 0.25) == {"a"}
    assert benjamini_hochberg({}, 0.05) == set()


def test_a_one_sided_p_value_is_students_t_and_a_quantity_that_cannot_vary_is_compared_exactly():
    assert one_sided(0.9, 0.2, 10, 0.5, ">=") == pytest.approx(stats.t.sf(2, 10))
    assert one_sided(-0.5, 0.1, 10, -0.2, "<=") == pytest.approx(stats.t.cdf(-3, 10))
    assert one_sided(0.5, 0.0, 10, 0.5, ">=") == 0.0 and one_sided(0.5, 0.0, 10, 0.5, ">") == 1.0
    assert one_sided(0.25, 0.0, 10, 0.25, "<") == 1.0 and one_sided(0.25, 0.0, 10, 0.25, "<=") == 0.0
    assert one_sided(None, 0.1, 10, 0.5, ">=") == one_sided(0.9, math.nan, 10, 0.5, ">=") == 1.0
    assert one_sided(0.9, 0.1, 0, 0.5, ">=") == 1.0  # no degree of freedom: no evidence


def test_each_flag_is_an_intersection_union_of_its_tests_and_both_gates():
    """A p-value per ordered pair for directional and tradeoff, one per pair for a cluster: 5 a pair; each the
    largest of its one-sided tests', a weak gate raising every hypothesis of its pairs."""
    leak = np.array([[1.0, 0.9, 0.0], [0.1, 1.0, 0.6], [0.0, 0.6, 1.0]])
    scale = {"self_effect": np.full(3, 0.1), **{q: np.full((3, 3), 0.1) for q in ("leakage", "sym", "diff")}}
    df = np.full(3, 20.0)
    p = p_values([1.0, 1.0, 0.45], leak, scale, df, 0.4)
    assert len(p) == 5 * 3

    def t(z: float, d: float = 20.0) -> float:  # a one-sided test's p-value at z standard errors past its line
        return float(stats.t.sf(z, d))

    assert p[DIRECTIONAL, 0, 1] == pytest.approx(max(t(4), t(5.5, 40)))  # l 0.9 vs 0.5, l_ab - l_ba 0.8 vs 0.25
    assert p[TRADEOFF, 0, 1] == pytest.approx(t(-11))  # 0.9 is far on the wrong side of -0.2
    gate = t(0.5)  # c's self-effect 0.45 against tau 0.4
    assert p[CLUSTER, 1, 2] == pytest.approx(max(gate, t(1, 40), t(2.5, 40)))
    assert p[DIRECTIONAL, 1, 2] == p[DIRECTIONAL, 2, 1] == pytest.approx(t(-2.5, 40))  # equal leakages: no direction


def planted(n: int, seed: int):
    """Every pair of four criteria one-way: the earlier leaks 0.8 into the later (6 true directional pairs)."""
    m = np.eye(4)
    m[np.triu_indices(4, 1)] = 0.8
    df = planted_table(CRIT, ["t1", "t2", "t3"], m, n=n, seed=seed, noise=1.0)
    return probe_matrix(df, CRIT, "sim-generator", "sim-verifier")


def test_screening_marks_possible_flags_it_passes_and_leaves_confirmed_ones_alone():
    """At N = 10, with six true directional pairs: two are confirmed family-wise and screening passes three more
    (BH gains most where many hypotheses are false); the confirmed ones and every interval are unchanged."""
    pm = planted(10, 1)
    plain, screened = audit_cell(pm, budget=False), audit_cell(pm, budget=False, screening=0.05)
    before = {(p["a"], p["b"]): p["evidence"]["directional"] for p in plain.pairs.to_dict("records")}
    after = {(p["a"], p["b"]): p["evidence"]["directional"] for p in screened.pairs.to_dict("records")}
    assert sorted(before.values()) == ["confirmed"] * 2 + ["possible"] * 4
    assert sorted(after.values()) == ["confirmed"] * 2 + ["possible"] + ["screened"] * 3
    assert all(after[pair] == "confirmed" for pair, e in before.items() if e == "confirmed")
    block = screened.to_json()["family"]["screening"]
    assert (block["fdr"], block["hypotheses"], block["passed"]) == (0.05, 30, 5)
    assert "screening" not in plain.to_json()["family"]
    assert {k: v for k, v in screened.family.items() if k != "screening"} == plain.family
    text = "\n".join(findings(screened))
    assert text.count("Screened, not confirmed:") == 3
    assert "false discovery rate of 5% over 30 flag hypotheses" in text


def test_a_judge_with_no_coupling_screens_nothing_here():
    """No coupling at N = 10: the point estimate raises flags, BH passes none (its rate over many audits is
    scripts/power_levers.py's figure)."""
    df = planted_table(CRIT, ["t1", "t2", "t3"], np.eye(4), n=10, seed=3, noise=1.0)
    r = audit_cell(probe_matrix(df, CRIT, "sim-generator", "sim-verifier"), budget=False, screening=0.05)
    assert r.family["screening"]["passed"] == 0
    assert not any("screened" in (p["evidence"] or {}).values() for p in r.pairs.to_dict("records"))


def test_radar_stats_and_an_audit_config_ask_for_screening(tmp_path):
    """`radar stats --screening FDR` and a config's `screening:` both screen; off the open interval (0, 1) is one
    line and exit 2."""
    import json

    import yaml

    from radar_local.auditing import run_audit
    from tests.conftest import invoke, one_line_exit_2, planted_config

    m = np.eye(4)
    m[np.triu_indices(4, 1)] = 0.8
    table = tmp_path / "scores.csv"
    planted_table(CRIT, ["t1", "t2", "t3"], m, n=10, seed=1, noise=1.0).to_csv(table, index=False)
    res = invoke("stats", table, "--screening", "0.05", "--json", tmp_path / "s.json", "--bootstrap", "200")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "s.json").read_text())["family"]["screening"]["fdr"] == 0.05
    assert "Screened, not confirmed:" in res.output
    one_line_exit_2(invoke("stats", table, "--screening", "1"), "--screening")
    result = run_audit(planted_config(n=3, screening=0.05), tmp_path / "run", progress=False)
    assert result.family["screening"]["hypotheses"] == 5 * 10  # helpsteer2's 5 criteria: 10 pairs
    from radar_local import load_run

    assert load_run(tmp_path / "run").result() == result  # stats.json reads back with its screening block
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(planted_config(screening=0)))
    one_line_exit_2(invoke("audit", config, "--out", tmp_path / "bad"), "screening")
