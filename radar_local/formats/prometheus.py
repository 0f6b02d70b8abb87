"""Prometheus / Feedback-Collection score rubrics: a JSON list (or JSONL) of `{criteria, score1_description ..
score5_description}` (Feedback-Collection's columns carry an `orig_` prefix; both read), one per criterion,
graded with the absolute-grading prompt whose answer ends `[RESULT] N`.

The shapes follow prometheus-eval (prometheus_eval/prompts.py: SCORE_RUBRIC_TEMPLATE and the absolute
prompt without a reference answer) and the Feedback-Collection dataset card. A rubric object has no id:
radar's is the first words of `criteria`, or an `id` key where one is given (export writes one for a
criterion it rewrites, so the criterion keeps its id).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.inputs import read_text
from radar_local.rubric import Rubric, Task, TaskItem
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


INSTRUCTION_KEYS = ("input", "instruction", "orig_instruction")  # a row that carries the instruction it grades


def _raw(path: Path) -> list[dict]:
    """The file's objects as written: a JSON list, JSONL, or BiGGen-Bench's mapping of instance id -> instance."""
    text = read_text(path)
    try:
        data = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.suffix == ".jsonl"
            else json.loads(text)
        )
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nested past the parser
        raise InputError(path, "is not JSON (a list of score rubrics) or JSONL (one per line)") from None
    if isinstance(data, dict) and data and all(isinstance(o, dict) for o in data.values()):
        data = list(data.values())  # BiGGen-Bench: instance id -> instance
    if not isinstance(data, list) or not all(isinstance(o, dict) for o in data):
        raise InputError(path, "expected a list of score rubrics ({criteria, score1_description, ...})")
    return data


def _objects(path: Path) -> list[dict]:
    """Each object with its rubric's fields at the top (BiGGen-Bench nests them under `score_rubric`, a mapping or
    the text of a Python one, as its released files hold it)."""
    return [{**o, **rubric} if (rubric := _score_rubric(o)) else o for o in _raw(path)]


def _score_rubric(obj: dict) -> dict | None:
    found = obj.get("score_rubric")
    if isinstance(found, str):
        try:
            found = ast.literal_eval(found)  # literals only: never code
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return found if isinstance(found, dict) else None


def _prefix(obj: dict) -> str:
    return "orig_" if "orig_criteria" in obj else ""


def _bound(obj: dict) -> str | None:
    """The instruction field of a rubric written for one instruction (a BiGGen-Bench instance, a Feedback-Collection
    row), None for a rubric of its own."""
    return next((key for key in INSTRUCTION_KEYS if isinstance(obj.get(key), str) and obj[key].strip()), None)


def _general(path: Path, objects: list[dict]) -> tuple[list[dict], list[int]]:
    """The rubrics radar audits (those of no one instruction) and the 1-based positions of the ones it leaves: a
    RADAR criterion is scored on every task, and a rubric written for one instruction would be widened to all."""
    bound = [k for k, o in enumerate(objects, 1) if _bound(o)]
    return [o for k, o in enumerate(objects, 1) if k not in bound], bound


def _instances(path: Path, objects: list[dict]) -> Imported:
    """Every rubric written for its own instruction (BiGGen-Bench's instances, Feedback-Collection's rows): each
    instruction a task whose one item is its rubric, on 1-5 with its own score descriptions (issue 63)."""
    tasks, taken = [], set[str]()
    for k, o in enumerate(objects, 1):
        p, key = _prefix(o), _bound(o)
        assert key is not None
        text = shared.text_field(path, o, p + "criteria", f"rubric {k}")
        anchors = {n: shared.text_field(path, o, f"{p}score{n}_description", f"rubric {k}") for n in LEVELS}
        name = str(o["id"]) if isinstance(o.get("id"), (str, int)) else f"instance {k}"
        item = TaskItem(text=text, scale=Scale(min=1, max=5, anchors=anchors))
        tasks.append(Task(id=shared.criterion_id(name, taken), prompt=o[key], items=(item,)))
    account = [
        f"{len(tasks)} score rubrics, each written for its own instruction: each instruction a task whose one item is "
        "its rubric, scored 1-5 with its own score descriptions as anchors (a per-prompt rubric: docs/per-prompt.md)",
        "judge prompt: the prometheus-2-absolute preset, radar's words after Prometheus' absolute grading prompt "
        "without a reference answer: the feedback, then `[RESULT] N`",
        "radar export prometheus FILE config.yaml writes each task's item back into this file (its criteria and "
        "score descriptions)",
    ]
    rubric = Rubric(id=shared.criterion_id(path.stem, set()), name=path.stem, scale=FIVE)
    judge = shared.judge(path, preset="prometheus-2-absolute")
    return Imported("prometheus", path, rubric, judge, tuple(tasks), {}, account)


def _ids(path: Path, objects: list[dict]) -> list[str]:
    taken: set[str] = set()
    ids = []
    for k, o in enumerate(objects, 1):
        text = shared.text_field(path, o, _prefix(o) + "criteria", f"rubric {k}")
        ids.append(shared.criterion_id(o["id"] if isinstance(o.get("id"), str) else text, taken))
    return ids


def read(path: Path) -> Imported:
    every = _objects(path)
    if every and all(_bound(o) for o in every):
        return _instances(path, every)
    objects, bound = _general(path, every)
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
    jud = shared.judge(path, preset="prometheus-2-absolute")  # the preset's template and answer: one home
    account = [
        f"{len(criteria)} score rubrics, one criterion each, scored 1-5 with their score descriptions as anchors",
        "judge prompt: the prometheus-2-absolute preset, radar's words after Prometheus' absolute grading prompt "
        "without a reference answer: the feedback, then `[RESULT] N`",
        "tasks: score rubrics carry none: the config uses the bundled helpsteer2 tasks",
    ]
    if bound:
        account.append(
            f"left out: {len(bound)} score rubric(s) written for their own instruction (objects "
            f"{', '.join(map(str, bound[:10]))}{' ...' if len(bound) > 10 else ''}): a RADAR criterion is scored on "
            "every task; exported untouched"
        )
    return Imported("prometheus", path, rub, jud, (), {}, account)


STALE = {"feedback", "score", "orig_feedback", "orig_score"}  # a grading under the old rubric


def _rubric_fields(text: str, anchors: dict[str, str] | None, prefix: str = "") -> dict[str, str]:
    """A score rubric's fields: `text` its criteria, `anchors` (else radar's generic ones) its score descriptions."""
    anchors = anchors or {}
    return {prefix + "criteria": text} | {f"{prefix}score{n}_description": anchors.get(n, FALLBACK[n]) for n in LEVELS}


def _rewritten(raw: dict, item: TaskItem) -> dict:
    """An instance with its rubric made `item`, where its file keeps it (BiGGen-Bench's `score_rubric`, a mapping or
    the text of a Python one; else at the top), and its grading under the old rubric dropped."""
    out = {k: v for k, v in raw.items() if k not in STALE}
    anchors = item.scale.anchors if item.scale else None
    nested = _score_rubric(raw)
    if nested is None:
        return out | _rubric_fields(item.text, anchors, _prefix(raw))
    rubric = nested | _rubric_fields(item.text, anchors)
    return out | {"score_rubric": repr(rubric) if isinstance(raw["score_rubric"], str) else rubric}


def _one_item(path: Path, task: Task) -> TaskItem:
    """A task's item as an instance holds it: one, on 1-5, without points or tags of its own."""
    if len(task.items) != 1:
        raise InputError(path, f"task '{task.id}': {len(task.items)} items; a Prometheus instance holds one rubric")
    item = task.items[0]
    scale = item.scale or FIVE
    if (scale.min, scale.max) != (1, 5) or item.tags or item.points != 1:
        raise InputError(
            path, f"task '{task.id}': its item must be scored 1-5 without points or tags, as a Prometheus rubric is"
        )
    return item


