"""`radar init`: a commented starter config (and a rubric skeleton) that parses as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel

from radar_local.config import AuditSettings
from radar_local.errors import InputError
from radar_local.inputs import yaml_text
from radar_local.rubric import BUNDLED
from radar_local.store import write_atomic

RUBRIC_SKELETON = """\
# A rubric: each criterion is one axis the judge scores 0-4. Ids are lowercase identifiers.
id: my_rubric
name: My rubric
criteria:
  - id: helpfulness
    label: Helpfulness
    description: "How well the response addresses the user's request. Replace with your definition."
  - id: brevity
    label: Brevity
    kind: descriptive          # descriptive axes have two ends instead of good and bad
    low: terse
    high: long-winded
    description: "How long the response is. Higher is not better."
# weights: {helpfulness: 1.0, brevity: 0.5}   # optional: the report shows how much of this aggregate double-counts
"""


def _scalar(value: str) -> str:
    """A value as one YAML scalar: a model name such as 'a}b' or 'm, name: x' stays that name, never
    breaks the file or adds a key (a JSON string is a YAML double-quoted scalar)."""
    return value if re.fullmatch(r"[A-Za-z0-9_./-]+", value) else json.dumps(value, ensure_ascii=False)


def starter_config(
    rubric: str, rubric_file: str | None, tasks: str | None, engine: str, generator: str, verifier: str, out: str
) -> str:
    rubric, engine, generator, verifier, out = (
        _scalar(v) for v in (rubric_file or rubric, engine, generator, verifier, out)
    )
    tasks = None if tasks is None else _scalar(tasks)
    if tasks:
        tasks_block = (
            f"tasks:                        # your prompts: a .jsonl / .csv / .parquet file or a saved HF dataset\n"
            f"  path: {tasks}\n"
            f"  columns: {{id: id, prompt: prompt}}   # add `document: <column>` for summary tasks\n"
            f"  # sample: 20                 # draw this many tasks with the run seed\n"
        )
    elif rubric_file is None:
        tasks_block = f"tasks: {rubric}                # the bundled benchmark's five tasks\n"
    else:
        tasks_block = (
            "tasks:                        # inline, or a file (see `radar init --tasks`)\n"
            '  - {id: example, prompt: "Replace with a prompt your users send."}\n'
        )
    return (
        "# radar_local audit config (`radar audit THIS_FILE`). Every key is checked; an unknown key is an error.\n"
        f"rubric: {rubric}\n{tasks_block}"
        f"generator: {{engine: {engine}, model: {generator}}}   # writes the probes\n"
        f"verifier: {{engine: {engine}, model: {verifier}}}    # the judge under audit; prefer another family\n"
        + "".join(_setting(key) for key in SETTINGS)
        + f"out: {out}\n"
    )


# The settings a starter config spells out, each with its default and description from AuditSettings.
SETTINGS = "n unconditioned seed layout generation scoring exclude_flagged_probes tau bootstrap".split()


def _setting(key: str) -> str:
    field = AuditSettings.model_fields[key]
    value = field.get_default(call_default_factory=True)
    value = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    text = f"{key}: {yaml_text(value).strip()}" if not isinstance(value, dict) else f"{key}: {_flow(value)}"
    return f"{text:<30}# {field.description}\n" if field.description else f"{text}\n"


def _flow(mapping: dict) -> str:
    return "{" + ", ".join(f"{k}: {yaml_text(v).strip()}" for k, v in mapping.items()) + "}"


def write_starter(
    path: Path,
    rubric: str = "helpsteer2",
    tasks: str | None = None,
    engine: str = "vllm",
    generator: str = "smollm2-135m",
    verifier: str = "smollm2-135m",
) -> list[Path]:
    """Write the config (and a rubric skeleton when asked); refuse to overwrite anything."""
    if rubric not in BUNDLED and rubric != "skeleton":
        raise InputError("--rubric", f"'{rubric}' is neither a bundled rubric ({', '.join(BUNDLED)}) nor 'skeleton'")
    written = [path]
    rubric_file = None
    if rubric == "skeleton":
        rubric_path = path.with_name(f"{path.stem}.rubric.yaml")
        written.insert(0, rubric_path)
        rubric_file = rubric_path.name
    for p in written:
        if p.exists():
            raise InputError(p, "already exists; pick another name (radar init never overwrites)")
    if not path.parent.is_dir():
        raise InputError(path, f"the folder {path.parent} does not exist; create it first")
    if rubric_file:
        write_atomic(written[0], RUBRIC_SKELETON)
    write_atomic(path, starter_config(rubric, rubric_file, tasks, engine, generator, verifier, f"runs/{path.stem}"))
    return written
