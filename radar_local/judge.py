"""The judge a team runs: its prompt template, its answer's shape, and one call per criterion or one for all.

A template is user input: it renders in Jinja2's immutable sandbox with strict undefined variables, within
bounds of time, loop steps and size (radar_local/sandbox.py). Its
variables are `prompt` (the task), `document` (a summary task's source article; empty otherwise),
`reference` (the task's reference answer, for a judge that grades against one; every task must have one),
`response`, `format` (response or summary), `criterion` (id, label, description, scale) for a
per-criterion call, `criteria` (the same for every criterion the call scores, in the order shown: all of
them in a joint call, the one in a per-criterion call, so one template can serve both), and
`scale` (the criterion's scale; a joint call's where all share one): name, min, max, levels (name,
value, anchor) and `describe`. Without a template, radar's own prompts run (prompts.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from jinja2 import TemplateError, TemplateSyntaxError, meta
from pydantic import Field, model_validator

from radar_local.answer import JsonShape, Shape
from radar_local.common import Frozen, refusing
from radar_local.defences import Defence
from radar_local.errors import InputError
from radar_local.presets import JUDGE_PRESETS, with_preset
from radar_local.prompts import Messages
from radar_local.rubric import Criterion, Task
from radar_local.sandbox import environment, render_bounded
from radar_local.scale import Scale

CallMode = Literal["per-criterion", "joint"]
CALL_MODES: tuple[CallMode, ...] = ("per-criterion", "joint")
VARIABLES = ("prompt", "document", "reference", "response", "format", "criterion", "criteria", "scale")


END_OF_THOUGHT = {"qwen3": "</think>", "deepseek_r1": "</think>"}  # where each family's reasoning ends
# The turn a judge of each family starts when it does not think: Qwen3's chat template with enable_thinking=False
# writes this empty block (its model card), which DeepSeek-R1's distills read the same way; a `tags` judge answers.
NO_THOUGHT = {"qwen3": "<think>\n\n</think>\n\n", "deepseek_r1": "<think>\n\n</think>\n\n", "tags": ""}
# What each family's chat template writes between the end of a reasoning and the answer (Qwen3's and R1's render an
# assistant turn as `<think>\n...\n</think>\n\n` + answer): the verdict is asked after it on every engine, as a
# server continuing the turn through the template asks it (issue 60 item 4)
AFTER_THOUGHT = {"qwen3": "\n\n", "deepseek_r1": "\n\n", "tags": ""}


class Reasoning(Frozen):
    """`judge: {reasoning: ...}`: the judge thinks freely (up to `budget` tokens) before its verdict, whose
    constraint applies only after the reasoning ends (radar_local/reasoning.py: two requests, the second continuing
    the first's reasoning)."""

    budget: int = Field(ge=8, le=32768, description="The most tokens the judge may think before its verdict")
    parser: Literal["qwen3", "deepseek_r1", "tags"] = Field(
        "qwen3",
        description="Where the reasoning ends: qwen3 and deepseek_r1 at </think> (Qwen3 / QwQ / DeepSeek-R1 and "
        "their distills, J1, JudgeLRM), tags at the `end` you name (a judge told to reason in tags of its own)",
    )
    end: str | None = Field(None, min_length=1, description="tags: the text that ends the reasoning")
    ablation: bool = Field(
        False,
        description="Also score the same probes without reasoning, as '<label>-no-reasoning', and report what "
        "thinking changes: every self-effect and leakage, paired (docs/judges.md)",
    )
    think: bool = Field(
        True,
        description="False: the ablation's other arm, the verdict at once after an empty reasoning (set by radar, "
        "not by hand)",
    )

    @model_validator(mode="after")
    def _an_end(self) -> Reasoning:
        if (self.parser == "tags") != (self.end is not None):
            raise ValueError("reasoning: parser tags names its `end` (say </reasoning>); the others have their own")
        return self

    @property
    def ends_with(self) -> str:
        return self.end if self.end is not None else END_OF_THOUGHT[self.parser]

    def identity(self) -> dict:
        """What of the reasoning changes a verdict: all but the ablation, which adds verdicts of another label
        (`think` only where it is off, so a thinking judge's keys stay what they were)."""
        out = self.model_dump(mode="json", exclude={"ablation"})
        if self.think:
            del out["think"]
        return out


RUBRIC_SCALES = (
    "a judge scores on the rubric's scales (a jury's jurors share them): put `scale` in the rubric, for all criteria "
    "or per criterion"
)


class Judge(Frozen):
    """`judge:` on a verifier: what it is asked and how it answers."""

    preset: (
        Literal[
            "prometheus-2-absolute",
            "prometheus-2-absolute-reference",
            "flow-judge",
            "selene-mini",
            "glider",
            "mt-bench",
            "healthbench",
        ]
        | None
    ) = Field(
        None,
        description="An open judge's own format (radar_local/presets.py): fills template and answer, each of which "
        "can still be given",
    )

    template: str | None = Field(None, min_length=1, description="Jinja2 text of the user message")
    template_file: str | None = Field(None, min_length=1, description="A file holding the template (read once)")
    system: str | None = Field(None, min_length=1, description="Jinja2 text of a system message, if any")
    answer: Shape = Field(default_factory=JsonShape, description="json (named fields), grade (a pattern) or bare")
    calls: CallMode | list[CallMode] = Field(
        "per-criterion",
        description="per-criterion, joint (one call for all criteria), or both: [per-criterion, joint] "
        "audits the verifier both ways on the same probes and reports the halo joint calls add",
    )
    order: Literal["rubric", "shuffled", "balanced"] = Field(
        "rubric",
        description="Joint calls: the criteria in the rubric's order, a seeded order per probe, or balanced: the "
        "rubric's order rotated by one more place for each variant of a stratum (a Latin square), from a seeded start",
    )
    halo_check: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Joint calls: also score this share of each stratum's probes per criterion (the first "
        "ceil(share x N)), and report the halo joint calls add on them before their verdicts are trusted",
    )
    reading: Literal["rubric", "deployed"] = Field(
        "rubric",
        description="Joint calls: whose coupling the findings are about. rubric (default): the rubric's, so a "
        "finding is confirmed only where a halo check finds no halo joint calls add (stats/joint.py); deployed: "
        "this joint judge's as it scores in production, its halo part of its coupling",
    )

    reasoning: Reasoning | None = Field(
        None,
        description="Let the judge think before its verdict: {budget: tokens, parser: qwen3 | deepseek_r1 | tags}; "
        "a verdict whose reasoning hits the budget is unscored with that reason (docs/judges.md)",
    )
    defences: list[Defence] = Field(
        [],
        description="What the judge is shown of a response, hardened (radar_local/defences.py): fence (inside a "
        "delimiter it cannot contain), untrusted (a line saying it is data, never instructions), neutralise (the "
        "judge's own answer syntax shown in full-width forms); `attacks: {defences: [...]}` measures each",
    )
    paraphrases: list[str] | None = Field(
        None,
        min_length=1,
        description="Other wordings of the template (Jinja2 texts of the user message): each scores the same probes "
        "as its own verifier '<label>-paraphrase-k', and the audit reports how far the verdicts and leakages move "
        "with the wording (stats/wording.py)",
    )

    @model_validator(mode="before")
    @classmethod
    def _preset_fills_template_and_answer(cls, data: object) -> object:
        return with_preset(data, JUDGE_PRESETS)

    _scales_are_the_rubrics = refusing("scale", RUBRIC_SCALES)

    @model_validator(mode="after")
    def _one_template(self) -> Judge:
        if self.template is not None and self.template_file is not None:
            raise ValueError("give 'template' or 'template_file', not both")
        if isinstance(self.calls, list) and (not self.calls or len(set(self.calls)) < len(self.calls)):
            raise ValueError("calls: name each mode once (per-criterion, joint)")
        if self.system is not None and self.template is None and self.template_file is None:
            raise ValueError("a 'system' template goes with a 'template'")
        if self.order == "balanced" and self.calls == "per-criterion":
            raise ValueError("order: balanced orders the criteria of a joint call; this judge makes per-criterion "
                             "calls (add calls: joint)")  # fmt: skip
        if len(set(self.defences)) < len(self.defences):
            raise ValueError("defences: name each defence once")
        if self.paraphrases is not None and self.template is None and self.template_file is None:
            raise ValueError("paraphrases reword a template: give the judge its own 'template' first")
        if self.paraphrases is not None and any(not p.strip() for p in self.paraphrases):
            raise ValueError("a paraphrase is empty; write the prompt the judge is given")
        if self.reading != "rubric" and "joint" not in self.modes:
            raise ValueError("reading: deployed reads a joint judge as deployed; this judge makes per-criterion calls")
        if self.halo_check is not None and self.calls != "joint":
            raise ValueError(
                "halo_check goes with calls: joint (calls: [per-criterion, joint] already scores every probe both ways)"
            )
        return self

    @property
    def modes(self) -> list[CallMode]:
        return list(self.calls) if isinstance(self.calls, list) else [self.calls]

    @property
    def joint(self) -> bool:
        return self.calls == "joint"


