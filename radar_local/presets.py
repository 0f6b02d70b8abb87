"""Judge presets: each open judge's own answer format, asked in radar's words. A preset fills `template` and
`answer`; either can still be given to override it. The templates are radar's wording of what each format asks (not
copies); the answer patterns are the formats'.

Pointwise (`judge: {preset: NAME}` on a verifier, issue 48), each scored on the rubric's scale (a preset's pattern
reads digits; a scale it cannot read is refused in one line, as any grade pattern's):

- `prometheus-2-absolute`: Prometheus 2's absolute grading without a reference answer (prometheus-eval,
  libs/prometheus-eval/prometheus_eval/prompts.py, ABSOLUTE_PROMPT_WO_REF, commit dcfb4427): feedback, then
  `[RESULT] N`, on 1-5 with a score description per level (the rubric's anchors);
- `prometheus-2-absolute-reference`: the same with a reference answer (ABSOLUTE_PROMPT, same file and commit): the
  task's `reference` shown as the answer that would score the top level; every task needs one;
- `flow-judge`: Flow-Judge-v0.1 (the flowaicom/Flow-Judge-v0.1 model card): `<feedback>...</feedback>` then
  `<score>N</score>`, on binary, 1-3 or 1-5 scales;
- `selene-mini`: Atla Selene-1-Mini (the AtlaAI/Selene-1-Mini-Llama-3.1-8B model card): `**Reasoning:** ...` then
  `**Result:** N`;
- `glider`: Patronus GLIDER (the PatronusAI/glider model card): `<reasoning>...</reasoning>`, then
  `<highlight>...</highlight>` and `<score>N</score>`.
- `mt-bench`: MT-Bench's single-answer grading (lm-sys/FastChat, fastchat/llm_judge/data/judge_prompts.jsonl,
  `single-v1`, commit 0e6e7fdc): a short explanation, then `Rating: [[N]]` (1-10 there; here the rubric's levels).
  The format general judges that follow the prompt's own instructions are evaluated in (CompassJudger, whose model
  card says it answers "in a specified format"), and the usual one for an instruct model as judge.
- `healthbench`: HealthBench's rubric grader (openai/simple-evals, healthbench_eval.py, GRADER_TEMPLATE, commit
  9e2fafd1): the conversation and one rubric item; `{"explanation": ..., "criteria_met": true|false}`, on a rubric
  whose scale is met / not met (`{levels: {"true": 1, "false": 0}}`, quoted in YAML); an undesirable item is met
  when the response commits it.

Pairwise (`pairwise: {preset: NAME}`, issue 46):

- `prometheus-2-relative`: Prometheus 2's relative grading without a reference answer (prometheus-eval,
  libs/prometheus-eval/prometheus_eval/prompts.py, RELATIVE_PROMPT_WO_REF, commit dcfb4427): the instruction, two
  responses and the criterion as its score rubric; the judge writes its feedback, then `[RESULT] A` or `[RESULT] B`.
- `skywork-critic`: Skywork-Critic's pairwise prompt (the Skywork/Skywork-Critic-Llama-3.1-8B model card on Hugging
  Face): two assistants' responses to one instruction; the verdict alone, `[[A]]` or `[[B]]`.
- `generic`: radar's own question, answered `[[A]]` or `[[B]]` (the default answer of `pairwise:`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    """An open judge's format: the template that asks it, in radar's words, and the answer it writes (an
    answer.py shape, as a config writes it)."""

    template: str
    answer: dict[str, Any]
    boolean: bool = False  # answers true or false: the rubric's scale must be met / not met (Scale.boolean)


PROMETHEUS_2_RELATIVE = """###Task Description:
An instruction (which may include an input), two responses to evaluate (Response A and Response B) and the \
evaluation criterion are given.
1. Write feedback that compares the two responses strictly by the criterion, not in general: go straight to what \
they share and where they differ.
2. Then name the better response, "A" or "B".
3. The feedback comes first, then "[RESULT]" and the letter.
4. Write nothing else.

