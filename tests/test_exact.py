"""Values that meet a threshold are compared exactly: the gate at tau, per-task spread, the budget's
full-sample row, gating reasons and unscored warnings (issue 7, part 1)."""

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from radar_local.analysis import stats_for_table
from radar_local.cli.main import cli
from radar_local.score_table import COLUMNS, validate_scores
from radar_local.stats.audit import audit_cell
from radar_local.stats.bootstrap import Strata
from radar_local.stats.exact import resample_decisions
from radar_local.stats.probes import probe_matrix
from radar_local.stats.settings import StatsSettings
from tests.conftest import probes, table

TAU = Fraction(2, 5)


def _spread(total: int, n: int) -> list[int]:
    """n Likert scores (0-4) summing to total."""
    return [min(4, max(0, total - 4 * v)) for v in range(n)]


def _cell(name: str, pos: list[int], neg: list[int], offset: int) -> list[tuple]:
    """Criterion a steered with the given + and - scores; b is a clean, fully reliable criterion."""
    rows = [("t", "a", "+", str(v), "a", s) for v, s in enumerate(pos)] + [
        ("t", "a", "-", str(v), "a", s) for v, s in enumerate(neg)
    ]
    rows += [("t", "a", d, str(v), "b", 2) for d, ss in (("+", pos), ("-", neg)) for v in range(len(ss))]
    rows += [
        ("t", "b", "+", "0", "a", 2),
        ("t", "b", "+", "0", "b", 4),
        ("t", "b", "-", "0", "a", 2),
        ("t", "b", "-", "0", "b", 0),
    ]
    return [(name, "v", *r[:5], r[5] + offset) for r in rows]


def _exact_tau_cases() -> list[tuple[int, int, int, int]]:
    """Every (n+, n-, S+, S-) with 1..10 scored probes per direction whose self-effect is exactly tau:
    (S+/n+ - S-/n-) / 4 = 2/5, i.e. a move of exactly 1.6 Likert points."""
    move = 4 * Fraction(TAU)  # in Likert points; sp/a - sm/b == move, in integers
    return [
        (a, b, sp, sm)
        for a in range(1, 11)
        for b in range(1, 11)
        for sp in range(4 * a + 1)
        for sm in range(4 * b + 1)
        if (sp * b - sm * a) * move.denominator == move.numerator * a * b
    ]


@pytest.mark.parametrize("scale,offset", [("0-4", 0), pytest.param("1-5", 1, marks=pytest.mark.thorough)])
def test_gate_passes_at_exactly_tau_and_fails_just_below(scale, offset):
    cases = _exact_tau_cases()
    assert len(cases) == 176 and (5, 5, 12, 4) in cases  # the issue's [2,2,3,3,2] vs [0,1,1,1,1]
    rows = []
    for idx, (a, b, sp, sm) in enumerate(cases):
        rows += _cell(f"at{idx}", _spread(sp, a), _spread(sm, b), offset)
        if sp > 0:  # one Likert point less on one + probe: below tau
            rows += _cell(f"below{idx}", _spread(sp - 1, a), _spread(sm, b), offset)
    df = validate_scores(pd.DataFrame(rows, columns=list(COLUMNS)), "planted", scale)
    for gen, cell in df.groupby("generator", sort=False):  # one cell per case
        pm = probe_matrix(cell, ["a", "b"], gen, "v")
        r = audit_cell(pm, resamples=0, budget=False).to_json()
        at = gen.startswith("at")
        assert r["reliable"]["a"] is at, (gen, r["self_effect"]["a"])
        assert (r["pairs"][0]["flags"] == ["gated"]) is not at
        # The budget's subsets are gated alike: here a "subset" of every probe.
        strata = Strata.from_probes(pm)
        every = np.ones((1, len(strata.scores)))
        assert bool(resample_decisions(strata, every, 0.4)[1][0, 0]) is at


