"""The planted engine reads radar's own prompts for any valid rubric text (issue 28, item 17): labels
with newlines, brackets and quotes, descriptions without a word of four letters, and an editor asked
without a script."""

from __future__ import annotations

import json

import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.engines.testing import PlantedEngine

ODD = [
    {"id": "plain", "label": "Plain", "description": "How plain the reply is."},
    {"id": "twoline", "label": 'Two\nlines <with> "quotes"', "description": "Ok. A b c.\nAnd a 2nd line."},
    {"id": "short", "label": "Short > long", "description": "Is it ok?"},
]
COUPLING = {'Two\nlines <with> "quotes"': {"Plain": 0.5}}


@pytest.mark.parametrize("layout", ["paper", "prefix-shared"])
@pytest.mark.parametrize("wording", [False, True])
def test_an_audit_of_odd_but_valid_criteria_recovers_its_plant(tmp_path, layout, wording):
    rubric = tmp_path / "odd.yaml"
    rubric.write_text(yaml.safe_dump({"id": "odd", "name": "Odd", "criteria": ODD}))
    options = {"wording": True} if wording else {"coupling": COUPLING}
    spec = {"engine": "testing", "model": "planted", "options": options}
    config = {
        "rubric": str(rubric),
        "tasks": [{"id": "t", "prompt": "Say hi."}],
        "generator": spec,
        "verifier": spec,
        "n": 2,
        "bootstrap": 0,
        "layout": layout,
    }
    result = run_audit(config, tmp_path / "run")
    if wording:  # the plain description's words steer its own score; the others have none to find
        assert result.self_effect["plain"] == 1.0 and result.self_effect["short"] == 0.0
    else:
        assert (result.self_effect == 1.0).all()
        assert result.leakage.loc["twoline", "plain"] == 0.5 and result.leakage.loc["short", "plain"] == 0.0


def test_an_editor_without_a_script_answers_no_edit():
    engine = PlantedEngine("planted")
    (answer,) = engine.constrained([[{"role": "user", "content": "Candidate 1 of 2: edit the rubric."}]], fmt=None)
    assert json.loads(answer.text) == {}


def test_verdicts_the_engine_failed_are_unscored_with_the_engine_named(tmp_path):
    """Issue 28, item 22: a verdict vLLM failed (finish reason 'error') is the engine's failure, stored as such."""
    from radar_local.calls import ENGINE_FAILED
    from radar_local.rundir import load_run
    from tests.conftest import planted_config

    failing = {"engine": "testing", "model": "planted", "options": {"fail_constraints": True}}
    run_audit(planted_config(verifier=failing, bootstrap=0), tmp_path / "run")
    verdicts = list(load_run(tmp_path / "run").store.scores.values())
    assert verdicts and all(v.score is None and v.unscored == ENGINE_FAILED for v in verdicts)
