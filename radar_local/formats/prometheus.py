"""Prometheus / Feedback-Collection score rubrics: a JSON list (or JSONL) of `{criteria, score1_description ..
score5_description}` (Feedback-Collection's columns carry an `orig_` prefix; both read), one per criterion,
graded with the absolute-grading prompt whose answer ends `[RESULT] N`.

The shapes follow prometheus-eval (prometheus_eval/prompts.py: SCORE_RUBRIC_TEMPLATE and the absolute
prompt without a reference answer) and the Feedback-Collection dataset card. A rubric object has no id:
radar's is the first words of `criteria`, or an `id` key where one is given (export writes one for a
criterion it rewrites, so the criterion keeps its id).
"""

from __future__ import annotations

import json
from pathlib import Path

from radar_local.answer import GradeShape
from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.inputs import read_text
from radar_local.rubric import Rubric
from radar_local.scale import Scale

FIVE = Scale(min=1, max=5)
LEVELS = ("1", "2", "3", "4", "5")
FALLBACK = {  # export's score descriptions for a criterion the editor wrote without them
    "1": "The response does not meet the criterion.",
    "2": "The response meets a small part of the criterion.",
    "3": "The response meets the criterion in part.",
    "4": "The response meets the criterion with minor lapses.",
    "5": "The response fully meets the criterion.",
}
# radar's words after Prometheus' absolute grading prompt without a reference answer (not a copy)
TEMPLATE = """###Task Description:
An instruction (which may include an input), a response to evaluate and a score rubric for one evaluation \
criterion are given.
1. Write feedback that assesses the response strictly by the score rubric, not in general.
2. Then write a score, an integer from 1 to 5, referring to the score rubric.
3. The feedback comes first, then "[RESULT]" and the score.
4. Write nothing else.

###The instruction to evaluate:
{{ prompt }}

###Response to evaluate:
{{ response }}

###Score Rubrics:
[{{ criterion.description }}]
{% for level in criterion.scale.levels %}Score {{ level.name }}: {{ level.anchor or "" }}
{% endfor %}
###Feedback: """


def _objects(path: Path) -> list[dict]:
    text = read_text(path)
    try:
        data = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.suffix == ".jsonl"
            else json.loads(text)
        )
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nested past the parser
        raise InputError(path, "is not JSON (a list of score rubrics) or JSONL (one per line)") from None
    if not isinstance(data, list) or not all(isinstance(o, dict) for o in data):
        raise InputError(path, "expected a list of score rubrics ({criteria, score1_description, ...})")
    return data


def _prefix(obj: dict) -> str:
    return "orig_" if "orig_criteria" in obj else ""


def _ids(path: Path, objects: list[dict]) -> list[str]:
    taken: set[str] = set()
    ids = []
    for k, o in enumerate(objects, 1):
        text = shared.text_field(path, o, _prefix(o) + "criteria", f"rubric {k}")
        ids.append(shared.criterion_id(o["id"] if isinstance(o.get("id"), str) else text, taken))
    return ids


def read(path: Path) -> Imported:
    objects = _objects(path)
    criteria = []
    for k, (o, cid) in enumerate(zip(objects, _ids(path, objects)), 1):
        p = _prefix(o)
        anchors = {n: shared.text_field(path, o, f"{p}score{n}_description", f"rubric {k}") for n in LEVELS}
        criteria.append(
            shared.criterion(
                path,
                f"rubric {k}",
                id=cid,
                label=shared.label_of(cid),
                description=o[p + "criteria"],
                scale=Scale(min=1, max=5, anchors=anchors),
            )
        )
    rub = shared.rubric(path, path.stem, path.stem, criteria, FIVE)
    jud = shared.judge(
        path, template=TEMPLATE, answer=GradeShape(kind="grade", pattern=r"\[RESULT\] ([1-5])", reasoning=600)
    )
    account = [
        f"{len(criteria)} score rubrics, one criterion each, scored 1-5 with their score descriptions as anchors",
        "judge prompt: radar's words after Prometheus' absolute grading prompt without a reference answer; the "
        "feedback is one line, then `[RESULT] N` on the next",
        "tasks: score rubrics carry none: the config uses the bundled helpsteer2 tasks",
    ]
    return Imported("prometheus", path, rub, jud, (), {}, account)


def _object(rub: Rubric, cid: str, like: dict) -> dict:
    c, p = rub.criterion(cid), _prefix(like)
    anchors = rub.scale_of(cid).anchors or {}
    out = {**like, "id": cid, p + "criteria": c.description}
    return out | {f"{p}score{n}_description": anchors.get(n, FALLBACK[n]) for n in LEVELS}


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    objects = _objects(path)
    out = []
    for o, cid in zip(objects, _ids(path, objects)):
        if cid in rub.ids:
            out.append(o if shared.unchanged(imported.rubric, rub, cid) else _object(rub, cid, o))
    for c in rub.criteria:
        if c.id not in imported.rubric.ids:
            out.append(
                _object(rub, c.id, {k: v for k, v in objects[0].items() if "score" not in k and "criteria" not in k})
            )
    missing = [
        c.id
        for c in rub.criteria
        if not (rub.scale_of(c.id).anchors) and not shared.unchanged(imported.rubric, rub, c.id)
    ]
    if missing:
        account.append(f"score descriptions: radar's generic ones for {', '.join(missing)}; write your own")
    if path.suffix == ".jsonl":
        return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in out)
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"
