"""Rubrics from where they live (issue 33): each format's sample (tests/data/formats, written from the
formats' documentation) imported, audited on the planted engine, repaired, exported, and read again; the
round trips; and every refusal as one line naming the file."""

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from radar_local import formats
from radar_local.answer import Answer, GradeShape, JsonShape
from radar_local.cli.main import cli
from radar_local.errors import InputError
from radar_local.formats import carried
from radar_local.repair import repair
from radar_local.rubric import Criterion, load_rubric
from radar_local.scale import Scale
from tests.conftest import PLANTED_TASKS

DATA = Path(__file__).parent / "data" / "formats"
SAMPLES = {
    "promptfoo": DATA / "promptfooconfig.yaml",
    "openai-evals": DATA / "closedqa.yaml",
    "mlflow": DATA / "mlflow_judges.json",
    "prometheus": DATA / "prometheus_rubrics.json",
    "inspect": DATA / "inspect_scorer.yaml",
    "helpsteer": DATA / "helpsteer_attributes.yaml",
}
MERGED = {"id": "merged", "label": "Merged", "description": "One criterion for both.", "kind": "evaluative"}


def parsed(path: Path):
    text = path.read_text()
    if path.suffix == ".json":
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines()] if path.suffix == ".jsonl" else yaml.safe_load(text)


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("fmt", formats.EXPORTS)
def test_import_audit_repair_export_and_import_again(fmt, tmp_path):
    """The loop a team runs: its file in, an audit on the planted engine that couples the first two
    criteria, a repair that merges them, the repaired rubric back in its file, and that file read again
    gives the repaired rubric (every criterion's id, text and scale levels)."""
    out = tmp_path / "imported"
    result = run("import", fmt, SAMPLES[fmt], "--out", out, "--engine", "testing")
    assert result.exit_code == 0, result.output
    assert (out / "import.md").read_text().count("\n- ") >= 2
    rubric = load_rubric(out / "rubric.yaml")
    first, second = rubric.criteria[:2]
    config = yaml.safe_load((out / "config.yaml").read_text())
    edit = {
        "action": "merge",
        "criteria": [first.id, second.id],
        "keeps": "both",
        "new": [{**MERGED, "low": "", "high": ""}],
        "rationale": "coupled",
    }
    coupling = {first.label: {second.label: 0.9}, second.label: {first.label: 0.9}}
    options = {"noise": 0.3, "coupling": coupling, "edits": [edit]}
    config["generator"]["options"] = options
    config["verifier"]["options"] = options
    config |= {"tasks": PLANTED_TASKS, "n": 3, "bootstrap": 200, "out": str(tmp_path / "audit")}
    config.pop("human", None)  # a merged criterion has no human reference
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rep = repair(out / "config.yaml", tmp_path / "repair")
    assert rep.final is not None, [c.why or c.error for c in rep.candidates]
    repaired_path = rep.out / "rubric.repaired.yaml"
    repaired = load_rubric(repaired_path)
    assert repaired.ids == ["merged", *rubric.ids[2:]] and repaired.scale == rubric.scale
    exported = tmp_path / f"exported{SAMPLES[fmt].suffix}"
    result = run("export", fmt, SAMPLES[fmt], repaired_path, "--out", exported)
    assert result.exit_code == 0, result.output
    assert f"dropped: {first.id}, {second.id}" in result.output and "added: merged" in result.output
    assert carried(formats.read(fmt, exported).rubric) == carried(repaired)


@pytest.mark.parametrize("fmt", formats.EXPORTS)
def test_an_unchanged_rubric_exports_to_the_same_file(fmt):
    imported = formats.read(fmt, SAMPLES[fmt])
    text, account = formats.export(fmt, SAMPLES[fmt], imported.rubric)
    assert account == [f"kept: {', '.join(imported.rubric.ids)}"]
    suffix = SAMPLES[fmt].suffix
    again = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    assert again == parsed(SAMPLES[fmt])


@pytest.mark.parametrize("fmt", formats.EXPORTS)
def test_a_rewritten_criterion_keeps_its_id_and_the_others_their_entries(fmt, tmp_path):
    imported = formats.read(fmt, SAMPLES[fmt])
    rubric = imported.rubric
    first = rubric.criteria[0]
    rewritten = first.model_copy(update={"description": "Names the customer's problem in its first sentence."})
    new = rubric.model_copy(update={"criteria": (rewritten, *rubric.criteria[1:])})
    text, account = formats.export(fmt, SAMPLES[fmt], new)
    assert f"rewritten: {first.id}" in account
    path = tmp_path / f"out{SAMPLES[fmt].suffix}"
    path.write_text(text)
    assert carried(formats.read(fmt, path).rubric) == carried(new)
    if SAMPLES[fmt].suffix == ".yaml":  # the file's comments and other entries survive
        original = SAMPLES[fmt].read_text()
        kept = [line for line in original.splitlines() if line.lstrip().startswith("#")]
        assert all(line in text for line in kept)


