"""Judge bias from nuisance pairs (stats/nuisance.py): a planted bias recovered within its interval and
flagged alone, the coupling untouched, exact comparisons at the threshold, and the score table's rows."""

import json

import numpy as np
import pandas as pd
import pytest

import radar_local
from radar_local.errors import InputError
from radar_local.score_table import COLUMNS, validate_scores
from radar_local.stats.nuisance import nuisance_pairs, nuisance_table
from radar_local.stats.result import AuditResult
from radar_local.synthetic import HELPSTEER2_PLANTED, planted_table

CRITERIA = ["helpfulness", "correctness", "coherence", "complexity", "verbosity"]
TASKS = [f"t{i}" for i in range(6)]


def table(**nuisance) -> pd.DataFrame:
    return planted_table(CRITERIA, TASKS, HELPSTEER2_PLANTED, n=5, seed=2, nuisance=nuisance or None, n_pairs=12)


@pytest.fixture(scope="module")
def biased():
    return radar_local.analyze(table(length={"coherence": 0.3}, formatting={}), rubric="helpsteer2", bootstrap=300)


def test_a_planted_length_bias_is_recovered_and_flagged_alone(biased):
    rows = {(r["attribute"], r["criterion"]): r for r in biased.nuisance["rows"]}
    assert set(rows) == {(a, c) for a in ("formatting", "length") for c in CRITERIA}
    cell = rows[("length", "coherence")]
    assert cell["ci"][0] <= 0.3 <= cell["ci"][1] and cell["pairs"] == 6 * 12
    assert abs(cell["sensitivity"] - 0.3) < 0.08 and cell["flag"] == "biased"
    assert [key for key, r in rows.items() if r["flag"]] == [("length", "coherence")]  # nothing else
    share = cell["sensitivity"] / biased.self_effect["coherence"]
    assert cell["bias_share"] == pytest.approx(share) and set(cell["by_task"]) == set(TASKS)


def test_nuisance_rows_leave_the_coupling_as_it_was(biased):
    plain = radar_local.analyze(table(), rubric="helpsteer2", bootstrap=300)
    assert plain.nuisance is None
    assert {k: v for k, v in biased.to_json().items() if k != "nuisance"} == plain.to_json()


def test_the_nuisance_section_round_trips_and_a_damaged_one_is_one_line(biased):
    data = biased.to_json()
    assert AuditResult.from_json(json.loads(json.dumps(data))) == biased
    data["nuisance"]["rows"][0]["flag"] = "very"
    with pytest.raises(InputError, match="unknown nuisance flag"):
        AuditResult.from_json(data, "stats.json")


def pairs_table(diffs: list[int]) -> pd.DataFrame:
    """One task, one criterion 'a' (and a second, 'b', unmoved): pairs whose up - down is each diff."""
    rows = []
    for v, d in enumerate(diffs):
        for way, score in (("up", 2 + d), ("down", 2)):
            rows += [("g", "v", "t", "length", way, str(v), "a", score), ("g", "v", "t", "length", way, str(v), "b", 2)]
    return validate_scores(pd.DataFrame(rows, columns=list(COLUMNS)), "planted", both_directions=False)


@pytest.mark.parametrize(
    "diffs,threshold,flag",
    [
        ([1] * 10, 0.25, "biased"),  # sensitivity exactly 1/4, at the threshold
        ([1] * 10, 0.2500001, None),  # just above it
        ([1] * 9 + [0], 0.25, None),  # 9/40, just below
        ([-1] * 10, 0.25, "biased"),  # a penalty is a bias too
    ],
)
def test_the_flag_compares_exactly_at_the_threshold(diffs, threshold, flag):
    pairs = nuisance_pairs(pairs_table(diffs), ["a", "b"])
    rows = nuisance_table(pairs, ["a", "b"], [0.5, 0.5], [True, True], threshold=threshold, n_bootstrap=200)
    assert rows[0]["flag"] == flag and rows[1]["flag"] is None  # b never moved
    assert rows[0]["sensitivity"] == sum(diffs) / 40


def test_an_intended_pair_is_listed_not_flagged():
    pairs = nuisance_pairs(pairs_table([1] * 10), ["a", "b"])
    rows = nuisance_table(
        pairs,
        ["a", "b"],
        [0.5, 0.5],
        [True, True],
        threshold=0.1,
        intended={frozenset(("length", "a"))},
        n_bootstrap=200,
    )
    assert rows[0]["flag"] == "intended" and rows[0]["bias_share"] == 0.5


def test_a_rewrite_without_its_partner_is_left_out_and_one_pair_has_no_interval():
    df = pairs_table([1, 1])
    df = df[~((df["variant"] == "1") & (df["direction"] == "down"))]  # the second pair lost its down rewrite
    (pairs,) = nuisance_pairs(df, ["a", "b"])
    assert len(pairs.diff) == 1
    (row, _) = nuisance_table([pairs], ["a", "b"], [0.5, 0.5], [True, True], n_bootstrap=200)
    assert row["pairs"] == 1 and row["ci"] is None and row["flag"] is None  # no interval, no flag


def test_a_nuisance_row_must_name_its_attribute():
    rows = [("g", "v", "t", "", "up", "0", "a", 2)]
    with pytest.raises(InputError, match="row 2: a nuisance rewrite"):
        validate_scores(pd.DataFrame(rows, columns=list(COLUMNS)), "scores.csv")


def test_an_unreliable_criterion_has_no_bias_share():
    pairs = nuisance_pairs(pairs_table([1] * 10), ["a", "b"])
    rows = nuisance_table(pairs, ["a", "b"], [0.5, 0.0], [True, False], n_bootstrap=0)
    assert rows[0]["ci"] is None and rows[1]["bias_share"] is None and np.isclose(rows[0]["bias_share"], 0.5)


def test_every_rendering_shows_the_bias(biased, tmp_path):
    from rich.console import Console

    from radar_local.report.console import print_audit
    from radar_local.report.html import result_tables_html
    from radar_local.report.markdown import audit_markdown

    console = Console(record=True, width=200)
    print_audit(biased, console)
    for text in (console.export_text(), audit_markdown(biased), result_tables_html(biased)):
        assert "Judge bias" in text and "coherence with length (+0.3" in text


def test_radar_stats_reads_nuisance_rows_from_a_table_made_elsewhere(tmp_path):
    from tests.conftest import radar_run

    path = tmp_path / "scores.csv"
    table(length={"coherence": 0.3}).to_csv(path, index=False)
    res = radar_run(
        "stats",
        path,
        "--rubric",
        "helpsteer2",
        "--bootstrap",
        "100",
        "--json",
        tmp_path / "s.json",
        "--bias-threshold",
        "0.5",
    )
    assert res.returncode == 0, res.stderr
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["nuisance"]["threshold"] == 0.5 and not any(r["flag"] for r in stats["nuisance"]["rows"])
    assert "Judge bias over length" in res.stdout
