"""The orchestration on the planted engine, in seconds: chunk and batch boundaries, waves, resume
after a partial store, label clashes, the grid's reuse of probes; and the config errors that need
no model. The real engines keep their end-to-end tests in test_pipeline.py."""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from radar_local.auditing import run_audit
from radar_local.calls import prefix_order
from radar_local.cli.main import cli
from radar_local.rundir import PROBES, SCORES, load_run
from tests.conftest import planted_config, radar_run

REPO = Path(__file__).resolve().parents[1]
COUPLING = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.5}}


def model_config() -> dict:
    """A config naming the embedded model (its errors come before any weights load)."""
    spec = {"engine": "transformers", "model": "smollm2-135m", "options": {"batch_size": 8}}
    return {**planted_config(), "generator": spec, "verifier": spec}


def audit(tmp_path: Path, name: str, **kw):
    return run_audit(planted_config(options={"coupling": COUPLING}, **kw), tmp_path / name, base=REPO)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("batch_size", [1, 3, 7])
def test_chunk_and_batch_boundaries_change_nothing(tmp_path, batch_size):
    whole = audit(tmp_path, "whole", batch_size=256)
    chunked = audit(tmp_path, "chunked", batch_size=batch_size)
    assert chunked == whole  # the same statistics, value for value
    for name in (PROBES, SCORES):
        a, b = lines(tmp_path / "whole" / name), lines(tmp_path / "chunked" / name)
        assert sorted(r["key"] for r in a) == sorted(r["key"] for r in b) and len(b) == len({r["key"] for r in b})
    info = load_run(tmp_path / "chunked").info()
    assert info.stages["generate"].calls == 40 and info.stages["score"].calls == 200
    # the planted coupling is found: helpfulness leaks into correctness, and back not at all
    assert (
        whole.leakage.loc["helpfulness", "correctness"] == 0.5 and whole.leakage.loc["correctness", "helpfulness"] == 0
    )


def test_prefix_order_submits_each_probe_once_before_its_other_criteria():
    from radar_local.plan import ScoreRequest
    from radar_local.scoring import ScoreFormat

    fmt = ScoreFormat()
    reqs = [ScoreRequest(f"{p}{c}", p, (c,), [], fmt.answer(c)) for p in ("p1", "p2", "p3") for c in ("a", "b")][:5]
    assert [r.key for r in prefix_order(reqs, "prefix-shared", stagger=8)] == ["p1a", "p2a", "p3a", "p1b", "p2b"]
    # one probe apart: p1's other verdicts follow p2's first, p2's follow p3's first
    assert [r.key for r in prefix_order(reqs, "prefix-shared", stagger=1)] == ["p1a", "p2a", "p1b", "p3a", "p2b"]
    assert prefix_order(reqs, "paper") == reqs


def test_prefix_shared_layout_scores_every_probe_alike(tmp_path):
    """The prefix-shared prompt (task and probe first, the criterion last) carries the same probe and
    criterion as the paper's: verdict by verdict the planted judge, which reads both from the prompt, gives
    the same score, under keys of their own (nothing was reused across layouts)."""
    paper = audit(tmp_path, "paper", batch_size=7, layout="paper")
    shared = audit(tmp_path, "shared", batch_size=7)

    def verdicts(name: str) -> dict[tuple[str, str], tuple[str, float | None]]:
        return {(v.probe_key, v.criterion): (v.key, v.score) for v in load_run(tmp_path / name).store.scores.values()}

    a, b = verdicts("paper"), verdicts("shared")
    assert a.keys() == b.keys() and len(a) == 200 and not {k for k, _ in a.values()} & {k for k, _ in b.values()}
    assert {k: s for k, (_, s) in a.items()} == {k: s for k, (_, s) in b.items()}
    assert len({s for _, s in a.values()}) == 5  # every score of the scale: probes are told apart
    assert shared.leakage.equals(paper.leakage) and shared.self_effect.equals(paper.self_effect)


def test_resume_after_a_partial_store_makes_only_the_missing_calls(tmp_path):
    whole = audit(tmp_path, "whole")
    run = tmp_path / "partial"
    shutil.copytree(tmp_path / "whole", run)
    probes, scores = lines(run / PROBES), lines(run / SCORES)
    kept_probes = [p for i, p in enumerate(probes) if i % 3]  # lose a third of the probes
    kept_keys = {p["key"] for p in kept_probes}
    kept_scores = [s for i, s in enumerate(scores) if i % 4 and s["probe_key"] in kept_keys]
    (run / PROBES).write_text("".join(json.dumps(r) + "\n" for r in kept_probes))
    (run / SCORES).write_text("".join(json.dumps(r) + "\n" for r in kept_scores))
    again = audit(tmp_path, "partial")
    info = load_run(run).info()
    assert info.stages["generate"].calls == len(probes) - len(kept_probes)  # only the lost variants
    assert info.stages["score"].calls == 200 - len(kept_scores)
    assert again == whole and len(lines(run / PROBES)) == 40 and len(lines(run / SCORES)) == 200


