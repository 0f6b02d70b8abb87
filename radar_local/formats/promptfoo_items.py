"""promptfoo's per-test rubrics as each task's items (issue 63), read from and written back into the config: a
test's own `llm-rubric` (or g-eval) assertions are the items of the task its vars render (formats/promptfoo.py
finds them; formats/promptfoo_tasks.py reads the tasks)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.promptfoo_tasks import as_dict
from radar_local.judge import render_text
from radar_local.rubric import Task, TaskItem, item_id


@dataclass
class Entry:
    """One criterion's place in the file: its assert list, the assertion's index there, the index in a
    g-eval list value (None for a single text), its text, the assertion, and the rubricPrompt it runs with
    (its own, else its test's options', else defaultTest's; None: promptfoo's default)."""

    asserts: list
    index: int
    sub: int | None
    text: str
    assertion: dict
    rubric_prompt: Any
    owner: dict  # defaultTest or the test that holds the assertion

    @property
    def written(self) -> Any:
        """The value as the file writes it (a `file://` reference, a template), before radar read it."""
        value: Any = self.assertion.get("value")
        return value if self.sub is None else value[self.sub]


Placed = dict[str, list[tuple[TaskItem, list[Entry]]]]  # task id -> its items, each with the entries that hold it


def placed(path: Path, owners: dict[int, str], entries: list[Entry]) -> tuple[Placed, int]:
    """Each task's items from the rubrics its tests hold (rendered with the test's vars; the assertion's `weight`
    its points; one item for one text however many of the task's tests hold it), and how many could not be placed
    (a test radar reads no task from)."""
    items: Placed = {}
    left = 0
    for e in entries:
        task = owners.get(id(e.owner))
        values = {key: str(v) for key, v in as_dict(e.owner.get("vars")).items()}
        if unset := sorted(shared.variables(e.text) - set(values)):
            raise InputError(
                path,
                f"the {e.assertion['type']} value '{e.text[:40]}' uses the test variable '{unset[0]}', which a test "
                "that runs it does not set; radar renders a test's rubric with that test's vars",
            )
        try:
            text = render_text(e.text, **values) if shared.variables(e.text) else e.text
        except TemplateError:
            text = ""
        if task is None or not text.strip():
            left += 1
            continue
        mine = items.setdefault(task, [])
        if (same := next((held for item, held in mine if item.text == text), None)) is not None:
            same.append(e)
            continue
        weight = e.assertion.get("weight", 1)
        points = float(weight) if isinstance(weight, (int, float)) and not isinstance(weight, bool) else 1.0
        mine.append((TaskItem(text=text, points=points), [e]))
    return items, left


def rewrite(path: Path, found: Placed, held: tuple[Task, ...], given: tuple[Task, ...], tests: list[dict],
            owners: dict[int, str], kind: str) -> list[str]:  # fmt: skip
    """The config (its loaded data, which `found`'s entries and `tests` are part of) with each given task's items
    written into its tests' assertions: a rewritten item's text and weight set where it is written, a dropped one's
    assertion removed, a new one appended to the task's first test in its first item's shape. Returns the account;
    an edit radar cannot place (an item written as a template or a file, tags promptfoo has no place for) is one
    line naming the task and the item."""
    theirs = {t.id: t for t in held}
    if unknown := [t.id for t in given if t.id not in theirs]:
        raise InputError(path, f"has no task {', '.join(map(repr, unknown[:3]))}; export the tasks it holds")
    account, deletions, kept = [], [], 0
    for task in map(_named, given):
        before = _named(theirs[task.id])
        if task.items == before.items:
            kept += 1
            continue
        slots = {item.id: (item, entries) for item, (_, entries) in zip(before.items, found.get(task.id, []))}
        for item in task.items:
            if item.tags or item.scale is not None:
                what = item.id or item.text[:30]
                raise InputError(path, f"task '{task.id}': item {what!r} has tags or a scale of its own, which a "
                                 "promptfoo assertion has no place for; leave them out")  # fmt: skip
            if item.id not in slots:
                _append(task, item, found.get(task.id), tests, owners, kind)
                continue
            old, entries = slots[item.id]
            for e in entries if (item.text, item.points) != (old.text, old.points) else []:
                _set(path, task, item, old, e)
        deletions += [e for i, (_, entries) in slots.items() if i not in {x.id for x in task.items} for e in entries]
        account.append(shared.items_changed(before, task))
    for e in sorted(deletions, key=lambda e: (e.index, e.sub or 0), reverse=True):  # from the end: places hold
        if e.sub is not None and len(e.assertion["value"]) > 1:
            del e.assertion["value"][e.sub]
        else:
            del e.asserts[e.index]
    return [f"kept: {kept} tasks as they were", *account]


def _named(task: Task) -> Task:
    """The task with each item named as an audit names it: its id, else its place (rubric.item_id)."""
    named = (i if i.id else i.model_copy(update={"id": item_id(task.id, k)}) for k, i in enumerate(task.items, 1))
    return task.model_copy(update={"items": tuple(named)})


def _set(path: Path, task: Task, item: TaskItem, old: TaskItem, e: Entry) -> None:
    written = e.written
    if not isinstance(written, str) or written.startswith("file://") or shared.variables(written):
        raise InputError(path, f"task '{task.id}': item {item.id} is written as {str(written)[:40]!r} (a template "
                         "or a file its tests read); edit it there: radar writes back a test's own text")  # fmt: skip
    if item.text != old.text:
        if e.sub is None:
            e.assertion["value"] = shared.block(item.text)
        else:
            e.assertion["value"][e.sub] = shared.block(item.text)
    if item.points != old.points:
        if e.sub is not None:
            raise InputError(path, f"task '{task.id}': item {item.id} is one of a g-eval list, whose weight is the "
                             "list's; give it an assertion of its own to weigh it apart")  # fmt: skip
        e.assertion["weight"] = shared.points(item.points)


def _append(task: Task, item: TaskItem, found: list | None, tests: list[dict], owners: dict[int, str], kind: str):
    """A new item: an assertion of its own in the task's first test, in the shape of the task's first item's."""
    test = next(t for t in tests if owners.get(id(t)) == task.id)
    model = found[0][1][0].assertion if found else {"type": kind}
    new = {k: v for k, v in model.items() if k in ("type", "threshold", "provider")}
    new["value"] = shared.block(item.text)
    if item.points != 1:
        new["weight"] = shared.points(item.points)
    test.setdefault("assert", []).append(new)