def test_promptfoo_maps_its_scale_threshold_prompt_and_tests():
    imported = formats.read("promptfoo", SAMPLES["promptfoo"])
    rubric = imported.rubric
    assert rubric.ids == ["clarity", "accuracy", "the_reply_acknowledges_how"]
    assert rubric.scale.values == tuple(k / 10 for k in range(11)) and rubric.scale.numeric
    # the threshold on promptfoo's 0-1 score is recorded on the judge's scale, not applied
    assert imported.thresholds == {"clarity": 0.7, "accuracy": 0.8}
    assert [t.id for t in imported.tasks] == ["refund", "late_parcel", "password"]
    assert (
        imported.tasks[0].prompt == "You are a support agent. Reply to the customer: I want a refund for a cracked jug."
    )
    judge = imported.judge
    assert judge is not None and judge.template == (
        "Customer message: {{ prompt }}\nReply: {{ response }}\nRubric: {{ criterion.description }}"
    )
    assert any("left to promptfoo: 2 assertion" in line for line in imported.account)


def test_a_score_named_by_its_value_is_a_json_number():
    """promptfoo's judge writes `"score": 0.7`: a level named by its own value is constrained and read as
    a JSON number, other named levels as strings."""
    scale = formats.read("promptfoo", SAMPLES["promptfoo"]).rubric.scale
    answer = Answer(JsonShape(before={"reason": 20}, score="score", after={}), (("c", scale),))
    import re

    assert re.fullmatch(answer.regex, '{"reason": "fine", "score": 0.7}')
    assert not re.fullmatch(answer.regex, '{"reason": "fine", "score": "0.7"}')
    assert answer.parse('{"reason": "fine", "score": 0.7}')["c"].score == 0.7
    assert answer.parse('{"reason": "fine", "score": 0.75}')["c"].score is None
    with pytest.raises(ValueError, match="decimal levels"):  # xgrammar writes 0.1 as 0.10000000000000001
        answer.json_schema()
    assert Scale(levels={"0": 0, "1": 1}).json_schema() == {"type": "integer", "enum": [0, 1]}
    assert not Scale(levels={"C": 1, "I": 0}).numeric and not Scale(levels={"1": 0, "2": 1}).numeric


def test_a_grade_after_reasoning_is_read_from_the_line_after_it():
    """OpenAI evals' cot_classify: a Y in the reasoning is no grade; the choice on the next line is."""
    answer = Answer(GradeShape(kind="grade", pattern="(Y|N)", reasoning=40), (("c", Scale(levels={"Y": 1, "N": 0})),))
    assert answer.parse("Yes, it is short but it never says No\nN")["c"].score == 0


def test_each_format_maps_its_answer_and_scale():
    evals = formats.read("openai-evals", SAMPLES["openai-evals"])
    assert evals.rubric.scale.levels == {"Y": 1.0, "N": 0.0}
    assert evals.judge is not None and "{{ criterion.description }}" in evals.judge.template
    mlflow = formats.read("mlflow", SAMPLES["mlflow"])
    assert mlflow.rubric.scale.levels == {"yes": 1, "no": 0}
    assert mlflow.rubric.criterion("answers_question").description.endswith("in {{ inputs }}.")
    prometheus = formats.read("prometheus", SAMPLES["prometheus"])
    first = prometheus.rubric.criteria[0]
    assert first.scale is not None and first.scale.anchors is not None
    assert first.scale.anchors["1"] == "The reply ignores how the customer feels."
    inspect = formats.read("inspect", SAMPLES["inspect"])
    assert inspect.rubric.scale.levels == {"C": 1, "P": 0.5, "I": 0}
    assert inspect.judge is not None and inspect.judge.answer == GradeShape(
        kind="grade", pattern="GRADE: ([CPI])", reasoning=600
    )
    helpsteer = formats.read("helpsteer", SAMPLES["helpsteer"])
    assert helpsteer.judge is None and helpsteer.rubric.ids == ["helpfulness", "correctness", "coherence", "verbosity"]


def test_the_imported_config_names_the_judge_and_its_reference(tmp_path):
    run("import", "helpsteer", SAMPLES["helpsteer"], "--out", tmp_path / "h", "--engine", "testing")
    config = yaml.safe_load((tmp_path / "h" / "config.yaml").read_text())
    assert config["human"] == "helpsteer2" and config["tasks"] == "helpsteer2"
    run("import", "mlflow", SAMPLES["mlflow"], "--out", tmp_path / "m")
    config = yaml.safe_load((tmp_path / "m" / "config.yaml").read_text())
    assert config["verifier"]["judge"]["answer"]["score"] == "result"
    assert load_rubric(tmp_path / "m" / "rubric.yaml").scale.tokens == ("yes", "no")  # not YAML 1.1 booleans


def bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


PROMPTFOO = "defaultTest:\n  assert:\n" + "".join(
    f"    - {{type: llm-rubric, value: 'criterion {k}'}}\n" for k in (1, 2)
)
MLFLOW_JUDGE = {
    "name": "tone",
    "serialization_version": 1,
    "instructions_judge_pydantic_data": {
        "instructions": "Judge the {{ outputs }}.",
        "feedback_value_type": {"type": "string", "enum": ["yes", "no"]},
    },
}


def mlflow(**data) -> str:
    second = {**MLFLOW_JUDGE, "name": "other"}
    return json.dumps([{**MLFLOW_JUDGE, **data}, second])


def mlflow_alone(**data) -> str:
    """One judge: where it cannot map, no judge is left to audit (beside one that maps, it is left to MLflow)."""
    return json.dumps([{**MLFLOW_JUDGE, **data}])


@pytest.mark.parametrize(
    ("fmt", "name", "text", "says"),
    [
        ("mlflow", "p.yaml", PROMPTFOO, "is not JSON"),
        ("promptfoo", "m.json", mlflow(), "is this the right format?"),
        (
            "promptfoo",
            "c.yaml",
            "defaultTest:\n  assert:\n    - {type: contains, value: x}\n",
            "no llm-rubric or g-eval",
        ),
        ("mlflow", "v.json", mlflow(serialization_version=2), "serialization_version 2 is not one radar knows"),
        (
            "mlflow",
            "f.json",
            mlflow_alone(
                instructions_judge_pydantic_data={
                    **MLFLOW_JUDGE["instructions_judge_pydantic_data"],
                    "feedback_value_type": {"type": "string"},
                }
            ),
            "not a free string, a float or an object",
        ),
        (
            "mlflow",
            "t.json",
            mlflow_alone(
                instructions_judge_pydantic_data={
                    "instructions": "Check {{ trace }}.",
                    "feedback_value_type": {"type": "boolean"},
                }
            ),
            "reads {{ trace }}, an agent's whole trace",
        ),
        (
            "promptfoo",
            "r.yaml",
            PROMPTFOO + "  options:\n    rubricPrompt: 'Context: {{ context }} Output: {{ output }}'\n",
            "the variable 'context' has no counterpart in radar",
        ),
        (
            "promptfoo",
            "d.yaml",
            "tests:\n  - assert:\n"
            + "".join(
                f"      - {{type: llm-rubric, value: c{k}, rubricPrompt: 'p{k} {{{{ output }}}}'}}\n" for k in (1, 2)
            ),
            "different rubricPrompts",
        ),
        ("promptfoo", "g.yaml", "tests:\n  - assert:\n      - {type: g-eval, value: []}\n", "lists no criteria"),
        ("promptfoo", "e.yaml", "tests:\n  - assert:\n      - {type: g-eval, value: ''}\n", "must be the rubric text"),
        (
            "promptfoo",
            "v.yaml",
            PROMPTFOO + "    - {type: llm-rubric, value: 'Answers {{question}}'}\n",
            "uses the test variable 'question'",
        ),
        (
            "openai-evals",
            "o.yaml",
            "fact:\n  prompt: '{input} {completion}'\n  choice_strings: AB\n",
            "judges one thing",
        ),
        (
            "openai-evals",
            "s.yaml",
            "q:\n  prompt: '{input} {completion} {criteria}'\n  choice_strings: ABC\n"
            "  args: {criteria: {a: x, b: y}}\n",
            "gives its choices no scores (choice_scores)",
        ),
        (
            "openai-evals",
            "i.yaml",
            "q:\n  prompt: '{input} {ideal} {criteria}'\n  choice_strings: YN\n  choice_scores: {Y: 1, N: 0}\n"
            "  eval_type: classify\n"
            "  args: {criteria: {a: x, b: y}}\n",
            "formats {ideal}, which each sample supplies",
        ),
        ("inspect", "x.yaml", "grade_pattern: 'GRADE\\s*([CI])'\ncriteria: {a: x, b: y}\n", "grade_pattern:"),
        ("prometheus", "n.json", json.dumps([{"criteria": "x", "score1_description": "y"}]), "score2_description"),
        ("helpsteer", "h.yaml", "attributes: [helpfulness, charm]\n", "attribute 'charm' is none of HelpSteer2's"),
        (
            "inspect",
            "n.yaml",
            "criteria: {a: 8.1e-153, b: y}\n",
            "criteria.a: a criterion's text must be non-empty text",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_file(tmp_path, fmt, name, text, says):
    path = bad(tmp_path, name, text)
    result = run("import", fmt, path, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line and str(path) in line and says in line, line
    assert not (tmp_path / "out").exists()


def test_a_missing_file_and_an_unknown_format_are_refused():
    with pytest.raises(InputError, match="not found"):
        formats.read("promptfoo", "nowhere.yaml")
    result = run("import", "langsmith", SAMPLES["promptfoo"])
    assert result.exit_code == 2 and "langsmith" in result.output


def test_export_refuses_a_rubric_on_another_scale_nothing_written(tmp_path):
    """An export keeps the file's judge: a rubric whose scale is not the judge's cannot go back into it."""
    imported = formats.read("openai-evals", SAMPLES["openai-evals"])
    other = imported.rubric.model_copy(update={"scale": Scale(min=0, max=4)})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(other.model_dump(mode="json", exclude_none=True)))
    result = run("export", "openai-evals", SAMPLES["openai-evals"], path, "--out", tmp_path / "o.yaml")
    assert result.exit_code == 2 and "scale" in result.output and not (tmp_path / "o.yaml").exists()


def test_labels_made_from_ids_and_ids_from_text():
    from radar_local.formats.shared import criterion_id as slug

    taken: set[str] = set()
    assert slug("Is the reply concise?", taken) == "is_the_reply_concise"
    assert slug("Is the reply concise, really?", taken) == "is_the_reply_concise_2"
    assert slug("clarity", taken) == "clarity" and slug("clarity", taken) == "clarity_2"
    assert slug("3 things", taken) == "c_3_things"
    assert Criterion  # the import's criteria are radar's own model


G_EVAL = """\
description: Summaries
prompts: [file://prompt.txt]
tests: file://tests.csv
defaultTest:
  assert:
    - type: g-eval
      value:
        - Covers the article's main finding.   # the finding
        - Adds nothing the article does not say.
    - type: g-eval
      metric: fluency
      value: Reads fluently.
      threshold: 0.8
"""


def test_g_eval_lists_its_criteria_scores_0_10_and_reads_tests_from_a_file(tmp_path):
    (tmp_path / "prompt.txt").write_text("Summarize: {{article}}")
    (tmp_path / "tests.csv").write_text("article,__description\nA cat sat.,cat\nRain fell.,rain\n")
    path = bad(tmp_path, "promptfooconfig.yaml", G_EVAL)
    imported = formats.read("promptfoo", path)
    rubric = imported.rubric
    assert rubric.ids == ["covers_the_article_s", "adds_nothing_the_article", "fluency"]
    assert rubric.scale == Scale(min=0, max=10)
    # promptfoo divides G-Eval's 0-10 score by 10: its 0.8 is 8 on the judge's scale; a list passes on the mean of
    # its scores (src/assertions/geval.ts), at its 0.7 default: no criterion of it has a pass mark of its own
    assert imported.thresholds == {"fluency": 8}
    assert (
        "threshold: the g-eval list covers_the_article_s, adds_nothing_the_article passes when the mean of its scores "
        "reaches 7 on the judge's 0-10 scale"
    ) in " ".join(imported.account)
    assert [(t.id, t.prompt) for t in imported.tasks] == [
        ("cat", "Summarize: A cat sat."),
        ("rain", "Summarize: Rain fell."),
    ]
    assert imported.judge is not None and imported.judge.answer == JsonShape(
        before={}, score="score", after={"reason": 300}
    )
    # a rewritten list element keeps its place in the list (promptfoo averages the list: a criterion of its own
    # would change how the test passes); the list has no name for it, so it imports again under its new text's id
    first = rubric.criteria[0].model_copy(update={"description": "States the main finding."})
    new = rubric.model_copy(update={"criteria": (first, *rubric.criteria[1:])})
    text, account = formats.export("promptfoo", path, new)
    asserts = yaml.safe_load(text)["defaultTest"]["assert"]
    assert asserts[0]["value"] == ["States the main finding.", "Adds nothing the article does not say."]
    assert asserts[1] == yaml.safe_load(path.read_text())["defaultTest"]["assert"][1]  # fluency: untouched
    assert "covers_the_article_s: imports again as 'states_the_main_finding' (the file names it by its text)" in account
    back = carried(formats.read("promptfoo", bad(tmp_path, "again.yaml", text)).rubric)
    assert sorted(back.values()) == sorted(carried(new).values())


PER_TEST = """prompts: ['Reply to: {{ q }}']
defaultTest:
  assert:
    - {type: llm-rubric, value: The reply is polite.}
tests:
  - description: date
    vars: {q: When was the treaty signed}
    assert:
      - {type: llm-rubric, value: Does the response say June 6 1795}
      - {type: llm-rubric, value: The reply is short.}
  - description: refund
    vars: {q: I want a refund.}
    assert:
      - {type: llm-rubric, value: The reply is short.}
"""


def test_a_rubric_written_for_some_tests_is_that_tests_task_s_own_item(tmp_path):
    """promptfoo scores a test's own llm-rubric on that test alone: radar makes it an item of that test's task (issue
    63), never a criterion of every task; defaultTest's (or every test's) rubrics are the shared criteria; the export
    leaves the test's own rubric where it was."""
    path = bad(tmp_path, "promptfooconfig.yaml", PER_TEST)
    imported = formats.read("promptfoo", path)
    assert [c.description for c in imported.rubric.criteria] == ["The reply is polite.", "The reply is short."]
    assert [[i.text for i in t.items] for t in imported.tasks] == [["Does the response say June 6 1795"], []]
    assert any(line.startswith("per-test rubrics: 1 item(s) over 1 task(s)") for line in imported.account)
    text, _ = formats.export("promptfoo", path, imported.rubric)
    assert yaml.safe_load(text) == yaml.safe_load(PER_TEST)  # the test's own rubric stays where it was
    edited = imported.rubric.criteria[0].model_copy(update={"description": "The reply is courteous."})
    text, _ = formats.export(
        "promptfoo", path, imported.rubric.model_copy(update={"criteria": (edited, *imported.rubric.criteria[1:])})
    )
    assert yaml.safe_load(text)["tests"] == yaml.safe_load(PER_TEST)["tests"]


def test_a_config_whose_every_rubric_belongs_to_some_tests_imports_them_as_items(tmp_path):
    only = PER_TEST.replace("defaultTest:\n  assert:\n    - {type: llm-rubric, value: The reply is polite.}\n", "")
    only = only.replace(
        "      - {type: llm-rubric, value: The reply is short.}\n  - description: refund", "  - description: refund"
    )
    imported = formats.read("promptfoo", bad(tmp_path, "promptfooconfig.yaml", only))
    assert imported.rubric.criteria == () and [t.id for t in imported.tasks] == ["date", "refund"]
    assert [[i.text for i in t.items] for t in imported.tasks] == [
        ["Does the response say June 6 1795"],
        ["The reply is short."],  # in some tests only, no longer in every one: each task's own
    ]


def test_a_templated_rubric_is_each_tests_own_and_a_variable_no_test_sets_is_one_line(tmp_path):
    templated = PER_TEST.replace("value: The reply is polite.", "value: 'The reply answers {{ q }}.'")
    imported = formats.read("promptfoo", bad(tmp_path, "promptfooconfig.yaml", templated))
    assert [i.text for i in imported.tasks[1].items] == ["The reply answers I want a refund.."]
    unset = PER_TEST.replace("value: The reply is polite.", "value: 'The reply names {{ who }}.'")
    with pytest.raises(InputError, match="uses the test variable 'who', which a test that runs it does not set"):
        formats.read("promptfoo", bad(tmp_path, "promptfooconfig.yaml", unset))


def test_the_formats_page_diff_is_what_export_writes(tmp_path):
    """docs/formats.md's worked example: the planted judge couples clarity and accuracy, repair merges them, and
    the export's diff against the team's file is the page's, line for line."""
    import difflib

    out = tmp_path / "support"
    assert run("import", "promptfoo", SAMPLES["promptfoo"], "--out", out, "--engine", "testing").exit_code == 0
    config = yaml.safe_load((out / "config.yaml").read_text())
    merged = {
        "id": "clear_and_correct",
        "label": "Clear and correct",
        "description": "The reply is easy to follow and every fact in it is right.",
        "kind": "evaluative",
        "low": "",
        "high": "",
    }
    edit = {"action": "merge", "criteria": ["clarity", "accuracy"], "keeps": "both", "new": [merged], "rationale": "-"}
    options = {"noise": 0.3, "coupling": {"Clarity": {"Accuracy": 0.9}, "Accuracy": {"Clarity": 0.9}}, "edits": [edit]}
    config["generator"]["options"] = config["verifier"]["options"] = options
    config |= {"n": 3, "out": str(out / "run")}
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rep = repair(out / "config.yaml")
    exported = tmp_path / "promptfooconfig.repaired.yaml"
    result = run("export", "promptfoo", SAMPLES["promptfoo"], rep.out / "rubric.repaired.yaml", "--out", exported)
    assert result.exit_code == 0, result.output
    diff = list(difflib.unified_diff(SAMPLES["promptfoo"].read_text().splitlines(), exported.read_text().splitlines()))
    page = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    block = page.split("```diff\n", 1)[1].split("```", 1)[0].splitlines()
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [line for line in block if line[:1] in "+-"]


def test_each_assertion_runs_with_its_own_tests_rubric_prompt(tmp_path):
    """promptfoo's rubricPrompt: the assertion's own, else its test's options', else defaultTest's. A test
    that sets its own is a second judge prompt: refused, never silently read as the default one."""
    text = (
        "defaultTest:\n  options: {rubricPrompt: 'A {{ output }} {{ rubric }}'}\n"
        "  assert:\n    - {type: llm-rubric, value: one}\n"
        "tests:\n  - options: {rubricPrompt: 'B {{ output }} {{ rubric }}'}\n"
        "    assert:\n      - {type: llm-rubric, value: two}\n"
    )
    result = run("import", "promptfoo", bad(tmp_path, "p.yaml", text), "--out", tmp_path / "o")
    assert result.exit_code == 2 and "different rubricPrompts" in result.output
    same = text.replace("'B {{", "'A {{")
    imported = formats.read("promptfoo", bad(tmp_path, "q.yaml", same))
    assert imported.judge is not None and imported.judge.template == "A {{ response }} {{ criterion.description }}"


def _inspect(tmp_path: Path, text: str):
    path = tmp_path / "scorer.yaml"
    path.write_text(text + "criteria: {a: The first., b: The second.}\n")
    return formats.read("inspect", path)


def test_inspect_defaults_are_inspects_own_words(tmp_path):
    """model_graded_qa grades against inspect's QA template with its default instructions (issue 45);
    model_graded_fact (its [Expert] a sample's own answer) is refused in test_format_corpus."""
    from radar_local.formats.inspect_ai import default_instructions

    qa = _inspect(tmp_path, "scorer: model_graded_qa\n").judge
    assert qa is not None and "[Criterion]: {{ criterion.description }}" in qa.template
    assert qa.template.endswith(default_instructions(False) + "\n")


def test_inspect_reads_a_template_file_as_its_resource_does(tmp_path):
    (tmp_path / "expert.txt").write_text("Q: {question}\nA: {answer}\nAgainst: {criterion}\n{instructions}")
    judge = _inspect(tmp_path, "template: expert.txt\n").judge
    assert judge is not None and judge.template.startswith("Q: {{ prompt }}\nA: {{ response }}")
    with pytest.raises(InputError, match="template 'missing.txt' is no file in .*put the file there"):
        _inspect(tmp_path, "template: missing.txt\n")


def test_inspect_custom_instructions_keep_every_grade_its_pattern_takes(tmp_path):
    """With custom instructions inspect's default pattern takes C, P and I (partial_credit shapes the default
    instructions only): a judge told it may answer P gets P."""
    imported = _inspect(tmp_path, "instructions: 'Grade C, P (partly) or I. End with GRADE: X.'\n")
    assert imported.rubric.scale.levels == {"C": 1, "P": 0.5, "I": 0}


def test_an_inline_flag_is_no_group_of_an_inspect_grade_pattern(tmp_path):
    """Issue 60 item 23: `(?i)` before the grade's group is a flag (it read as the group, refused); radar writes
    the text around the group as given, which the flagged pattern reads too."""
    imported = _inspect(tmp_path, "grade_pattern: '(?is)ANSWER: ([CI])'\n")
    assert imported.judge is not None and imported.judge.answer.parts == ("ANSWER: ", "[CI]", "")
    assert re.search(imported.judge.answer.pattern, "I think so.\nanswer: " + "C").group(1) == "C"  # as inspect reads
    with pytest.raises(InputError, match=r"text around its group \('\(\?:x\)GRADE: '\) must be literal"):
        _inspect(tmp_path, "grade_pattern: '(?:x)GRADE: ([CI])'\n")


def test_inspects_default_grade_pattern_written_out_is_its_default(tmp_path):
    from radar_local.formats.inspect_ai import DEFAULT_PATTERNS

    for pattern in DEFAULT_PATTERNS:
        imported = _inspect(tmp_path, f"grade_pattern: {json.dumps(pattern)}\n")
        assert imported.judge is not None and imported.judge.answer.pattern == "GRADE: ([CI])"


PROMPT_FILE = """prompts: [{prompt}]
defaultTest:
  assert:
    - {{type: llm-rubric, value: The reply is polite.}}
    - {{type: llm-rubric, value: The reply is short.}}
tests:
  - {{description: refund, vars: {{q: I want a refund.}}}}
"""


def test_promptfoo_prompt_files_are_read_as_promptfoo_reads_them(tmp_path):
    """Issue 45: a text file is split on '---' lines (the tasks render the first prompt, and the account says how
    many there are); a JSON or YAML chat file is messages (the task is its user message, rendered); a prompt
    function is one line (radar runs no code); so is a conversation of several turns."""
    (tmp_path / "prompts.txt").write_text("Reply to: {{ q }}\n---\nAnswer briefly: {{ q }}\n")
    imported = formats.read("promptfoo", bad(tmp_path, "t.yaml", PROMPT_FILE.format(prompt="file://prompts.txt")))
    assert [t.prompt for t in imported.tasks] == ["Reply to: I want a refund."]
    assert any("the first of the 2 prompts in prompts.txt" in line for line in imported.account)
    chat = [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": "Help: {{ q }}"}]
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    (tmp_path / "chat.yaml").write_text(yaml.safe_dump(chat))
    for name in ("chat.json", "chat.yaml"):
        imported = formats.read("promptfoo", bad(tmp_path, "c.yaml", PROMPT_FILE.format(prompt=f"file://{name}")))
        assert [t.prompt for t in imported.tasks] == ["Help: I want a refund."]
        assert any("its system message is not part of a RADAR task" in line for line in imported.account)
    for prompt, says in (
        ("file://prompt.js", "prompts[0] is a prompt function (file://prompt.js)"),
        ("file://build.py:make_prompt", "radar runs no code"),
    ):
        result = run("import", "promptfoo", bad(tmp_path, "f.yaml", PROMPT_FILE.format(prompt=prompt)))
        assert result.exit_code == 2 and says in result.output and "\n" not in result.output.strip()
    turns = [*chat, {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "{{ q }}"}]
    (tmp_path / "turns.json").write_text(json.dumps(turns))
    with pytest.raises(InputError, match="a conversation of 4 messages"):
        formats.read("promptfoo", bad(tmp_path, "v.yaml", PROMPT_FILE.format(prompt="file://turns.json")))


def test_promptfoo_mixing_two_judges_audits_the_one_with_more_criteria(tmp_path):
    """Issue 45: llm-rubric and g-eval are two judges (their own prompts and scales); radar audits the one that
    scores more criteria and names the other's as left to promptfoo, exporting them untouched."""
    text = PROMPTFOO + "    - {type: g-eval, value: 'criterion 3'}\n"
    path = bad(tmp_path, "x.yaml", text)
    imported = formats.read("promptfoo", path)
    assert imported.judge is not None and imported.judge.answer == JsonShape(
        before={"reason": 300}, score="score", after={}
    )
    assert [c.description for c in imported.rubric.criteria] == ["criterion 1", "criterion 2"]
    assert any(line.startswith("left to promptfoo: the 1 g-eval criteria (criterion 3)") for line in imported.account)
    exported, _ = formats.export("promptfoo", path, imported.rubric)
    assert exported == path.read_text()


def _mlflow_pair(tmp_path: Path, instructions: str, value_type: dict) -> Path:
    judge = {**MLFLOW_JUDGE, "instructions_judge_pydantic_data": {"instructions": instructions}}
    judge["instructions_judge_pydantic_data"]["feedback_value_type"] = value_type
    return bad(tmp_path, "j.json", json.dumps([judge, {**judge, "name": "other"}]))


@pytest.mark.parametrize(
    ("labels", "levels"),
    [
        (["complete", "incomplete"], {"complete": 1, "incomplete": 0}),
        (["unsafe", "safe"], {"unsafe": 0, "safe": 1}),
        (["good", "bad", "neutral"], {"good": 3, "neutral": 2, "bad": 1}),
        (["Poor", "Fair", "Good", "Excellent"], {"Excellent": 4, "Good": 3, "Fair": 2, "Poor": 1}),
    ],
)
def test_mlflow_labels_whose_words_give_their_order_are_a_scale(tmp_path, labels, levels):
    """Issue 45: MLflow's categorical feedback types (Literal[...]) as named levels where the labels say their order."""
    path = _mlflow_pair(tmp_path, "Judge the {{ outputs }}.", {"type": "string", "enum": labels})
    assert formats.read("mlflow", path).rubric.scale.levels == levels


def test_an_mlflow_judge_radar_cannot_map_is_left_to_mlflow_and_kept_on_export(tmp_path):
    """Issue 60 item 23: a page of judges where one reads {{ trace }} audits the others (it blocked them all); the
    account names it and radar's framing of the instructions; an export writes it back untouched."""
    judges = json.loads(SAMPLES["mlflow"].read_text())
    tracer = {**judges[0], "name": "tool_use"}
    tracer["instructions_judge_pydantic_data"] = {"instructions": "Check the {{ trace }}.", "feedback_value_type":
                                                  {"type": "boolean"}}  # fmt: skip
    path = tmp_path / "judges.json"
    path.write_text(json.dumps([tracer, *judges], indent=2))
    imported = formats.read("mlflow", path)
    assert imported.rubric.ids == formats.read("mlflow", SAMPLES["mlflow"]).rubric.ids
    assert any(a.startswith("left to MLflow: judge 'tool_use' reads {{ trace }}") for a in imported.account)
    assert any(a.startswith("judge prompt: radar's words around each judge's instructions") for a in imported.account)
    first = imported.rubric.criteria[0].model_copy(update={"description": "Is {{ outputs }} kind?"})
    text, _ = formats.export("mlflow", path, imported.rubric.model_copy(update={"criteria": (first,
                             *imported.rubric.criteria[1:])}))  # fmt: skip
    assert json.loads(text)[0] == tracer and len(json.loads(text)) == len(judges) + 1


def test_mlflow_labels_of_no_readable_order_are_one_line(tmp_path):
    path = _mlflow_pair(tmp_path, "Judge the {{ outputs }}.", {"type": "string", "enum": ["red", "blue"]})
    with pytest.raises(InputError, match=r"labels \['red', 'blue'\]: their words give no order"):
        formats.read("mlflow", path)


def test_mlflows_expectations_are_each_tasks_reference_answer(tmp_path):
    """Issue 48: a judge reading {{ expectations }} (each row's expected answer) is shown each task's reference
    answer; the account says the tasks need one, and tasks without one are refused in one line, naming the task."""
    from radar_local.judge import missing_reference
    from radar_local.rubric import Task

    path = _mlflow_pair(tmp_path, "Compare {{ outputs }} with {{ expectations }}.", {"type": "boolean"})
    imported = formats.read("mlflow", path)
    assert imported.judge is not None and "expectations: {{ reference }}" in imported.judge.template
    assert any("{{ expectations }} (" in line and "reference" in line for line in imported.account)
    bare, given = Task(id="t1", prompt="Hi?"), Task(id="t2", prompt="Hi?", reference="Hello.")
    assert "task 't1' has none" in (missing_reference([imported.judge.template], [given, bare]) or "")
    assert missing_reference([imported.judge.template], [given]) is None


@pytest.mark.parametrize("fmt", ["prometheus", "mlflow"])
@pytest.mark.parametrize("indent", [4, "\t", None])
def test_a_json_files_layout_survives_a_one_criterion_edit(tmp_path, fmt, indent):
    """Issue 45: an export writes JSON in the file's own layout (indent, escapes), so an edit changes only the edited
    criterion's lines."""
    data = json.loads(SAMPLES[fmt].read_text())
    key = ("instructions_judge_pydantic_data", "instructions") if fmt == "mlflow" else ("criteria",)
    last = data[-1]
    for k in key[:-1]:
        last = last[k]
    last[key[-1]] += " (café)"  # escaped as \u00e9 in the file: the export keeps the escape
    path = tmp_path / SAMPLES[fmt].name
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=True) + "\n")
    imported = formats.read(fmt, path)
    rubric = imported.rubric
    first = rubric.criteria[0].model_copy(update={"description": rubric.criteria[0].description + " Also this."})
    text, _ = formats.export(fmt, path, rubric.model_copy(update={"criteria": (first, *rubric.criteria[1:])}))
    import difflib

    old, new = path.read_text().splitlines(), text.splitlines()
    changed = [line for line in difflib.unified_diff(old, new, lineterm="", n=0) if line[:1] in "+-"][2:]
    # the edited text, and for Prometheus the id it now carries (its id no longer follows from its text)
    assert sorted(line[0] for line in changed) == (["+", "-"] if fmt == "mlflow" or indent is None else ["+", "+", "-"])
    assert "Also this." in changed[-1] and "\\u00e9" in text, changed


def test_an_export_with_relative_file_references_written_elsewhere_is_one_line(tmp_path):
    """Issue 60 item 20: `radar export --out` in another folder kept the config's relative `file://` references,
    which promptfoo reads from the config's own folder: the export did not import again. Refused, nothing written;
    beside the original it is written and imports again."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "prompt.txt").write_text("Summarize: {{article}}")
    (tmp_path / "src" / "tests.csv").write_text("article,__description\nA cat sat.,cat\n")
    path = tmp_path / "src" / "promptfooconfig.yaml"
    path.write_text(G_EVAL)
    rubric = tmp_path / "r.yaml"
    rubric.write_text(yaml.safe_dump(formats.read("promptfoo", path).rubric.model_dump(mode="json", exclude_none=True)))
    (tmp_path / "elsewhere").mkdir()
    result = run("export", "promptfoo", path, rubric, "--out", tmp_path / "elsewhere" / "p.yaml")
    assert result.exit_code == 2 and "file://prompt.txt" in result.output and "would not import again" in result.output
    assert not (tmp_path / "elsewhere" / "p.yaml").exists()
    assert run("export", "promptfoo", path, rubric).exit_code == 0
    assert formats.read("promptfoo", tmp_path / "src" / "promptfooconfig.repaired.yaml").rubric.ids


def test_one_llm_rubric_beside_one_g_eval_audits_the_llm_rubric_judge(tmp_path):
    """Two judges of one criterion each (refused before issue 63, when an audit needed two criteria): the
    llm-rubric one is audited, a rubric of one criterion, and the account names the g-eval criterion left out."""
    path = tmp_path / "x.yaml"
    path.write_text("defaultTest:\n  assert:\n    - {type: llm-rubric, value: c1}\n    - {type: g-eval, value: c2}\n")
    imported = formats.read("promptfoo", path)
    assert [c.description for c in imported.rubric.criteria] == ["c1"]
    assert any("the 1 g-eval criteria (c2)" in line and "llm-rubric on a tie" in line for line in imported.account)
