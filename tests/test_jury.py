"""Juries and human labels (issue 32): the agreement statistics against answers worked by hand and a published
example, a planted jury of three on the planted engine, a planted labels file whose agreement is known, the keys
that make adding a juror cost only its calls, a juror that fails, and bad input."""

from __future__ import annotations

import json
from fractions import Fraction
from math import sqrt
from pathlib import Path

import numpy as np
import pytest

from radar_local.auditing import run_audit
from radar_local.config import AuditConfig
from radar_local.errors import InputError, RadarError
from radar_local.jury import aggregate
from radar_local.rundir import load_run
from radar_local.stats.raters import against_humans, alpha, effective_jurors, weighted_kappa
from tests.conftest import planted_config, radar_run

NAN = np.nan

# ---- known answers ----------------------------------------------------------------------------


def test_alpha_of_a_small_table_worked_by_hand():
    """Coders A = (1, 2, 3), B = (1, 2, 2): n = 6 pairable values, n_1 = 2, n_2 = 3, n_3 = 1; the coincidence matrix
    has o_11 = 2, o_22 = 2 and o_23 = o_32 = 1 (each unit's m_u = 2, so each ordered pair counts 1 / (m_u - 1) = 1).
    alpha = 1 - (n - 1) sum o d2 / sum n_c n_k d2:
    nominal:  observed 2 (o_23 + o_32), expected n^2 - sum n_c^2 = 36 - 14 = 22 -> 1 - 5 * 2 / 22 = 6/11;
    interval: observed 2 * 1, expected 2 (n_1 n_2 * 1 + n_1 n_3 * 4 + n_2 n_3 * 1) = 34 -> 1 - 10 / 34 = 12/17;
    ordinal:  d2(2,3) = (n_2 + n_3 - (n_2 + n_3) / 2)^2 = 4, d2(1,2) = (5/2)^2, d2(1,3) = (6 - 3/2)^2;
              observed 2 * 4 = 8, expected 2 (6 * 25/4 + 2 * 81/4 + 3 * 4) = 180 -> 1 - 40 / 180 = 7/9."""
    data = np.array([[1, 2, 3], [1, 2, 2]], float)
    assert alpha(data, "nominal") == pytest.approx(6 / 11, abs=1e-12)
    assert alpha(data, "interval") == pytest.approx(12 / 17, abs=1e-12)
    assert alpha(data, "ordinal") == pytest.approx(7 / 9, abs=1e-12)


def test_alpha_reproduces_krippendorffs_published_example():
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 observers x 12 units example with
    missing values: nominal 0.743, ordinal 0.815, interval 0.849 (a unit with one value, the 12th, drops out)."""
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
            [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
        ]
    )
    assert round(alpha(data, "nominal"), 3) == 0.743
    assert round(alpha(data, "ordinal"), 3) == 0.815
    assert round(alpha(data, "interval"), 3) == 0.849
    counts = np.ones((2, 12))
    counts[1, 0] = 0  # a bootstrap replicate without unit 1 is the table without it
    assert alpha(data, "ordinal", counts)[1] == pytest.approx(alpha(data[:, 1:], "ordinal"), abs=1e-12)


def test_alpha_replicates_in_chunks_are_the_replicates_at_once(monkeypatch):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 5, (3, 40)).astype(float)
    data[rng.random(data.shape) < 0.2] = NAN
    weights = rng.multinomial(40, np.full(40, 1 / 40), size=7).astype(float)
    whole = alpha(data, "ordinal", weights)
    monkeypatch.setattr("radar_local.stats.raters.CHUNK_CELLS", 1)  # one replicate at a time
    assert np.allclose(alpha(data, "ordinal", weights), whole) and len(whole) == 7


def test_quadratic_kappa_is_cohens_table_formula():
    """Pairs (4,4) (4,3) (0,0) (0,1) (2,2) (2,2) (2,2): mean squared difference 2/7; means 2 and 2, population
    variances 16/7 and 10/7, so the expectation under independent marginals is 26/7 and kappa = 1 - 2/26 = 12/13.
    Cohen's form on the 5 x 5 table: 1 - sum w O / sum w E with w = (i - j)^2 and E from the margins, the same."""
    x, y = np.array([4, 4, 0, 0, 2, 2, 2.0]), np.array([4, 3, 0, 1, 2, 2, 2.0])
    assert weighted_kappa(x, y) == pytest.approx(12 / 13, abs=1e-12)
    table = np.zeros((5, 5))
    np.add.at(table, (x.astype(int), y.astype(int)), 1)
    w = (np.arange(5)[:, None] - np.arange(5)[None]) ** 2
    expected = np.outer(table.sum(1), table.sum(0)) / table.sum()
    assert weighted_kappa(x, y) == pytest.approx(1 - (w * table).sum() / (w * expected).sum(), abs=1e-12)


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