def test_raising_n_adds_only_the_new_variants_and_lowering_it_reuses_the_first(tmp_path):
    """Issue 28, item 18: n 2 -> 3 made 36 generator calls (every probe again) instead of 12 (docs/audits.md:
    n "extends or re-analyses the same content-keyed records")."""
    from radar_local.rundir import INPUTS

    run = tmp_path / "run"
    run_audit(planted_config(n=2), run)
    first = {p["key"]: p for p in lines(run / PROBES)}
    again = run_audit(planted_config(n=3), run)
    stages = load_run(run).info().stages
    cells = 5 * 2 * 2  # criteria x directions x tasks
    assert stages["generate"].calls == cells and stages["score"].calls == cells * 5
    stored = {p["key"]: p for p in lines(run / PROBES)}
    assert len(stored) == 3 * cells and all(stored[k] == p for k, p in first.items())
    assert again.probes.directed == 3 * cells
    fewer = run_audit(planted_config(n=2), run)
    assert load_run(run).info().stages["generate"].calls == 0 and fewer.probes.directed == 2 * cells
    assert json.loads((run / INPUTS).read_text())["keys"] == 4


def test_a_second_model_under_a_label_in_use_is_refused(tmp_path):
    audit(tmp_path, "run")
    run = tmp_path / "run"
    clash = CliRunner().invoke(
        cli, ["score", str(run), "--verifier", "testing:other-model", "--name", "planted", "--quiet"]
    )
    assert clash.exit_code == 2 and "already holds scores from another model" in clash.stderr
    ok = CliRunner().invoke(
        cli, ["score", str(run), "--verifier", "testing:other-model", "--name", "judge-b", "--quiet"]
    )
    assert ok.exit_code == 0, ok.output
    assert load_run(run).result("judge-b").verifier == "judge-b" and (run / "stats.judge-b.json").is_file()
    assert len(lines(run / PROBES)) == 40  # re-scored, not regenerated


def test_grid_generates_each_generators_probes_once(tmp_path):
    gen = {"engine": "testing", "model": "gen"}
    judges = [
        {"engine": "testing", "model": "judge-a"},
        {"engine": "testing", "model": "judge-b", "options": {"coupling": COUPLING}},
    ]
    settings = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    cfg = tmp_path / "grid.yaml"
    cfg.write_text(yaml.safe_dump({**settings, "generators": [gen], "verifiers": judges}))
    res = CliRunner().invoke(cli, ["grid", str(cfg), "--out", str(tmp_path / "g"), "--quiet", "--no-report"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "g" / "gen"
    assert len(lines(run / PROBES)) == 40 and len(lines(run / SCORES)) == 2 * 200
    assert not list(run.glob("report*")) and (tmp_path / "g" / "grid.html").is_file()  # no cell report
    assert load_run(run).info("judge-b").stages["generate"].calls == 40  # one generation, shared by both cells
    b = load_run(run).result("judge-b")
    assert (
        b.leakage.loc["helpfulness", "correctness"] == 0.5
        and load_run(run).result().leakage.loc["helpfulness", "correctness"] == 0
    )
    again = CliRunner().invoke(cli, ["grid", str(cfg), "--out", str(tmp_path / "g"), "--quiet", "--no-report"])
    assert again.exit_code == 0 and load_run(run).info().stages["score"].calls == 0  # all stored


def test_missing_model_names_the_path_and_the_fetch_command(tmp_path):
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(model_config()))
    res = radar_run("audit", path, "--out", tmp_path / "run", env={"RADAR_MODELS_DIR": str(tmp_path / "empty")})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"model 'smollm2-135m' is not at {tmp_path / 'empty' / 'smollm2-135m'}" in res.stderr
    assert "radar models fetch smollm2-135m" in res.stderr


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: {**c, "temperature": 0.5}, "key 'temperature'"),
        (lambda c: {**c, "n": 0}, "key 'n'"),
        (lambda c: {**c, "generator": {**c["generator"], "engine": "llamafile"}}, "key 'generator.engine'"),
        (lambda c: {**c, "rubric": "nope.yaml", "tasks": None}, "custom rubric needs 'tasks'"),
    ],
)
def test_bad_config_is_one_line_exit_2(tmp_path, edit, message):
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(edit(model_config())))
    res = radar_run("audit", path, "--out", tmp_path / "run")
    assert res.returncode == 2 and message in res.stderr and str(path) in res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "run").exists()


def test_malformed_config_yaml(tmp_path):
    path = tmp_path / "audit.yaml"
    path.write_text("rubric: [helpsteer2\n")
    res = radar_run("audit", path)
    assert res.returncode == 2 and "malformed YAML" in res.stderr


def test_score_on_a_directory_that_is_not_a_run(tmp_path):
    res = radar_run("score", tmp_path, "--verifier", "vllm:smollm2-135m")
    assert res.returncode == 2 and "not a run directory" in res.stderr


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_load(path):
    from radar_local.config import GridConfig, load_config

    if path.name.startswith("grid-"):
        assert len(load_config(path, GridConfig).cells()) == 12  # 4 x 4, self-pairs excluded
    else:
        assert all(v.model for v in load_config(path).verifiers)  # a jury's jurors, or the verifier
