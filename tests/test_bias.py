"""Judge bias from nuisance pairs (stats/bias.py): a planted bias recovered within its interval and
flagged alone, the coupling untouched, exact comparisons at the threshold, and the score table's rows."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import radar_local
from radar_local.errors import InputError
from radar_local.score_table import COLUMNS, validate_scores
from radar_local.stats.bias import Bias, nuisance_pairs, nuisance_table
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
    rows = {(r.attribute, r.criterion): r for r in biased.bias_rows}
    assert set(rows) == {(a, c) for a in ("formatting", "length") for c in CRITERIA}
    cell = rows[("length", "coherence")]
    assert cell.ci[0] <= 0.3 <= cell.ci[1] and cell.pairs == 6 * 12
    assert abs(cell.sensitivity - 0.3) < 0.08 and cell.flag == "biased"
    assert [key for key, r in rows.items() if r.flag] == [("length", "coherence")]  # nothing else
    share = cell.sensitivity / biased.self_effect["coherence"]
    assert cell.bias_share == pytest.approx(share) and set(cell.by_task) == set(TASKS)


def test_nuisance_rows_leave_the_coupling_as_it_was(biased):
    plain = radar_local.analyze(table(), rubric="helpsteer2", bootstrap=300)
    assert plain.measured(Bias) is None
    data = biased.to_json()
    assert data["measurements"].pop("bias") and data == plain.to_json()


def test_the_nuisance_section_round_trips_and_a_damaged_one_is_one_line(biased):
    data = biased.to_json()
    assert AuditResult.from_json(json.loads(json.dumps(data))) == biased
    # a stats.json of schema 2 named judge bias `nuisance`: it reads back as today's `bias`
    older = {k: v for k, v in data.items() if k != "measurements"} | {"schema_version": 2}
    older |= {("nuisance" if k == "bias" else k): v for k, v in data["measurements"].items()}
    assert "nuisance" in older and AuditResult.from_json(json.loads(json.dumps(older))) == biased
    data["measurements"]["bias"]["rows"][0]["flag"] = "very"
    with pytest.raises(InputError, match="key 'measurements.bias.rows.0.flag': Input should be 'biased' or 'intended'"):
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
    rows = nuisance_table(pairs, ["a", "b"], [0.5, 0.5], [True, True], threshold=threshold, resamples=200)
    assert rows[0].flag == flag and rows[1].flag is None  # b never moved
    assert rows[0].sensitivity == sum(diffs) / 40


def test_an_intended_pair_is_listed_not_flagged():
    pairs = nuisance_pairs(pairs_table([1] * 10), ["a", "b"])
    rows = nuisance_table(
        pairs,
        ["a", "b"],
        [0.5, 0.5],
        [True, True],
        threshold=0.1,
        intended={frozenset(("length", "a"))},
        resamples=200,
    )
    assert rows[0].flag == "intended" and rows[0].bias_share == 0.5


def test_a_rewrite_without_its_partner_is_left_out_and_one_pair_has_no_interval():
    df = pairs_table([1, 1])
    df = df[~((df["variant"] == "1") & (df["direction"] == "down"))]  # the second pair lost its down rewrite
    (pairs,) = nuisance_pairs(df, ["a", "b"])
    assert len(pairs.diff) == 1
    (row, _) = nuisance_table([pairs], ["a", "b"], [0.5, 0.5], [True, True], resamples=200)
    assert row.pairs == 1 and row.ci is None and row.family_ci is None
    assert row.flag == "biased" and row.evidence == "possible"  # the point crosses; nothing confirms it


def test_a_nuisance_row_must_name_its_attribute():
    rows = [("g", "v", "t", "", "up", "0", "a", 2)]
    with pytest.raises(InputError, match="row 2: a nuisance rewrite"):
        validate_scores(pd.DataFrame(rows, columns=list(COLUMNS)), "scores.csv")


def test_an_unreliable_criterion_has_no_bias_share():
    pairs = nuisance_pairs(pairs_table([1] * 10), ["a", "b"])
    rows = nuisance_table(pairs, ["a", "b"], [0.5, 0.0], [True, False], resamples=0)
    assert rows[0].ci is None and rows[1].bias_share is None and np.isclose(rows[0].bias_share, 0.5)


def test_every_rendering_shows_the_bias(biased, audited):
    from rich.console import Console

    from radar_local.report.console import print_audit
    from radar_local.report.html import result_tables_html
    from radar_local.report.markdown import audit_markdown

    console = Console(record=True, width=200)
    print_audit(biased, console)
    for text in (console.export_text(), audit_markdown(biased), result_tables_html(biased)):
        assert "Judge bias" in text and "coherence with length (+0.3" in text
    line = "Not steered, so nothing is claimed: formatting (0 of 20 pairs moved)"
    assert line in audit_markdown(audited[1]) and line in result_tables_html(audited[1])


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
    assert (bias := stats["measurements"]["bias"])["threshold"] == 0.5 and not any(r["flag"] for r in bias["rows"])
    assert "Judge bias over length" in res.stdout


# ---- in a run, on the planted engine ----
BIASED_JUDGE = {"noise": 1.0, "bias": {"length": {"Coherence / Clarity": 0.3}}}


def nuisance_run(tmp_path, name: str, **kw) -> radar_local.AuditResult:
    from tests.conftest import planted_config

    spec = {"engine": "testing", "model": "planted", "options": BIASED_JUDGE}
    config = {**planted_config(generator=spec, verifier=spec, unconditioned=10, bootstrap=200), **kw}
    return radar_local.run_audit(config, tmp_path / name)


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    root = tmp_path_factory.mktemp("nuisance")
    return root, nuisance_run(root, "run", nuisance=["length", "formatting"])


def test_an_audit_rewrites_scores_and_recovers_a_planted_bias(audited):
    root, result = audited
    rows = {(r.attribute, r.criterion): r for r in result.bias_rows}
    cell = rows[("length", "coherence")]
    assert cell.ci[0] <= 0.3 <= cell.ci[1] and cell.flag == "biased" and cell.pairs == 20
    assert [key for key, r in rows.items() if r.flag] == [("length", "coherence")]
    check = result.measured(Bias).manipulation
    assert check["length"] == {"measure": "length", "pairs": 20, "passed": 20, "excluded": 0, "steered": True}
    # the planted generator does not change formatting: every pair fails the check, the attribute is not steered
    assert check["formatting"]["passed"] == 0 and check["formatting"]["steered"] is False
    assert not any(("formatting", c) in rows for c in CRITERIA)  # its pairs were all left out
    info = json.loads((root / "run" / "run.json").read_text())["stages"]
    assert info["rewrite"]["calls"] == 2 * 2 * 20  # up and down, two attributes, 20 bases
    assert info["score"]["calls"] == (40 + 20 + 80) * 5  # probes, bases and rewrites, five criteria each


def test_nuisance_rewrites_leave_the_coupling_of_the_audit_as_it_was(audited, tmp_path):
    plain = nuisance_run(tmp_path, "plain")
    assert plain.measured(Bias) is None
    data = audited[1].to_json()
    assert data["measurements"].pop("bias") and data == plain.to_json()


def test_a_resumed_nuisance_audit_makes_no_call(audited, tmp_path):
    import shutil

    shutil.copytree(audited[0] / "run", tmp_path / "run")
    again = nuisance_run(tmp_path, "run", nuisance=["length", "formatting"])
    stages = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]
    assert sum(s["calls"] for s in stages.values()) == 0 and again == audited[1]


def test_nuisance_needs_unconditioned_bases_and_known_names():
    from radar_local.config import AuditConfig
    from tests.conftest import planted_config

    with pytest.raises(ValueError, match="set unconditioned to 2 or more"):
        AuditConfig.model_validate({**planted_config(), "nuisance": ["length"]})
    with pytest.raises(ValueError, match="named twice"):
        AuditConfig.model_validate({**planted_config(unconditioned=2), "nuisance": ["length", "length"]})
    custom = {"id": "emoji", "up": "Add emoji.", "down": "Remove emoji."}
    config = AuditConfig.model_validate({**planted_config(unconditioned=2), "nuisance": ["length", custom]})
    assert [s.id for s in config.nuisance_specs] == ["length", "emoji"] and config.nuisance_specs[1].measure is None


def test_radar_compare_shows_a_bias_that_moved_and_gates_on_it(tmp_path):
    from tests.conftest import radar_run

    planted = {"engine": "testing", "model": "planted"}
    fair = nuisance_run(
        tmp_path, "fair", nuisance=["length"], generator=planted, verifier={**planted, "options": {"noise": 1.0}}
    )
    assert not any(r.flag for r in fair.bias_rows)  # an unbiased judge: nothing flagged
    strong = {**planted, "options": {"noise": 1.0, "bias": {"length": {"Coherence / Clarity": 0.5}}}}
    nuisance_run(tmp_path, "biased", nuisance=["length"], generator=planted, verifier=strong)
    res = radar_run("compare", tmp_path / "fair", tmp_path / "biased", "--fail-on-bias", "0.25")
    assert res.returncode == 1 and "bias moved: coherence with length" in res.stdout
    assert "policy: coherence moves +0.49 with length" in res.stderr and res.stderr.count("policy:") == 1
    assert radar_run("compare", tmp_path / "fair", tmp_path / "biased", "--fail-on-bias", "0.9").returncode == 0
    # Issue 28, item 5: a second audit that measured no bias cannot pass a policy on bias.
    plain = nuisance_run(tmp_path, "plain", nuisance=[], generator=planted, verifier=strong)
    assert plain.measured(Bias) is None
    res = radar_run("compare", tmp_path / "fair", tmp_path / "plain", "--fail-on-bias", "0.9")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert f"{tmp_path / 'plain'}: measured no judge bias" in res.stderr


@pytest.mark.thorough  # the bias statistics through a grid's cells and reports (test-fast checks them directly)
def test_a_grid_sets_its_judges_side_by_side_on_bias(tmp_path):
    import yaml
    from click.testing import CliRunner

    from radar_local.cli.main import cli
    from tests.conftest import planted_config

    judges = [
        {"engine": "testing", "model": "judge-a", "options": BIASED_JUDGE},
        {"engine": "testing", "model": "judge-b", "options": {"noise": 1.0}},
    ]
    settings = {k: v for k, v in planted_config(unconditioned=10).items() if k not in ("generator", "verifier")}
    grid = {
        **settings,
        "nuisance": ["length"],
        "generators": [{"engine": "testing", "model": "gen"}],
        "verifiers": judges,
    }
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    res = CliRunner().invoke(
        cli, ["grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "g"), "--quiet", "--no-report"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "g" / "grid.json").read_text())
    flagged = [(b["verifier"], b["attribute"], b["criterion"]) for b in summary["bias"] if b["flag"]]
    assert flagged == [("judge-a", "length", "coherence")] and len(summary["bias"]) == 2 * 5
    assert "Judge bias per cell" in (tmp_path / "g" / "grid.md").read_text()
    stages = json.loads((tmp_path / "g" / "gen" / "run.json").read_text())["stages"]
    assert stages["rewrite"]["calls"] == 40  # rewritten once, scored by both judges


def test_the_report_draws_the_bias_and_shows_the_pairs_that_moved_most(audited, tmp_path):
    from radar_local.report.build import write_report
    from radar_local.rundir import load_run

    folder = write_report(load_run(audited[0] / "run"), out=tmp_path / "report")
    md, html = (folder / "report.md").read_text(), (folder / "report.html").read_text()
    assert (folder / "figures" / "nuisance.svg").read_bytes().startswith(b"<svg ")
    assert "### coherence with length (+0.3" in md and "biased" in md
    assert 'id="fig-nuisance"' in html and "Rewritten up on &lt;length&gt;" in html and "Rewritten down" in html


@pytest.mark.thorough  # a repair loop over a bias finding: re-audits and reports
def test_repair_rewrites_a_criterion_that_rewards_length(tmp_path):
    import yaml

    from radar_local.repair import repair
    from tests.conftest import planted_config

    small = Path(__file__).resolve().parent / "data" / "small_rubric.yaml"

    rewrite = {
        "action": "rewrite",
        "criteria": ["helpfulness"],
        "keeps": "",
        "new": [
            {
                "id": "helpfulness",
                "label": "Usefulness",
                "description": "How far the reply solves the problem; length earns nothing.",
                "kind": "evaluative",
                "low": "",
                "high": "",
            }
        ],
        "rationale": "The judge credited length to helpfulness; say that length earns nothing.",
    }
    judge = {"noise": 1.0, "bias": {"length": {"Helpfulness": 0.3}}, "edits": [rewrite]}
    spec = {"engine": "testing", "model": "planted", "options": judge}
    config = {
        **planted_config(
            rubric=str(small),
            generator=spec,
            verifier=spec,
            unconditioned=10,
            bootstrap=200,
        ),
        "nuisance": ["length"],
        "out": str(tmp_path / "audit"),
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    rep = repair(tmp_path / "audit.yaml", candidates=1)
    (bias,) = [f for f in rep.findings if f.kind == "bias"]
    assert bias.criteria == ("helpfulness",) and "rewards length" in bias.text
    # the planted judge's bias follows the criterion's label: the rewrite no longer rewards length
    assert rep.final is not None and "judge bias fell" in rep.final.why, [c.why for c in rep.candidates]
    reuse = rep.final.reuse  # the candidate kept the original's bases and their rewrites (the same keys)
    assert reuse["rewrites"] == reuse["rewrites_reused"] == 40 and reuse["scores_reused"] > 0


def test_expected_mode_scores_the_rewrites_as_distributions(tmp_path):
    result = nuisance_run(tmp_path, "expected", nuisance=["length"], scoring={"mode": "expected"})
    cell = next(r for r in result.bias_rows if r.criterion == "coherence")
    assert cell.flag == "biased" and cell.ci[0] <= 0.3 <= cell.ci[1]
    verdicts = [json.loads(x) for x in (tmp_path / "expected" / "scores.jsonl").read_text().splitlines()]
    assert all(v["distribution"] is not None for v in verdicts)  # every verdict read as a distribution


def test_a_task_with_one_pair_keeps_the_cell_its_interval_and_says_so():
    """Issue 29: a task with a single passing pair left the whole cell with no interval and no flag (a
    planted bias of 0.75 went unflagged). The task is held at its mean; the interval rests on the others."""
    from radar_local.stats.bias import NuisancePairs

    rng = np.random.default_rng(0)
    # up - down on the 0-4 scale: 3 +- 1 (a sensitivity of 0.75) in t0 and t1, one pair in t2
    diff = np.r_[np.clip(np.rint(3 + rng.normal(0, 1, 8)), -4, 4), 3.0][:, None]
    task = np.r_[np.repeat([0, 1], 4), 2]
    rows = nuisance_table(
        [NuisancePairs("length", task, ("t0", "t1", "t2"), diff)], ["a"], [1.0], [True], resamples=400
    )
    (cell,) = rows
    assert cell.ci_tasks == 2 and cell.pairs == 9 and cell.flag == "biased"
    assert cell.ci[0] < cell.sensitivity < cell.ci[1] and cell.ci[0] > 0.1
    assert cell.evidence == "confirmed" and cell.family_ci[0] >= 0.1  # beyond the threshold, not just 0
    alone = nuisance_table([NuisancePairs("length", np.array([0]), ("t0",), np.array([[3.0]]))], ["a"], [1.0], [True])
    assert alone[0].ci is None and alone[0].ci_tasks == 0
    assert alone[0].flag == "biased" and alone[0].evidence == "possible"  # one pair: nothing confirms it


def test_the_bias_interval_is_expanded_at_the_design_df_like_the_coupling_ones():
    """Issue 29: the bias interval was the one in the report not computed with the design-df rule. Two
    tasks of three pairs: df 4, so its ends sit at the bootstrap's Phi(-+t_4) quantiles, wider than 2.5/97.5%."""
    from scipy import special

    from radar_local.stats.bias import NuisancePairs

    diff = np.array([[1.0], [2.0], [4.0], [0.0], [1.0], [3.0]])
    task = np.repeat([0, 1], 3)
    (cell,) = nuisance_table([NuisancePairs("length", task, ("t0", "t1"), diff)], ["a"], [1.0], [True], resamples=2000)
    rng = np.random.default_rng(0)  # the same draws, by hand, for the plain percentile interval
    means = np.stack(
        [diff[rows, 0][rng.integers(0, 3, (2000, 2))].mean(axis=1) / 4 for rows in (np.arange(3), np.arange(3, 6))]
    ).mean(axis=0)
    plain = np.quantile(means, [0.025, 0.975])
    assert cell.ci[0] < plain[0] and cell.ci[1] > plain[1]
    t = special.stdtrit(4, 0.975)
    assert special.ndtr(-t) < 0.025  # the expanded tail
