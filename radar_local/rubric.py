"""Rubrics, tasks and human reference correlations: pydantic models that reject unknown keys."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, SerializerFunctionWrapHandler, Tag, model_serializer, model_validator

from radar_local.common import Frozen, parse_model
from radar_local.errors import InputError
from radar_local.inputs import read_mapping
from radar_local.scale import LIKERT, Scale

BUNDLED = ("helpsteer2", "summeval", "sumpubmed")
_ID = r"^[a-z][a-z0-9_]*$"


class Criterion(Frozen):
    id: str = Field(pattern=_ID, description="Stable identifier used in score tables")
    label: str = Field(min_length=1, description="Human-readable name shown to models")
    description: str = Field(min_length=1, description="One-paragraph definition")
    kind: Literal["evaluative", "descriptive"] = "evaluative"
    low: str | None = Field(None, description="Word for the low end of a descriptive axis")
    high: str | None = Field(None, description="Word for the high end of a descriptive axis")
    scale: Scale | None = Field(None, description="This criterion's scale, where it is not the rubric's")

    @model_validator(mode="after")
    def _ends_for_descriptive(self) -> Criterion:
        if self.kind == "descriptive" and not (self.low and self.high):
            raise ValueError(f"descriptive criterion '{self.id}' needs 'low' and 'high' words")
        return self


MAX_ITEMS = 64  # items a task's own rubric may have (ResearchRubrics' largest has 43)


class Item(Criterion):
    """One item of one task's own rubric, as the audit sees it: a criterion that task alone is probed and graded
    on (label and description are the item's text). Points below zero mark a pitfall: it is met when the response
    commits it, and costs points."""

    task: str = Field(min_length=1, description="The task whose rubric it belongs to")
    points: float = Field(1.0, allow_inf_nan=False, description="What meeting it adds to the task's score")
    tags: tuple[str, ...] = ()

    @property
    def pitfall(self) -> bool:
        return self.points < 0


class TaskItem(Frozen):
    """One item of a task's own rubric as a task file writes it (HealthBench's rubric item, a promptfoo test's
    llm-rubric); its id, where not given, is the task's id and its place (`with_items`)."""

    id: str | None = Field(None, pattern=_ID)
    text: str = Field(min_length=1, description="What the response must do (or, for a pitfall, must not)")
    points: float = Field(1.0, allow_inf_nan=False, description="Points; below zero, a pitfall")
    tags: tuple[str, ...] = Field((), description="Tags to pool items by (HealthBench's axis:*, cluster:*)")
    scale: Scale | None = Field(None, description="The item's own scale (its anchors), where not the rubric's")


def _kind(value: object) -> str:
    """An item carries its task; anything else is read (and its errors reported) as a criterion."""
    return "item" if isinstance(value, Item) or (isinstance(value, dict) and "task" in value) else "criterion"


ItemOrCriterion = Annotated[Annotated[Item, Tag("item")] | Annotated[Criterion, Tag("criterion")], Discriminator(_kind)]


class Rubric(Frozen):
    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)
    # one criterion: its gate and judge bias, no coupling; none: every task brings its own items (`with_items`)
    criteria: tuple[ItemOrCriterion, ...] = ()
    weights: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = Field(
        None, description="The aggregate a team gates on: finite, non-negative weights per criterion"
    )
    scale: Scale = Field(LIKERT, description="The scale every criterion is scored on, unless it names its own")

    @model_validator(mode="after")
    def _unique_ids(self) -> Rubric:
        seen: set[str] = set()
        for c in self.criteria:
            if c.id in seen:
                raise ValueError(f"duplicate criterion id '{c.id}'")
            seen.add(c.id)
        for key in self.weights or {}:
            if key not in seen:
                raise ValueError(f"weight given for unknown criterion '{key}'")
        return self

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.criteria]

    def criterion(self, cid: str) -> Criterion:
        return next(c for c in self.criteria if c.id == cid)

    def scale_of(self, cid: str) -> Scale:
        return self.criterion(cid).scale or self.scale

    @property
    def scales(self) -> dict[str, Scale]:
        return {c.id: c.scale or self.scale for c in self.criteria}

    @property
    def items(self) -> list[Item]:
        return [c for c in self.criteria if isinstance(c, Item)]

    @property
    def shared(self) -> list[Criterion]:
        """The criteria every task is probed and graded on (all of them, in a rubric without items)."""
        return [c for c in self.criteria if not isinstance(c, Item)]

    def criteria_of(self, task_id: str) -> list[Criterion]:
        """What one task is probed and graded on: the shared criteria, then its own items."""
        return [c for c in self.criteria if not isinstance(c, Item) or c.task == task_id]


def item_id(task_id: str, place: int) -> str:
    """An item's id where its file gives none: its task's id as an identifier, and its place (1-based)."""
    stem = re.sub(r"[^a-z0-9]+", "_", task_id.lower()).strip("_")
    return f"{stem if stem[:1].isalpha() else 't' + stem}_{place}"


