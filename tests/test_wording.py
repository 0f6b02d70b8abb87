"""Template wording (issue 47): `judge: {paraphrases: [...]}` scores the same probes under each other wording of the
judge's template, and the audit says how far its verdicts and leakages move (stats/wording.py)."""

import json

import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.report.markdown import audit_markdown
from radar_local.stats.wording import Wording
from tests.conftest import invoke, one_line_exit_2, planted_config

TEMPLATE = "Rate the reply.\n{{ prompt }}\n{{ response }}\n{{ criterion.label }}: {{ criterion.description }}"
CALM = "Please rate this reply.\n{{ prompt }}\n{{ response }}\n{{ criterion.label }}: {{ criterion.description }}"
STRICT = "Be strict. " + TEMPLATE


def judged(paraphrases=None, noise=0.0, **extra):
    judge = {"template": TEMPLATE, **({"paraphrases": paraphrases} if paraphrases else {})}
    spec = {"engine": "testing", "model": "planted", "options": {"noise": noise, "phrases": {"Be strict": -1.0}}}
    return planted_config(verifier={**spec, "judge": judge}, n=4, bootstrap=200, **extra)


@pytest.fixture(scope="module")
def reworded(tmp_path_factory):
    run = tmp_path_factory.mktemp("wording") / "run"
    run_audit(judged(), run, progress=False)  # the judge's own template first: its verdicts stay its own
    return run_audit(judged([CALM, STRICT]), run, progress=False), run


def test_a_wording_that_sways_the_judge_moves_its_verdicts_and_one_that_does_not_moves_nothing(reworded):
    result, run = reworded
    w = result.measured(Wording)
    assert w.templates == ["planted", "planted-paraphrase-2", "planted-paraphrase-3"]
    calm, strict = w.against
    # the planted judge reads no wording but "Be strict": the calm paraphrase agrees verdict for verdict
    assert all(c.exact == 1 and c.shift == 0 for c in calm.criteria) and not any(p.flag for p in calm.pairs)
    # "Be strict" takes a point off every verdict the scale lets it (a verdict at 0 stays 0)
    for c in strict.criteria:
        assert -1 < c.shift < -0.5 and c.shift_ci[1] < 0 and c.exact < 0.5
    assert all(c.changed_ci[0] > 0 for c in w.agreement.criteria)
    report = audit_markdown(result)
    assert "Consistency: template wording" in report and "the verdicts move with the wording on helpfulness" in report
    from radar_local import load_run

    assert load_run(run).result() == result  # stats.json reads back with its wording block


def test_paraphrases_leave_the_judges_own_verdicts_and_keys_alone(reworded):
    """Adding paraphrases to a judge already audited scores only the paraphrases: the judge's own verdicts are
    stored under keys its paraphrases do not enter."""
    _, run = reworded
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert stages["score"]["requests"] > 0 and stages["score"].get("calls", 0) == 0
    assert stages["paraphrase-2"]["calls"] == stages["paraphrase-3"]["calls"] == stages["score"]["requests"]


def test_paraphrases_that_cannot_measure_wording_are_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    spec = {"engine": "testing", "model": "planted"}
    jury = {"jury": [{**spec, "judge": {"template": TEMPLATE, "paraphrases": [CALM]}}, {**spec, "model": "b"}]}
    for bad, needle in (
        (judged([TEMPLATE]), "paraphrase 1 renders as the template does"),
        (judged([CALM, CALM.replace("{{ prompt }}", "{{prompt}}")]), "paraphrase 2 renders as paraphrase 1 does"),
        (judged(["{{ response }} {{ criterion }} {{ mood }}"]), "paraphrase 1: the template uses 'mood'"),
        (judged(["{{ response }}"]), "paraphrase 1: the template never shows the criterion"),
        (planted_config(verifier={**spec, "judge": {"paraphrases": [CALM]}}), "give the judge its own 'template'"),
        (planted_config(verifier=jury), "juror 'planted' has paraphrases"),
    ):
        config.write_text(yaml.safe_dump(bad))
        one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run"), needle)


@pytest.mark.parametrize(
    "text, said",
    [
        ("Answer 1-5, where 1 = excellent and 5 = poor.", "5 = poor"),
        ("Lower scores are better.", "Lower scores are better"),
        ("Rate it from 1 to 5. 5: terrible", "5: terrible"),
        ("A score of 1 is best.", "1 is best"),
        ("Answer 1-5: 5 = excellent, 1 = poor.", None),
        ("Higher is better; 1 means the reply fails the criterion.", None),
        ("Score {{ scale.describe }}; 1 means not helpful at all, 5 means perfect.", None),
        ("Higher is better, lower is worse.", None),  # issue 60 item 20: read as one claim across the comma
        ("Rate from 1 (best) to 5 (worst).", "5 (worst)"),
        ("Give 1 to the best replies.", "Give 1 to the best replies"),
        ("Rate from 1 (worst) to 5 (best).", None),
    ],
)
def test_a_template_that_reads_the_scale_the_other_way_is_named(text, said):
    from radar_local.judge import polarity_warning
    from radar_local.scale import Scale

    assert polarity_warning(text, Scale(min=1, max=5)) == said


def test_an_audit_warns_of_a_paraphrase_that_inverts_the_scale(tmp_path):
    inverted = TEMPLATE + "\nAnswer 0-4, where 0 = excellent and 4 = poor."
    result = run_audit(judged([inverted]), tmp_path / "run", progress=False)
    warned = [w for w in result.warnings if "may read the scale the other way" in w]
    assert len(warned) == 1 and "'planted-paraphrase-2'" in warned[0] and "'4 = poor'" in warned[0]
    assert "puts the best at 4" in warned[0] and f"Warning: {warned[0]}." in audit_markdown(result)


def test_plan_counts_each_wording_as_a_scoring_pass(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(judged([CALM, STRICT])))
    plan = invoke("audit", config, "--plan").output.splitlines()[0]
    probes = 5 * 2 * 2 * 4  # helpsteer2's 5 criteria x 2 tasks x 2 directions x N = 4
    assert f"{probes * 5 * 3} verdicts in {probes * 5 * 3} calls (3 scoring passes" in plan


def test_compare_fails_a_judge_whose_leakages_move_with_its_wording(reworded, tmp_path):
    """`radar compare --fail-on-wording`: the planted "Be strict" shifts every verdict by a point, which moves no
    leakage beyond its band (a shift is no coupling): the policy passes; a leakage flagged as moving under a
    paraphrase fails it, named. One line where no template was reworded."""

    from radar_local.compare import consistency_violations

    result, run = reworded
    assert invoke("compare", run, run, "--fail-on-wording").exit_code == 0
    strict = result.measured(Wording).against[1]
    moved = strict.pairs[0].model_copy(update={"flag": "rises", "change": 0.3})
    against = [result.measured(Wording).against[0], strict.model_copy(update={"pairs": [moved, *strict.pairs[1:]]})]
    flagged = result.adding(wording=result.measured(Wording).model_copy(update={"against": against}))
    assert consistency_violations(flagged, None, True, "b") == [
        f"{moved.source} -> {moved.target} rises by +0.30 under 'planted-paraphrase-3' (beyond its simultaneous band)"
    ]
    run_audit(planted_config(n=2), tmp_path / "plain", progress=False)
    one_line_exit_2(invoke("compare", run, tmp_path / "plain", "--fail-on-wording"), "reworded no template")
