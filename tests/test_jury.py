"""x"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from radar_local.auditing import run_audit
from radar_local.config import AuditConfig
from radar_local.errors import InputError, RadarError
from radar_local.jury import aggregate
from radar_local.rundir import load_run
from radar_local.stats.jurors import JuryBlock
from radar_local.stats.raters import effective_jurors
from tests.conftest import planted_config, radar_run
from tests.planted_jury import SMALL, TASKS, juror, jury_config

CLEAN, NOISY = juror("clean", noise=0.3), juror("noisy", noise=1.5)


HALOED = juror("haloed", noise=0.3, halo=0.5, judge={"calls": "joint"})  # a halo toward the probe's other scores


@pytest.fixture(scope="module")
def planted_jury(tmp_path_factory):
    out = tmp_path_factory.mktemp("jury") / "run"
    return run_audit(jury_config([CLEAN, NOISY, HALOED], bootstrap=200), out), out


def test_effective_jurors_from_error_correlations():
    """Jurors 1 and 2 make the same errors (r = 1), juror 3's are uncorrelated with theirs (r = 0): mean r = 1/3,
    so k / (1 + (k - 1) r) = 3 / (5/3) = 9/5 independent jurors. Negative correlations clip to independence."""
    e = np.array([[1, -1, 1, -1], [1, -1, 1, -1], [1, 1, -1, -1]], float)
    found = effective_jurors(e)
    assert found["mean_error_correlation"] == pytest.approx(1 / 3)
    assert found["effective"] == pytest.approx(9 / 5)
    assert effective_jurors(np.array([[1, -1, 1, -1], [-1, 1, -1, 1.0]]))["effective"] == 2


@pytest.mark.parametrize(
    "how,scores,expected",
    [
        ("mean", [1, 2, 2], Fraction(5, 3)),
        ("median", [4, 0, 1, 3], 2),
        ("median", [4, 0, 1], 1),
        ("majority", [3, 1, 3], 3),
        ("trimmed_mean", [0, 4, 3, 2], Fraction(5, 2)),
        ("trimmed_mean", [0, 4], 2),  # fewer than three: the mean
    ],
)
def test_aggregates(how, scores, expected):
    assert aggregate(scores, how, 1) == (float(expected) if isinstance(expected, Fraction) else expected, None)


def test_a_verdict_short_of_min_jurors_or_without_a_majority_is_unscored_and_says_why():
    assert aggregate([3], "mean", 2) == (None, "1 juror score(s), fewer than min_jurors (2)")
    assert aggregate([3, 1], "mean", 2) == (2, None)  # at the boundary: exactly min_jurors scores
    assert aggregate([3, 3, 1], "majority", 3) == (3, None)
    score, why = aggregate([3, 1], "majority", 2)
    assert score is None and why.startswith("no majority")


def test_the_jury_couples_less_than_its_haloed_juror_beyond_the_interval(planted_jury):
    result, out = planted_jury
    assert result.verifier == "jury" and result.measured(JuryBlock).jurors == ["clean", "noisy", "haloed"]
    rows = {r.juror: r for r in result.measured(JuryBlock).coupling.jurors}
    haloed = rows["haloed"]
    assert haloed.flag == "below" and haloed.ci[1] < 0, haloed
    assert haloed.jury_worst < haloed.juror_worst
    assert result.measured(JuryBlock).coupling.family_level == pytest.approx(1 - 0.05 / 3)
    for label in ("clean", "noisy", "haloed"):  # every juror is audited as itself, beside the jury
        juror_result = load_run(out).result(label)
        assert juror_result.verifier == label
        assert result.measured(JuryBlock).side_by_side[label].self_effect == {
            c: pytest.approx(float(juror_result.self_effect[c])) for c in juror_result.criteria
        }


def test_the_jurors_agreement_and_effective_number(planted_jury):
    result, _ = planted_jury
    agreement = result.measured(JuryBlock).agreement
    for row in agreement.criteria.values():
        low, high = row.alpha_ci
        assert row.level_of_measurement == "ordinal" and low <= row.alpha <= high
        assert set(row.correlations) == {"clean / noisy", "clean / haloed", "noisy / haloed"}
    effective = agreement.effective_jurors
    assert 1 < effective.effective < 3 and effective.jurors == 3
    assert "lower bound" in agreement.errors  # no labels: centred scores stand in for errors


def test_the_jurys_verdict_is_its_jurors_mean(planted_jury):
    _, out = planted_jury
    run = load_run(out)
    verdicts = run.verdicts(run.probes())
    by = {}
    for label, v in verdicts:
        by.setdefault((v.probe_key, v.criterion), {})[label] = v.score
    checked = 0
    for scores in by.values():
        jurors = [scores[j] for j in ("clean", "noisy", "haloed") if scores.get(j) is not None]
        if len(jurors) == 3:
            assert scores["jury"] == pytest.approx(sum(jurors) / 3)
            checked += 1
    assert checked == len(by)


@pytest.mark.thorough  # the report's rendering; test-fast checks the statistics it shows
def test_the_report_shows_the_jury_and_its_jurors(planted_jury):
    from radar_local.report.build import write_report

    _, out = planted_jury
    text = (write_report(load_run(out)) / "report.md").read_text()
    for heading in ("## Jury", "## The jury and its jurors", "## Agreement among jurors"):
        assert heading in text
    assert "| haloed |" in text and "jury couples less" in text


def test_adding_a_juror_scores_only_that_juror_and_dropping_one_scores_nothing(tmp_path):
    out = tmp_path / "run"
    run_audit(jury_config([CLEAN, NOISY], **SMALL), out)
    before = dict(load_run(out).store.scores)
    run_audit(jury_config([CLEAN, NOISY, HALOED], **SMALL), out)
    after = load_run(out).store.scores
    new = {k: v for k, v in after.items() if k not in before}
    assert {v.verifier for v in new.values()} == {"haloed"} and all(after[k] == v for k, v in before.items())
    stages = load_run(out).info().stages
    assert stages["score (clean)"].calls == 0 and stages["score (noisy)"].calls == 0
    assert stages["score (haloed)"].calls == len(new) // 5  # one joint call per probe scores its 5 criteria
    run_audit(jury_config([CLEAN, HALOED], **SMALL), out)
    assert set(load_run(out).store.scores) == set(after)
    assert load_run(out).result().measured(JuryBlock).jurors == ["clean", "haloed"]


def test_a_juror_that_fails_to_start_is_left_out_while_min_jurors_can_be_met(tmp_path, capsys):
    broken = juror("broken", fail_start=True)
    result = run_audit(jury_config([CLEAN, broken, NOISY], min_jurors=2, **SMALL), tmp_path / "run")
    assert list(result.measured(JuryBlock).failed) == ["broken"] and result.measured(JuryBlock).jurors == [
        "clean",
        "noisy",
    ]
    assert "juror 'broken' failed" in capsys.readouterr().err
    info = load_run(tmp_path / "run").info()
    assert "broken" in info.jurors["failed"] and set(info.jurors["engines"]) == {"clean", "noisy"}


def test_a_juror_that_fails_after_some_verdicts_is_out_of_the_jury_as_a_whole(tmp_path, capsys):
    """Issue 42 item 8: the verdicts a juror gave before its server died never enter the jury's scores: the jury
    is the jury of the jurors that finished, as announced."""
    dying = juror("dying", noise=0.3, coupling={}, fail_after=12)  # a juror with no coupling, which would dilute it
    cfg = jury_config([CLEAN, dying, NOISY], min_jurors=2, **SMALL)
    result = run_audit(cfg, tmp_path / "three")
    stored = load_run(tmp_path / "three").store.scores
    assert 0 < sum(v.verifier == "dying" for v in stored.values()) <= 12  # it did give verdicts before it failed
    assert "none of its verdicts counted" in capsys.readouterr().err
    two = run_audit(jury_config([CLEAN, NOISY], min_jurors=2, **SMALL), tmp_path / "two")
    assert list(result.measured(JuryBlock).failed) == ["dying"] and result.measured(JuryBlock).jurors == [
        "clean",
        "noisy",
    ]
    assert result.self_effect.to_dict() == two.self_effect.to_dict()
    assert result.leakage.equals(two.leakage)


def test_an_engine_that_fails_to_start_is_one_line_naming_the_model_and_the_cause():
    """Issue 42 item 3: vLLM's start failures reach the driver as RuntimeError (the planted engine raises the
    same); every engine's is one line naming the model and the cause's last line."""
    from radar_local.engines.registry import build_engine
    from radar_local.errors import EngineStartError

    with pytest.raises(EngineStartError) as err:
        build_engine("testing", "broken-7b", {"fail_start": True})
    msg = str(err.value)
    assert msg.startswith("broken-7b did not start on the testing engine (RuntimeError: Engine core initialization")
    assert "\n" not in msg and isinstance(err.value.__cause__, RuntimeError)
    many = EngineStartError("vllm", "m", ValueError("Traceback ...\n  File x\nCUDA out of memory. Tried 2 GiB\n"))
    assert "(ValueError: CUDA out of memory. Tried 2 GiB)" in str(many) and "\n" not in str(many)


def test_doctor_smoke_on_an_engine_that_cannot_start_is_one_line():
    from radar_local.doctor import smoke

    problems: list[str] = []
    smoke("testing", "broken", {"fail_start": True}, problems)
    (line,) = problems
    assert "broken did not start on the testing engine (RuntimeError: Engine core" in line and "\n" not in line


def test_a_jury_that_cannot_reach_min_jurors_stops_in_one_line_and_keeps_what_was_stored(tmp_path):
    broken = juror("broken", fail_start=True)
    cfg = jury_config([CLEAN, broken], min_jurors=2, **SMALL)
    with pytest.raises(RadarError, match="cannot reach min_jurors"):
        run_audit(cfg, tmp_path / "run")
    stored = load_run(tmp_path / "run").store.scores
    assert stored and {v.verifier for v in stored.values()} == {"clean"}  # the clean juror's verdicts are kept


@pytest.mark.parametrize(
    "verifier,needle",
    [
        ({"jury": [CLEAN]}, "a jury needs two jurors or more"),
        ({"jury": [CLEAN, CLEAN]}, "two jurors share the label 'clean'"),
        ({"jury": [CLEAN, NOISY], "min_jurors": 3}, "min_jurors (3) is more than the jury's 2 jurors"),
        ({"jury": [CLEAN, NOISY], "name": "clean"}, "the jury and a juror share the label"),
        ({"jury": [CLEAN, juror("both", judge={"calls": ["per-criterion", "joint"]})]}, "a juror calls one way"),
        ({"jury": [CLEAN, {**NOISY, "judge": {"scale": {"min": 1, "max": 10}}}]}, "put `scale` in the rubric"),
    ],
)
def test_a_bad_jury_is_one_line_and_exit_2(tmp_path, verifier, needle):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(planted_config(tasks=TASKS, verifier=verifier)))
    res = radar_run("audit", cfg, "--out", tmp_path / "run")
    assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_majority_of_expected_scores_is_refused():
    cfg = planted_config(verifier={"jury": [CLEAN, NOISY], "aggregate": "majority"}, scoring={"mode": "expected"})
    with pytest.raises(ValueError, match="a majority counts levels"):
        AuditConfig.model_validate(cfg)


@pytest.mark.thorough  # the docs' numbers: test-fast checks the same machinery on the planted jury above
def test_the_juries_page_example_from_its_config(tmp_path):
    """docs/juries.md's worked example: its rows are what configs/jury-example.yaml writes."""
    from radar_local.report.build import write_report

    repo = Path(__file__).resolve().parents[1]
    result = run_audit(repo / "configs" / "jury-example.yaml", tmp_path / "run")
    report = (write_report(load_run(tmp_path / "run"), result=result) / "report.md").read_text()
    section = (repo / "docs" / "juries.md").read_text().split("## Worked example")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 3 + 1 + 4 and all(row in report for row in rows), [r for r in rows if r not in report]
    assert f"{result.measured(JuryBlock).agreement.effective_jurors.effective:.2f}" in section


