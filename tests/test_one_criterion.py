"""One criterion is an audit too (issue 63): a rubric of one criterion gets what radar can say of it, whether the judge
reads it (its self-effect and gate) and the judge-bias table, and no coupling section it cannot have."""

import json

import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.report.build import write_report
from radar_local.rundir import load_run
from tests.conftest import invoke, planted_config

ONE = {
    "id": "one",
    "name": "One criterion",
    "criteria": [{"id": "helpfulness", "label": "Helpfulness", "description": "How useful the reply is."}],
}


def one_criterion(tmp_path, **options) -> dict:
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(ONE))
    bias = {"length": {"Helpfulness": 0.5}}  # the planted judge favours long replies
    spec = {"engine": "testing", "model": "planted", "options": {"noise": 0.5, "bias": bias, **options}}
    return planted_config(
        rubric=str(tmp_path / "rubric.yaml"),
        generator=spec,
        verifier=spec,
        n=3,
        unconditioned=2,
        nuisance=["length", "hedging"],
        bootstrap=100,
    )


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one")
    config = one_criterion(folder)
    result = run_audit(config, folder / "run")
    write_report(load_run(folder / "run"))
    return result, folder / "run"


def test_a_judge_that_reads_its_one_criterion_passes_the_gate_and_its_bias_is_measured(audited):
    result, run = audited
    assert result.criteria == ["helpfulness"] and bool(result.reliable["helpfulness"])
    assert result.gate_evidence["helpfulness"] == "confirmed" and len(result.pairs) == 0
    length = next(r for r in result.bias_rows if r.attribute == "length")
    assert length.flag and length.evidence == "confirmed", length  # the planted length bias, found
    stats = json.loads((run / "stats.json").read_text())
    assert list(stats["self_effect"]) == ["helpfulness"] and stats["pairs"] == []
    assert load_run(run).result().to_json() == result.to_json()  # stats.json reads back


def test_its_report_says_what_one_criterion_can_show_and_draws_no_coupling(audited):
    _, run = audited
    report = (run / "report" / "report.md").read_text()
    sections = [line for line in report.splitlines() if line.startswith("## ")]
    assert "## Self-effects (reliability gate)" in sections and "## Judge bias" in sections
    assert not any(
        s.startswith(("## Leakage", "## Pairs", "## Per-task", "## Probe budget", "## Example")) for s in sections
    )
    assert "helpfulness: the judge reads it: self-effect +" in report
    assert "A rubric of one criterion has no coupling to measure" in report
    figures = sorted(p.name for p in (run / "report" / "figures").glob("*.svg"))
    assert figures == ["nuisance.svg", "self_effect.svg"]
    html = (run / "report" / "report.html").read_text()
    assert html.count("<img") == 2


def test_a_judge_blind_to_its_one_criterion_fails_the_gate_in_plain_words(tmp_path):
    result = run_audit(one_criterion(tmp_path, blind=["Helpfulness"]), tmp_path / "run")
    assert not bool(result.reliable["helpfulness"])
    from radar_local.report.text import verdict

    said = " ".join(verdict(result))
    assert "1 of 1 criteria fail the reliability gate" in said and "does not read it reliably" in said


def test_plan_of_one_criterion_names_its_gate_and_bias_and_no_pair(tmp_path):
    config = tmp_path / "audit.yaml"
    config.write_text(yaml.safe_dump(one_criterion(tmp_path)))
    res = invoke("audit", config, "--plan")
    assert res.exit_code == 0, res.output
    assert "its gate at 95%" in res.output and "one criterion has no pair to couple" in res.output
    assert (
        "a criterion passing the gate: self-effect >=" in res.output
        and "a judge bias (2 attribute cells)" in res.output
    )
    assert "pair" not in res.output.split("one criterion has no pair to couple")[1]
