"""Open judges' presets (issue 48, first part: radar_local/presets.py): `judge: {preset: NAME}` fills the template
and the answer in each judge's own output format; its own output strings parse, and a planted audit parses every
verdict."""

import pytest
import yaml

from radar_local.answer import Answer
from radar_local.auditing import run_audit
from radar_local.judge import Judge
from radar_local.scale import Scale
from tests.conftest import invoke, one_line_exit_2, planted_config

# each judge's output in its own format (radar_local/presets.py cites each source); radar's constraint writes the
# score's tags and their level on one line (the text around a grade is literal), where Flow-Judge and GLIDER put
# newlines inside their tags
WRITTEN = {
    "prometheus-2-absolute": (
        "Feedback: The response meets most of the rubric but omits the refund window. [RESULT] 4",
        4,
    ),
    "flow-judge": ("<feedback>The output answers the question and stays on topic.</feedback>\n<score>5</score>", 5),
    "selene-mini": ("**Reasoning:** The reply is polite and resolves the issue.\n\n**Result:** 5", 5),
    "glider": ("<reasoning>- clear</reasoning>\n<highlight>refund</highlight>\n<score>3</score>", 3),
    "mt-bench": ("The reply answers the question and is accurate, but it lacks depth.\n\nRating: [[4]]", 4),
}


@pytest.mark.parametrize("preset", sorted(WRITTEN))
def test_a_presets_answer_reads_its_judges_own_output(preset):
    judge = Judge(preset=preset)
    text, score = WRITTEN[preset]
    assert Answer(judge.answer, (("c", Scale(min=1, max=5)),)).parse(text)["c"].score == score


@pytest.mark.parametrize("preset", sorted(WRITTEN))
def test_an_audit_with_a_preset_parses_every_verdict_on_the_planted_engine(tmp_path, preset):
    """On the rubric's 1-5 scale: the template renders the criterion and its levels, every verdict parses."""
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        yaml.safe_dump(
            {
                "id": "r",
                "name": "R",
                "scale": {"min": 1, "max": 5, "anchors": {"1": "fails it", "5": "meets it fully"}},
                "criteria": [
                    {"id": "clarity", "label": "Clarity", "description": "Is it clear?"},
                    {"id": "accuracy", "label": "Accuracy", "description": "Is it right?"},
                ],
            }
        )
    )
    spec = {"engine": "testing", "model": "planted", "judge": {"preset": preset}}
    result = run_audit(planted_config(rubric=str(rubric), verifier=spec), tmp_path / "run", progress=False)
    assert result.probes.unscored_cells == 0 and set(result.scales.criteria.values()) == {"1-5"}


def test_a_preset_the_rubric_scale_cannot_take_or_that_does_not_exist_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    for judge, needle in (
        ({"preset": "judge-9000"}, "prometheus-2-absolute"),
        ({"preset": "flow-judge", "calls": "joint"}, "a grade pattern answers one criterion"),
    ):
        spec = {"engine": "testing", "model": "planted", "judge": judge}
        config.write_text(yaml.safe_dump(planted_config(verifier=spec)))
        one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run"), needle)
    given = Judge(preset="glider", template="{{ response }} {{ criterion }}")
    assert given.template == "{{ response }} {{ criterion }}" and given.answer.pattern == "<score>([0-9])</score>"


def test_the_registrys_open_judges_name_their_own_formats():
    """Issue 48: each open judge in models/registry.yaml names the preset of the format it was trained on (one
    radar has), a reward model its runner, a thinking model that it thinks."""
    from radar_local.models import registry
    from radar_local.presets import JUDGE_PRESETS, PAIR_PRESETS

    entries = registry()
    judges = {name: e.judge for name, e in entries.items() if e.judge}
    assert set(judges.values()) <= set(JUDGE_PRESETS) | set(PAIR_PRESETS)
    assert {"prometheus-7b-v2.0", "flow-judge-v0.1", "selene-1-mini", "glider", "skywork-critic-llama-3.1-8b"} <= set(
        judges
    )
    assert entries["skywork-reward-v2-qwen3-0.6b"].runner == "reward" and entries["qwen3-1.7b"].thinks