def test_the_jurys_label_is_its_own(tmp_path):
    """A single verifier stored under the label a jury then takes, or added later under the jury's label, would mix
    its verdicts with the jury's: both are refused in one line."""
    out = tmp_path / "run"
    run_audit(planted_config(verifier={**CLEAN, "name": "jury"}, **SMALL), out)
    with pytest.raises(InputError, match="the jury's label 'jury' holds a single verifier's scores"):
        run_audit(jury_config([CLEAN, NOISY], **SMALL), out)
    other = tmp_path / "other"
    run_audit(jury_config([CLEAN, NOISY], **SMALL), other)
    res = radar_run("score", other, "--verifier", "testing:other", "--name", "jury")
    assert res.returncode == 2 and "is this run's jury" in res.stderr, res.stderr


def test_a_jury_left_with_one_juror_audits_and_reports(tmp_path):
    """min_jurors 1 and a juror that cannot start: the jury is its one juror; agreement among jurors has no pair
    to measure (NaN, never a crash: scripts/gpu_check.py's jury case found it)."""
    from radar_local.report.build import write_report

    broken = juror("broken", fail_start=True)
    result = run_audit(jury_config([CLEAN, broken], min_jurors=1, **SMALL), tmp_path / "run")
    assert result.measured(JuryBlock).jurors == ["clean"] and list(result.measured(JuryBlock).failed) == ["broken"]
    assert write_report(load_run(tmp_path / "run")).joinpath("report.md").is_file()
