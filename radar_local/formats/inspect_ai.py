"""inspect_ai's `model_graded_qa` / `model_graded_fact` scorers, as a YAML file of their keyword arguments
(`scorer`, `template`, `instructions`, `grade_pattern`, `partial_credit`) and `criteria` (name -> text: what
inspect passes as the sample's target, `{criterion}`).

The defaults are inspect_ai's own, word for word (src/inspect_ai/scorer/_model.py: the QA and fact templates with
`{question}`, `{answer}`, `{criterion}`, `{instructions}`, the default instructions; partial credit P = 0.5);
a template that names a file is read from it, as inspect's `resource()` does. inspect's default pattern tolerates
case and spacing and binds to the last grade; radar's constraint writes the canonical `GRADE: X` once, at the end,
which that pattern reads. A custom pattern maps where its text around the group is literal.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from radar_local.answer import GradeShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.inputs import read_text
from radar_local.rubric import Rubric, Task
from radar_local.scale import Scale

SCORERS = ("model_graded_qa", "model_graded_fact")
# inspect_ai's own defaults (src/inspect_ai/scorer/_model.py at 499e6152, MIT licence), as the scorer sends them
QA_TEMPLATE = """
You are assessing a submitted answer on a given task based on a criterion. Here is the data:

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

{instructions}
"""
FACT_TEMPLATE = """
You are comparing a submitted answer to an expert answer on a given question. Here is the data:

[BEGIN DATA]
************
[Question]: {question}
************
[Expert]: {criterion}
************
[Submission]: {answer}
************
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, \
grammar, or punctuation.

Does the submission contain the content in the expert answer?

{instructions}
"""
TEMPLATES = {"model_graded_qa": QA_TEMPLATE, "model_graded_fact": FACT_TEMPLATE}
_SPACING = r"[\s\u200b\u200c\u200d\u200e\u200f\u2060\u2063\ufeff]*"
DEFAULT_PATTERNS = (  # inspect's default grade pattern, today's and before: written canonically as `GRADE: X`
    rf"(?is).*(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}([CPI])",
    r"(?i)GRADE\s*:\s*([CPI])(.*)$",
)
NAMES = {
    "question": "prompt",
    "answer": "response",
    "criterion": "criterion.description",
    "instructions": "_instructions",
}


def default_instructions(partial_credit: bool) -> str:
    """inspect's `default_instructions`, word for word."""
    partial_letter = "P" if partial_credit else ""
    partial_prompt = '"P" for partially correct answers,' if partial_credit else ""
    return f"""
After assessing the submitted answer, reply with 'GRADE: $LETTER' (without quotes) where LETTER is one of \
C{partial_letter}I.  Please choose ONE option for the grade: either "C" for correct answers, {partial_prompt}or "I" \
for incorrect answers.

For example, after reviewing a correct answer you might write 'GRADE: C' or after reviewing an incorrect answer you \
might write 'GRADE: I'.

First, write out in a step by step manner your reasoning about the criterion to be sure that your conclusion is \
correct. Avoid simply stating the correct answers at the outset. Then, end with your answer formatted as 'GRADE: \
$LETTER' (without quotes) where LETTER is one of C{partial_letter}I.
"""


def _criteria(path: Path, data: dict) -> dict:
    return shared.named_texts(path, data.get("criteria"), "criteria")  # each text: what a grade is against


def _template(path: Path, value: object, scorer: str, root: Path | None) -> str:
    """The grading template as inspect resolves it (`resource()`): the text, or the file it names where that file
    exists; a remote resource or a file name with no file is one line."""
    if not value:
        return TEMPLATES[scorer]
    text = str(value)
    if "\n" in text or "{" in text:
        return text
    if "://" in text:
        raise InputError(path, f"template '{text[:80]}': radar reads no remote resource; save it beside the file")
    named = shared.referenced(path, text, root)
    if named.is_file():
        return read_text(named)
    raise InputError(
        path,
        f"template '{text[:80]}' is no file in {named.parent} (inspect reads a template from a file that exists, "
        "else takes the text itself, which would grade nothing): put the file there or write the template",
    )


