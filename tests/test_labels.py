"""Human labels and the agreement statistics: alpha and weighted kappa against answers worked by hand and a
published example, planted labels files whose agreement is known, and labels files malformed or fuzzed."""

from __future__ import annotations

import json
from math import sqrt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from radar_local.auditing import run_audit
from radar_local.cli.main import cli
from radar_local.config import AuditConfig
from radar_local.errors import InputError, RadarError
from radar_local.report.build import write_report
from radar_local.rundir import load_run
from radar_local.stats.jurors import JuryBlock
from radar_local.stats.raters import LabelsBlock, against_humans, alpha, weighted_kappa
from tests.conftest import planted_config, radar_run
from tests.fuzzing import SETTINGS, broken, check, run
from tests.planted_jury import SMALL, TASKS, juror, jury_config


def valid_labels() -> pd.DataFrame:
    rows = [
        ("refund", "We will refund the jug today.", c, s, r)
        for c, s in (("helpfulness", "4"), ("correctness", "3"))
        for r in ("ann", "bob")
    ]
    return pd.DataFrame(rows, columns=["task_id", "response", "criterion", "score", "rater"])


@st.composite
def broken_labels(draw) -> pd.DataFrame:
    return broken(draw, valid_labels(), 3, ["cell", "drop_col", "rename_col", "drop_rows", "dup_row"])


def _swapped_rubric():
    from radar_local.rubric import Criterion, Rubric
    from radar_local.scale import Scale

    crit = [Criterion(id=c, label=c.title(), description=f"The {c}.") for c in ("tone", "facts")]
    return Rubric(id="r", name="r", criteria=crit, scale=Scale(levels={"2": 1, "1": 2}))


NAN = np.nan


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


@SETTINGS
@given(df=broken_labels(), fmt=st.sampled_from(["csv", "jsonl"]))
def test_malformed_labels_files(tmp_path_factory, df, fmt):
    """Issue 32: a labels file read when the config is resolved: exit 0, or 2 naming the file, before any call."""
    tmp = tmp_path_factory.mktemp("l")
    path = tmp / f"labels.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        path.write_text("".join(json.dumps(dict(zip(map(str, df.columns), row))) + "\n" for row in df.values.tolist()))
    config = tmp / "audit.yaml"
    tasks = [{"id": "refund", "prompt": "A customer wants a refund."}]
    config.write_text(yaml.safe_dump(planted_config(n=1, bootstrap=0, tasks=tasks, labels=str(path))))
    run_dir = tmp / "run"
    res = run("audit", config, "--out", run_dir, "--quiet", "--no-report")
    check(res, path, [])
    if res.exit_code == 2:
        assert not (run_dir / "probes.jsonl").exists()  # refused before any model call


def test_a_label_means_one_level_in_every_file_type(tmp_path):
    import json

    from radar_local.labels import load_labels
    from radar_local.rubric import Task

    rubric, tasks = _swapped_rubric(), [Task(id="t", prompt="Hi.")]
    csv_file = tmp_path / "labels.csv"
    csv_file.write_text("task_id,response,criterion,score,rater\nt,Hello.,tone,1,a\nt,Hello.,facts,2,a\n")
    jsonl = tmp_path / "labels.jsonl"
    rows = [{"task_id": "t", "response": "Hello.", "criterion": c, "score": s, "rater": "a"} for c, s in
            (("tone", 1), ("facts", 2))]  # fmt: skip
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = [[lab.score for lab in load_labels(f, rubric, tasks).labels] for f in (csv_file, jsonl)]
    assert read[0] == read[1] == [2.0, 1.0]  # the level named 1 (value 2), the level named 2 (value 1)


@pytest.mark.parametrize(("raters", "needle"), [([None, 1, 1], "row 1: the rater is empty"), ([1, 1.0], "already")])
def test_raters_are_read_as_written_and_a_repeated_rating_is_one_line(tmp_path, raters, needle):
    import json

    from radar_local.labels import load_labels
    from radar_local.rubric import Task

    path = tmp_path / "labels.jsonl"
    rows = [{"task_id": "t", "response": "Hello.", "criterion": "tone", "score": "2", "rater": r} for r in raters]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=needle):
        load_labels(path, _swapped_rubric(), [Task(id="t", prompt="Hi.")])


def test_identical_judges_rank_as_ties(labelled_run):
    import dataclasses

    from radar_local.grid import judge_ranking
    from radar_local.rundir import load_run

    result = load_run(labelled_run).result()
    same = []
    for name in ("d", "c", "b", "a"):
        same.append(dataclasses.replace(result, verifier=name))
    ranked = judge_ranking(same)
    assert {(r["rank_coupling"], r["rank"]) for r in ranked} == {(1, 1)}


def test_a_labels_folder_is_named_as_a_folder(tmp_path):

    (tmp_path / "labels").mkdir()
    with pytest.raises(RadarError, match="is a folder; name the labels file"):
        run_audit(planted_config(labels=str(tmp_path / "labels"), n=1, bootstrap=0), tmp_path / "run")


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


