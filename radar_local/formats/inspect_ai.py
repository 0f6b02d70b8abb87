"""inspect_ai's `model_graded_qa` / `model_graded_fact` scorers, as a YAML file of their keyword arguments
(`scorer`, `template`, `instructions`, `grade_pattern`, `partial_credit`) and `criteria` (name -> text: what
inspect passes as the sample's target, `{criterion}`).

The defaults follow inspect_ai (src/inspect_ai/scorer/_model.py: the QA and fact templates with
`{question}`, `{answer}`, `{criterion}`, `{instructions}`; the pattern `GRADE\\s*:\\s*([CPI])`; partial
credit P = 0.5). inspect's default pattern tolerates case and spacing; radar's constraint writes the
canonical `GRADE: X` that pattern reads. A custom pattern maps where its text around the group is literal.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from radar_local.answer import GradeShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.rubric import Rubric
from radar_local.scale import Scale

SCORERS = ("model_graded_qa", "model_graded_fact")
DEFAULT_PATTERN = r"(?i)GRADE\s*:\s*([CPI])(.*)$"
# radar's words after inspect's default template and instructions (not a copy)
TEMPLATE = """You are assessing a submitted answer to a task against a criterion. The data:

[BEGIN DATA]
***
[Task]: {question}
***
[Submission]: {answer}
***
[Criterion]: {criterion}
***
[END DATA]

Does the submission meet the criterion?

{instructions}"""
INSTRUCTIONS = (
    "Reason about the criterion step by step on one line, without stating the grade at the outset. Then end "
    "with the grade on a new line as 'GRADE: $LETTER', where LETTER is one of {letters}: {meanings}."
)
MEANINGS = {
    "C": "C for a submission that meets the criterion",
    "P": "P for one that meets it in part",
    "I": "I for one that does not",
}
NAMES = {
    "question": "prompt",
    "answer": "response",
    "criterion": "criterion.description",
    "instructions": "_instructions",
}


def _criteria(path: Path, data: dict) -> dict:
    return shared.named_texts(path, data.get("criteria"), "criteria")  # each text: what a grade is against


def read(path: Path) -> Imported:
    data = shared.mapping(path, shared.load_yaml(path), "inspect scorer arguments")
    scorer = data.get("scorer", "model_graded_qa")
    if scorer not in SCORERS:
        raise InputError(path, f"scorer '{scorer}': radar imports {', '.join(SCORERS)}")
    partial = bool(data.get("partial_credit", False))
    scale = Scale(levels={"C": 1, "P": 0.5, "I": 0} if partial else {"C": 1, "I": 0})
    letters = "".join(scale.tokens)
    pattern = data.get("grade_pattern", DEFAULT_PATTERN)
    if pattern == DEFAULT_PATTERN:
        pattern = f"GRADE: ([{letters}])"
    try:
        answer = GradeShape(kind="grade", pattern=str(pattern), reasoning=600)
    except ValidationError as exc:
        raise InputError(path, f"grade_pattern: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    problem = answer.check(scale)
    if problem:
        raise InputError(path, f"grade_pattern: {problem}")
    instructions = data.get("instructions") or INSTRUCTIONS.format(
        letters=", ".join(scale.tokens), meanings="; ".join(MEANINGS[t] for t in scale.tokens)
    )
    template = shared.bind(str(data.get("template") or TEMPLATE), NAMES, path, "template", style="format")
    # inspect inserts the instructions as they are (str.format does not read them again)
    template = template.replace("{{ _instructions }}", shared.literal(str(instructions)))
    jud = shared.judge(path, template=template, answer=answer)
    criteria = _criteria(path, data)
    ids = shared.named_ids(criteria)
    crit = [
        shared.criterion(path, f"criteria.{k}", id=ids[str(k)], label=shared.label_of(ids[str(k)]), description=str(v))
        for k, v in criteria.items()
    ]
    rub = shared.rubric(path, path.stem, path.stem, crit, scale)
    account = [
        f"{scorer}: {len(crit)} criteria, grades {scale.describe()}",
        f"answer: reasoning on one line, then `{answer.pattern}`"
        + (" (inspect's default pattern, written canonically)" if "grade_pattern" not in data else ""),
        "judge prompt: "
        + ("the file's template" if data.get("template") else "radar's words after inspect's default")
        + ("; the file's instructions" if data.get("instructions") else "; radar's words after inspect's instructions"),
        "tasks: scorer arguments carry none: the config uses the bundled helpsteer2 tasks",
    ]
    return Imported("inspect", path, rub, jud, (), {}, account)


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    data = shared.load_yaml(path)
    criteria = data["criteria"]
    shared.write_named(criteria, imported.rubric, rub)
    return shared.dump_yaml(data)