def render_text(text: str, /, **values: object) -> str:
    """Any template text rendered in the judge's sandbox (an imported prompt with its variables, any of them
    named `text`)."""
    return render_bounded(text, values)


def template_problem(judge: Judge) -> str | None:
    """What is wrong with a judge's templates before anything renders, in one line; None where nothing is."""
    for what, text in (("template", judge.template), ("system template", judge.system)):
        if text is not None and isinstance(found := _variables(text, what, VARIABLES), str):
            return found
    text = (judge.template or "") + (judge.system or "")
    used = meta.find_undeclared_variables(environment().parse(text))
    if "response" not in used:
        return "the template never shows the response ({{ response }}): its judge would rate nothing"
    if "joint" in judge.modes and "criteria" not in used:
        return "calls: joint needs the template to show {{ criteria }}: the criteria it scores at once"
    if "criterion" not in used and "criteria" not in used:
        return (
            "the template never shows the criterion ({{ criterion }} or {{ criteria }}): every verdict would be alike"
        )
    return None


def missing_reference(texts: list[str | None], tasks: Sequence[Task]) -> str | None:
    """Where templates show {{ reference }}: the first task without a reference answer, in one line; else None."""
    used = set().union(*(meta.find_undeclared_variables(environment().parse(t)) for t in texts if t))
    bare = next((t.id for t in tasks if t.reference is None), None) if "reference" in used else None
    if bare is None:
        return None
    return (
        f"the template shows {{{{ reference }}}}, a reference answer, and task '{bare}' has none; give every task its "
        "`reference` (a tasks file: a `reference` column, or columns: {reference: <name>})"
    )


