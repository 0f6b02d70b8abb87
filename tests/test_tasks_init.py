"""Your own tasks from JSONL, CSV, Parquet or a saved Hugging Face dataset, and `radar init`."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from radar_local.cli.main import cli
from radar_local.config import AuditConfig, load_config
from radar_local.resolved import resolve
from radar_local.rubric import Task
from tests.conftest import planted_config

ROWS = [
    {"qid": f"q{i}", "question": f"Customer question number {i}?", "article": f"Article text {i}."} for i in range(6)
]


def write(path: Path, kind: str) -> Path:
    df = pd.DataFrame(ROWS)
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    elif kind == "csv":
        df.to_csv(path, index=False)
    elif kind == "parquet":
        df.to_parquet(path, index=False)
    else:
        import datasets

        datasets.Dataset.from_pandas(df).save_to_disk(str(path))
    return path


def tasks_of(tmp_path: Path, tasks) -> tuple:
    cfg = AuditConfig.model_validate(planted_config(tasks=tasks))
    return resolve(cfg, tmp_path).tasks


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "dataset"])
def test_tasks_from_a_file_with_a_column_mapping(tmp_path, kind):
    path = write(tmp_path / (f"tasks.{kind}" if kind != "dataset" else "saved"), kind)
    tasks = tasks_of(tmp_path, {"path": path.name, "columns": {"id": "qid", "prompt": "question"}})
    assert [t.id for t in tasks] == [f"q{i}" for i in range(6)] and tasks[2].prompt == "Customer question number 2?"
    assert all(t.format == "response" for t in tasks)


def test_summary_tasks_and_a_seeded_sample(tmp_path):
    path = write(tmp_path / "t.csv", "csv")
    source = {"path": str(path), "columns": {"id": "qid", "prompt": "question", "document": "article"}, "sample": 3}
    first, again = tasks_of(tmp_path, source), tasks_of(tmp_path, source)
    assert len(first) == 3 and first == again  # the run seed draws the same sample
    assert all(t.format == "summary" and t.prompt.endswith(".") and "Article text" in t.prompt for t in first)
    draws = {
        tuple(t.id for t in resolve(AuditConfig.model_validate(planted_config(tasks=source, seed=s)), tmp_path).tasks)
        for s in range(6)
    }
    assert len(draws) > 1  # another run seed, another sample


def test_a_plain_path_uses_the_default_column_names(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "prompt": "First?"}\n{"id": "b", "prompt": "Second?"}\n')
    assert [t.id for t in tasks_of(tmp_path, "t.jsonl")] == ["a", "b"]


@pytest.mark.parametrize(
    "columns,needle",
    [
        ({"id": "nope", "prompt": "question"}, "no column 'nope' for the task id"),
        ({"id": "qid"}, "no column 'prompt' for the task prompt"),
        ({"id": "qid", "prompt": "question", "document": "body"}, "no column 'body' for the document"),
    ],
)
def test_a_missing_column_names_the_file_and_the_column(tmp_path, columns, needle):
    path = write(tmp_path / "t.csv", "csv")
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump(planted_config(tasks={"path": "t.csv", "columns": columns})))
    res = CliRunner().invoke(cli, ["audit", str(cfg), "--out", str(tmp_path / "run")])
    assert res.exit_code == 2 and str(path) in res.stderr and needle in res.stderr and res.stderr.count("\n") == 1


def test_duplicate_ids_in_a_task_table(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(planted_config(tasks="t.jsonl")))
    res = CliRunner().invoke(cli, ["audit", str(cfg), "--out", str(tmp_path / "run")])
    assert res.exit_code == 2 and "duplicate task id 'a'" in res.stderr


@pytest.mark.parametrize("args", [[], ["--rubric", "skeleton"], ["--rubric", "summeval", "--tasks", "mine.csv"]])
def test_radar_init_writes_a_config_that_parses(tmp_path, args):
    target = tmp_path / "my.yaml"
    res = CliRunner().invoke(cli, ["init", str(target), *args])
    assert res.exit_code == 0, res.output
    text = target.read_text()
    assert text.count("#") >= 9  # commented
    config = load_config(target)
    assert config.generator.model == "smollm2-135m" and config.out == "runs/my"
    if "skeleton" in args:
        assert config.rubric == "my.rubric.yaml" and (tmp_path / "my.rubric.yaml").is_file()
        resolve(config.model_copy(update={"tasks": [Task(id="t", prompt="p")]}), tmp_path)  # the skeleton parses
    again = CliRunner().invoke(cli, ["init", str(target), *args])
    assert again.exit_code == 2 and "already exists" in again.stderr and target.read_text() == text
