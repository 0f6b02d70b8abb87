"""Your own tasks from your own data: a JSONL, CSV or Parquet file, or a Hugging Face dataset saved
to disk (`Dataset.save_to_disk`), with a column mapping and an optional seeded sample."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from radar_local.common import Frozen
from radar_local.errors import InputError, MissingDependencyError
from radar_local.inputs import regular_file
from radar_local.rubric import Task, unique_ids

if TYPE_CHECKING:
    import pandas as pd

TABLE_SUFFIXES = (".jsonl", ".csv", ".parquet")


class TaskSource(Frozen):
    """`tasks:` as a mapping: where the tasks are and which columns hold them."""

    path: str = Field(
        min_length=1, description="A .jsonl, .csv or .parquet file, or a saved Hugging Face dataset folder"
    )
    columns: dict[Literal["id", "prompt", "document", "reference"], str] = Field(
        default_factory=dict,
        description="Column names for id, prompt, (summary tasks) document and (a judge that grades against one) "
        "reference; default: the same names",
    )
    sample: int | None = Field(None, ge=1, description="Draw this many tasks with the run seed (default: all)")


def is_task_table(path: Path) -> bool:
    return path.suffix in TABLE_SUFFIXES or (path.is_dir() and (path / "dataset_info.json").is_file())


def read_table(path: Path, what: str = "task file") -> pd.DataFrame:
    """A JSONL, CSV or Parquet file (or a saved dataset) as a DataFrame; CSV cells as text."""
    import pandas as pd  # pandas: only a table needs it; a config loads (and a bad one is refused) without it

    if not path.is_dir():
        regular_file(path, what)
    try:
        if path.is_dir():
            try:
                import datasets
            except ImportError:
                raise MissingDependencyError("datasets", "hf") from None
            return datasets.load_from_disk(str(path)).to_pandas()
        if path.suffix == ".jsonl":
            return pd.read_json(path, lines=True, dtype=False)
        if path.suffix == ".csv":
            return pd.read_csv(path, dtype=str, keep_default_na=False)
        return pd.read_parquet(path)
    except FileNotFoundError:
        raise InputError(path, f"{what} not found; check the path") from None
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the {what} ({str(exc).splitlines()[0][:120]})") from None


def load_task_table(source: TaskSource, seed: int) -> tuple[Task, ...]:
    path = Path(source.path)
    df = read_table(path)
    names = {key: source.columns.get(key, key) for key in ("id", "prompt", "document", "reference")}
    for key in ("id", "prompt"):
        if names[key] not in df.columns:
            raise InputError(
                path,
                f"no column '{names[key]}' for the task {key}; columns are {', '.join(map(str, df.columns))}; "
                f"map one with tasks.columns.{key}",
            )
    for key in ("document", "reference"):  # optional columns: one named that is not there is a mistake
        if key in source.columns and names[key] not in df.columns:
            columns = ", ".join(map(str, df.columns))
            raise InputError(path, f"no column '{names[key]}' for the {key}; columns are {columns}")
    has_doc, has_reference = names["document"] in df.columns, names["reference"] in df.columns
    if source.sample is not None and source.sample < len(df):
        rows = np.sort(np.random.default_rng(seed).choice(len(df), source.sample, replace=False))
        df = df.iloc[rows]
    tasks = []
    for number, row in enumerate(df.itertuples(index=False), 1):
        rec = dict(zip(df.columns, row))
        task_id, prompt = _text(rec[names["id"]], ids=True), _text(rec[names["prompt"]])
        for key, value in (("id", task_id), ("prompt", prompt)):
            if not value:
                raise InputError(
                    path,
                    f"row {number}: the {key} is empty or not text ({_kind(rec[names[key]])}); "
                    "every task needs a text id and prompt",
                )
        # an empty reference cell is a task without one (a judge that shows references refuses it, naming it)
        reference = (_text(rec[names["reference"]]) or None) if has_reference else None
        if has_doc:  # a summary task: the source document is what the response summarizes
            document = _text(rec[names["document"]]) or ""
            prompt, form = (f"{prompt}\n\n{document}" if document else prompt), "summary"
        else:
            form = "response"
        tasks.append(Task(id=task_id, prompt=prompt, format=form, reference=reference))
    if not tasks:
        raise InputError(path, "holds no tasks")
    try:
        unique_ids(tasks)
    except ValueError as exc:
        raise InputError(path, str(exc)) from None
    return tuple(tasks)


def _text(value: object, ids: bool = False) -> str:
    """A cell as stripped text; "" for anything that is not text (null, NaN, bytes, lists), which would
    otherwise be audited as the words 'None', 'nan' or a repr. An id may also be an integer."""
    if isinstance(value, str):
        return value.strip()
    if ids and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(value)
    return ""


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "blank text"
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    return type(value).__name__