GOOD = re.compile(r"\b(?:excellent|best|perfect|outstanding|exceptional|ideal|great|flawless)\b", re.I)
BAD = re.compile(r"\b(?:poor|worst|bad|terrible|awful|unacceptable|fails?|failing|useless|wrong)\b", re.I)
INVERTED = re.compile(
    r"\b(?:lower|lowest|smaller)\b[^.\n,;]{0,40}?\b(?:better|best)\b|\b(?:higher|highest|larger)\b[^.\n,;]{0,40}?"
    r"\b(?:worse|worst)\b",
    re.I,
)


def polarity_warning(text: str, scale: Scale) -> str | None:
    """Where a template reads the scale the other way from the rubric (radar's scales put the best at the top:
    a self-effect is the + probes' score minus the - probes'): what it says, quoted; else None. A lint: it reads
    "lower is better" and a bottom level named good or a top level named bad ("1 = excellent", "5: poor")."""
    if (found := INVERTED.search(text)) is not None:
        return found.group(0)
    top, bottom = (scale.tokens[scale.values.index(v)] for v in (max(scale.values), min(scale.values)))
    for token, wrong, right in ((top, BAD, GOOD), (bottom, GOOD, BAD)):
        level = rf"(?<![\w.]){re.escape(token)}(?![\w.])"
        claims = (
            rf"{level}\s*(?:=|:|-(?!\s*\d)|means|is)\s*([^\n.;,]{{0,40}})",  # "1 = excellent", "5: poor"
            rf"{level}\s*\(([^)\n]{{0,40}})\)",  # "from 1 (best) to 5 (worst)"
            rf"\b(?:give|assign|award)\s+(?:an?\s+)?{level}\s+(?:to|for)\s+([^\n.;,]{{0,40}})",  # "give 1 to the best"
        )
        for claim in claims:
            for said in re.finditer(claim, text, re.I):
                if wrong.search(said.group(1)) and not right.search(said.group(1)):
                    return said.group(0).strip()
    return None


