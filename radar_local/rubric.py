"""Rubrics, tasks and human reference correlations: pydantic models that reject unknown keys."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

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


class Rubric(Frozen):
    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)
    criteria: tuple[Criterion, ...] = Field(min_length=1)  # one criterion: its gate and judge bias, no coupling
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

    def keyed(self) -> dict[str, Any]:
        """The task as a probe's key holds it: what the generator is asked (the reference is the judge's)."""
        return self.model_dump(exclude={"reference"})


def unique_ids(tasks: Iterable[Task]) -> None:
    """Task ids key probes and prompts: a repeated id would score one task's probes against another's prompt."""
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise ValueError(f"duplicate task id '{t.id}'; every task needs its own id")
        seen.add(t.id)


HumanPairs = dict[frozenset[str], float]  # a human reference as the statistics read it: pair -> Pearson r


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

    class TaskFile(Frozen):
        tasks: tuple[Task, ...] = Field(min_length=1)

        @model_validator(mode="after")
        def _unique(self) -> TaskFile:
            unique_ids(self.tasks)
            return self

    return parse_model(TaskFile, read_mapping(path), path).tasks


def load_reference(name_or_path: str | Path, rubric: Rubric) -> Reference:
    """A bundled benchmark's human reference by name, or a reference file; every rubric pair must be present."""
    if str(name_or_path) in BUNDLED:
        ref, where = load_benchmark(str(name_or_path)).reference, bundled_path(str(name_or_path))
    else:
        where = Path(name_or_path)
        ref = parse_model(Reference, read_mapping(where), where)
    table = ref.lookup()
    ids = rubric.ids
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if frozenset((a, b)) not in table:
                raise InputError(where, f"reference lacks the pair {a}/{b}; add it under 'pairs'")
    return ref


def resolve_reference(rubric: Rubric | None, rubric_arg: str | None, human: str | None) -> HumanPairs | None:
    """An explicit --human wins; a bundled rubric brings its own human reference."""
    if rubric is None:
        return None
    if human:
        return load_reference(human, rubric).lookup()
    if rubric_arg in BUNDLED:
        return load_reference(rubric_arg, rubric).lookup()
    return None