def test_issue_example_keeps_its_pairs_and_globals():
    # + scores [2,2,3,3,2] (mean 2.4), - scores [0,1,1,1,1] (mean 0.8): a move of 1.6 points = 0.4 exactly.
    rows = probes("t", "a", "+", [{"a": s, "b": 2} for s in (2, 2, 3, 3, 2)]) + probes(
        "t", "a", "-", [{"a": s, "b": 1} for s in (0, 1, 1, 1, 1)]
    )
    rows += probes("t", "b", "+", [{"a": 2, "b": 4}] * 5) + probes("t", "b", "-", [{"a": 2, "b": 0}] * 5)
    r = stats_for_table(table(rows), "t.csv", StatsSettings(resamples=50)).to_json()
    assert r["self_effect"]["a"] == 0.4 and r["reliable"] == {"a": True, "b": True}
    # leakage a->b = (2/4 - 1/4) / (2/5) = 5/8
    assert r["leakage"]["a"]["b"] == 0.625 and r["global"]["positive"] is not None
    assert r["pairs"][0]["reliable"] and r["flags"]["unreliable"] == []


def test_fail_on_sym_is_exact_at_the_boundary(tmp_path):
    # N = 5 per stratum; normalized means are sums / 20.
    # a+: a sum 8, b sum 0;  a-: a 0, b sum 3  -> SelfEffect(a) = 8/20 = 0.4,  l_ab = (0 - 3/20) / (8/20) = -3/8
    # b+: b sum 8, a sum 7;  b-: b 0, a 0      -> SelfEffect(b) = 0.4,          l_ba = (7/20) / (8/20) = 7/8
    # Sym = (-3/8 + 7/8) / 2 = 1/4 exactly; in floats it came out 0.24999999999999997 and slipped under 0.25.
    zero = [0] * 5
    rows = probes("t", "a", "+", [{"a": s, "b": 0} for s in (2, 2, 2, 2, 0)])
    rows += probes("t", "a", "-", [{"a": 0, "b": s} for s in (1, 1, 1, 0, 0)])
    rows += probes("t", "b", "+", [{"a": x, "b": y} for x, y in zip((2, 2, 2, 1, 0), (2, 2, 2, 2, 0))])
    rows += probes("t", "b", "-", [{"a": 0, "b": s} for s in zero])
    path = tmp_path / "s.csv"
    table(rows).to_csv(path, index=False)
    stats = tmp_path / "stats.json"
    res = CliRunner().invoke(cli, ["stats", str(path), "--json", str(stats), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    (pair,) = json.loads(stats.read_text())["pairs"]
    assert pair["sym"] == 0.25 and pair["reliable"] and pair["flags"] == ["directional", "tradeoff"]
    at = CliRunner().invoke(cli, ["compare", str(stats), str(stats), "--fail-on-sym", "0.25"])
    above = CliRunner().invoke(cli, ["compare", str(stats), str(stats), "--fail-on-sym", "0.26"])
    assert at.exit_code == 1 and above.exit_code == 0


def test_one_task_has_no_spread():
    rows = probes("t", "a", "+", [{"a": 4, "b": 3}]) + probes("t", "a", "-", [{"a": 0, "b": 1}])
    rows += probes("t", "b", "+", [{"a": 3, "b": 4}]) + probes("t", "b", "-", [{"a": 1, "b": 0}])
    r = audit_cell(probe_matrix(table(rows), ["a", "b"], "g", "v"), resamples=20, budget=False).to_json()
    assert r["leakage_sd"]["a"]["b"] is None and r["leakage_sd"]["b"]["a"] is None  # undefined, not a stable 0.0


def test_budget_always_ends_with_the_full_sample(two_criteria_table):
    # N = 2 per stratum: one subset row (N = 1), then all probes once, equal to the point estimate.
    r = audit_cell(probe_matrix(two_criteria_table, ["a", "b"], "g", "v"), resamples=0).to_json()
    assert [(row["n"], row["subsets"], row.get("all_probes", False)) for row in r["budget"]] == [
        (1, 30, False),
        (2, 1, True),
    ]
    full = r["budget"][-1]["sym"][0]
    assert full["mean"] == r["pairs"][0]["sym"] == 0.5 and full["sd"] is None


def test_budget_full_row_when_n_is_not_a_standard_budget():
    rng = np.random.default_rng(0)
    rows = []
    for target in ("a", "b"):
        for d, hi in (("+", 4), ("-", 0)):
            rows += probes(
                "t",
                target,
                d,
                [{"a": int(rng.integers(0, 5)), "b": int(rng.integers(0, 5)), target: hi} for _ in range(7)],
            )
    r = audit_cell(probe_matrix(table(rows), ["a", "b"], "g", "v"), resamples=0).to_json()
    assert [row["n"] for row in r["budget"]] == [1, 2, 3, 4, 5, 7] and r["budget"][-1]["all_probes"]


def test_gating_reasons_and_unscored_warnings():
    nan = float("nan")
    rows = probes("t1", "a", "+", [{"a": 4, "b": 2, "c": 2}]) + probes("t1", "a", "-", [{"a": 0, "b": 2, "c": 2}])
    rows += probes("t1", "b", "+", [{"a": 2, "b": 0, "c": 2}]) + probes("t1", "b", "-", [{"a": 2, "b": 4, "c": 2}])
    rows += probes("t1", "c", "+", [{"a": 2, "b": 2, "c": nan}]) + probes("t1", "c", "-", [{"a": 2, "b": 2, "c": 0}])
    r = audit_cell(probe_matrix(table(rows), ["a", "b", "c"], "g", "v"), resamples=0, budget=False).to_json()
    causes = {u["criterion"]: (u["cause"], u["reason"]) for u in r["flags"]["unreliable"]}
    assert causes == {
        "b": ("negative", "negative self-effect (failed intervention)"),
        "c": ("unscored", "no scored probes in a direction (every answer unscored or missing)"),
    }
    assert r["unscored"] == {"verdicts": 1, "verdicts_total": 18, "strata": 1, "strata_total": 6, "tasks": {"t1": 1}}
    assert len(r["warnings"]) == 2 and "1 of 6 strata" in r["warnings"][1] and "t1 (1)" in r["warnings"][1]


def test_a_resample_equal_to_the_data_makes_the_datas_decisions():
    """Two identical probes per stratum, a scored 2.37 (+) vs 0.77 (-): self-effect 0.4 in exact
    arithmetic of the stored floats, so a passes. Every resample equals the data, so every interval is
    the point and GlobalPos keeps a's row (float32 resampling gated a out: [0.39999998, ...])."""
    rows = probes("t", "a", "+", [{"a": 2.37, "b": 3}] * 2) + probes("t", "a", "-", [{"a": 0.77, "b": 1}] * 2)
    rows += probes("t", "b", "+", [{"a": 3, "b": 4}] * 2) + probes("t", "b", "-", [{"a": 1, "b": 0}] * 2)
    r = stats_for_table(table(rows), "t.csv", StatsSettings(resamples=200)).to_json()
    assert r["self_effect"]["a"] == 0.4 and r["reliable"] == {"a": True, "b": True}
    assert r["self_effect_ci"] == {c: [v, v] for c, v in r["self_effect"].items()}
    assert r["global"]["ci"] == {"positive": [r["global"]["positive"]] * 2}  # no interval for the others
    assert set(r["bootstrap"]["no_interval"]) == {"tension", "max_coupling"}
    assert r["bootstrap"]["undefined"] == {"self_effect": {}, "leakage": {}}
    assert r["global"]["positive"] == 0.875  # (1.25 + 0.5) / 2: a's row counts
    assert all(r["leakage_ci"][a][b] == [r["leakage"][a][b]] * 2 for a in "ab" for b in "ab")
    pair = r["pairs"][0]
    assert pair["ci"] == {"sym": [pair["sym"]] * 2, "asym": [pair["asym"]] * 2}


@pytest.mark.parametrize("minus,reliable", [(0.77, True), (math.nextafter(0.77, 1), False)])
def test_the_budgets_subsets_gate_at_exactly_tau(minus, reliable):
    """Every subset of identical probes equals the data: its gate is the point estimate's, also one
    float step below tau, where float arithmetic of the subset means cannot tell."""
    rows = probes("t", "a", "+", [{"a": 2.37, "b": 3}] * 3) + probes("t", "a", "-", [{"a": minus, "b": 1}] * 3)
    rows += probes("t", "b", "+", [{"a": 3, "b": 4}] * 3) + probes("t", "b", "-", [{"a": 1, "b": 0}] * 3)
    r = stats_for_table(table(rows), "t.csv", StatsSettings(resamples=0)).to_json()
    assert r["reliable"]["a"] is reliable
    gated = [row for row in r["budget"] if row["n"] < 3]
    assert gated and all((row["sym"][0]["defined"] == row["subsets"]) is reliable for row in gated)


def test_roots_and_floats_of_fractions_beyond_a_floats_range():
    """Issue 28, item 9: a variance of huge leakages (over a self-effect of 1e-305) overflowed float()."""
    from radar_local.stats.exact import sqrt, to_float

    assert sqrt(Fraction(9, 4)) == 1.5
    assert sqrt(Fraction(4 * 10**600)) == pytest.approx(2e300, rel=1e-15)  # the variance is no float
    assert sqrt(Fraction(1, 10**640)) == pytest.approx(1e-320, rel=1e-3)  # a subnormal root
    assert to_float(Fraction(10**400)) == math.inf and to_float(Fraction(-(10**400))) == -math.inf


def test_tiny_expected_scores_give_statistics_and_a_stats_json_that_reads_back():
    """Issue 28, item 9: expected scores of 9.9e-305 ended every `radar stats` and resume in an
    OverflowError; now the gate says what such a self-effect is worth and the result round-trips."""
    from radar_local.stats.result import AuditResult

    rows = []
    for t, spread in (("t1", 1.0), ("t2", 3.0)):
        rows += probes(t, "a", "+", [{"a": 9.9e-305, "b": spread}, {"a": 2 * 9.9e-305, "b": 4.0}])
        rows += probes(t, "a", "-", [{"a": 0.0, "b": 0.0}, {"a": 0.0, "b": 1.0}])
        rows += probes(t, "b", "+", [{"a": 2.0, "b": 4.0}, {"a": 2.5, "b": 4.0}])
        rows += probes(t, "b", "-", [{"a": 2.0, "b": 0.0}, {"a": 1.0, "b": 1.0}])
    result = stats_for_table(table(rows), "t.csv", StatsSettings(resamples=200, seed=3))
    assert not result.reliable["a"] and result.reliable["b"]
    assert 0 < result.self_effect["a"] < 1e-300
    assert result.leakage.loc["a", "b"] > 1e300 and math.isfinite(result.leakage_sd.loc["a", "b"])
    assert AuditResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_resamples_where_a_leakage_is_undefined_are_counted_and_said():
    """Issue 29: resamples in which a quantity was undefined were dropped without a count. One task, a
    steered to 4 or 0 (+) against 0 and 0 (-): a Rao-Wu resample keeps one of the two + probes, so about
    half of them have a self-effect of 0 and no leakage row for a."""
    rows = probes("t", "a", "+", [{"a": 4, "b": 3}, {"a": 0, "b": 1}]) + probes("t", "a", "-", [{"a": 0, "b": 1}] * 2)
    rows += probes("t", "b", "+", [{"a": 2, "b": 4}] * 2) + probes("t", "b", "-", [{"a": 2, "b": 0}] * 2)
    r = stats_for_table(table(rows), "t.csv", StatsSettings(resamples=400, seed=1)).to_json()
    undefined = r["bootstrap"]["undefined"]
    assert undefined["self_effect"] == {} and set(undefined["leakage"]) == {"a->a", "a->b"}
    assert 140 <= undefined["leakage"]["a->b"] <= 260  # binomial(400, 1/2): 200 +- 3 sd
    assert any("rest on fewer resamples" in w and "a->" in w for w in r["warnings"])