def test_a_planted_labels_file_reproduces_its_known_agreement(tmp_path):
    """The exact judge against the humans: pairs (4,4) (4,3) (0,0) (0,1) (2,2) (2,2) (2,2), so MAE 2/7 and
    quadratic kappa 12/13 (worked in test_quadratic_kappa_is_cohens_table_formula); Spearman on average ranks
    (6.5, 6.5, 1.5, 1.5, 4, 4, 4) and (7, 6, 1, 2, 4, 4, 4): 25 / sqrt(25 * 26) = 5 / sqrt(26)."""
    exact = {"engine": "testing", "model": "exact"}
    labels = str(labels_file(tmp_path, KNOWN))
    cfg = jury_config([exact, juror("noisy", noise=1.5)], tasks=TASKS[:4], n=2, bootstrap=50, labels=labels)
    result = run_audit(cfg, tmp_path / "run")
    row = result.measured(LabelsBlock).judges["exact"]["helpfulness"]
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
    assert set(result.measured(LabelsBlock).judges) == {"jury", "exact", "noisy"}
    assert result.measured(JuryBlock).agreement.criteria["helpfulness"].effective_jurors.errors == "labels"


def test_a_single_judge_is_compared_with_the_labels_too(tmp_path):
    cfg = planted_config(tasks=TASKS, bootstrap=0, labels=str(labels_file(tmp_path, KNOWN)))
    result = run_audit(cfg, tmp_path / "run")
    row = result.measured(LabelsBlock).judges["planted"]["helpfulness"]
    assert row.kappa == pytest.approx(12 / 13) and row.kappa_ci is None  # bootstrap 0: no intervals
    assert row.level_of_measurement == "ordinal"  # the judge's scores are levels of the 0-4 range
    assert load_run(tmp_path / "run").result().measured(LabelsBlock) == result.measured(
        LabelsBlock
    )  # stats.json keeps it

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


@pytest.mark.thorough  # a grid's cells and reports; test-fast checks the labels' agreement on single audits
def test_a_grid_ranks_its_judges_on_coupling_and_on_agreement_with_the_labels(tmp_path):
    """Two judges: 'exact' (no noise, no coupling) agrees with the labels as worked above and couples nothing;
    'coupled' shares helpfulness into correctness (worst coupling 0.5) and is noisy: it ranks second on both."""
    import yaml

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
    res = CliRunner().invoke(cli, ["grid", str(cfg), "--out", str(tmp_path / "g"), "--quiet", "--no-report"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "g" / "grid.json").read_text())
    ranked = summary["judges"]
    assert [j["verifier"] for j in ranked] == ["exact", "coupled"]
    assert ranked[0]["kappa"] == pytest.approx(12 / 13) and ranked[0]["worst_coupling"] == 0
    assert (ranked[0]["rank_coupling"], ranked[0]["rank_agreement"], ranked[0]["rank"]) == (1, 1, 1)
    assert ranked[1]["worst_coupling"] >= 0.4 and ranked[1]["kappa"] < ranked[0]["kappa"]
    assert "Judges ranked on coupling and agreement" in (tmp_path / "g" / "grid.md").read_text()


def test_labels_added_to_a_stored_run_score_only_the_labels(tmp_path):
    out = tmp_path / "run"
    small = {"tasks": TASKS[:4], "bootstrap": 0}  # the labels' four tasks
    run_audit(planted_config(**small), out)
    before = dict(load_run(out).store.scores)
    result = run_audit(planted_config(**small, labels=str(labels_file(tmp_path, KNOWN))), out)
    stages = load_run(out).info().stages
    assert (stages["generate"].calls, stages["score"].calls, stages["labels"].calls) == (0, 0, 4)
    assert len(load_run(out).store.scores) == len(before) + 4  # four labelled responses, on helpfulness alone
    assert result.measured(LabelsBlock).judges["planted"]["helpfulness"].kappa == pytest.approx(12 / 13)


def test_labels_the_judge_cannot_be_asked_rightly_are_one_line(tmp_path):
    """Issue 60 items 17 and 19: a pairwise label comparing a response with itself raised a ValueError; labels
    naming their task by `prompt` were judged with an empty {{ reference }} (exit 0, no warning)."""
    from radar_local.labels import load_labels
    from radar_local.rubric import load_benchmark

    bench = load_benchmark("helpsteer2")
    same = tmp_path / "same.csv"
    same.write_text(f"task_id,response_a,response_b,criterion,preferred\n{bench.tasks[0].id},One.,One.,overall,A\n")
    with pytest.raises(InputError, match="row 1: response_a and response_b are the same text"):
        load_labels(same, bench.rubric, bench.tasks)
    path = tmp_path / "by-prompt.csv"
    path.write_text("prompt,response,criterion,score,rater\nA new question.,A reply.,helpfulness,3,ann\n")
    template = "Task: {{ prompt }}\nReference: {{ reference }}\nReply: {{ response }}\n{{ criterion.label }}"
    config = planted_config(tasks=[{**t, "reference": "The answer."} for t in TASKS], labels=str(path))
    config["verifier"] = {**config["verifier"], "judge": {"template": template}}
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(config))
    res = radar_run("audit", cfg, "--out", tmp_path / "run")
    assert res.returncode == 2 and "names its task by `prompt`" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists()
