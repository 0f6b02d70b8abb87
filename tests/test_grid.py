"""`radar grid` on small stored runs: every call is already stored, so no engine starts."""

import json

import pytest
import yaml
from click.testing import CliRunner

from radar_local.cli.main import cli
from radar_local.config import GridConfig
from radar_local.synthetic import HELPSTEER2_PLANTED
from tests.report_fixtures import GENERATOR, judge, planted_run, planted_settings


def test_self_pairs_are_excluded_by_default():
    a = {"engine": "vllm", "model": "qwen"}
    b = {"engine": "vllm", "model": "llama"}
    grid = GridConfig.model_validate({"rubric": "helpsteer2", "generators": [a, b], "verifiers": [a, b]})
    assert [(g.model, v.model) for g, v in grid.cells()] == [("qwen", "llama"), ("llama", "qwen")]
    both = GridConfig.model_validate(
        {"rubric": "helpsteer2", "generators": [a], "verifiers": [a], "exclude_self_pairs": False}
    )
    assert len(both.cells()) == 1


@pytest.mark.thorough  # two stored runs and a grid over them; test_orchestration's grid checks the same machinery fast
def test_grid_over_stored_runs(tmp_path):
    out = tmp_path / "grid"
    planted_run(out / "gen", verifier="judge-a", seed=0)
    harsher = HELPSTEER2_PLANTED.copy()
    harsher[2, 0] = harsher[2, 1] = 0.0  # judge-b does not read coherence into helpfulness or correctness
    planted_run(out / "gen", harsher, verifier="judge-b", seed=3)
    config = tmp_path / "grid.yaml"
    config.write_text(
        yaml.safe_dump(
            {**planted_settings(), "generators": [GENERATOR], "verifiers": [judge("judge-a"), judge("judge-b")]}
        )
    )
    res = CliRunner().invoke(cli, ["grid", str(config), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "grid.json").read_text())
    assert [(c["generator"], c["verifier"]) for c in summary["cells"]] == [("gen", "judge-a"), ("gen", "judge-b")]
    assert all(c["pearson"] is not None and c["n_pairs"] == 10 for c in summary["cells"])
    dist = summary["verifier_distance"]
    assert dist["judge-a"]["judge-a"] == 0 and dist["judge-a"]["judge-b"] == dist["judge-b"]["judge-a"] > 0.1
    by_pair = {(p["a"], p["b"]): p for p in summary["pairs"]}
    assert by_pair[("helpfulness", "correctness")]["stability"] == "rubric-level"  # both judges couple it
    assert by_pair[("helpfulness", "coherence")]["stability"] == "judge-specific"  # only judge-a reads it
    cal = summary["calibration"]["gen"]
    assert set(cal["verifiers"]) == {"judge-a", "judge-b"} and "judge-a vs judge-b" in cal["agreement"]
    assert 0 < cal["agreement"]["judge-a vs judge-b"]["helpfulness"]["agreement"] <= 1
    # The generator's run directory names its first verifier's files plainly, the second's by label.
    for name in (
        "grid.md",
        "grid.html",
        "gen/stats.json",
        "gen/stats.judge-b.json",
        "gen/report/report.html",
        "gen/report-judge-b/report.md",
    ):
        assert (out / name).is_file(), name
    assert "Table 9" in (out / "grid.md").read_text() and "<script" not in (out / "grid.html").read_text()
    res = CliRunner().invoke(cli, ["report", str(out / "gen"), "--verifier", "judge-b", "--out", str(tmp_path / "rb")])
    assert res.exit_code == 0 and "gen -&gt; judge-b" in (tmp_path / "rb" / "report.html").read_text()
    # Issue 28, item 4: the grid run again without judge-b reports judge-a alone, though judge-b's
    # verdicts stay stored in the run directory.
    config.write_text(
        yaml.safe_dump({**planted_settings(), "generators": [GENERATOR], "verifiers": [judge("judge-a")]})
    )
    res = CliRunner().invoke(cli, ["grid", str(config), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    again = json.loads((out / "grid.json").read_text())
    assert (
        set(again["calibration"]["gen"]["verifiers"]) == {"judge-a"} and again["calibration"]["gen"]["agreement"] == {}
    )
    assert "judge-b" not in (out / "grid.md").read_text() and "judge-b" not in json.dumps(again)
    assert (out / "gen" / "stats.judge-b.json").is_file()  # nothing stored is lost


def test_grid_with_only_self_pairs_is_an_input_error(tmp_path):
    config = tmp_path / "grid.yaml"
    config.write_text(yaml.safe_dump({**planted_settings(), "generators": [GENERATOR], "verifiers": [GENERATOR]}))
    res = CliRunner().invoke(cli, ["grid", str(config), "--out", str(tmp_path / "g")])
    assert res.exit_code == 2 and "every cell is a self-pair" in res.output
