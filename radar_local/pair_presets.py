"""Pairwise judge presets (`pairwise: {preset: NAME}`, issue 46): each judge's own answer format, asked in radar's
words. A preset fills `template` and `answer`; either can still be given to override it.

- `prometheus-2-relative`: Prometheus 2's relative grading without a reference answer (prometheus-eval,
  libs/prometheus-eval/prometheus_eval/prompts.py, RELATIVE_PROMPT_WO_REF, commit dcfb4427): the instruction, two
  responses and the criterion as its score rubric; the judge writes its feedback, then `[RESULT] A` or `[RESULT] B`.
- `skywork-critic`: Skywork-Critic's pairwise prompt (the Skywork/Skywork-Critic-Llama-3.1-8B model card on Hugging
  Face): two assistants' responses to one instruction; the verdict alone, `[[A]]` or `[[B]]`.
- `generic`: radar's own question, answered `[[A]]` or `[[B]]` (the default answer of `pairwise:`).

The templates are radar's wording of what each format asks (not copies); the answer patterns are the formats'.
"""

from __future__ import annotations

from typing import Any

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

PRESETS: dict[str, dict[str, Any]] = {
    "prometheus-2-relative": {
        "template": PROMETHEUS_2_RELATIVE,
        "answer": {"kind": "grade", "pattern": r"\[RESULT\] (A|B)", "reasoning": 600},
    },
    "skywork-critic": {"template": SKYWORK_CRITIC, "answer": {"kind": "grade", "pattern": r"\[\[(A|B)\]\]"}},
    "generic": {"template": GENERIC, "answer": {"kind": "grade", "pattern": r"\[\[(A|B)\]\]"}},
}
