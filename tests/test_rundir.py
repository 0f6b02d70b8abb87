"""A run directory holds its inputs (inputs.json): what a stored run returns never depends on the rubric,
task or reference files it was made from, and a directory made before the snapshot keeps working."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from radar_local.audited import audited_set
from radar_local.auditing import run_audit
from radar_local.errors import InputError
from radar_local.run import Run
from radar_local.rundir import INPUTS, OLD_RUN_NOTE, load_run
from radar_local.stats.result import MEASURED, SCHEMA_VERSION
from tests.conftest import planted_config

REPO = Path(__file__).resolve().parents[1]
OLD_RUN = REPO / "tests/data/run_made_before_inputs_json"


def small_audit(tmp_path: Path) -> tuple[Path, dict]:
    """An audit of a rubric file the test owns (so it can edit and move it)."""
    rubric = tmp_path / "rubric.yaml"
    shutil.copy(REPO / "tests/data/small_rubric.yaml", rubric)
    config = planted_config(rubric=str(rubric), bootstrap=0)
    run_audit(config, tmp_path / "run")
    return rubric, config


def stored(root: Path) -> tuple:
    run = load_run(root)
    probes = run.probes()
    return run.rubric, probes, audited_set(run, probes).table().to_dict("list"), run.result()


def test_a_rubric_edited_or_moved_after_the_audit_changes_nothing_stored(tmp_path):
    rubric, config = small_audit(tmp_path)
    before = stored(tmp_path / "run")
    text = rubric.read_text().replace("How useful the reply is to the customer.", "Whether the reply solves it.")
    rubric.write_text(text)
    assert stored(tmp_path / "run") == before  # the keys of the stored verdicts hash the criteria audited
    rubric.rename(tmp_path / "moved.yaml")
    assert stored(tmp_path / "run") == before
    snapshot = json.loads((tmp_path / "run" / INPUTS).read_text())
    assert snapshot["sources"]["rubric"] == str(rubric) and snapshot["rubric"]["criteria"][0]["id"] == "helpfulness"


def test_resuming_on_an_edited_rubric_is_refused_and_keeps_the_run(tmp_path):
    rubric, config = small_audit(tmp_path)
    files = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()}
    rubric.write_text(rubric.read_text().replace("Courteous and respectful tone.", "Polite."))
    with pytest.raises(InputError, match=r"another rubric than the config now names \(inputs.json keeps"):
        run_audit(config, tmp_path / "run")
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()} == files


def test_a_run_made_before_inputs_json_and_keys_2_stays_usable(tmp_path):
    """tests/data/run_made_before_inputs_json was written by radar before this change (commit 193c396):
    its records keep their first key formula, so it reads, reports and resumes without a call."""
    root = tmp_path / "old"
    shutil.copytree(OLD_RUN, root)
    stats = json.loads((root / "stats.json").read_text())
    reader = load_run(root)
    assert len(reader.probes()) == len((root / "probes.jsonl").read_text().splitlines()) == 20
    # schema 2 reads under today's names: judge bias was `nuisance`, each measurement at the top (schema 4: by name)
    measured = {("bias" if k == "nuisance" else k): v for k, v in stats.items() if k in ("nuisance", *MEASURED)}
    today = {k: v for k, v in stats.items() if k not in ("nuisance", *MEASURED)}
    today |= {"schema_version": SCHEMA_VERSION, "measurements": measured}
    assert measured and reader.result().to_json() == today and not (root / INPUTS).exists()
    with Run.open(root) as run:  # the first open that may write keeps the inputs and the key formula
        assert run.plan.keys == 1
    snapshot = json.loads((root / INPUTS).read_text())
    assert snapshot["keys"] == 1 and snapshot["note"] == OLD_RUN_NOTE and snapshot["sources"]["rubric"] == "helpsteer2"
    before = (root / "scores.jsonl").read_bytes()
    config = yaml.safe_load((root / "config.yaml").read_text())
    run_audit(config, root)  # resumed: every verdict is stored under its old key
    assert (root / "scores.jsonl").read_bytes() == before
    assert json.loads((root / "run.json").read_text())["stages"]["score"]["calls"] == 0
    assert load_run(root).result().to_json()["pairs"] == stats["pairs"]


def test_a_new_judge_in_a_run_made_before_inputs_json_is_asked(tmp_path):
    """Issue 60 item 15: key formula 1 keyed a verdict by engine, model and options alone, so a judge with its own
    template, or a repeat of the verdicts, was handed the old prompt's verdicts (0 calls; repeats agreeing
    perfectly). Formula 1 predates judges and repeats: one is keyed with them and asked."""
    root = tmp_path / "old"
    shutil.copytree(OLD_RUN, root)
    config = yaml.safe_load((root / "config.yaml").read_text())
    template = "Task: {{ prompt }}\nReply: {{ response }}\n{{ criterion.label }}: {{ criterion.description }}"
    config["verifier"] = {**config["verifier"], "name": "templated", "judge": {"template": template}}
    config["consistency"] = {"repeats": 2, "share": 1.0}
    run_audit(config, root)
    stages = json.loads((root / "run.json").read_text())["stages"]
    assert stages["score"]["calls"] == 20 * 5 and stages["repeat 2"]["calls"] == 20 * 5


def test_a_damaged_inputs_json_is_one_line(tmp_path):
    small_audit(tmp_path)
    path = tmp_path / "run" / INPUTS
    data = json.loads(path.read_text())
    data["rubric"]["criteria"] = data["rubric"]["criteria"][:1]  # a rubric needs two criteria
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=str(path)):
        load_run(tmp_path / "run")