# ---- a planted jury of three ------------------------------------------------------------------

TASKS = [{"id": f"t{i}", "prompt": f"Customer question number {i}."} for i in range(6)]
COUPLING = {"Coherence / Clarity": {"Helpfulness / Understanding": 0.25}}


def juror(name: str, **options) -> dict:
    judge = options.pop("judge", None)
    spec = {"engine": "testing", "model": name, "options": {"coupling": COUPLING, **options}}
    return {**spec, **({"judge": judge} if judge else {})}


CLEAN, NOISY = juror("clean", noise=0.3), juror("noisy", noise=1.5)
HALOED = juror("haloed", noise=0.3, halo=0.5, judge={"calls": "joint"})  # a halo toward the probe's other scores


def jury_config(jurors: list[dict], **kw) -> dict:
    extra = {k: kw.pop(k) for k in ("aggregate", "min_jurors") if k in kw}
    return planted_config(**{"tasks": TASKS, "n": 4, "bootstrap": 300, "verifier": {"jury": jurors, **extra}, **kw})


SMALL = {"tasks": TASKS[:2], "n": 2, "bootstrap": 0}  # an audit whose statistics the test does not read


@pytest.fixture(scope="module")
def planted_jury(tmp_path_factory):
    out = tmp_path_factory.mktemp("jury") / "run"
    return run_audit(jury_config([CLEAN, NOISY, HALOED], bootstrap=200), out), out


def test_the_jury_couples_less_than_its_haloed_juror_beyond_the_interval(planted_jury):
    result, out = planted_jury
    assert result.verifier == "jury" and result.jury.jurors == ["clean", "noisy", "haloed"]
    rows = {r.juror: r for r in result.jury.coupling.jurors}
    haloed = rows["haloed"]
    assert haloed.flag == "below" and haloed.ci[1] < 0, haloed
    assert haloed.jury_worst < haloed.juror_worst
    assert result.jury.coupling.family_level == pytest.approx(1 - 0.05 / 3)
    for label in ("clean", "noisy", "haloed"):  # every juror is audited as itself, beside the jury
        juror_result = load_run(out).result(label)
        assert juror_result.verifier == label
        assert result.jury.side_by_side[label].self_effect == {
            c: pytest.approx(float(juror_result.self_effect[c])) for c in juror_result.criteria
        }


def test_the_jurors_agreement_and_effective_number(planted_jury):
    result, _ = planted_jury
    agreement = result.jury.agreement
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


# ---- keys: adding a juror costs its calls, dropping one costs none ---------------------------------


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
    assert load_run(out).result().jury.jurors == ["clean", "haloed"]


# ---- a juror that fails ----------------------------------------------------------------------------


def test_a_juror_that_fails_to_start_is_left_out_while_min_jurors_can_be_met(tmp_path, capsys):
    broken = juror("broken", fail_start=True)
    result = run_audit(jury_config([CLEAN, broken, NOISY], min_jurors=2, **SMALL), tmp_path / "run")
    assert list(result.jury.failed) == ["broken"] and result.jury.jurors == ["clean", "noisy"]
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
    assert list(result.jury.failed) == ["dying"] and result.jury.jurors == ["clean", "noisy"]
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


