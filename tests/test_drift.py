"""`radar drift` (issue 47, first part): a judge and its replacement on the same stored probes, on the planted
engine: an unchanged judge under a new name does not drift at all, and a replacement that couples helpfulness into
correctness shows it where it is (that leakage rises beyond its band, correctness' verdicts shift), nowhere else."""

import json

import pytest

from radar_local.auditing import run_audit
from tests.conftest import REPO, invoke, one_line_exit_2, planted_config

TASKS = [{"id": f"t{i}", "prompt": f"Customer request number {i}: reply to it."} for i in range(6)]
COUPLED = "coupling={'Helpfulness / Understanding': {'Correctness / Completeness': 0.9}}"


@pytest.fixture(scope="module")
def rescored(tmp_path_factory):
    run = tmp_path_factory.mktemp("drift") / "run"
    run_audit(planted_config(options={"noise": 0.5}, tasks=TASKS, n=4, bootstrap=100), run, base=REPO)
    for name, options in (("same", ["noise=0.5"]), ("coupled", ["noise=0.5", COUPLED])):
        flags = [x for o in options for x in ("--option", o)]
        result = invoke("score", run, "--verifier", "testing:planted", "--name", name, *flags, "--quiet")
        assert result.exit_code == 0, result.output
    return run


def drift_of(run, after, tmp_path, *extra, code=0):
    out = tmp_path / f"{after}.json"
    result = invoke("drift", run, "--before", "planted", "--after", after, "--bootstrap", "200", "--json", out, *extra)
    assert result.exit_code == code, result.output
    return result.output, json.loads(out.read_text())


def test_an_unchanged_judge_does_not_drift(rescored, tmp_path):
    text, d = drift_of(rescored, "same", tmp_path)
    assert d["probes"] == 6 * 5 * 2 * 4
    for c in d["criteria"]:
        assert c["exact"] == 1 and c["shift"] == 0 and c["self_effect_change"] == 0 and c["kappa"] == 1
    assert all(p["change"] == 0 and p["flag"] is None for p in d["pairs"])
    assert "No leakage moves beyond the 95% simultaneous band" in text
    assert "Confirmed findings are the same in both audits." in text
    drift_of(rescored, "same", tmp_path, "--fail-on-change", code=0)  # the CI gate passes


def test_a_replacement_that_couples_two_criteria_is_seen_where_it_couples(rescored, tmp_path):
    text, d = drift_of(rescored, "coupled", tmp_path)
    moved = {(p["source"], p["target"]): p["flag"] for p in d["pairs"] if p["flag"]}
    assert moved == {("helpfulness", "correctness"): "rises"}
    rows = {c["criterion"]: c for c in d["criteria"]}
    assert rows["correctness"]["exact"] < 1 and rows["coherence"]["exact"] == 1
    assert all(abs(c["self_effect_change"]) < 1e-12 for c in d["criteria"])  # a self-effect is its own target's
    assert "helpfulness -> correctness" in text and "(1 rise, 0 fall)" in text
    assert "Confirmed findings that appear: helpfulness -> correctness directional; that disappear: none (" in text
    drift_of(rescored, "coupled", tmp_path, "--fail-on-change", code=1)  # the CI gate fails


def test_findings_only_one_audit_confirms_are_listed_not_gated(rescored, tmp_path):
    """Issue 61: two audits of one unchanged judge confirm different findings by chance (15% of comparisons failed
    --fail-on-change so, a rule held to no level); the gate reads the paired band alone. Here the unchanged judge's
    own stats file is given a confirmed finding its twin lacks: listed, and the gate passes."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(rescored, run)
    path = run / "stats.same.json"
    stats = json.loads(path.read_text())
    pair = stats["pairs"][0]
    pair["flags"], pair["evidence"] = ["directional"], {"directional": "confirmed"}
    path.write_text(json.dumps(stats))
    text, d = drift_of(run, "same", tmp_path, "--fail-on-change", code=0)
    assert all(p["flag"] is None for p in d["pairs"])
    assert f"Confirmed findings that appear: {pair['a']} -> {pair['b']} directional; that disappear: none" in text
    assert "--fail-on-change gates on the bands above" in text


def test_drift_names_a_verifier_the_run_lacks_in_one_line(rescored):
    one_line_exit_2(invoke("drift", rescored, "--before", "planted", "--after", "nobody"), "no verifier 'nobody'")
    one_line_exit_2(invoke("drift", rescored, "--before", "planted", "--after", "planted"), "name two")


def test_drift_refuses_verifiers_that_scored_other_probes(rescored, tmp_path):
    """Drift compares verdicts on the same probes: a judge that scored under half of the other's is one line."""
    import shutil

    import pandas as pd

    run = tmp_path / "run"
    shutil.copytree(rescored, run, ignore=shutil.ignore_patterns(".radar.lock"))
    table = pd.read_csv(run / "scores.csv", dtype={"variant": str})
    keep = (table["verifier"] != "same") | (table["task_id"] == "t0")
    table[keep].to_csv(run / "scores.csv", index=False)
    one_line_exit_2(
        invoke("drift", run, "--before", "planted", "--after", "same"),
        "scored 40 probes in common of the 240 'planted' scored",
    )


@pytest.mark.thorough  # a grid and a jury written whole, reports and all: `make test` runs it
def test_drift_reads_a_grids_verifiers_and_a_jurys_jurors(tmp_path):
    """Issue 47: drift works where two judges scored the same probes in one directory: a grid's generator folder
    (its verifiers) and a jury's run (a juror against another, or against the jury)."""
    import yaml

    FEW = ("--bootstrap", "200")  # the audits need no intervals of their own: drift draws its own

    spec = {"engine": "testing", "options": {"noise": 0.5}}
    coupled = {"coupling": {"Helpfulness / Understanding": {"Correctness / Completeness": 0.9}}, "noise": 0.5}
    grid = {
        **{
            k: v for k, v in planted_config(tasks=TASKS, n=4, bootstrap=0).items() if k not in ("generator", "verifier")
        },
        "generators": [{"engine": "testing", "model": "planted"}],
        "verifiers": [{**spec, "model": "v1"}, {**spec, "model": "v2", "options": coupled}],
        "exclude_self_pairs": False,
    }
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    assert invoke("grid", tmp_path / "grid.yaml", "--out", tmp_path / "grid", "--quiet", "--no-report").exit_code == 0
    out = tmp_path / "g.json"
    res = invoke("drift", tmp_path / "grid" / "planted", "--before", "v1", "--after", "v2", "--json", out, *FEW)
    assert res.exit_code == 0, res.output
    moved = [(p["source"], p["target"]) for p in json.loads(out.read_text())["pairs"] if p["flag"]]
    assert moved == [("helpfulness", "correctness")]
    jurors = [{**spec, "model": "a"}, {**spec, "model": "b", "options": coupled}]
    jury = planted_config(verifier={"name": "panel", "jury": jurors}, tasks=TASKS, n=4, bootstrap=0)
    run_audit(jury, tmp_path / "jury", base=REPO)
    for before, after in (("a", "b"), ("a", "panel")):
        res = invoke("drift", tmp_path / "jury", "--before", before, "--after", after, "--json", out, *FEW)
        assert res.exit_code == 0, res.output
        moved = [(p["source"], p["target"]) for p in json.loads(out.read_text())["pairs"] if p["flag"]]
        assert moved == [("helpfulness", "correctness")], (before, after, moved)