def _variables(text: str, what: str, defined: tuple[str, ...]) -> set[str] | str:
    """The variables a template uses, or in one line why it cannot be used: it does not parse, or it uses one
    radar does not define."""
    try:
        used = meta.find_undeclared_variables(environment().parse(text))
    except TemplateSyntaxError as exc:
        return f"the {what} does not parse (line {exc.lineno}: {exc.message})"
    unknown = sorted(used - set(defined))
    if unknown:
        return f"the {what} uses '{unknown[0]}', which radar does not define; it defines {', '.join(defined)}"
    return used


def _task_values(task: Task) -> dict[str, str]:
    """What every judge template sees of the task."""
    return {
        "prompt": task.prompt,
        "document": task.prompt if task.format == "summary" else "",
        "reference": task.reference or "",
        "format": task.format,
    }


def _scale_data(scale: Scale) -> dict:
    anchors = scale.anchors or {}
    levels = [{"name": t, "value": v, "anchor": anchors.get(t)} for t, v in zip(scale.tokens, scale.values)]
    return {"name": scale.name, "min": scale.low, "max": scale.high, "levels": levels, "describe": scale.describe()}


def _criterion_data(criterion: Criterion, scale: Scale) -> dict:
    return {
        "id": criterion.id,
        "label": criterion.label,
        "description": criterion.description,
        "scale": _scale_data(scale),
    }


def render(judge: Judge, task: Task, response: str, criteria: list[tuple[Criterion, Scale]]) -> Messages:
    """The judge's messages for one call: one criterion (a per-criterion call) or all of them (joint).
    A template the sandbox refuses at render time raises InputError naming the judge."""
    scales = [scale for _, scale in criteria]
    shared = all(scale == scales[0] for scale in scales)
    shown = [_criterion_data(c, s) for c, s in criteria]
    values = {
        **_task_values(task),
        "response": response,
        "criterion": shown[0] if len(shown) == 1 else None,
        "criteria": shown,
        "scale": _scale_data(scales[0]) if shared else None,
    }
    assert judge.template is not None, "a judge file is read into `template` when its config is resolved"
    try:
        messages = [{"role": "user", "content": render_bounded(judge.template, values)}]
        if judge.system is not None:
            messages.insert(0, {"role": "system", "content": render_bounded(judge.system, values)})
    except TemplateError as exc:
        raise InputError("judge template", f"does not render ({type(exc).__name__}: {exc}); fix the template") from None
    return messages


PAIR_VARIABLES = ("prompt", "document", "reference", "response_a", "response_b", "format", "criterion")


def pair_template_problem(template: str, criterion: bool = True) -> str | None:
    """What is wrong with a pairwise judge's template before anything renders, in one line; None where nothing is.
    `criterion`: its questions name one (a judge asked only which is better overall need not show it)."""
    used = _variables(template, "pairwise template", PAIR_VARIABLES)
    if isinstance(used, str):
        return used
    missing = [v for v in ("response_a", "response_b", *(["criterion"] if criterion else [])) if v not in used]
    if missing:
        return (
            f"the pairwise template never shows {{{{ {missing[0]} }}}}: a pairwise judge compares response_a with "
            "response_b on the criterion asked"
        )
    return None


def render_pair(template: str, task: Task, first: str, second: str, criterion: Criterion) -> Messages:
    """A pairwise judge's message: which of `first` (A) and `second` (B) is better on `criterion`."""
    values = {
        **_task_values(task),
        "response_a": first,
        "response_b": second,
        "criterion": {"id": criterion.id, "label": criterion.label, "description": criterion.description},
    }
    try:
        return [{"role": "user", "content": render_bounded(template, values)}]
    except TemplateError as exc:
        raise InputError("pairwise template", f"does not render ({type(exc).__name__}: {exc}); fix it") from None
