"""Repeat agreement (issue 47): `consistency: {repeats: R}` asks the verifier's verdicts again under their own keys
and labels; stats/repeats.py says how far the judge agrees with itself and what its noise costs."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.report.markdown import audit_markdown
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.repeats import Repeats, repeats
from tests.conftest import invoke, one_line_exit_2, planted_config


def matrix(label: str, scores: list[float], keys: list[tuple[int, str]] | None = None) -> ProbeMatrix:
    """Probes of one criterion, each (direction, variant): by default two strata (task 0, target 0, + and -) of
    two probes each."""
    keys = keys or [(0, "0"), (0, "1"), (1, "0"), (1, "1")]
    n = len(scores)
    return ProbeMatrix(
        "g",
        label,
        ("c",),
        ("t",),
        np.array(scores, float)[:, None],
        np.zeros(n, int),
        np.zeros(n, int),
        np.array([d for d, _ in keys]),
        np.array([v for _, v in keys]),
        (Fraction(4),),
    )


def test_repeat_agreement_on_a_hand_computed_table():
    """First asking (3, 1 | 0, 2), second (3, 2 | 0, NaN): the fourth probe's second verdict is unscored, so three
    probes are compared; one of them changed (1 -> 2): within-probe variances 0, 0.5, 0 -> noise sd sqrt(1/6).
    The first asking's within-stratum variance pools (3 - 2)^2 + (1 - 2)^2 + (0 - 1)^2 + (2 - 1)^2 = 4 over
    4 - 2 strata: 2, so the noise share is (1/6) / 2."""
    got = repeats(
        [matrix("v", [3, 1, 0, 2]), matrix("v-repeat-2", [3, 2, 0, math.nan])], {"c": "interval"}, resamples=0
    )
    row = got.criteria[0]
    assert got.labels == ["v", "v-repeat-2"] and got.probes == 4 and row.probes == 3 and row.unscored == 1
    assert row.changed == pytest.approx(1 / 3) and row.noise_sd == pytest.approx(math.sqrt(1 / 6))
    assert row.noise_share == pytest.approx((1 / 6) / 2)
    assert row.changed_ci is None  # no resamples, no interval
    same = repeats([matrix("v", [3, 1, 0, 2]), matrix("w", [3, 1, 0, 2])], {"c": "interval"}, resamples=50)
    row = same.criteria[0]
    assert (row.changed, row.noise_sd, row.noise_share, row.alpha) == (0.0, 0.0, 0.0, 1.0)
    assert row.changed_ci == (0.0, 0.0) and row.noise_sd_ci == (0.0, 0.0)


def test_only_the_probes_every_asking_holds_are_compared():
    """A repeat of a sample: the first asking's other probes still give the within-stratum spread."""
    got = repeats([matrix("v", [3, 1, 0, 2]), matrix("r", [3, 0], [(0, "0"), (1, "0")])], {"c": "ordinal"}, resamples=0)
    assert got.probes == 2 and got.criteria[0].changed == 0.0 and got.criteria[0].noise_share == 0.0
    with pytest.raises(ValueError, match="two or more askings"):
        repeats([matrix("v", [3, 1, 0, 2])], {"c": "ordinal"})


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
    """The planted judge asked three times: the same verdict each time, and (fresh_draws) a new draw each time."""
    root = tmp_path_factory.mktemp("repeats")
    out = {}
    for fresh in (False, True):
        options = {"noise": 1.0, "fresh_draws": fresh}
        config = planted_config(n=4, bootstrap=200, options=options, consistency={"repeats": 3, "share": 0.5})
        out[fresh] = (run_audit(config, root / str(fresh), progress=False), root / str(fresh), config)
    return out