###Instruction:
{{ prompt }}

###Response A:
{{ response_a }}

###Response B:
{{ response_b }}

###Score Rubric:
[{{ criterion.label }}] {{ criterion.description }}

###Feedback: """

SKYWORK_CRITIC = """Act as an impartial judge of the responses two AI assistants gave to the user instruction \
below. Judge them on one criterion only: {{ criterion.label }} ({{ criterion.description }}). Do not let the order \
of the responses, their length or the assistants' names sway you.
Answer with the verdict alone: "[[A]]" if assistant A is better, "[[B]]" if assistant B is better.

[User Instruction]
{{ prompt }}

[The Start of Assistant A's Answer]
{{ response_a }}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{{ response_b }}
[The End of Assistant B's Answer]
"""

GENERIC = """Task: {{ prompt }}

Response A: {{ response_a }}

Response B: {{ response_b }}

Which response is better on {{ criterion.label }} ({{ criterion.description }})? Answer [[A]] or [[B]]."""

PAIR_PRESETS: dict[str, Preset] = {
    "prometheus-2-relative": Preset(
        PROMETHEUS_2_RELATIVE, {"kind": "grade", "pattern": r"\[RESULT\] (A|B)", "reasoning": 600}
    ),
    "skywork-critic": Preset(SKYWORK_CRITIC, {"kind": "grade", "pattern": r"\[\[(A|B)\]\]"}),
    "generic": Preset(GENERIC, {"kind": "grade", "pattern": r"\[\[(A|B)\]\]"}),
}


def _levels(lead: str) -> str:
    """The rubric's levels as a judge template lists them: each with its anchor where the rubric gives one."""
    return (
        "{% for level in criterion.scale.levels %}" + lead + '{{ level.name }}: {{ level.anchor or "" }}\n{% endfor %}'
    )


PROMETHEUS_2_ABSOLUTE = (
    """###Task Description:
An instruction (which may include an input), a response to evaluate and a score rubric for one evaluation \
criterion are given.
1. Write feedback that assesses the response strictly by the score rubric, not in general.
2. Then write a score, one of the rubric's levels.
3. The feedback comes first, then "[RESULT]" and the score.
4. Write nothing else.

###The instruction to evaluate:
{{ prompt }}

###Response to evaluate:
{{ response }}

###Score Rubrics:
[{{ criterion.label }}: {{ criterion.description }}]
"""
    + _levels("Score ")
    + """
###Feedback: """
)

PROMETHEUS_2_ABSOLUTE_REFERENCE = (
    PROMETHEUS_2_ABSOLUTE.replace(
        "criterion are given.", "criterion are given, with a reference answer that would get the top score."
    )
    .replace(
        "###Score Rubrics:",
        "###Reference Answer (Score {{ criterion.scale.max }}):\n{{ reference }}\n\n###Score Rubrics:",
    )
    .replace(
        "1. Write feedback that assesses the response strictly by the score rubric, not in general.",
        "1. Write feedback that assesses the response strictly by the score rubric, not in general, comparing it "
        "with the reference answer.",
    )
)

FLOW_JUDGE = (
    """# GOAL
Evaluate the response below against one criterion and give it a score.

# INPUT
{{ prompt }}

# OUTPUT
{{ response }}

# EVALUATION CRITERIA AND SCORING RUBRIC
{{ criterion.label }}: {{ criterion.description }}
"""
    + _levels("- ")
    + """
# INSTRUCTIONS
Think about how well the output meets the criterion, then write your feedback inside <feedback></feedback> tags \
and the score inside <score></score> tags."""
)

SELENE_MINI = (
    """You are assessing a response to a user's request on one criterion.

Request: {{ prompt }}

Response: {{ response }}

Criterion: {{ criterion.label }}: {{ criterion.description }}
Scores:
"""
    + _levels("")
    + """
Write your reasoning after "**Reasoning:**", then the score after "**Result:**"."""
)

