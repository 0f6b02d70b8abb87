"""A thinking judge's verdict in two requests (issue 48, `judge: {reasoning: ...}`).

radar constrains a verdict from its first token, so a judge that reasons before it answers (Qwen3 in thinking mode,
DeepSeek-R1 and its distills, J1, JudgeLRM) could not think. With `reasoning`, each verdict is two requests to
the same engine: the first free, greedy, at most `budget` tokens; where its text holds the end of the reasoning
(`</think>`, or the `end` a `tags` judge is given), the second continues the same turn after it (the reasoning as
the start of the judge's answer) under the verdict's constraint. A reasoning that hits the budget, or stops
without its end, is unscored with that reason: never cut short into a score. Every engine takes it: the local
ones render the turn as the chat template's generation prompt followed by the reasoning as written
(engines/base.chat_text), the OpenAI-compatible one sends vLLM's `continue_final_message`. The first request stops
at the end of its reasoning (a stop string each engine keeps in the text): no unconstrained answer is written after
it; the constrained one is the verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from radar_local.engines.base import THINK, Completion, Engine, Sampling, ScoreFormat
from radar_local.errors import RadarError
from radar_local.judge import AFTER_THOUGHT, END_OF_THOUGHT, Reasoning
from radar_local.prompts import Messages, Prompt

OVER_BUDGET = "the reasoning hit its budget before it ended"
UNENDED = "the reasoning stopped without its end"
NOT_ASKED = "error"  # the second request's finish where none was made
SPLIT_BY_SERVER = (
    "the server split the judge's reasoning off its answer (message.reasoning: `vllm serve --reasoning-parser`), so "
    "radar cannot read where it ends; serve the judge without --reasoning-parser (radar reads the reasoning itself, "
    "judge: {reasoning: ...})"
)


@dataclass(frozen=True)
class Thought:
    """The first request's reasoning through its end ("" where it did not end), its tokens, and why no verdict
    follows (None where one does)."""

    text: str
    tokens: int
    unscored: str | None


def thought_of(c: Completion, reasoning: Reasoning) -> Thought:
    at = c.text.find(reasoning.ends_with)
    if c.finish_reason == "error" or at < 0:
        why = None if c.finish_reason == "error" else OVER_BUDGET if c.finish_reason == "length" else UNENDED
        return Thought("", c.output_tokens, why)
    return Thought(c.text[: at + len(reasoning.ends_with)], c.output_tokens, None)


def as_the_template_writes(thought: str, parser: str) -> str:
    """The reasoning as Qwen3's template re-writes an assistant turn's (`<think>\n` + its text without the new
    lines around it + `\n</think>`): a server continuing the turn (continue_final_message) must find the turn as
    sent in what the template renders, or refuses it (HTTP 400), so every engine sends it so. Only new lines at
    its two ends change; other families' reasoning is sent as written."""
    if parser != "qwen3" or END_OF_THOUGHT["qwen3"] not in thought:
        return thought
    inner = thought.split(END_OF_THOUGHT["qwen3"])[0].rstrip("\n").split(THINK)[-1].strip("\n")
    return f"{THINK}\n{inner}\n{END_OF_THOUGHT['qwen3']}"


def check_continuation(engine: Engine, messages: Messages, reasoning: Reasoning) -> None:
    """Refuse, before any call of a stage, a thinking judge whose engine cannot continue its turn."""
    opened = "" if reasoning.parser == "tags" else f"{THINK}\n"
    probe = as_the_template_writes(f"{opened}A check.\n{reasoning.ends_with}", reasoning.parser)
    if problem := engine.continuation_problem(continued(messages, probe + AFTER_THOUGHT[reasoning.parser])):
        raise RadarError(problem)


def continued(messages: Messages, thought: str) -> Prompt:
    """The verdict's messages with the judge's reasoning as the start of its turn (what it asked, kept)."""
    return Prompt([*messages, {"role": "assistant", "content": thought}], **getattr(messages, "fields", {}))


def think_then_answer(
    engine: Engine, prompts: list[Messages], *, fmt: ScoreFormat, reasoning: Reasoning, chunk: int, seed: int
) -> Iterator[list[tuple[int, Completion, Thought]]]:
    """Each prompt's reasoning, then its constrained verdict where the reasoning ended: (index, verdict, thought)
    as they finish. The reasonings stream (vLLM and a server keep their schedulers full, a batch engine answers
    `chunk` at a time); the verdicts of every `chunk` ended reasonings are asked while the others still run, so
    no verdict waits for the longest reasoning of its batch. Where no verdict was asked, the verdict is an empty
    completion finished 'error' (its Thought says why)."""
    after = AFTER_THOUGHT[reasoning.parser]  # the template's own break before the answer
    ready: list[tuple[int, Thought]] = []

    def answered(thought_out: list[tuple[int, Thought]]) -> list[tuple[int, Completion, Thought]]:
        asked: list[Messages] = [
            continued(prompts[i], as_the_template_writes(t.text, reasoning.parser) + after) for i, t in thought_out
        ]
        return [(i, c, t) for (i, t), c in zip(thought_out, engine.score(asked, fmt=fmt))]

    firsts = engine.generate_stream(  # stopped at the reasoning's end: what would follow is the constrained verdict's
        prompts, Sampling(1, 0.0, reasoning.budget, (reasoning.ends_with,)), seeds=[seed] * len(prompts), chunk=chunk
    )
    for finished in firsts:
        out = []
        for i, (first, *_) in finished:
            if first.reasoning is not None:
                raise RadarError(SPLIT_BY_SERVER)
            thought = thought_of(first, reasoning)
            if thought.unscored or not thought.text:
                out.append((i, Completion("", first.prompt_tokens, 0, NOT_ASKED), thought))
            else:
                ready.append((i, thought))
        if len(ready) >= chunk:
            out += answered(ready)
            ready = []
        if out:
            yield out
    if ready:
        yield answered(ready)
