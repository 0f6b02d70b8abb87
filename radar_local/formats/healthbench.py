"""HealthBench (openai/simple-evals, healthbench_eval.py): a JSONL file, one conversation a line, each with its own
rubric: `{prompt: [{role, content}], prompt_id, rubrics: [{criterion, points, tags}], example_tags, ...}`. Each
conversation is a task and each rubric item one of its items (its points and tags kept; negative points a pitfall,
met when the response commits it); the judge is the `healthbench` preset (HealthBench's grader: one item a call,
`criteria_met` true or false), on the met / not met scale. A conversation of several turns is the task's prompt as
its turns, each after its role; the probes answer its last turn.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.judge import Judge
from radar_local.pitfalls import sign_lints
from radar_local.rubric import MAX_ITEMS, Rubric, Task, TaskItem, item_id, with_items
from radar_local.scale import Scale

MET = Scale(levels={"true": 1, "false": 0})  # HealthBench's criteria_met


def read(path: Path) -> Imported:
    tasks, items, pitfalls, turns, stems = [], 0, 0, 0, set[str]()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                path, f"line {number} is not JSON ({exc.msg}); HealthBench files hold one record a line"
            ) from None
        task = _task(path, number, record, stems)
        tasks.append(task)
        items += len(task.items)
        pitfalls += sum(i.points < 0 for i in task.items)
        turns += len(record["prompt"]) > 1
    if not tasks:
        raise InputError(path, "holds no HealthBench record")
    account = [
        f"{len(tasks)} conversations, each a task with its own rubric: {items} items, {pitfalls} of them pitfalls "
        "(negative points: met when the response commits it)",
        "the judge: the healthbench preset (HealthBench's grader, one item a call, criteria_met true or false)",
        "each item keeps its points and tags (axis:*, cluster:*, level:*): the audit pools items by tag",
        "n: 10 probes a side: an item lives in one prompt, so fewer cannot confirm its sign error or pair (`radar "
        "audit --plan` names the N for these items)",
    ]
    if turns:
        account.append(f"{turns} conversations of several turns: the prompt is their turns, each after its role")
    rubric = Rubric(id="healthbench", name="HealthBench", scale=MET)
    account += sign_lints(with_items(rubric, tasks).items)
    return Imported("healthbench", path, rubric, Judge(preset="healthbench"), tuple(tasks), {}, account)


def _task(path: Path, number: int, record: object, stems: set[str]) -> Task:
    where = f"line {number}"
    if not isinstance(record, dict) or not isinstance(record.get("rubrics"), list) or not record["rubrics"]:
        raise InputError(path, f"{where}: no `rubrics` list; a HealthBench record grades its prompt on one")
    turns = record.get("prompt")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, dict) for t in turns):
        raise InputError(path, f"{where}: `prompt` is not a list of {{role, content}} turns")
    if len(record["rubrics"]) > MAX_ITEMS:
        raise InputError(path, f"{where}: {len(record['rubrics'])} rubric items; radar audits at most {MAX_ITEMS}")
    text = (
        str(turns[0].get("content", ""))
        if len(turns) == 1
        else "\n\n".join(f"{t.get('role', 'user')}: {t.get('content', '')}" for t in turns)
    )
    task_id = str(record.get("prompt_id") or f"line_{number}")
    stem = _stem(task_id, stems)
    try:
        items = tuple(
            TaskItem(id=f"{stem}_{k}", text=r["criterion"], points=r["points"], tags=tuple(r.get("tags") or ()))
            for k, r in enumerate(record["rubrics"], 1)
        )
        return Task(id=task_id, prompt=text, items=items)
    except (ValidationError, KeyError, TypeError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else f"no {exc}"
        raise InputError(path, f"{where}: a rubric item is not {{criterion, points, tags}} ({why})") from None


def _stem(task_id: str, taken: set[str]) -> str:
    """The items' id stem: the prompt id's first 8 letters and digits (a HealthBench prompt id is a UUID), longer
    where another conversation of the file has taken it."""
    full = item_id(task_id, 1).removesuffix("_1")
    stem = next((full[:n].rstrip("_") for n in range(9, len(full) + 1) if full[:n].rstrip("_") not in taken), full)
    taken.add(stem)
    return stem


def write_items(path: Path, imported: Imported, tasks: tuple[Task, ...]) -> tuple[str, list[str]]:
    """The file's new text with each conversation's rubric made its task's items in `tasks` (the import's config,
    edited), and the account. An item keeps its entry (with any other key it has) under its text, points and
    tags; an item of a new id is added, one the task no longer has is dropped; a conversation `tasks` does not
    name, or whose items are as they were, keeps its line byte for byte."""
    given, held = {t.id: t for t in tasks}, {t.id for t in imported.tasks}
    if unknown := [t for t in given if t not in held]:
        raise InputError(path, f"has no conversation {', '.join(map(repr, unknown[:3]))}; export the tasks it holds")
    for given_task in tasks:
        if bad := [i.id or i.text[:30] for i in given_task.items if i.scale is not None and i.scale != MET]:
            raise InputError(
                path, f"task '{given_task.id}': items {bad} are not graded met / not met, as HealthBench's are"
            )
    source = path.read_text(encoding="utf-8")
    records = [json.loads(line) for line in source.splitlines() if line.strip()]
    changed, account = {}, []
    for k, (record, theirs) in enumerate(zip(records, imported.tasks)):
        task = given.get(theirs.id)
        if task is None or task.items == theirs.items:
            continue
        places = {item.id: n for n, item in enumerate(theirs.items)}
        rubrics = []
        for item in task.items:
            entry = dict(record["rubrics"][places[item.id]]) if item.id in places else {}
            written = {"criterion": item.text, "points": shared.points(item.points), "tags": list(item.tags)}
            rubrics.append(entry | written)
        changed[k] = record | {"rubrics": rubrics}
        account.append(shared.items_changed(theirs, task))
    kept = f"kept: {len(records) - len(changed)} conversations as they were"
    return shared.lines_replaced(source, changed), [kept, *account]
