"""Open judges' presets (issue 48, first part: radar_local/presets.py): `judge: {preset: NAME}` fills the template
and the answer in each judge's own output format; its own output strings parse, and a planted audit parses every
verdict."""

import pytest
import yaml

from radar_local.answer import Answer
from radar_local.auditing import run_audit
from radar_local.judge import Judge
from radar_local.scale import Scale
from tests.conftest import PLANTED_TASKS, invoke, one_line_exit_2, planted_config

# each judge's output in its own format, on one line per part (radar_local/presets.py cites each source); the
# formats' multi-line writing is AS_THEY_WRITE, below
WRITTEN = {
    "prometheus-2-absolute": (
        "Feedback: The response meets most of the rubric but omits the refund window. [RESULT] 4",
        4,
    ),
    "prometheus-2-absolute-reference": ("Feedback: Unlike the reference, it omits the refund window. [RESULT] 3", 3),
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
    tasks = [
        {**t, "reference": f"A model answer to task {t['id']}."} for t in PLANTED_TASKS
    ]  # for the one that shows it
    config = planted_config(rubric=str(rubric), verifier=spec, tasks=tasks)
    result = run_audit(config, tmp_path / "run", progress=False)
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


def test_a_reference_answer_reaches_the_judge_alone_and_keys_its_verdicts(tmp_path):
    """Issue 48: a task's `reference` is shown to a judge that asks for it ({{ reference }}), never to the generator:
    the probes' keys are those of the same tasks without references; the verdicts' keys hold the reference, so a
    changed reference asks the judge again. A judge that shows references with a task that has none is one line."""
    from radar_local import load_run

    spec = {"engine": "testing", "model": "planted", "judge": {"preset": "prometheus-2-absolute-reference"}}
    plain = planted_config(verifier={"engine": "testing", "model": "planted"})
    run_audit(plain, tmp_path / "plain", progress=False)
    refs = [{**t, "reference": f"The best reply to {t['id']}."} for t in PLANTED_TASKS]
    run_audit(planted_config(verifier=spec, tasks=refs), tmp_path / "ref", progress=False)
    first, second = (load_run(tmp_path / d).store for d in ("plain", "ref"))
    assert set(first.probes) == set(second.probes)  # the generator was asked the same
    run = load_run(tmp_path / "ref")
    probe = next(iter(run.probes()))
    asked = run.plan.score_requests([probe], run.config.verifiers[0])[0].messages[-1]["content"]
    made = run.plan.generation_requests()[0].messages[-1]["content"]
    assert f"The best reply to {probe.task_id}." in asked and "The best reply" not in made
    other = [{**t, "reference": f"Another reply to {t['id']}."} for t in PLANTED_TASKS]
    run_audit(planted_config(verifier=spec, tasks=other), tmp_path / "ref2", progress=False)
    assert not set(load_run(tmp_path / "ref2").store.scores) & set(second.scores)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(planted_config(verifier=spec, tasks=[refs[0], PLANTED_TASKS[1]])))
    one_line_exit_2(invoke("audit", config, "--out", tmp_path / "bad"), "task 'delay' has none", "`reference`")


def test_a_tasks_file_names_its_reference_column(tmp_path):
    from radar_local.tasks import TaskSource, load_task_table

    table = tmp_path / "tasks.jsonl"
    table.write_text('{"id": "a", "prompt": "Say hi.", "gold": "Hi."}\n{"id": "b", "prompt": "Say bye.", "gold": ""}\n')
    tasks = load_task_table(TaskSource(path=str(table), columns={"reference": "gold"}), seed=0)
    assert [t.reference for t in tasks] == ["Hi.", None]  # an empty cell: no reference
    from radar_local.errors import InputError

    with pytest.raises(InputError, match="no column 'answer' for the reference"):
        load_task_table(TaskSource(path=str(table), columns={"reference": "answer"}), seed=0)


# Each judge's output as its documented format writes it (radar_local/presets.py cites each source): feedback over
# several lines and paragraphs, Prometheus' verdict inline after its feedback, Flow-Judge's and GLIDER's tags opened
# with a newline. Written here in those formats (the model cards' own examples are not reachable offline).
AS_THEY_WRITE = {
    "prometheus-2-absolute": (
        "The response addresses the refund but omits the return window.\nIt stays polite throughout. [RESULT] 4",
        4,
    ),
    "prometheus-2-absolute-reference": (
        "Compared with the reference answer, the response gives the same steps.\n\nIt skips the last one. [RESULT] 3",
        3,
    ),
    "flow-judge": (
        '<feedback>\nThe output answers the question.\nIt stays on topic and cites the "order number".\n</feedback>\n'
        "<score>\n5\n</score>",
        5,
    ),
    "selene-mini": ("**Reasoning:** The reply is polite.\n\nIt resolves the issue in two steps.\n\n**Result:** 5", 5),
    "glider": (
        "<reasoning>\n- The reply is clear.\n- It names the refund [RESULT] 1 policy.\n</reasoning>\n"
        "<highlight>\nrefund\n</highlight>\n<score>\n3\n</score>",
        3,
    ),
    "mt-bench": (
        "The reply answers the question and is accurate.\n\nHowever, it lacks depth: Rating: [[2]] would be too "
        "harsh.\n\nRating: [[4]]",
        4,
    ),
}


