"""promptfoo's prompts and tests read as RADAR tasks (formats/promptfoo.py reads its rubrics): the first prompt
as promptfoo reads it, each test's vars rendered into it, and the files a config names (`file://`)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.inputs import read_text
from radar_local.judge import render_text
from radar_local.rubric import Task


@dataclass
class Files:
    """The files a promptfooconfig names (`file://`): read inside its folder or `root` (shared.referenced), each
    one listed in `read` for the account, and each text read once (the rubrics and the tasks both read the first
    prompt)."""

    source: Path
    root: Path | None = None
    read: list[str] = field(default_factory=list)
    texts: dict[Path, str] = field(default_factory=dict)

    def path(self, ref: str) -> Path:
        found = shared.referenced(self.source, ref, self.root)
        if str(found) not in self.read:
            self.read.append(str(found))
        return found

    def text(self, ref: str) -> str:
        where = self.path(ref)
        if where not in self.texts:
            self.texts[where] = read_text(where)
        return self.texts[where]


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def tests_inline(data: dict) -> list:
    tests = data.get("tests")
    return tests if isinstance(tests, list) else []


def tests_of(files: Files, data: dict) -> list:
    """The tests inline, or from `tests: file://...` (YAML or JSON list, or CSV whose columns are the vars;
    promptfoo's `__`-prefixed columns are its own, `__description` names the test)."""
    tests = data.get("tests")
    if not isinstance(tests, str):
        return tests_inline(data)
    where = files.path(tests)
    if where.suffix == ".csv":
        rows = list(csv.DictReader(read_text(where).splitlines()))
        return [
            {"description": r.get("__description"), "vars": {k: v for k, v in r.items() if not k.startswith("__")}}
            for r in rows
        ]
    return shared.load_yaml(where) if where.suffix in (".yaml", ".yml", ".json") else []


CODE = (".js", ".cjs", ".mjs", ".ts", ".py", ".sh")  # prompt functions promptfoo runs to build each prompt


TEXT = (".txt", ".md", ".j2", ".jinja", ".jinja2", ".njk")  # text files; promptfoo splits .txt on '---' lines


def chat_of(value: Any) -> list[dict] | None:
    """A chat prompt (a list of {role, content}), as promptfoo parses a prompt whose text is JSON; else None."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    ok = (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in value)
    )
    return value if ok else None


def first_prompt(files: Files, data: dict) -> tuple[str | None, list[str]]:
    """The text of the config's first prompt as promptfoo reads it, and what the account says of it: a text file
    split on '---' lines (the first part), a JSON or YAML chat file (its user message); a prompt function is one
    line (radar runs no code)."""
    path = files.source
    prompts = data.get("prompts")
    first = prompts[0] if isinstance(prompts, list) and prompts else prompts
    if isinstance(first, dict):
        first = first.get("raw") or first.get("id")
    notes: list[str] = []
    if isinstance(first, str) and first.startswith("file://"):
        ref = first
        name = ref.removeprefix("file://").split(":", 1)[0]  # `x.py:make_prompt` names a function in x.py
        suffix = Path(name).suffix.lower()
        if suffix in CODE:
            raise InputError(
                path,
                f"prompts[0] is a prompt function ({ref[:80]}) that promptfoo runs to build each prompt; radar runs "
                "no code: give the prompt as text, or as a JSON or YAML chat file",
            )
        if suffix in (".json", ".yaml", ".yml"):
            where = files.path("file://" + name)
            first = shared.load_yaml(where) if suffix != ".json" else chat_of(read_text(where))
            if chat_of(first) is None:
                raise InputError(path, f"prompts[0] ({ref[:80]}) is no chat prompt (a list of {{role, content}})")
        elif suffix in TEXT or not suffix:
            parts = [p.strip() for p in re.split(r"^[ \t]*---[ \t]*$", files.text("file://" + name), flags=re.M)]
            parts = [p for p in parts if p]
            first = parts[0] if parts else ""
            if len(parts) > 1:
                notes.append(f"prompts[0]: the first of the {len(parts)} prompts in {name} (promptfoo splits it on "
                             "'---' lines and runs every test on each); the tasks render that one")  # fmt: skip
        else:
            raise InputError(path, f"prompts[0] ({ref[:80]}): radar reads text, JSON and YAML prompt files")
    chat = chat_of(first)
    if chat is not None:
        users = [m for m in chat if m.get("role") == "user"]
        if len(users) != 1 or any(m.get("role") not in ("system", "user") for m in chat):
            raise InputError(
                path,
                f"prompts[0] is a conversation of {len(chat)} messages; a RADAR task is one prompt: give a text "
                "prompt, or a chat of one user message (after an optional system message)",
            )
        if any(m.get("role") == "system" for m in chat):
            notes.append("prompts[0] is a chat: each task is its user message; its system message is not part of "
                         "a RADAR task (the generator writes the response to the user message)")  # fmt: skip
        first = users[0]["content"]
    return (first if isinstance(first, str) else None), notes


def task_of(first: str | None, test: dict) -> str | None:
    """The prompt a test asks (prompts[0] with its vars), None where radar cannot tell or the test holds more than
    its prompt (a var the prompt does not show feeds something else: a simulated user, a provider)."""
    values = {key: str(v) for key, v in as_dict(test.get("vars")).items()}
    if not isinstance(first, str) or set(values) != shared.variables(first):
        return None
    try:
        return render_text(first, **values)
    except TemplateError:
        return None


def tasks_of(files: Files, data: dict) -> tuple[tuple[Task, ...], list[str], dict[int, str]]:
    """The tasks (one per prompt the tests ask), notes on how they were read, and each test's task id (by the
    test's `id()`), for the rubrics it holds."""
    path = files.source
    first, notes = first_prompt(files, data)
    taken: set[str] = set()
    tasks: list[Task] = []
    owners: dict[int, str] = {}
    for k, test in enumerate(tests_of(files, data), 1):
        if not isinstance(test, dict):
            continue
        values = {key: str(v) for key, v in as_dict(test.get("vars")).items()}
        if not values and not (isinstance(first, str) and first.strip() and not shared.variables(first)):
            continue  # no vars: a task only where prompts[0] is the whole prompt
        if isinstance(first, str):
            try:
                prompt = render_text(first, **values)
            except TemplateError as exc:
                raise InputError(path, f"prompts[0] does not render with test {k}'s vars ({exc})") from None
        elif len(values) == 1:
            prompt = next(iter(values.values()))
        else:
            raise InputError(path, "tests have several vars and no prompt to put them in; add 'prompts'")
        same = next((t for t in tasks if t.prompt == prompt), None)
        if same is not None:  # one prompt, one task: another test renders it too
            owners[id(test)] = same.id
            continue
        name = str(test.get("description") or f"test {k}")
        tasks.append(Task(id=shared.criterion_id(name, taken), prompt=prompt))
        owners[id(test)] = tasks[-1].id
    return tuple(tasks), notes if tasks else [], owners
