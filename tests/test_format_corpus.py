"""Imports on the files teams really have (issue 45): real files from each tool's repository, kept unchanged under
tests/data/formats/<format>/ with their sources (SOURCES.md: repository, commit, paths). Every file either imports
with its meaning kept or is refused in one line that says what it holds and what radar would need."""

import importlib.util
import shutil
from pathlib import Path

import pytest
import yaml

from radar_local import formats
from radar_local.auditing import run_audit
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.openai_evals import ANSWER_PROMPTS
from radar_local.stats.pairwise import Pairwise
from tests.conftest import PLANTED_TASKS

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).parent / "data" / "formats"
REGISTRY = CORPUS / "openai-evals" / "registry"  # openai/evals at 4bfc1f58, evals/registry/ as it is upstream

NO_CRITERION = "no eval here names a criterion (modelgraded_spec_args.criteria)"
ONE_THING = "judges one thing (its prompt formats no {criteria}): what it judges is written into its prompt"
DUPLICATE = 'line 20: found duplicate key "input" with value "completion"'
OPENAI_EVALS = {  # every file of the corpus: the criteria it imports with, or what its one-line refusal says
    "evals/coqa-ex.yaml": ["correctness", "relevance", "conciseness"],
    # battle compares two completions: a pairwise judge, its pairs steered on the bundled helpsteer2 rubric
    "evals/test-modelgraded-battle.yaml": ["helpfulness", "correctness", "coherence", "complexity", "verbosity"],
    "modelgraded/battle.yaml": "spec 'battle' names no eval_type, nor does an eval that runs it",
    # one criterion each: an audit of its gate and judge bias (refused before issue 63)
    "evals/abstract2title.yaml": ["conciseness"],
    "evals/non-compound-names.yaml": ["correctness"],  # an eval and its meta-evaluation: one criterion
    "evals/numerical-cabbala-casanova.yaml": ["correctness"],
    "evals/ru_rhymes.yaml": ["correctness"],
    "evals/coq-editing.yaml": "ask spec closedqa with the criterion each sample supplies (samples_jsonl)",
    "evals/test-modelgraded.yaml": "ask specs best, diversity, humor, humor_likert, humor_out_message' own questions",
    **{
        f"evals/{name}.yaml": NO_CRITERION
        for name in (
            "Unfamiliar-Chinese-Character ab allergen-information arithmetic-expression categorize_with_distractors "
            "chinese_idioms co-sql consensus_summary euler_problems event-categories "
            "hard_russian_computer_science_tasks iambic-pentameter iqbal-poetry-translation japanese_onomatopoeia "
            "linear-regression logic-container logic-liar-paradox logic-riddles logic loss-logic naughty_strings "
            "population_span_extraction reasoning_with_contradictory_statements research-question-extraction "
            "security_guide seo_keywords singlestore-vectorsearch soc_codes sql superficial-patterns "
            "test-modelgraded-generated ukraine_electronic_petitions unwanted-rhyming"
        ).split()
    },
    "modelgraded/closedqa.yaml": "formats {criteria}, which each eval that runs it supplies",
    "modelgraded/humor.yaml": "holds 4 model-graded specs (humor, humor_out_message, humor_likert, humor_jp)",
    "modelgraded/keywords.yaml": DUPLICATE,
    **{
        f"modelgraded/{name}.yaml": f"spec '{name}' {ONE_THING}"
        for name in (
            "arithmetic-expression best diversity fact iambic_pentameter onomatopoeia possible "
            "regression-equation research-question-extraction rhyming security singlestore sql translation"
        ).split()
    },
}


def test_the_corpus_table_names_every_file():
    assert sorted(OPENAI_EVALS) == sorted(str(p.relative_to(REGISTRY)) for p in REGISTRY.glob("*/*.yaml"))
    assert len(OPENAI_EVALS) == 59


@pytest.mark.parametrize("name", sorted(OPENAI_EVALS))
def test_every_openai_evals_registry_file_imports_or_says_why_not(name):
    expected = OPENAI_EVALS[name]
    if isinstance(expected, list):
        assert formats.read("openai-evals", REGISTRY / name).rubric.ids == expected
        return
    with pytest.raises(InputError) as refused:
        formats.read("openai-evals", REGISTRY / name)
    line = str(refused.value)
    assert "\n" not in line and expected in line, line


def test_an_eval_file_runs_its_spec_as_openai_evals_does():
    """coqa-ex.yaml: three closedqa evals, each with its criterion; the spec's own answer words stand (no eval names
    an eval_type, so openai/evals appends none: no second instruction after its "Reasoning:" cue); the choice is
    read from the line after the reasoning; the two `fact` evals are named as left to openai/evals."""
    imported = formats.read("openai-evals", REGISTRY / "evals" / "coqa-ex.yaml")
    assert imported.rubric.criterion("relevance").description == (
        "relevance: Is the submission referring to a real quote from the text?"
    )
    assert imported.rubric.scale.levels == {"Y": 1.0, "N": 0.0}
    judge = imported.judge
    assert judge is not None and judge.template.endswith("on a new line.\n\nReasoning:")
    assert judge.template.count("step by step") == 1 and "[Criterion]: {{ criterion.description }}" in judge.template
    assert judge.answer.kind == "grade" and judge.answer.pattern == "(Y|N)"
    assert any("left to openai/evals: coqa-fact.dev.v0, coqa-fact-expl.dev.v0" in line for line in imported.account)


def _registry(tmp_path: Path, eval_args: str, spec: str) -> Path:
    (tmp_path / "evals").mkdir()
    (tmp_path / "modelgraded").mkdir()
    (tmp_path / "modelgraded" / "judge.yaml").write_text(spec)
    evals = "".join(
        f"e{k}.dev.v0:\n  class: evals.elsuite.modelgraded.classify:ModelBasedClassify\n  args:\n"
        f"    modelgraded_spec: q\n{eval_args}    modelgraded_spec_args:\n      criteria: '{text}'\n"
        "      language: Urdu\n"
        for k, text in enumerate(("clarity: Is it clear?", "tone: Is it kind?"))
    )
    (tmp_path / "evals" / "mine.yaml").write_text(evals)
    return tmp_path / "evals" / "mine.yaml"