# ---- human labels with a known agreement -----------------------------------------------------------

STEERED = "Steered {} on <{}>: reply (seed {})"  # what the planted judge reads back (engines/testing.py)
HELPFUL = "Helpfulness / Understanding"


def labels_file(tmp_path: Path, rows: list[str], name: str = "labels.csv") -> Path:
    path = tmp_path / name
    path.write_text("task_id,response,criterion,score,rater\n" + "\n".join(rows) + "\n")
    return path


KNOWN = [  # the planted judge without noise scores t0's response 4, t1's 0, t2's and t3's 2 on helpfulness
    f"t0,{STEERED.format('+', HELPFUL, 1)},helpfulness,4,ann",
    f"t0,{STEERED.format('+', HELPFUL, 1)},helpfulness,3,bob",
    f"t1,{STEERED.format('-', HELPFUL, 2)},helpfulness,0,ann",
    f"t1,{STEERED.format('-', HELPFUL, 2)},helpfulness,1,bob",
    "t2,A plain reply.,helpfulness,2,ann",
    "t2,A plain reply.,helpfulness,2,bob",
    "t3,Another plain reply.,helpfulness,2,ann",
]


def test_a_planted_labels_file_reproduces_its_known_agreement(tmp_path):
    """The exact judge against the humans: pairs (4,4) (4,3) (0,0) (0,1) (2,2) (2,2) (2,2), so MAE 2/7 and
    quadratic kappa 12/13 (worked in test_quadratic_kappa_is_cohens_table_formula); Spearman on average ranks
    (6.5, 6.5, 1.5, 1.5, 4, 4, 4) and (7, 6, 1, 2, 4, 4, 4): 25 / sqrt(25 * 26) = 5 / sqrt(26)."""
    exact = {"engine": "testing", "model": "exact"}
    labels = str(labels_file(tmp_path, KNOWN))
    cfg = jury_config([exact, juror("noisy", noise=1.5)], tasks=TASKS[:4], n=2, bootstrap=50, labels=labels)
    result = run_audit(cfg, tmp_path / "run")
    row = result.labels.judges["exact"]["helpfulness"]
    assert (row.responses, row.ratings, row.unscored) == (4, 7, 0)
    assert row.mae == pytest.approx(2 / 7) and row.kappa == pytest.approx(12 / 13)
    assert row.spearman == pytest.approx(5 / sqrt(26))
    humans = np.array([[4, 0, 2, 2], [3, 1, 2, NAN]])  # ann, bob x responses t0..t3
    assert row.level_of_measurement == "interval"  # the jury's mean falls between levels: one level for all
    assert row.alpha_humans == pytest.approx(alpha(humans, "interval"))
    assert row.alpha_with_humans == pytest.approx(alpha(np.vstack([humans, [4, 0, 2, 2]]), "interval"))
    assert row.confusion.counts == [
        [1, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [0, 0, 3, 0, 0],
        [0, 0, 0, 0, 1],
        [0, 0, 0, 0, 1],
    ]
    for name in ("spearman", "kappa", "mae", "alpha_with_humans"):
        low, high = getattr(row, f"{name}_ci")
        assert low <= getattr(row, name) + 1e-12 and getattr(row, name) <= high + 1e-12
    assert set(result.labels.judges) == {"jury", "exact", "noisy"}
    assert result.jury.agreement.criteria["helpfulness"].effective_jurors.errors == "labels"


def test_a_single_judge_is_compared_with_the_labels_too(tmp_path):
    cfg = planted_config(tasks=TASKS, bootstrap=0, labels=str(labels_file(tmp_path, KNOWN)))
    result = run_audit(cfg, tmp_path / "run")
    row = result.labels.judges["planted"]["helpfulness"]
    assert row.kappa == pytest.approx(12 / 13) and row.kappa_ci is None  # bootstrap 0: no intervals
    assert row.level_of_measurement == "ordinal"  # the judge's scores are levels of the 0-4 range
    assert load_run(tmp_path / "run").result().labels == result.labels  # stats.json keeps it
    from radar_local.report.build import write_report

    assert "## Agreement with human labels" in (write_report(load_run(tmp_path / "run")) / "report.md").read_text()


def test_several_raters_without_a_rater_column_and_scores_by_level_name(tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: graded\nname: Graded\ncriteria:\n  - {id: correct, label: Correct, description: The answer is right.,"
        " scale: {levels: {C: 1, P: 0.5, I: 0}}}\n  - {id: clear, label: Clear, description: Easy to follow.}\n"
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"prompt": "What is 2 + 2?", "response": "4", "criterion": "correct", "score": "C"},
                {"prompt": "What is 2 + 2?", "response": "4", "criterion": "correct", "score": 1},
                {"prompt": "What is 3 + 3?", "response": "7", "criterion": "correct", "score": "I"},
            ]
        )
    )
    from radar_local.resolved import resolve

    cfg = AuditConfig.model_validate(planted_config(rubric=str(rubric), tasks=TASKS, labels=str(labels)))
    found = resolve(cfg, tmp_path).labels
    assert [(lab.rater, lab.score) for lab in found.labels] == [("rater 1", 1.0), ("rater 2", 1.0), ("rater 1", 0.0)]
    assert len(found.tasks) == 2 and len(found.probes()) == 2  # two prompts that are not the audit's tasks