def test_a_judge_that_gives_the_same_verdict_agrees_with_itself_exactly(audits):
    result, run, _ = audits[False]
    block = result.measured(Repeats)
    assert block.labels == ["planted", "planted-repeat-2", "planted-repeat-3"]
    assert block.probes == 5 * 2 * 2 * 2  # helpsteer2's 5 criteria x 2 tasks x 2 directions x ceil(0.5 x 4)
    assert all(c.changed == 0 and c.noise_sd == 0 and c.noise_sd_ci == (0.0, 0.0) for c in block.criteria)
    from radar_local import load_run

    assert load_run(run).result() == result  # stats.json reads back with its repeats block
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert stages["repeat 2"]["calls"] == stages["repeat 3"]["calls"] == block.probes * 5
    report = audit_markdown(result)
    assert "Consistency: repeat agreement" in report and "no criterion's verdicts change between askings" in report


def test_a_judge_whose_verdicts_vary_between_askings_is_measured(audits):
    """noise 1.0 with fresh draws: every criterion's verdicts change between askings (interval above 0), and the
    intervals hold the planted judge's own noise (its belief's variance, as scripts/repeat_error.py integrates it
    for this design: 2 tasks, 5 targets, the criterion pushed to 4 and 0 where it is the target, 2 elsewhere)."""
    import sys

    sys.path.insert(0, "scripts")
    from repeat_error import stratum_values, truth

    planted = truth(stratum_values(2, 5), 1.0, 3)
    result, run, config = audits[True]
    held = 0
    for c in result.measured(Repeats).criteria:
        assert c.changed_ci[0] > 0 and c.alpha < 1
        held += sum(lo <= planted[k] <= hi for k, (lo, hi) in (("changed", c.changed_ci), ("noise_sd", c.noise_sd_ci)))
    assert held >= 9, (
        result.measured(Repeats),
        planted,
    )  # ten 95% intervals: all hold in 60% of audits, 9 or more in 91%
    assert "the verdicts change between askings on helpfulness" in audit_markdown(result)
    again = run_audit(config, run, progress=False)  # resumed: the repeats' verdicts are stored under their keys
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert stages["repeat 2"]["requests"] > 0 and stages["repeat 2"].get("calls", 0) == 0
    assert again.measured(Repeats) == result.measured(Repeats)


def test_repeats_are_refused_where_they_mean_nothing(tmp_path):
    config = tmp_path / "c.yaml"
    for bad, needle in (
        ({"consistency": {"repeats": 1}}, "consistency.repeats"),
        ({"consistency": {"repeats": 3, "share": 0}}, "consistency.share"),
        ({"generator": {"engine": "testing", "model": "p", "repeat": 2}}, "`repeat` is set by radar"),
        (
            {
                "consistency": {"repeats": 2},
                "verifier": {"jury": [{"engine": "testing", "model": m} for m in "ab"]},
            },
            "consistency repeats one judge's verdicts",
        ),
    ):
        config.write_text(yaml.safe_dump(planted_config(**bad)))
        one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run"), needle)


def test_compare_fails_a_judge_whose_verdicts_change_between_askings(audits):
    """`radar compare --fail-on-changed X`: exit 1 where a criterion's verdicts changed on at least X of the
    repeated probes (compared at the boundary as written), 0 where none did; one line where nothing was repeated."""

    from radar_local.compare import consistency_violations

    steady, noisy = audits[False][1], audits[True][1]
    res = invoke("compare", steady, noisy, "--fail-on-changed", "0.5")
    assert res.exit_code == 1 and res.output.count("policy: ") == 5, res.output
    assert invoke("compare", noisy, steady, "--fail-on-changed", "0.01").exit_code == 0
    result = audits[True][0]
    quarter = result.measured(Repeats).model_copy(
        update={"criteria": [result.measured(Repeats).criteria[0].model_copy(update={"changed": 0.25})]}
    )
    at = result.adding(repeats=quarter)
    assert len(consistency_violations(at, 0.25, False, "b")) == 1
    assert consistency_violations(at, math.nextafter(0.25, 1), False, "b") == []
    plain = audits[False][1].parent / "plain"
    run_audit(planted_config(n=2), plain, progress=False)
    one_line_exit_2(invoke("compare", steady, plain, "--fail-on-changed", "0.5"), "asked no verdict again")