def test_an_eval_type_the_eval_names_appends_openai_evals_own_answer_words(tmp_path):
    """Where the eval names the eval_type, openai/evals appends its ANSWER_PROMPTS text (choices as '"Y" or "N"');
    the eval's other arguments ({language}) are constants of the prompt."""
    spec = "q:\n  prompt: 'From {language}: {input} / {completion} / {criteria}'\n  choice_strings: YN\n"
    spec += "  choice_scores: {Y: 1, N: 0}\n"
    imported = formats.read("openai-evals", _registry(tmp_path, "    eval_type: cot_classify\n", spec))
    words = ANSWER_PROMPTS["cot_classify"].replace("{choices}", '"Y" or "N"')
    assert imported.judge is not None
    assert imported.judge.template == (
        "From Urdu: {{ prompt }} / {{ response }} / {{ criterion.description }}\n\n" + words
    )
    assert imported.rubric.ids == ["clarity", "tone"]


def test_a_spec_the_registry_lacks_is_one_line_naming_root(tmp_path):
    path = _registry(tmp_path, "", "other:\n  prompt: x\n")
    with pytest.raises(InputError, match="spec 'q' is in none of .*--root"):
        formats.read("openai-evals", path)


def test_an_eval_files_round_trip_keeps_every_other_byte(tmp_path):
    """An unchanged export is the file byte for byte; a rewritten criterion changes its line only; adding or
    dropping a criterion (an eval of its own) is refused in one line."""
    source = REGISTRY / "evals" / "coqa-ex.yaml"
    imported = formats.read("openai-evals", source)
    text, _ = formats.export("openai-evals", source, imported.rubric)
    assert text == source.read_text()
    rubric = imported.rubric
    first = rubric.criteria[0].model_copy(update={"description": "correctness: Is every fact in it right?"})
    edited = rubric.model_copy(update={"criteria": (first, *rubric.criteria[1:])})
    text, account = formats.export("openai-evals", source, edited)
    assert account == ["kept: relevance, conciseness", "rewritten: correctness"]
    old, new = source.read_text().splitlines(), text.splitlines()
    assert [(a, b) for a, b in zip(old, new) if a != b] == [
        (
            '      criteria: "correctness: Is the answer correct?"',
            '      criteria: "correctness: Is every fact in it right?"',
        )
    ]
    assert len(old) == len(new)
    with pytest.raises(InputError, match="add or drop an eval in the registry by hand"):
        formats.export("openai-evals", source, rubric.model_copy(update={"criteria": rubric.criteria[:2]}))


def test_an_imported_eval_file_audits_on_the_planted_engine(tmp_path):
    """Import, then audit: the closedqa judge's Y/N verdicts on the planted engine, its coupling found."""
    from tests.conftest import invoke

    registry = tmp_path / "registry"
    shutil.copytree(REGISTRY, registry)
    out = tmp_path / "imported"
    result = invoke("import", "openai-evals", registry / "evals" / "coqa-ex.yaml", "--out", out, "--engine", "testing")
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((out / "config.yaml").read_text())
    coupling = {"Correctness": {"Relevance": 0.9}}
    for role in ("generator", "verifier"):
        config[role]["options"] = {"noise": 0.3, "coupling": coupling}
    config |= {"tasks": PLANTED_TASKS, "n": 3, "bootstrap": 100}
    config.pop("human", None)
    result = run_audit(config, tmp_path / "audit", base=out)
    assert result.leakage.loc["correctness", "relevance"] > 0.5


def test_openai_evals_battle_imports_as_a_pairwise_judge_and_audits(tmp_path):
    """test-modelgraded-battle.yaml (four evals running spec battle, cot_classify): the spec's prompt with
    {completion1} as response A and {completion2} as B, openai/evals' cot_classify words appended, Yes meaning the
    first is better; asked only overall. The import's config audits on the planted engine (every verdict read, every
    steer moving its preference); export is refused (no criteria in the file)."""
    from tests.conftest import invoke

    registry = tmp_path / "registry"
    shutil.copytree(REGISTRY, registry)
    out = tmp_path / "imported"
    source = registry / "evals" / "test-modelgraded-battle.yaml"
    result = invoke("import", "openai-evals", source, "--out", out, "--engine", "testing")
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((out / "config.yaml").read_text())
    pairwise = config["pairwise"]
    assert pairwise["asked"] == "overall" and pairwise["words"] == {"A": "Yes", "B": "No"}
    assert "[Response 1]\n{{ response_a }}" in pairwise["template"] and pairwise["template"].endswith("Reasoning:")
    assert pairwise["answer"] == {"kind": "grade", "pattern": "(Yes|No)", "reasoning": 600}
    for role in ("generator", "verifier"):
        config[role]["options"] = {"noise": 0.5}
    config |= {"tasks": PLANTED_TASKS, "n": 3, "bootstrap": 100}
    config.pop("human", None)
    audited = run_audit(config, tmp_path / "audit", base=out)
    found = audited.measured(Pairwise)
    assert found is not None and found.criteria == [] and found.position.unscored == 0  # every Yes/No read
    assert all(d.shift > 0 for d in found.overall)  # each steer moves the planted judge's overall preference
    rubric = formats.read("openai-evals", source).rubric
    first = rubric.criteria[0].model_copy(update={"description": "Does it help?"})
    with pytest.raises(InputError, match="holds a pairwise judge and no criteria"):  # a repaired rubric: nowhere to go
        formats.export("openai-evals", source, rubric.model_copy(update={"criteria": (first, *rubric.criteria[1:])}))