def with_items(rubric: Rubric, tasks: Iterable[Task]) -> Rubric:
    """The rubric an audit sees: its shared criteria, then every task's own items (as `Item`s), ids unique."""
    items = []
    for task in tasks:
        if len(task.items) > MAX_ITEMS:
            raise ValueError(f"task '{task.id}' has {len(task.items)} items; at most {MAX_ITEMS} a task")
        for place, given in enumerate(task.items, 1):
            kept = given.model_dump(exclude={"id", "text"})  # points, tags, scale: as the task file gives them
            ident, text = given.id or item_id(task.id, place), given.text
            items.append(Item(id=ident, label=text, description=text, task=task.id, **kept))
    if not rubric.shared and not items:
        raise ValueError("the rubric has no criteria and no task has items; give one or the other")
    seen: dict[str, str] = {c.id: "a criterion of the rubric" for c in rubric.shared}
    for it in items:
        if seen.get(it.id) == it.task:
            raise ValueError(f"task '{it.task}' has two items with id '{it.id}'; give each its own")
        if it.id in seen:
            where = seen[it.id] if seen[it.id].startswith("a criterion") else f"an item of task '{seen[it.id]}'"
            raise ValueError(f"item id '{it.id}' of task '{it.task}' is also {where}; ids are unique in an audit")
        seen[it.id] = it.task
    return rubric.model_copy(update={"criteria": (*rubric.shared, *items)})


class Task(Frozen):
    id: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    format: Literal["response", "summary"] = "response"
    reference: str | None = Field(
        None,
        min_length=1,
        description="A reference answer, for a judge that grades against one ({{ reference }} in its template: "
        "Prometheus 2 with a reference, MT-Bench's math judge); the generator never sees it",
    )
    items: tuple[TaskItem, ...] = Field((), description="The task's own rubric items, beside the shared rubric's")

    @model_serializer(mode="wrap")
    def _items_where_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A task without items is written as it was before tasks had them (configs, inputs.json, keys)."""
        data = handler(self)
        if not self.items and isinstance(data, dict):
            data.pop("items", None)
        return data

    def keyed(self) -> dict[str, Any]:
        """The task as a probe's key holds it: what the generator is asked (the reference is the judge's; an item
        enters the key of the probes steered on it, as a criterion does)."""
        return self.model_dump(exclude={"reference", "items"})


def unique_ids(tasks: Iterable[Task]) -> None:
    """Task ids key probes and prompts: a repeated id would score one task's probes against another's prompt."""
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise ValueError(f"duplicate task id '{t.id}'; every task needs its own id")
        seen.add(t.id)


HumanReference = dict[frozenset[str], float]  # the human reference as the statistics read it: pair -> Pearson r


class ReferencePair(Frozen):
    a: str
    b: str
    r: float = Field(ge=-1, le=1)


class Reference(Frozen):
    """Human inter-criterion Pearson correlations, one per criterion pair."""

    citation: str = ""
    pairs: tuple[ReferencePair, ...] = Field(min_length=1)

    def lookup(self) -> dict[frozenset[str], float]:
        return {frozenset((p.a, p.b)): p.r for p in self.pairs}


class Benchmark(Frozen):
    """A bundled benchmark: rubric, tasks and human reference in one file."""

    rubric: Rubric
    tasks: tuple[Task, ...] = Field(min_length=1)
    reference: Reference

    @model_validator(mode="after")
    def _unique_tasks(self) -> Benchmark:
        unique_ids(self.tasks)
        return self


def bundled_path(name: str) -> Path:
    return Path(str(resources.files("radar_local") / "benchmarks" / f"{name}.yaml"))


@functools.cache  # bundled and frozen: read once per process
def load_benchmark(name: str) -> Benchmark:
    if name not in BUNDLED:
        raise InputError(name, f"unknown benchmark; bundled ones are {', '.join(BUNDLED)}")
    path = bundled_path(name)
    return parse_model(Benchmark, read_mapping(path), path)


def load_rubric(name_or_path: str | Path) -> Rubric:
    """A bundled benchmark's rubric by name, or a rubric file (YAML or JSON)."""
    if str(name_or_path) in BUNDLED:
        return load_benchmark(str(name_or_path)).rubric
    path = Path(name_or_path)
    return parse_model(Rubric, read_mapping(path), path)


def load_tasks(name_or_path: str | Path) -> tuple[Task, ...]:
    """A bundled benchmark's tasks by name, or a file holding `tasks: [...]`."""
    if str(name_or_path) in BUNDLED:
        return load_benchmark(str(name_or_path)).tasks
    path = Path(name_or_path)
    return parse_model(TaskFile, read_mapping(path), path).tasks


class TaskFile(Frozen):
    """A file of `tasks: [...]`, their ids unique (a config's `tasks` read alone too: formats.files)."""

    tasks: tuple[Task, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> TaskFile:
        unique_ids(self.tasks)
        return self


def load_reference(name_or_path: str | Path, rubric: Rubric) -> Reference:
    """A bundled benchmark's human reference by name, or a reference file; every rubric pair must be present."""
    if str(name_or_path) in BUNDLED:
        ref, where = load_benchmark(str(name_or_path)).reference, bundled_path(str(name_or_path))
    else:
        where = Path(name_or_path)
        ref = parse_model(Reference, read_mapping(where), where)
    table = ref.lookup()
    ids = [c.id for c in rubric.shared]  # a reference correlates shared criteria; a task's own items have none
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if frozenset((a, b)) not in table:
                raise InputError(where, f"reference lacks the pair {a}/{b}; add it under 'pairs'")
    return ref


def resolve_reference(rubric: Rubric | None, rubric_arg: str | None, human: str | None) -> HumanReference | None:
    """An explicit --human wins; a bundled rubric brings its own human reference."""
    if rubric is None:
        return None
    if human:
        return load_reference(human, rubric).lookup()
    if rubric_arg in BUNDLED:
        return load_reference(rubric_arg, rubric).lookup()
    return None