def test_a_parquet_labels_file_reads_as_its_csv(tmp_path):
    import pandas as pd

    from radar_local.resolved import resolve

    csv = labels_file(tmp_path, KNOWN)
    parquet = tmp_path / "labels.parquet"
    pd.read_csv(csv, dtype=str).to_parquet(parquet)
    read = [
        resolve(AuditConfig.model_validate(planted_config(tasks=TASKS, labels=str(path))), tmp_path).labels.labels
        for path in (csv, parquet)
    ]
    assert read[0] == read[1] and len(read[0]) == 7


def test_human_agreement_with_one_rater_has_no_ceiling():
    found = against_humans(np.array([0, 1, 2, 3.0]), np.array([[0, 1, 2, 4.0]]), "ordinal", range(5))
    assert found.alpha_humans is None and found.mae == pytest.approx(0.25)


# ---- bad input: one line, exit 2, nothing stored lost ----------------------------------------------


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


@pytest.mark.parametrize(
    "rows,needle",
    [
        (["t0,A reply.,kindness,3,ann"], "row 1: criterion 'kindness' is not the rubric's"),
        *(  # the same path as the first: make test runs them
            pytest.param(rows, needle, marks=pytest.mark.thorough)
            for rows, needle in [
                (["t0,A reply.,helpfulness,7,ann"], "row 1: score '7' is not a level of helpfulness's scale (0-4)"),
                (["t9,A reply.,helpfulness,2,ann"], "row 1: task 't9' is not one of the audit's tasks"),
                (["t0,,helpfulness,2,ann"], "row 1: the response is empty"),
                (["t0,A reply.,helpfulness,2,ann", "t0,A reply.,helpfulness,3,ann"], "ann scored this response on"),
            ]
        ),
    ],
)
def test_a_bad_labels_file_is_one_line_exit_2_and_loses_nothing(tmp_path, rows, needle):
    out = tmp_path / "run"
    good = tmp_path / "config.yaml"
    good.write_text(json.dumps(planted_config(**SMALL)))
    assert radar_run("audit", good, "--out", out, "--no-report").returncode == 0
    stored = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(planted_config(**SMALL, labels=str(labels_file(tmp_path, rows)))))
    res = radar_run("audit", bad, "--out", out, "--no-report")
    assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == stored