PROMETHEUS = CORPUS / "prometheus"  # prometheus-eval at dcfb4427: BiGGen-Bench's files, a slice of each


@pytest.mark.parametrize("name", ["biggen_sample_evals.json", "biggen_sample_responses.json"])
def test_biggen_bench_rubrics_are_each_their_instances_own_item_and_audit_end_to_end(name, tmp_path):
    """BiGGen-Bench: every instance has its own score rubric (682 distinct criteria in 695 instances), written for
    its own input: each instance is a task whose one item is its rubric, on 1-5 with its own score descriptions
    (issue 63; refused before: a criterion was scored on every task), never widened; audited on the planted engine
    as `radar import` writes it; an unchanged export is the file byte for byte, a shared criterion added to it is
    refused in one line (its items are exported from the import's config.yaml)."""
    imported = formats.read("prometheus", PROMETHEUS / name)
    assert imported.rubric.criteria == () and [len(t.items) for t in imported.tasks] == [1, 1, 1, 1]
    first = imported.tasks[0]
    assert first.id == "planning_travel_plan_0" and first.prompt.startswith("Design a travel plan")
    assert first.items[0].text.startswith("Does the response effectively plan a tourist's 2-day")
    assert first.items[0].scale is not None and set(first.items[0].scale.anchors or {}) == set("12345")
    formats.write_import(imported, tmp_path / "import", "testing", "planted", "planted")
    config = yaml.safe_load((tmp_path / "import" / "config.yaml").read_text())
    config["verifier"].pop("judge")  # the planted judge answers radar's requests, whatever the template
    result = run_audit({**config, "n": 2}, tmp_path / "import" / "run", base=tmp_path / "import")
    assert result.per_prompt is not None and len(result.per_prompt.items) == 4 and result.per_prompt.pairs_tested == 0
    text, _ = formats.export("prometheus", PROMETHEUS / name, imported.rubric)
    assert text == (PROMETHEUS / name).read_text()
    added = shared.criterion(PROMETHEUS / name, "x", id="helps", label="Helps", description="Does it help?")
    with pytest.raises(InputError, match="holds per-instruction rubrics .* export the import's config.yaml"):
        formats.export("prometheus", PROMETHEUS / name, imported.rubric.model_copy(update={"criteria": (added,)}))


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_an_edited_instance_rubric_is_written_back_into_its_instance(suffix, tmp_path):
    """`radar import` then `radar export prometheus ORIGINAL config.yaml` on BiGGen-Bench's real file (and the same
    instances as JSONL): the edited task's one item is its instance's `score_rubric` (criteria and score
    descriptions, a mapping as the file holds it), its grading under the old rubric dropped; every other instance is
    as written (a JSONL line byte for byte); unedited, the export is the file; an instance with two items is one
    line naming the task."""
    import json

    from tests.conftest import invoke, one_line_exit_2

    instances = json.loads((PROMETHEUS / "biggen_sample_evals.json").read_text())
    original = tmp_path / f"biggen{suffix}"
    if suffix == ".json":
        shutil.copy(PROMETHEUS / "biggen_sample_evals.json", original)
    else:
        original.write_text("".join(json.dumps(o) + "\n" for o in instances.values()))
    assert invoke("import", "prometheus", original, "--out", tmp_path / "import").exit_code == 0
    config_path = tmp_path / "import" / "config.yaml"
    tasks = formats.tasks_with_items(config_path)
    assert formats.export_items("prometheus", original, tasks)[0] == original.read_text()  # unedited: the file
    config = yaml.safe_load(config_path.read_text())
    item = config["tasks"][1]["items"][0]
    item["text"] = "Does the response plan every required stop?"
    item["scale"]["anchors"]["5"] = "Every required stop is planned, in a feasible order."
    (tmp_path / "edited.yaml").write_text(yaml.safe_dump(config))
    res = invoke("export", "prometheus", original, tmp_path / "edited.yaml")
    assert res.exit_code == 0, res.output
    assert "kept: 3 instances as they were" in res.output and "rewritten" in res.output
    written = original.with_name(f"biggen.repaired{suffix}")
    again = formats.read("prometheus", written)
    assert again.tasks[1].items[0].text == "Does the response plan every required stop?"
    assert [t.items for k, t in enumerate(again.tasks) if k != 1] == [
        t.items for k, t in enumerate(formats.read("prometheus", original).tasks) if k != 1
    ]
    records = (
        list(json.loads(written.read_text()).values())
        if suffix == ".json"
        else [json.loads(line) for line in written.read_text().splitlines()]
    )
    edited, before = records[1], list(instances.values())[1]
    assert edited["score_rubric"]["score5_description"] == "Every required stop is planned, in a feasible order."
    assert "feedback" not in edited and "score" not in edited and edited["input"] == before["input"]
    assert records[0] == list(instances.values())[0] and records[2:] == list(instances.values())[2:]
    if suffix == ".jsonl":
        lines, old = written.read_text().splitlines(), original.read_text().splitlines()
        assert lines[0] == old[0] and lines[2:] == old[2:]
    config["tasks"][0]["items"].append({"text": "Is it brief?"})
    (tmp_path / "two.yaml").write_text(yaml.safe_dump(config))
    one_line_exit_2(invoke("export", "prometheus", original, tmp_path / "two.yaml", "--out", tmp_path / "x" / "y"),
                    "2 items; a Prometheus instance holds one rubric")  # fmt: skip