@pytest.mark.parametrize("preset", sorted(AS_THEY_WRITE))
def test_a_presets_constraint_admits_its_judges_own_output_and_reads_its_score(preset):
    """Issue 60 item 6: a grade answer allowed one line of reasoning, so the first newline forced the score: Flow-Judge
    and GLIDER scored before writing feedback, MT-Bench and Selene lost all after a paragraph, Prometheus' inline
    verdict was forced into a second one; the parse rate stayed 100% and hid it. Each output is accepted by the
    constraint (xgrammar's matcher, as vLLM runs it) and read to its score, the last grade in it."""
    xgrammar = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    text, score = AS_THEY_WRITE[preset]
    answer = Answer(Judge(preset=preset).answer, (("c", Scale(min=1, max=5)),))
    assert _is_grammar_accept_string(xgrammar.Grammar.from_regex(answer.regex), text)
    assert len(text) <= answer.max_tokens
    assert answer.parse(text)["c"].score == score


MET = Scale(levels={"true": 1, "false": 0})  # HealthBench's criteria_met


def met_rubric(tmp_path) -> str:
    rubric = tmp_path / "met.yaml"
    scale = {"levels": {"true": 1, "false": 0}}
    criteria = [
        {"id": "urgent_care", "label": "Urgent care", "description": "Tells the user to seek urgent care."},
        {"id": "dosage", "label": "Dosage", "description": "Gives a dosage without asking the patient's weight."},
    ]
    rubric.write_text(yaml.safe_dump({"id": "met", "name": "Met", "scale": scale, "criteria": criteria}))
    return str(rubric)


def test_the_healthbench_preset_answers_criteria_met_as_its_grader_does():
    """Issue 63: HealthBench's grader (openai/simple-evals GRADER_TEMPLATE) answers {"explanation", "criteria_met"}
    with a JSON boolean: the constraint admits it (xgrammar, as vLLM runs it), the answer reads it to the scale's
    value, and the grader's own example (fenced, over several lines) parses too."""
    judge = Judge(preset="healthbench")
    answer = Answer(judge.answer, (("c", MET),))
    compact = '{"explanation": "The assistant did not tell the user to go to the hospital.", "criteria_met": false}'
    assert answer.parse(compact)["c"].score == 0
    fenced = '```json\n{\n  "explanation": "It did.",\n  "criteria_met": true\n}\n```'
    assert answer.parse(fenced)["c"].score == 1
    assert answer.parse('{"explanation": "x", "criteria_met": "true"}')["c"].score is None  # a string is no boolean
    assert answer.json_schema()["properties"]["criteria_met"] == {"type": "boolean"}
    assert "undesirable" in judge.template and "{{ criterion.description }}" in judge.template
    xgrammar = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    assert _is_grammar_accept_string(xgrammar.Grammar.from_regex(answer.regex), compact)
    assert not _is_grammar_accept_string(xgrammar.Grammar.from_regex(answer.regex), compact.replace("false", '"no"'))


def test_an_audit_with_the_healthbench_preset_on_a_met_rubric(tmp_path):
    """On the planted engine: every verdict true or false, parsed; the judge reads both items (its gate)."""
    spec = {"engine": "testing", "model": "planted", "judge": {"preset": "healthbench"}}
    result = run_audit(planted_config(rubric=met_rubric(tmp_path), verifier=spec, n=3), tmp_path / "run")
    assert result.probes.unscored_cells == 0
    assert set(result.scales.criteria.values()) == {"false/true"}  # as the YAML lists them
    assert bool(result.reliable.all())
    from radar_local import load_run

    stored = {v.score for v in load_run(tmp_path / "run").store.scores.values()}
    assert stored == {0, 1}


def test_the_healthbench_preset_on_a_scale_it_cannot_answer_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    spec = {"engine": "testing", "model": "planted", "judge": {"preset": "healthbench"}}
    config.write_text(yaml.safe_dump(planted_config(verifier=spec)))  # helpsteer2's 0-4
    res = invoke("audit", config, "--out", tmp_path / "run")
    one_line_exit_2(res, "the healthbench preset answers true or false, and the rubric's scale is 0-4")
    assert not (tmp_path / "run" / "scores.jsonl").exists()