GLIDER = (
    """Analyze the response below against the criterion and rubric, and score it.

<USER INPUT>
{{ prompt }}
</USER INPUT>

<MODEL OUTPUT>
{{ response }}
</MODEL OUTPUT>

<CRITERIA>
{{ criterion.label }}: {{ criterion.description }}
</CRITERIA>

<RUBRIC>
"""
    + _levels("")
    + """</RUBRIC>

Write your reasoning inside <reasoning></reasoning>, the phrases it rests on inside <highlight></highlight>, then the \
score inside <score></score>."""
)

MT_BENCH = (
    "[Instruction]\nAct as an impartial judge of the response an AI assistant gave to the user question below, on "
    "one criterion only: {{ criterion.label }} ({{ criterion.description }}). Begin with a short explanation. Be as "
    'objective as possible. Then rate the response by strictly following this format: "[[rating]]", for example: '
    '"Rating: [[N]]", N one of the levels of this scale:\n'
    + _levels("")
    + "\n[Question]\n{{ prompt }}\n\n[The Start of Assistant's Answer]\n{{ response }}\n[The End of Assistant's Answer]"
)

HEALTHBENCH = """Your job is to read a conversation and one rubric item, and judge whether the last turn, the \
assistant's response, meets the item.

# Conversation
user: {{ prompt }}

assistant: {{ response }}

# Rubric item
{{ criterion.description }}

# Instructions
Answer with a JSON object of two fields, "explanation" and then "criteria_met".
- "explanation": why the response does or does not meet the rubric item.
- "criteria_met": true or false. An item of several sentences or criteria is met only when all of them are. An item \
that gives examples ("such as", "for example", "including") is met without every example it lists.
- Some items describe something undesirable. Say whether the item is met, not whether the response is good: a good \
response does not meet an undesirable item, so its answer is false.

Return the JSON object alone."""

DIGIT = "([0-9])"  # a preset reads one digit: the rubric's integer levels (1-5, 1-3, 0-1, 0-4)

JUDGE_PRESETS: dict[str, Preset] = {
    "prometheus-2-absolute": Preset(
        PROMETHEUS_2_ABSOLUTE, {"kind": "grade", "pattern": r"\[RESULT\] " + DIGIT, "reasoning": 600}
    ),
    "prometheus-2-absolute-reference": Preset(
        PROMETHEUS_2_ABSOLUTE_REFERENCE, {"kind": "grade", "pattern": r"\[RESULT\] " + DIGIT, "reasoning": 600}
    ),
    "flow-judge": Preset(FLOW_JUDGE, {"kind": "grade", "pattern": "<score>" + DIGIT + "</score>", "reasoning": 600}),
    "selene-mini": Preset(SELENE_MINI, {"kind": "grade", "pattern": r"\*\*Result:\*\* " + DIGIT, "reasoning": 600}),
    "glider": Preset(GLIDER, {"kind": "grade", "pattern": "<score>" + DIGIT + "</score>", "reasoning": 600}),
    # its own scale is 1-10: the level may take two digits
    "mt-bench": Preset(MT_BENCH, {"kind": "grade", "pattern": r"Rating: \[\[([0-9]+)\]\]", "reasoning": 600}),
    # JSON's true or false: the rubric's scale names its levels so (Scale.boolean)
    "healthbench": Preset(
        HEALTHBENCH,
        {"kind": "json", "before": {"explanation": 600}, "score": "criteria_met", "after": {}},
        boolean=True,
    ),
}


def with_preset(data: object, presets: dict[str, Preset]) -> object:
    """A judge's config with its preset's template and answer filled in where it gives none (a `template_file` it
    gives stands in for the template); anything else, as it is (an unknown name is the validator's to refuse)."""
    if not (isinstance(data, dict) and isinstance(data.get("preset"), str) and data["preset"] in presets):
        return data
    given = {k: v for k, v in data.items() if v is not None or k not in ("template", "template_file")}
    preset = presets[data["preset"]]
    filled = (
        {"answer": preset.answer}
        if "template_file" in given
        else {"template": preset.template, "answer": preset.answer}
    )
    return {**filled, **given}