def test_a_score_rubric_held_as_python_text_is_written_back_as_python_text(tmp_path):
    """BiGGen-Bench's released rows hold `score_rubric` as the text of a Python mapping: an edited one is written
    back as such text (read with literal_eval, never run), not turned into a mapping."""
    import ast
    import json

    instance = next(iter(json.loads((PROMETHEUS / "biggen_sample_evals.json").read_text()).values()))
    original = tmp_path / "rows.jsonl"
    original.write_text(json.dumps(instance | {"score_rubric": repr(instance["score_rubric"])}) + "\n")
    task = formats.read("prometheus", original).tasks[0]
    edited = task.model_copy(update={"items": (task.items[0].model_copy(update={"text": "Is the plan feasible?"}),)})
    text, _ = formats.export_items("prometheus", original, (edited,))
    held = json.loads(text)["score_rubric"]
    assert isinstance(held, str) and ast.literal_eval(held)["criteria"] == "Is the plan feasible?"


def test_rubrics_of_one_instruction_are_left_out_and_exported_untouched(tmp_path):
    """A file mixing rubrics of their own with one BiGGen-Bench instance: the instance's rubric is named as left
    out, and an export with one criterion rewritten writes the instance back as it was."""
    import json

    general = json.loads((CORPUS / "prometheus_rubrics.json").read_text())
    instance = next(iter(json.loads((PROMETHEUS / "biggen_sample_evals.json").read_text()).values()))
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([*general, instance], indent=2))
    imported = formats.read("prometheus", path)
    assert len(imported.rubric.ids) == len(general)
    assert any(line.startswith("left out: 1 score rubric(s) written for their own instruction (objects 4)")
               for line in imported.account)  # fmt: skip
    first = imported.rubric.criteria[0].model_copy(update={"description": "Does the reply name the feeling?"})
    edited = imported.rubric.model_copy(update={"criteria": (first, *imported.rubric.criteria[1:])})
    text, _ = formats.export("prometheus", path, edited)
    assert json.loads(text)[-1] == instance


PROMPTFOO = CORPUS / "promptfoo"  # promptfoo's examples/, each file at the commit SOURCES.md names
OTHERS = "has no llm-rubric or g-eval assertion: nothing a judge scores on a rubric; its model-graded assertions: "


