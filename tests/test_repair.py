"""Rubric repair (issue 10) on the planted wording mechanism: two criteria coupled through the words
their descriptions share, a scripted editor, and a repair that must prefer the rewrite that removes
the shared words over a drop that loses a dimension."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from radar_local.auditing import run_audit
from radar_local.cli.main import cli
from radar_local.errors import InputError
from radar_local.repair import Edit, EditFormat, apply_edit, repair
from radar_local.rubric import load_rubric
from radar_local.rundir import load_run
from tests.conftest import PLANTED_TASKS

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "configs" / "rubrics" / "worded.yaml"
REWRITE = {
    "action": "rewrite",
    "criteria": ["clarity"],
    "keeps": "",
    "new": [
        {
            "id": "clarity",
            "label": "Clarity",
            "description": "Rewards plain wording, short paragraphs and headings.",
            "kind": "evaluative",
            "low": "",
            "high": "",
        }
    ],
    "rationale": "Clarity shared evidence/sources/citations with accuracy; describe layout instead.",
}
DROP = {
    "action": "drop",
    "criteria": ["clarity"],
    "new": [],
    "keeps": "accuracy covers the evidence",
    "rationale": "Clarity double-counts accuracy.",
}
BAD_MERGE = {
    "action": "merge",
    "criteria": ["accuracy", "clarity"],
    "keeps": "",
    "new": [
        {
            "id": "grounding",
            "label": "Grounding",
            "description": "Evidence and clarity.",
            "kind": "evaluative",
            "low": "",
            "high": "",
        }
    ],
    "rationale": "One axis.",
}


def config(tmp_path: Path, edits: list[dict], **kw) -> Path:
    spec = {"engine": "testing", "model": "planted", "options": {"wording": True, "edits": edits}}
    data = {
        "rubric": str(RUBRIC),
        "tasks": PLANTED_TASKS,
        "generator": spec,
        "verifier": spec,
        "n": 3,
        "seed": 0,
        "bootstrap": 200,
        "out": str(tmp_path / "audit"),
        **kw,
    }
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_planted_wording_couples_accuracy_and_clarity(tmp_path):
    result = run_audit(config(tmp_path, []), base=REPO)
    assert result.reliable.all()
    pair = result.pair("accuracy", "clarity")
    assert pair["sym"] > 0.4 and "bidirectional cluster" in pair["flags"]
    assert result.pair("accuracy", "warmth")["sym"] == 0


def test_repair_prefers_the_rewrite_over_the_drop(tmp_path):
    rep = repair(config(tmp_path, [DROP, REWRITE, BAD_MERGE]), candidates=3)
    drop, rewrite, bad = rep.candidates
    assert bad.error == "a merge must say which dimension of the original it keeps" and bad.run_dir is None
    assert drop.improved and rewrite.improved  # both remove the coupling beyond its interval
    assert rewrite.summary["reliable"] == 3 and drop.summary["reliable"] == 2  # the drop loses a dimension
    assert rep.final is rewrite and rewrite.pareto
    before, after = rep.summary, rewrite.summary
    assert after["worst_sym_ci"][1] < before["worst_sym_ci"][0]  # beyond the intervals, not inside them
    repaired = load_rubric(rep.out / "rubric.repaired.yaml")
    assert repaired.criterion("clarity").description.startswith("Rewards plain wording")
    # Only what the edit touches is redone: accuracy's and warmth's probes, and their verdicts on
    # accuracy and warmth, come from the original audit (2/3 of the probes, 4/9 of the verdicts).
    assert rewrite.reuse == {"probes": 36, "probes_reused": 24, "scores": 108, "scores_reused": 48}
    report = (rep.out / "repair.md").read_text()
    assert "Selected round 1, candidate 2 (rewrite clarity)" in report and "accuracy / clarity" in report
    data = json.loads((rep.out / "repair.json").read_text())
    assert data["selected"] == {"round": 1, "index": 2} and data["fails"] is False
    assert (rep.out / "figures" / "after.svg").is_file() and (rep.out / "repair.html").is_file()
    assert (Path(rewrite.run_dir) / "stats.json").is_file()  # every candidate is an ordinary, resumable run


def test_no_improvement_writes_no_repaired_rubric_and_fails_the_policy(tmp_path):
    """A rewrite that keeps the shared words changes nothing beyond the intervals: no repaired rubric,
    and --fail-on-sym exits 1 because the coupled pair remains."""
    same = {
        **REWRITE,
        "new": [{**REWRITE["new"][0], "description": "Rewards clarity: evidence, sources and citations."}],
    }
    path = config(tmp_path, [same])
    run_audit(path, base=REPO)
    res = CliRunner().invoke(
        cli, ["repair", str(tmp_path / "audit"), "--candidates", "1", "--fail-on-sym", "0.4", "--quiet"]
    )
    assert res.exit_code == 1, res.output
    assert "No candidate improved on the original beyond its confidence intervals" in res.output
    assert not (tmp_path / "audit" / "repair" / "rubric.repaired.yaml").exists()
    ok = CliRunner().invoke(cli, ["repair", str(tmp_path / "audit"), "--candidates", "1", "--quiet"])
    assert ok.exit_code == 0
    # The evidence policy reads the same pair over its family interval: confirmed above 0.4 fails (1), and a
    # ceiling inside that interval leaves it open (3), naming the probes that would settle it.
    family = load_run(tmp_path / "audit").result().family["sym"]["clarity"]["accuracy"]
    assert 0.4 < family[0] < 0.5  # at N = 3: above 0.4 together with every other quantity, not above 0.5
    evidence = ["repair", str(tmp_path / "audit"), "--candidates", "1", "--quiet", "--sym-confirmed"]
    assert CliRunner().invoke(cli, [*evidence, "0.4"]).exit_code == 1
    inside = CliRunner().invoke(cli, [*evidence, str(round(sum(family) / 2, 3))])
    assert inside.exit_code == 3 and "open against" in inside.output, inside.output


def test_intended_pairs_are_left_alone(tmp_path):
    rep = repair(config(tmp_path, [DROP], intended=[["clarity", "accuracy"]]), candidates=1)
    assert rep.candidates == [] and rep.final is None  # nothing left to repair
    assert rep.left_alone and "intended, left alone" in rep.left_alone[0]
    assert "The rubric is clean" in (rep.out / "repair.md").read_text()


def test_intended_pair_must_name_rubric_criteria(tmp_path):
    path = config(tmp_path, [DROP], intended=[["accuracy", "speed"]])
    with pytest.raises(InputError, match=r"audit.yaml: intended pair \[accuracy, speed\]: unknown criterion 'speed'"):
        repair(path)
    assert not (tmp_path / "audit").exists()  # refused before the audit ran


@pytest.mark.parametrize(
    "edit,message",
    [
        ({**DROP, "criteria": ["nope"]}, "unknown criterion nope"),
        ({**REWRITE, "new": REWRITE["new"] * 2}, "rewrite names 1 criteria and writes 1"),
        ({**REWRITE, "new": [{**REWRITE["new"][0], "id": "warmth"}]}, "duplicate criterion id 'warmth'"),
        ({**REWRITE, "new": [{**REWRITE["new"][0], "kind": "descriptive"}]}, "needs 'low' and 'high' words"),
        (
            {
                **REWRITE,
                "new": [{**REWRITE["new"][0], "description": "Rewards clarity of evidence, sources and citations."}],
            },
            "the edit changes nothing",
        ),
    ],
)
def test_invalid_edits_are_refused_with_a_reason(edit, message):
    with pytest.raises(ValueError, match=message):
        apply_edit(load_rubric(RUBRIC), Edit.model_validate(edit))


def test_edit_format_admits_each_action_in_its_shape():
    import re

    fmt = EditFormat(("accuracy", "clarity", "warmth"))
    answer = lambda edit: json.dumps(Edit.model_validate(edit).model_dump())
    for edit in (REWRITE, DROP, {**BAD_MERGE, "keeps": "evidence"}):
        assert re.fullmatch(fmt.regex, answer(edit)), edit["action"]
    assert not re.fullmatch(fmt.regex, answer({**DROP, "new": REWRITE["new"]}))  # a drop writes nothing
    assert not re.fullmatch(fmt.regex, answer({**DROP, "criteria": ["speed"]}))  # only existing ids
    assert fmt.max_tokens >= max(len(json.dumps(e)) for e in (REWRITE, DROP, BAD_MERGE))


@pytest.mark.process  # docs/repair.md's command, as a user runs it
def test_the_readme_example_from_its_config(tmp_path):
    """configs/repair-example.yaml as docs/repair.md runs it, from another folder (relative paths)."""
    from tests.conftest import radar_cli

    res = radar_cli("repair", REPO / "configs" / "repair-example.yaml", "--candidates", "2", "--quiet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Selected round 1, candidate 2 (rewrite clarity)")
    assert (tmp_path / "runs" / "repair-example" / "repair" / "rubric.repaired.yaml").is_file()


def test_a_second_round_starts_from_the_best(tmp_path):
    """Two coupled pairs: round 1 fixes one (GlobalPos falls beyond its interval), round 2 starts from
    that rubric and fixes the other; the scripted editor's repeat of round 1's edit changes nothing."""
    tone = {
        **REWRITE,
        "criteria": ["tone"],
        "new": [
            {
                **REWRITE["new"][0],
                "id": "tone",
                "label": "Tone",
                "description": "Prefers formal register and polite salutations.",
            }
        ],
    }
    rubric = REPO / "tests" / "data" / "two_couplings_rubric.yaml"
    rep = repair(config(tmp_path, [REWRITE, tone], rubric=str(rubric)), rounds=2, candidates=2)
    first = [c for c in rep.candidates if c.round == 1]
    assert all(c.improved and "overall coupling fell" in c.why for c in first)
    second = {c.index: c for c in rep.candidates if c.round == 2}
    parent = rep.final.round == 2 and rep.final
    assert parent and parent.improved and "the worst coupling fell" in parent.why
    assert next(c for c in second.values() if c is not parent).error == "the edit changes nothing"
    repaired = load_rubric(rep.out / "rubric.repaired.yaml")
    assert repaired.criterion("clarity").description.startswith("Rewards plain wording")
    assert repaired.criterion("tone").description.startswith("Prefers formal register")
    assert rep.final.summary["worst_sym"] == 0
    from radar_local.store import _HELD

    assert not [d for d in _HELD if tmp_path in d.parents]  # no candidate's (or the original's) lock is kept


def test_an_edit_whose_criterion_id_is_a_nuisance_attribute_is_skipped_like_any_bad_edit(tmp_path):
    """Issue 28, item 15: such a candidate ended the whole repair (exit 2) after the original audit."""
    clash = {**REWRITE, "new": [{**REWRITE["new"][0], "id": "length"}]}
    rep = repair(config(tmp_path, [clash, REWRITE], nuisance=["length"], unconditioned=2), candidates=2)
    bad, good = rep.candidates
    assert (
        bad.error == "not an edit (nuisance attribute 'length' is also a criterion of the rubric; give it another id)"
    )
    assert bad.run_dir is None and good.error is None and good.run_dir is not None


def test_a_constraint_the_engine_failed_is_blamed_on_the_engine_not_the_editor(tmp_path):
    """Issue 28, item 22: an editor request whose constraint vLLM could not compile (finish reason
    'error', no text) was reported as the editor's 'not an edit (Invalid JSON: EOF ...)'."""
    path = config(tmp_path, [REWRITE])
    run_audit(path, base=REPO)
    editor = {"engine": "testing", "model": "planted", "options": {"fail_constraints": True}}
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "editor": editor}))
    rep = repair(path, candidates=2)
    assert [c.error for c in rep.candidates] == [
        "not proposed: the engine failed the request before the model answered (finish reason 'error': its "
        "answer constraint did not compile, or the engine erred; see engine.log)"
    ] * 2


@pytest.mark.process
def test_radar_repair_sends_engine_output_to_the_log(tmp_path):
    """Issue 28, item 22: `radar repair` let vLLM's own output reach the console."""
    from tests.conftest import radar_cli

    path = config(tmp_path, [REWRITE])
    data = yaml.safe_load(path.read_text())
    for role in ("generator", "verifier"):
        data[role]["options"]["chatter"] = True
    path.write_text(yaml.safe_dump(data))
    res = radar_cli("repair", path, "--candidates", "1", timeout=300)
    assert res.returncode == 0, res.stderr
    assert "planted-engine-chatter" not in res.stderr + res.stdout
    assert "planted-engine-chatter" in (tmp_path / "audit" / "engine.log").read_text()