def test_a_labels_file_without_the_columns_names_them(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("text,label\nhello,3\n")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(planted_config(tasks=TASKS, labels=str(path))))
    res = radar_run("audit", cfg, "--out", tmp_path / "run")
    assert res.returncode == 2 and "no column response, criterion, score" in res.stderr, res.stderr


# ---- a grid ranks its judges on coupling and agreement together ---------------------------------------


@pytest.mark.thorough  # a grid's cells and reports; test-fast checks the labels' agreement on single audits
def test_a_grid_ranks_its_judges_on_coupling_and_on_agreement_with_the_labels(tmp_path):
    """Two judges: 'exact' (no noise, no coupling) agrees with the labels as worked above and couples nothing;
    'coupled' shares helpfulness into correctness (worst coupling 0.5) and is noisy: it ranks second on both."""
    import yaml
    from click.testing import CliRunner

    from radar_local.cli.main import cli

    small = {"tasks": TASKS[:4], "bootstrap": 0}  # the labels' four tasks
    settings = {k: v for k, v in planted_config(**small).items() if k not in ("generator", "verifier")}
    judges = [
        {"engine": "testing", "model": "exact"},
        {
            "engine": "testing",
            "model": "coupled",
            "options": {"noise": 1.5, "coupling": {HELPFUL: {"Correctness / Completeness": 0.5}}},
        },
    ]
    cfg = tmp_path / "grid.yaml"
    grid = {
        **settings,
        "labels": str(labels_file(tmp_path, KNOWN)),
        "generators": [{"engine": "testing", "model": "gen"}],
    }
    cfg.write_text(yaml.safe_dump({**grid, "verifiers": judges}))
    res = CliRunner().invoke(cli, ["grid", str(cfg), "--out", str(tmp_path / "g"), "--quiet"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "g" / "grid.json").read_text())
    ranked = summary["judges"]
    assert [j["verifier"] for j in ranked] == ["exact", "coupled"]
    assert ranked[0]["kappa"] == pytest.approx(12 / 13) and ranked[0]["worst_coupling"] == 0
    assert (ranked[0]["rank_coupling"], ranked[0]["rank_agreement"], ranked[0]["rank"]) == (1, 1, 1)
    assert ranked[1]["worst_coupling"] >= 0.4 and ranked[1]["kappa"] < ranked[0]["kappa"]
    assert "Judges ranked on coupling and agreement" in (tmp_path / "g" / "grid.md").read_text()


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
    assert f"{result.jury.agreement.effective_jurors.effective:.2f}" in section


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


def test_labels_added_to_a_stored_run_score_only_the_labels(tmp_path):
    out = tmp_path / "run"
    small = {"tasks": TASKS[:4], "bootstrap": 0}  # the labels' four tasks
    run_audit(planted_config(**small), out)
    before = dict(load_run(out).store.scores)
    result = run_audit(planted_config(**small, labels=str(labels_file(tmp_path, KNOWN))), out)
    stages = load_run(out).info().stages
    assert (stages["generate"].calls, stages["score"].calls, stages["labels"].calls) == (0, 0, 4)
    assert len(load_run(out).store.scores) == len(before) + 4  # four labelled responses, on helpfulness alone
    assert result.labels.judges["planted"]["helpfulness"].kappa == pytest.approx(12 / 13)


def test_a_jury_left_with_one_juror_audits_and_reports(tmp_path):
    """min_jurors 1 and a juror that cannot start: the jury is its one juror; agreement among jurors has no pair
    to measure (NaN, never a crash: scripts/gpu_check.py's jury case found it)."""
    from radar_local.report.build import write_report

    broken = juror("broken", fail_start=True)
    result = run_audit(jury_config([CLEAN, broken], min_jurors=1, **SMALL), tmp_path / "run")
    assert result.jury.jurors == ["clean"] and list(result.jury.failed) == ["broken"]
    assert write_report(load_run(tmp_path / "run")).joinpath("report.md").is_file()