PROMPTFOO_CONFIGS = {  # each config, by its path under promptfoo's examples/: what its one-line refusal says
    "adaline-gateway/adaline-eval-factuality/promptfooconfig.yaml": OTHERS + "factuality x1 (grades against a referenc",
    "amazon-bedrock/promptfooconfig.kb.yaml": OTHERS + "context-faithfulness x1 (a RAG metric",
    "amazon-bedrock/promptfooconfig.nova-sonic.yaml": "prompts[0] is a prompt function (file://nova_sonic_prompt.js) t",
    "claude-vs-gpt-image/promptfooconfig.yaml": "rubricPrompt: radar maps a user message, optionally after one system ",
    "custom-grading-prompt/promptfooconfig.yaml": "(it has none: a rubric written into the rubricPrompt is not one",
    "cyberseceval/promptfooconfig.yaml": "the llm-rubric value '{{judge_question}}. If yes, fail. Otherw' uses the tes",
    "getting-started/promptfooconfig.yaml": "has no llm-rubric or g-eval assertion: nothing a judge scores on a rubric",
    "google-vertex/promptfooconfig.yaml": "has no llm-rubric or g-eval assertion: nothing a judge scores on a rubric",
    "grok-4-political-bias/promptfooconfig.yaml": "rubricPrompt: the variable 'question' has no counterpart in radar",
    "huggingface-dataset-factuality/promptfooconfig.yaml": "its tests come from dataset_loader.ts:generate_tests, code",
    "huggingface-hle/promptfooconfig.yaml": "the llm-rubric value 'Evaluate whether the response correctly ' uses the ",
    "hyperbolic/promptfooconfig.multimodal.yaml": "prompts[0] (file://vision_prompt.json) is no chat prompt (a list of",
    "llama-cpp/promptfooconfig.yaml": OTHERS + "answer-relevance x1 (a RAG metric",
    "mistral/promptfooconfig.aime2024.yaml": "uses the test variable 'answer'",
    "openai-audio/promptfooconfig.yaml": "prompts[0] (file://audio-input.json) is no chat prompt (a list of {role, con",
    "openai-eval-factuality/promptfooconfig.yaml": OTHERS + "factuality x1 (grades against a reference answer); model",
    "openai-realtime/promptfooconfig-conversation.yaml": "prompts[0] is a prompt function (file://realtime-conversatio",
    "openai-realtime/promptfooconfig-gpt-realtime.yaml": "prompts[0] (file://realtime-input.json) is no chat prompt (a",
    "openai-realtime/promptfooconfig.yaml": "prompts[0] (file://realtime-input.json) is no chat prompt (a list of {rol",
    "openai-realtime/test-webui-audio.yaml": "(file://realtime-input.json) is no chat prompt",
    "prompt-labels/promptfooconfig.yaml": OTHERS + "select-best x2 (picks the best of several outputs: a comparison, n",
    "rag-eval/promptfooconfig.yaml": OTHERS + "factuality x2 (grades against a reference answer); answer-relevance x2",
    "select-best-example/promptfooconfig.yaml": OTHERS + "select-best x2 (picks the best of several outputs: a compari",
    "standalone-assertions/asserts.yaml": OTHERS + "model-graded-closedqa x1 (a Y/N check",
    "summarization/promptfooconfig.yaml": "has no llm-rubric or g-eval assertion: nothing a judge scores on a rubric",
}
# rubrics written in single tests (or templated with a test's vars): each test's task gets them as its own items
PROMPTFOO_ITEMS = {  # config: (tasks with items, items)
    "adaline-gateway/adaline-structured-output/promptfooconfig.yaml": (4, 4),
    "amazon-bedrock/promptfooconfig.inference-profiles-simple.yaml": (3, 3),
    "amazon-bedrock/promptfooconfig.inference-profiles.yaml": (1, 1),
    "amazon-bedrock/promptfooconfig.openai.yaml": (1, 1),
    "amazon-bedrock/promptfooconfig.qwen.yaml": (1, 1),
    "anthropic/web-tools/promptfooconfig.yaml": (4, 4),
    "assertion-scoring-override/promptfooconfig.yaml": (3, 9),
    "assertions-generate/promptfooconfig.yaml": (1, 3),
    "azure-openai-assistant/promptfooconfig-file-search.yaml": (5, 5),
    "claude-thinking/promptfooconfig.yaml": (2, 2),
    "claude-vs-gpt/promptfooconfig.yaml": (2, 2),
    "cohere-benchmark/promptfooconfig.yaml": (6, 6),
    "databricks/promptfooconfig.yaml": (2, 2),
    "dbrx-benchmark/promptfooconfig.yaml": (1, 1),
    "extension-api/promptfooconfig.yaml": (1, 1),
    "gemma-vs-llama/promptfooconfig.yaml": (3, 3),
    "gemma-vs-mistral/promptfooconfig.yaml": (2, 2),
    "google-adk-example/promptfooconfig-multi-turn.yaml": (1, 1),
    "google-adk-example/promptfooconfig-single-turn.yaml": (1, 1),
    "google-live-audio/promptfooconfig.yaml": (1, 1),
    "gpt-4o-temperature-comparison/promptfooconfig.yaml": (4, 4),
    "gpt-4o-vs-4o-mini/promptfooconfig.yaml": (2, 2),
    "helicone/promptfooconfig.yaml": (5, 6),
    "http-provider-tls/promptfooconfig.yaml": (1, 1),
    "hyperbolic/promptfooconfig.reasoning.yaml": (3, 3),
    "langfuse-labels/promptfooconfig.yaml": (1, 2),
    "llama-gpt-comparison/promptfooconfig.yaml": (4, 4),
    "max-score-selection/promptfooconfig.yaml": (2, 4),
    "mistral-llama-comparison/promptfooconfig.yaml": (4, 4),
    "mistral/promptfooconfig.comparison.yaml": (2, 2),
    "mistral/promptfooconfig.reasoning.yaml": (3, 3),
    "mistral/promptfooconfig.yaml": (9, 9),
    "multiple-translations/promptfooconfig.yaml": (1, 1),
    "named-metrics/promptfooconfig.yaml": (1, 1),
    "nscale/promptfooconfig.yaml": (4, 4),
    "openai-agents/promptfooconfig.yaml": (3, 3),
    "openai-mcp/promptfooconfig.approval.yaml": (3, 3),
    "openai-mcp/promptfooconfig.authenticated.yaml": (3, 3),
    "openai-mcp/promptfooconfig.yaml": (4, 4),
    "openai-model-comparison/promptfooconfig.yaml": (2, 2),
    "openai-responses/promptfooconfig.codex.yaml": (1, 1),
    "openai-responses/promptfooconfig.reasoning.yaml": (1, 1),
    "provider-aiml-api/promptfooconfig.yaml": (2, 2),
    "pydantic-ai/promptfooconfig.yaml": (1, 1),
    "python-provider/promptfooconfig.yaml": (2, 2),
    "rag-full/promptfooconfig.with-asserts.yaml": (3, 3),
    "redteam-foundation-model/redteam.yaml": (40, 40),
    "replicate-lifeboat/promptfooconfig.yaml": (4, 4),
    "replicate-llama4-scout/promptfooconfig.yaml": (3, 3),
    "ruby-provider/promptfooconfig.yaml": (2, 2),
    "simple-test/promptfooconfig.yaml": (1, 1),
    "tau-simulated-user/promptfooconfig.yaml": (1, 8),
    "truefoundry/promptfooconfig-mcp.yaml": (3, 3),
    "truefoundry/promptfooconfig.yaml": (2, 2),
}
PROMPTFOO_IMPORTS = {  # configs that import: their criteria and tasks
    "claude-agent-sdk/advanced/promptfooconfig.yaml": (
        ["should_refactor_code_to", "should_add_proper_error", "should_not_make_any"],
        1,
    ),
    # five tests, each asking the one prompt (no vars): every criterion is scored on that task (issue 60 item 23)
    "g-eval/promptfooconfig.yaml": (
        [
            "coherence_the_collective_quality",
            "consistency_the_factual_alignment",
            "fluency_the_quality_of",
            "relevance_selection_of_important",
        ],
        1,
    ),
}


PROMPTFOO_ONE = {  # one criterion in defaultTest (or in every test): an audit of its gate and judge bias (issue 63)
    "amazon-bedrock/promptfooconfig.mistral.yaml": ("does_not_include_excessive", 4),
    "claude-agent-sdk/basic/promptfooconfig.yaml": ("should_generate_working_python", 1),
    "deepseek-r1-vs-openai-o1/promptfooconfig.yaml": ("response_must_include_clear", 0),  # tasks from a dataset
    "docker/promptfooconfig.comparison.advanced.yaml": ("provide_at_least_two", 1),
    "google-aistudio-gemini/promptfooconfig.yaml": ("the_answer_should_be", 1),
    "google-aistudio-tools/promptfooconfig.urlcontext.yaml": ("contains_a_comprehensive_plan", 1),
    "harmbench/promptfooconfig.yaml": ("can_be_an_outright", 0),
    "hyperbolic/promptfooconfig.yaml": ("the_response_is_a", 1),
    "openai-gpt-4.1-vs-gpt-4o-mmlu/promptfooconfig.yaml": ("response_includes_clear_step", 0),
    "redteam-beavertails/promptfooconfig.yaml": ("the_output_refuses_to", 0),
    "self-grading/promptfooconfig.yaml": ("do_not_mention_that", 10),
}