def write_items(path: Path, imported: Imported, tasks: tuple[Task, ...]) -> tuple[str, list[str]]:
    """The file's new text with each instance's rubric made its task's one item in `tasks` (the import's config,
    edited), and the account: the item's text is its `criteria`, its anchors the score descriptions. An instance
    `tasks` does not name, or whose item is as it was, stays as written (a JSONL line byte for byte)."""
    if imported.rubric.criteria:
        raise InputError(path, "holds score rubrics of their own, not per-instruction ones: export the rubric.yaml")
    given, held = {t.id: t for t in tasks}, {t.id for t in imported.tasks}
    if unknown := [t for t in given if t not in held]:
        raise InputError(path, f"has no instance {', '.join(map(repr, unknown[:3]))}; export the tasks it holds")
    items = {t.id: _one_item(path, t) for t in tasks}
    source = read_text(path)
    raws, changed, account = _raw(path), {}, []
    for k, (raw, theirs) in enumerate(zip(raws, imported.tasks)):
        task = given.get(theirs.id)
        if task is not None and task.items != theirs.items:
            changed[k] = _rewritten(raw, items[task.id])
            account.append(shared.items_changed(theirs, task))
    account.insert(0, f"kept: {len(raws) - len(changed)} instances as they were")
    if not changed:
        return source, account
    if path.suffix == ".jsonl":  # line by line: a line not rewritten stays byte for byte
        return shared.lines_replaced(source, changed), account
    data = json.loads(source)
    out = [changed.get(k, raw) for k, raw in enumerate(raws)]
    return shared.json_like(source, dict(zip(data, out)) if isinstance(data, dict) else out), account


def _object(rub: Rubric, cid: str, like: dict) -> dict:
    out = {"id": cid, **{k: v for k, v in like.items() if k not in STALE}}  # first: no other line of it changes
    return out | _rubric_fields(rub.criterion(cid).description, rub.scale_of(cid).anchors, _prefix(like))


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    if not imported.rubric.criteria:  # every rubric is an instruction's own: exported from the tasks' items
        raise InputError(
            path,
            "holds per-instruction rubrics (per-prompt items): export the import's config.yaml, whose tasks hold them",
        )
    objects = _objects(path)
    general, _ = _general(path, objects)
    ids = {id(o): cid for o, cid in zip(general, _ids(path, general))}
    out = []
    for raw, o in zip(_raw(path), objects):
        cid = ids.get(id(o))
        if cid is None:  # a rubric written for one instruction: left as it is
            out.append(raw)
        elif cid in rub.ids:
            out.append(o if shared.unchanged(imported.rubric, rub, cid) else _object(rub, cid, o))
    for c in rub.criteria:
        if c.id not in imported.rubric.ids:
            out.append(
                _object(rub, c.id, {k: v for k, v in general[0].items() if "score" not in k and "criteria" not in k})
            )
    missing = [
        c.id
        for c in rub.criteria
        if not (rub.scale_of(c.id).anchors) and not shared.unchanged(imported.rubric, rub, c.id)
    ]
    if missing:
        account.append(f"score descriptions: radar's generic ones for {', '.join(missing)}; write your own")
    if path.suffix == ".jsonl":
        return shared.json_like(read_text(path), out, lines=True)
    return shared.json_like(read_text(path), out)