def _samples(path: Path, data: dict, root: Path | None) -> tuple[Task, ...]:
    """The tasks of `dataset` (a JSON-lines file as inspect's json_dataset reads it; `sample_fields` names its
    input and target fields as inspect's FieldSpec does): each sample's input, a text or a chat of one user
    message. A sample's target is what its response is graded against, written for its own input: radar scores a
    criterion on every task, so a dataset whose samples carry targets is refused rather than widened."""
    ref = data.get("dataset")
    if ref is None:
        return ()
    where = shared.referenced(path, str(ref), root)
    fields = data.get("sample_fields")
    fields = fields if isinstance(fields, dict) else {}
    name_in, name_target = str(fields.get("input", "input")), str(fields.get("target", "target"))
    tasks, taken = [], set[str]()
    for k, line in enumerate(read_text(where).splitlines(), 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except json.JSONDecodeError:
            raise InputError(where, f"line {k} is not JSON; radar reads inspect datasets as JSON lines") from None
        got = sample.get(name_in) if isinstance(sample, dict) else None
        if isinstance(got, list):  # a chat: its one user message
            users = [m.get("content") for m in got if isinstance(m, dict) and m.get("role") == "user"]
            got = users[0] if len(users) == 1 and len(got) == 1 else None
        if not isinstance(got, str) or not got.strip():
            raise InputError(where, f"sample {k}: its '{name_in}' is no prompt (a text, or a chat of one user "
                             "message); name the input field in sample_fields")  # fmt: skip
        if sample.get(name_target) not in (None, "", []):
            raise InputError(
                path,
                f"the samples of {ref} carry targets, each written for its own input (sample {k}: "
                f"'{str(sample[name_target])[:40]}'); {data.get('scorer', 'model_graded_qa')} grades each response "
                "against its own target, and radar scores a criterion on every task: give the criteria that hold "
                "for every sample in `criteria`, and a dataset without targets",
            )
        tasks.append(Task(id=shared.criterion_id(f"sample {sample.get('id', k)}", taken), prompt=got))
    if not tasks:
        raise InputError(where, "holds no samples; give the dataset the tasks are, or leave `dataset` out")
    return tuple(tasks)


def read(path: Path, root: Path | None = None) -> Imported:
    data = shared.mapping(path, shared.load_yaml(path), "inspect scorer arguments")
    scorer = data.get("scorer", "model_graded_qa")
    if scorer not in SCORERS:
        raise InputError(path, f"scorer '{scorer}': radar imports {', '.join(SCORERS)}")
    if scorer == "model_graded_fact":  # its [Expert] is a sample's target: the answer to one question
        raise InputError(
            path,
            "model_graded_fact grades a response against its sample's expert answer (the target, written for that "
            "question); radar scores each criterion on every task, so it would grade every answer against one "
            "question's expert answer: audit model_graded_qa with criteria that hold for every task",
        )
    tasks = _samples(path, data, root)
    partial = bool(data.get("partial_credit", False))
    custom = bool(data.get("instructions"))
    pattern = data.get("grade_pattern")
    default_pattern = pattern is None or str(pattern) in DEFAULT_PATTERNS
    # inspect validates the grade against the ones its own instructions offer; with custom instructions its
    # default pattern takes C, P and I alike (partial_credit applies to the default instructions only)
    offered = {"C": 1, "P": 0.5, "I": 0} if partial or (custom and default_pattern) else {"C": 1, "I": 0}
    scale = Scale(levels=offered)
    letters = "".join(scale.tokens)
    try:
        answer = GradeShape(
            kind="grade", pattern=f"GRADE: ([{letters}])" if default_pattern else str(pattern), reasoning=600
        )
    except ValidationError as exc:
        raise InputError(path, f"grade_pattern: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    problem = answer.check(scale)
    if problem:
        raise InputError(path, f"grade_pattern: {problem}")
    instructions = data.get("instructions") or default_instructions(partial)
    source = _template(path, data.get("template"), scorer, root)
    template = shared.bind(source, NAMES, path, "template", style="format")
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
    what = "expert answers (the fact template's [Expert])" if scorer == "model_graded_fact" else "criteria"
    account = [
        f"{scorer}: {len(crit)} {what}, grades {scale.describe()}"
        + (" (custom instructions: inspect's default pattern takes C, P and I)" if custom and default_pattern else ""),
        f"answer: reasoning, then `{answer.pattern}`"
        + (" (inspect's default pattern, written canonically)" if default_pattern else ""),
        "judge prompt: "
        + (f"the file's template ({data['template']})" if data.get("template") else f"inspect's {scorer} template")
        + ("; the file's instructions" if custom else "; inspect's default instructions"),
        f"tasks: {len(tasks)}, the inputs of {data['dataset']}"
        if tasks
        else "tasks: scorer arguments carry none: the config uses the bundled helpsteer2 tasks",
    ]
    return Imported("inspect", path, rub, jud, tasks, {}, account)


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    data = shared.load_yaml(path)
    criteria = data["criteria"]
    shared.write_named(criteria, imported.rubric, rub)
    return shared.dump_yaml(data, path)