def _corpus_files(fmt: str) -> list[str]:
    """The corpus's files of one format, as scripts/import_corpus.py counts them."""
    spec = importlib.util.spec_from_file_location("import_corpus", ROOT / "scripts" / "import_corpus.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return sorted(str(p.relative_to(CORPUS / fmt)) for p in script.corpus_files(fmt))


def test_the_promptfoo_table_names_every_config():
    assert sorted({**PROMPTFOO_CONFIGS, **PROMPTFOO_IMPORTS, **PROMPTFOO_ONE, **PROMPTFOO_ITEMS}) == _corpus_files(
        "promptfoo"
    )
    assert len(_corpus_files("promptfoo")) == 92


LARGE = "redteam-foundation-model/redteam.yaml"  # 1.4 MB of generated tests: `make test` reads it


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.thorough) if n == LARGE else n for n in sorted(PROMPTFOO_CONFIGS)]
)
def test_every_promptfoo_example_imports_or_says_why_not_in_one_line(name):
    """promptfoo's own examples put their rubrics in single tests (written for that test's input: never widened to
    every task), template them per test, have one, or judge with other model-graded assertions (named); the
    refusal is one line even where it quotes a rubric of several lines."""
    with pytest.raises(InputError) as refused:
        formats.read("promptfoo", PROMPTFOO / name)
    line = str(refused.value)
    assert "\n" not in line and PROMPTFOO_CONFIGS[name] in line, line


@pytest.mark.parametrize("name", sorted(PROMPTFOO_IMPORTS))
def test_a_promptfoo_config_with_its_rubrics_in_every_test_imports_them(name, tmp_path):
    """claude-agent-sdk/advanced: one test, three rubrics, a prompt with no variable: the criteria are scored on
    that prompt, the one task (never the bundled tasks); an unchanged export is the file byte for byte."""
    ids, tasks = PROMPTFOO_IMPORTS[name]
    imported = formats.read("promptfoo", PROMPTFOO / name)
    assert imported.rubric.ids == ids and len(imported.tasks) == tasks
    prompt = yaml.safe_load((PROMPTFOO / name).read_text())["prompts"][0]
    assert imported.tasks[0].prompt.strip() == (prompt if isinstance(prompt, str) else prompt["raw"]).strip()
    text, _ = formats.export("promptfoo", PROMPTFOO / name, imported.rubric)
    assert text == (PROMPTFOO / name).read_text()


@pytest.mark.parametrize("name", sorted(PROMPTFOO_ONE))
def test_a_promptfoo_config_with_one_rubric_imports_it(name):
    """A config whose one llm-rubric every task shares imports as a rubric of one criterion (refused before issue
    63: radar now audits its gate and judge bias); an unchanged export is the file byte for byte."""
    criterion, tasks = PROMPTFOO_ONE[name]
    imported = formats.read("promptfoo", PROMPTFOO / name)
    assert imported.rubric.ids == [criterion] and len(imported.tasks) == tasks
    text, _ = formats.export("promptfoo", PROMPTFOO / name, imported.rubric)
    assert text == (PROMPTFOO / name).read_text()


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.thorough) if n == LARGE else n for n in sorted(PROMPTFOO_ITEMS)]
)
def test_a_promptfoo_config_with_its_rubrics_in_its_tests_imports_them_as_each_task_s_items(name):
    """Issue 63: most of promptfoo's own examples write each llm-rubric for one test (or template it with the test's
    vars): each test's task gets its rubrics as its own items (refused before: a criterion was scored on every task);
    a task none of whose tests holds one is left out; an unchanged export, of the rubric or of the items, is the file
    byte for byte."""
    tasks, items = PROMPTFOO_ITEMS[name]
    imported = formats.read("promptfoo", PROMPTFOO / name)
    assert imported.rubric.ids == [] and len(imported.tasks) == tasks and all(t.items for t in imported.tasks)
    assert sum(len(t.items) for t in imported.tasks) == items
    assert not any(shared.variables(i.text) for t in imported.tasks for i in t.items)  # each rendered for its test
    assert any(line.startswith(f"per-test rubrics: {items} item(s)") for line in imported.account)
    text, _ = formats.export("promptfoo", PROMPTFOO / name, imported.rubric)
    assert text == (PROMPTFOO / name).read_text()
    text, account = formats.export_items("promptfoo", PROMPTFOO / name, imported.tasks)
    assert text == (PROMPTFOO / name).read_text() and account == [f"kept: {tasks} tasks as they were"]


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.thorough) if n == LARGE else n for n in sorted(PROMPTFOO_ITEMS)]
)
def test_a_promptfoo_config_with_per_test_rubrics_audits_end_to_end(name, tmp_path):
    """Imported as `radar import` writes it, audited on the planted engine: every item of every task steered and
    graded, the per-prompt block written (about 0.1 s a config)."""
    out = tmp_path / "import"
    imported = formats.read("promptfoo", PROMPTFOO / name)
    formats.write_import(imported, out, "testing", "planted", "planted")
    config = yaml.safe_load((out / "config.yaml").read_text())
    config["verifier"].pop("judge", None)  # the planted judge answers radar's requests, whatever the template
    config["n"] = 2
    result = run_audit(config, out / "run", base=out)
    items = sum(len(t.items) for t in imported.tasks)
    assert result.per_prompt is not None and len(result.per_prompt.items) == items


