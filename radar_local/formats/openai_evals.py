"""OpenAI evals' model-graded specs (`evals/registry/modelgraded/*.yaml`): one spec, `prompt` (text or chat
messages in Python's format style: `{input}`, `{completion}`, `{criteria}`), `choice_strings`,
`choice_scores` (a mapping or `from_strings`), `eval_type` and `args.criteria` (name -> text), the
criteria the spec is run with (closedqa's conciseness, relevance, ...).

The shapes follow openai/evals (evals/elsuite/modelgraded/classify_utils.py and the registry's
closedqa.yaml): `cot_classify` asks for reasoning and then the choice alone on the last line, `classify`
for the choice alone. Each choice's score is its level's value on radar's scale.
"""

from __future__ import annotations

from pathlib import Path

from radar_local.answer import BareShape, GradeShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.rubric import Rubric
from radar_local.scale import Scale, literal_regex

REASONING = 600  # characters of reasoning before the choice (one line)
ANSWER_WORDS = {  # radar's words for what each eval_type asks (OpenAI evals appends its own)
    "cot_classify": "First reason step by step about the criterion on one line, without stating the answer at "
    "the outset. Then write only one of {choices} (without quotes or punctuation) on a new line.",
    "classify": "Answer with only one of {choices} (without quotes or punctuation).",
}


def _spec(path: Path) -> tuple[str, dict, dict]:
    data = shared.mapping(path, shared.load_yaml(path), "a model-graded spec file (spec name -> spec)")
    if len(data) != 1:
        raise InputError(path, f"holds {len(data)} specs ({', '.join(map(str, data))}); import one spec per file")
    ((name, spec),) = data.items()
    spec = shared.mapping(path, spec, f"spec '{name}'")
    args = spec.get("args")
    criteria = args.get("criteria") if isinstance(args, dict) else None
    if not isinstance(criteria, dict) or not criteria:
        raise InputError(
            path, f"spec '{name}': args.criteria (name -> text) is missing; it names what the judge scores"
        )
    return str(name), spec, shared.named_texts(path, criteria, "args.criteria")


def _scale(path: Path, spec: dict) -> Scale:
    choices = spec.get("choice_strings")
    choices = list(choices) if isinstance(choices, str) else choices
    if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str | int) for c in choices):
        raise InputError(path, "'choice_strings' must list the judge's choices (e.g. 'YN' or [A, B, C])")
    scores = spec.get("choice_scores")
    if scores == "from_strings":
        try:
            scores = {c: float(c) for c in choices}
        except ValueError:
            raise InputError(path, "choice_scores: from_strings needs numeric choice_strings") from None
    if not isinstance(scores, dict) or any(str(c) not in map(str, scores) for c in choices):
        raise InputError(path, "'choice_scores' must give every choice a score: radar puts the choices on a scale")
    values = {str(k): v for k, v in scores.items()}
    try:
        return Scale(levels={str(c): float(values[str(c)]) for c in choices})
    except (ValueError, TypeError) as exc:
        raise InputError(path, f"the choices do not make a scale ({str(exc).splitlines()[-1]})") from None


def read(path: Path) -> Imported:
    name, spec, criteria = _spec(path)
    scale = _scale(path, spec)
    eval_type = spec.get("eval_type", "classify")
    if not isinstance(eval_type, str) or eval_type not in ANSWER_WORDS:
        raise InputError(
            path,
            f"eval_type '{eval_type}': radar maps cot_classify (reasoning, then the choice) and classify; "
            "a choice before its reasoning is not an answer shape radar constrains",
        )
    io = spec.get("input_outputs") or {"input": "completion"}
    if not isinstance(io, dict) or len(io) != 1 or not all(isinstance(v, str) for v in (*io, *io.values())):
        raise InputError(path, "input_outputs: radar maps one input and its completion")
    ((inp, out),) = io.items()
    names = {str(inp): "prompt", str(out): "response", "criteria": "criterion.description"}
    prompt = spec.get("prompt")
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    if (
        not isinstance(messages, list)
        or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
        or [m.get("role") for m in messages] not in (["user"], ["system", "user"])
    ):
        raise InputError(path, "prompt: radar maps text, or a user message after an optional system message")
    bound = [shared.bind(str(m.get("content", "")), names, path, "prompt", style="format") for m in messages]
    choices = ", ".join(scale.tokens)
    bound[-1] += "\n\n" + ANSWER_WORDS[eval_type].format(choices=choices)
    pattern = "(" + "|".join(literal_regex(t) for t in scale.tokens) + ")"
    answer = (
        GradeShape(kind="grade", pattern=pattern, reasoning=REASONING)
        if eval_type == "cot_classify"
        else BareShape(kind="bare")
    )
    jud = shared.judge(path, template=bound[-1], system=bound[0] if len(bound) == 2 else None, answer=answer)
    ids = shared.named_ids(criteria)
    crit = [
        shared.criterion(
            path, f"args.criteria.{key}", id=ids[str(key)], label=shared.label_of(ids[str(key)]), description=str(text)
        )
        for key, text in criteria.items()
    ]
    rub = shared.rubric(path, name, name, crit, scale)
    account = [
        f"spec '{name}': {len(crit)} criteria from args.criteria, choices {choices} scored "
        + ", ".join(f"{t}={v:g}" for t, v in zip(scale.tokens, scale.values)),
        f"eval_type {eval_type}: radar's words for its answer instruction are appended to the prompt; the choice "
        + ("is read from the line after the reasoning" if eval_type == "cot_classify" else "is the whole answer"),
        "tasks: a spec has none (its samples are a separate file): the config uses the bundled helpsteer2 tasks",
    ]
    return Imported("openai-evals", path, rub, jud, (), {}, account)


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    data = shared.load_yaml(path)
    ((_, spec),) = data.items()
    criteria = spec["args"]["criteria"]
    shared.write_named(criteria, imported.rubric, rub)
    return shared.dump_yaml(data)