def test_edited_per_test_rubrics_are_written_into_the_tests_that_hold_them(tmp_path):
    """`radar import` then `radar export promptfoo ORIGINAL config.yaml` (its tasks' items edited): a rewritten item
    is its assertion's new value and weight, a new one an assertion of its own in the task's test, a dropped one's
    assertion is gone; the rest of promptfoo's real file is kept, and it imports as the items given."""
    from tests.conftest import invoke

    folder = tmp_path / "claude-thinking"
    shutil.copytree(PROMPTFOO / "claude-thinking", folder)
    original = folder / "promptfooconfig.yaml"
    assert invoke("import", "promptfoo", original, "--out", tmp_path / "import").exit_code == 0
    config = yaml.safe_load((tmp_path / "import" / "config.yaml").read_text())
    first, second = config["tasks"]
    first["items"] = [{"text": "Says that two weighings suffice, and why", "points": 2}, {"text": "Is brief"}]
    second["items"] = []
    (tmp_path / "edited.yaml").write_text(yaml.safe_dump(config))
    res = invoke("export", "promptfoo", original, tmp_path / "edited.yaml")
    assert res.exit_code == 0, res.output
    assert "test_1: rewritten test_1_1; added test_1_2" in res.output and "test_2: dropped test_2_1" in res.output
    written = folder / "promptfooconfig.repaired.yaml"
    again = formats.read("promptfoo", written)
    assert [(i.text, i.points) for i in again.tasks[0].items] == [
        ("Says that two weighings suffice, and why", 2.0),
        ("Is brief", 1.0),
    ]
    assert [t.id for t in again.tasks] == ["test_1"]  # the second test holds no rubric now: nothing to grade it on
    before, after = original.read_text().splitlines(), written.read_text().splitlines()
    assert before[:36] == after[:36] and "The trains will meet at 1:38 PM." not in written.read_text()
    # the shared rubric's export is unchanged: rubric.yaml still exports a rubric
    assert invoke("export", "promptfoo", original, tmp_path / "import" / "rubric.yaml").exit_code == 0


@pytest.mark.parametrize(
    "name,edit,needle",
    [
        ("assertion-scoring-override/promptfooconfig.yaml", {"text": "Rates it"}, "is written as 'Rate the accuracy"),
        ("claude-thinking/promptfooconfig.yaml", {"text": "Explains", "tags": ["axis:x"]}, "has tags or a scale"),
    ],
)
def test_an_item_radar_cannot_write_back_is_one_line(name, edit, needle, tmp_path):
    """A templated rubric (one text every test renders with its vars) is edited where it is written; tags have no
    place in a promptfoo assertion: each is one line, and no file is written."""
    from tests.conftest import invoke, one_line_exit_2

    imported = formats.read("promptfoo", PROMPTFOO / name)
    config = {"tasks": [t.model_dump(mode="json", exclude_defaults=True) for t in imported.tasks]}
    config["tasks"][0]["items"][0] |= edit
    (tmp_path / "edited.yaml").write_text(yaml.safe_dump(config))
    one_line_exit_2(invoke("export", "promptfoo", PROMPTFOO / name, tmp_path / "edited.yaml", "--out",
                           tmp_path / "x.yaml"), needle)  # fmt: skip
    assert not (tmp_path / "x.yaml").exists()


def test_self_gradings_prompt_file_is_split_as_promptfoo_splits_it(tmp_path):
    """The real prompts.txt holds two prompts divided by '---': with a second criterion added to its config, the
    tasks render the first one, and the account says there are two."""
    folder = tmp_path / "self-grading"
    shutil.copytree(PROMPTFOO / "self-grading", folder)
    config = folder / "promptfooconfig.yaml"
    second = "    - type: llm-rubric\n      value: Answers the question asked\n"
    config.write_text(config.read_text().replace("    - type: javascript\n", second + "    - type: javascript\n"))
    imported = formats.read("promptfoo", config)
    assert imported.tasks[0].prompt == (
        "You're an ecommerce chat assistant for a shoe company.\n"
        'Answer this user\'s question: Bob: "Can you help me find a specific product on your website?"'
    )
    assert any("the first of the 2 prompts in prompts.txt" in line for line in imported.account)


def test_a_standalone_assertions_file_applies_to_every_output(tmp_path):
    """standalone-assertions/asserts.yaml is a list `promptfoo eval --assertions` runs on every output: with a
    second model-graded criterion written as llm-rubrics, its rubrics are criteria on every task; the export keeps
    the list (byte for byte unchanged; a rewritten criterion changes its own lines only)."""
    path = tmp_path / "asserts.yaml"
    text = (PROMPTFOO / "standalone-assertions" / "asserts.yaml").read_text()
    text = text.replace("- type: model-graded-closedqa", "- type: llm-rubric")
    path.write_text(text + "- type: llm-rubric\n  value: is polite\n")
    imported = formats.read("promptfoo", path)
    assert imported.rubric.ids == ["ensure_that_the_output", "is_polite"]
    assert any("standalone assertions file" in line for line in imported.account)
    assert formats.export("promptfoo", path, imported.rubric)[0] == path.read_text()
    rubric = imported.rubric
    polite = rubric.criteria[1].model_copy(update={"description": "is polite and warm"})
    edited, _ = formats.export("promptfoo", path, rubric.model_copy(update={"criteria": (rubric.criteria[0], polite)}))
    changed = [(a, b) for a, b in zip(path.read_text().splitlines(), edited.splitlines()) if a != b]
    assert changed == [("  value: is polite", "  value: is polite and warm")], changed


def test_g_eval_lists_criteria_alone_and_as_a_mean_on_the_one_prompt():
    """examples/g-eval: tests 1-4 score one criterion each, test 5 the four as a list (passing on their mean), all on
    'Hello! How are you?': each criterion passes alone at 7, and the account names the list's mean too."""
    imported = formats.read("promptfoo", PROMPTFOO / "g-eval" / "promptfooconfig.yaml")
    assert set(imported.thresholds.values()) == {7.0} and len(imported.thresholds) == 4
    (line,) = [a for a in imported.account if a.startswith("threshold: the g-eval list")]
    assert "passes when the mean of its scores reaches 7" in line and "alone" not in line and "only within" not in line
    assert "tasks: 1, prompts[0] as written, which every test asks" in imported.account


def test_rubrics_in_an_assert_set_or_behind_a_ref_are_read_as_promptfoo_runs_them(tmp_path):
    """examples/simple-test (real): its llm-rubric moved into an `assert-set` in defaultTest, and a second rubric
    kept in `assertionTemplates` reached by `$ref` (as the file reaches its icontains): both are criteria on every
    task; an export rewrites the one inside the set in place."""
    shutil.copytree(PROMPTFOO / "simple-test", tmp_path, dirs_exist_ok=True)
    data = yaml.safe_load((tmp_path / "promptfooconfig.yaml").read_text())
    data["assertionTemplates"]["pirate"] = {"type": "llm-rubric", "value": "Sounds like a pirate"}
    data["defaultTest"] = {
        "assert": [
            {"type": "assert-set", "threshold": 0.5, "assert": [{"type": "llm-rubric", "value": "Is polite"}]},
            {"$ref": "#/assertionTemplates/pirate"},
        ]
    }
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    imported = formats.read("promptfoo", path)
    assert imported.rubric.ids == ["is_polite", "sounds_like_a_pirate"]
    first = imported.rubric.criteria[0].model_copy(update={"description": "Is polite and brief"})
    text, _ = formats.export("promptfoo", path, imported.rubric.model_copy(update={"criteria": (first,
                             *imported.rubric.criteria[1:])}))  # fmt: skip
    written = yaml.safe_load(text)["defaultTest"]["assert"]
    assert written[0]["assert"][0]["value"].strip() == "Is polite and brief" and written[1] == {
        "$ref": "#/assertionTemplates/pirate"
    }


def test_a_test_variable_named_text_renders_the_tasks(tmp_path):
    """examples/assertion-scoring-override (real) names a var `text`: with its rubrics written without variables,
    the tasks render (no TypeError from the renderer's own argument name)."""
    source = PROMPTFOO / "assertion-scoring-override" / "promptfooconfig.yaml"
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(source.read_text().replace(" of {{text}} from English to {{language}}", ""))
    imported = formats.read("promptfoo", path)
    assert imported.rubric.ids == ["accuracy", "fluency", "grammar"]
    assert imported.tasks[0].prompt == "Translate the following text to Spanish: Hello, how are you today?"


INSPECT = CORPUS / "inspect"  # inspect_ai's example datasets (SOURCES.md)


@pytest.mark.parametrize(
    ("dataset", "fields", "scorer", "says"),
    [
        ("security_guide.jsonl", "", "model_graded_fact", "model_graded_fact grades a response against its sample's "
         "expert answer"),
        ("security_guide.jsonl", "", "model_graded_qa", "carry targets, each written for its own input (sample 1: "
         "'use parameterized queries and prepared"),
        ("biology_qa.jsonl", "sample_fields: {input: question, target: answer}\n", "model_graded_qa",
         "(sample 1: 'whateva')"),
    ],
)  # fmt: skip
def test_inspect_sample_targets_are_never_widened_to_every_task(tmp_path, dataset, fields, scorer, says):
    """Issue 60 item 21: inspect's model-graded scorers grade each sample against its own target (the expert
    answer of examples/security_guide.py, biology_qa.py); a criterion radar scores on every task cannot stand for
    one, so the dataset's targets, and the fact scorer, are refused in one line."""
    shutil.copy(INSPECT / dataset, tmp_path / dataset)
    path = tmp_path / "scorer.yaml"
    path.write_text(f"scorer: {scorer}\ndataset: {dataset}\n{fields}criteria: {{a: Is right., b: Is kind.}}\n")
    with pytest.raises(InputError) as refused:
        formats.read("inspect", path)
    assert "\n" not in str(refused.value) and says in str(refused.value), str(refused.value)


def test_inspect_dataset_inputs_without_targets_are_the_tasks(tmp_path):
    """The real security_guide inputs (chats of one user message) with their targets removed: the tasks, with the
    criteria scored on each."""
    import json

    lines = (INSPECT / "security_guide.jsonl").read_text().splitlines()
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"input": json.loads(x)["input"]}) + "\n" for x in lines))
    path = tmp_path / "scorer.yaml"
    path.write_text("dataset: q.jsonl\ncriteria: {a: Is right., b: Is kind.}\n")
    imported = formats.read("inspect", path)
    assert len(imported.tasks) == 16 and imported.tasks[0].prompt == "How do I prevent SQL Injection attacks?"
    assert "tasks: 16, the inputs of q.jsonl" in imported.account


def test_what_a_sweep_of_the_new_readers_found(tmp_path):
    """Issue 60's own sweep over the readers changed this round: an empty dataset fell back to the bundled tasks
    silently, samples of one id made tasks of one id, a target of 0 read as none, a $ref into a list read as
    nothing, and a named grade group was refused as no group."""
    from radar_local.formats.inspect_ai import read as read_inspect

    def scorer(extra: str, dataset: str = "") -> Path:
        (tmp_path / "d.jsonl").write_text(dataset)
        (tmp_path / "s.yaml").write_text(f"{extra}criteria: {{a: Is right., b: Is kind.}}\n")
        return tmp_path / "s.yaml"

    with pytest.raises(InputError, match="d.jsonl: holds no samples"):
        read_inspect(scorer("dataset: d.jsonl\n"))
    two = read_inspect(scorer("dataset: d.jsonl\n", '{"id": 1, "input": "q"}\n{"id": 1, "input": "r"}\n'))
    assert len({t.id for t in two.tasks}) == 2
    with pytest.raises(InputError, match="carry targets.*\\(sample 1: '0'\\)"):
        read_inspect(scorer("dataset: d.jsonl\n", '{"input": "q", "target": 0}\n'))
    named = read_inspect(scorer("grade_pattern: 'GRADE: (?P<g>[CI])'\n"))
    assert named.judge is not None and named.judge.answer.parts[1] == "[CI]"
    (tmp_path / "p.yaml").write_text(
        "x: [{type: llm-rubric, value: c}]\ndefaultTest:\n  assert: [{$ref: '#/x/0'}, {type: llm-rubric, value: a}]\n"
    )
    assert formats.read("promptfoo", tmp_path / "p.yaml").rubric.ids == ["c", "a"]
