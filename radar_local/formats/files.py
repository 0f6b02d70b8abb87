"""Reading a source file into radar's rubric, judge and tasks, writing the import's folder, and writing a
rubric back into its source file (the functions `radar_local.formats` names)."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import tempfile
from pathlib import Path
from types import ModuleType

import yaml

from radar_local.common import one_line, parse_model
from radar_local.errors import InputError
from radar_local.formats.names import EXPORTS, FORMATS, MODULES
from radar_local.formats.shared import Imported, carried, changes
from radar_local.inputs import read_json, read_mapping, read_text
from radar_local.rubric import Rubric, Task, TaskFile, load_benchmark
from radar_local.store import make_folder, write_atomic

__all__ = ["Imported", "carried", "export", "export_items", "holds_items", "read", "tasks_with_items", "write_import"]


def _module(fmt: str) -> ModuleType:
    return importlib.import_module(f"radar_local.formats.{MODULES[fmt]}")


def read(fmt: str, path: str | Path, root: Path | None = None) -> Imported:
    """The source file as radar's rubric, judge and tasks, with the account of what mapped; `root`: the folder its
    file references may be read from (default the file's own)."""
    if fmt not in FORMATS:
        raise InputError(fmt, f"unknown format; radar imports {', '.join(FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "not found; name the file to import")
    module = _module(fmt)
    references = "root" in inspect.signature(module.read).parameters  # a format whose files name other files
    if root is not None and not references:
        raise InputError(path, f"--root: a {fmt} file names no other file to read; leave --root out")
    try:
        return module.read(path, root) if references else module.read(path)
    except (TypeError, AttributeError, KeyError, ValueError) as exc:  # a value of a type the format never has
        raise InputError(
            path, f"does not have the shape of a {fmt} file ({type(exc).__name__}: {one_line(exc)})"
        ) from None


def export(fmt: str, original: str | Path, rubric: Rubric, root: Path | None = None) -> tuple[str, list[str]]:
    """The original file's new text with `rubric`'s criteria, and the account of what changed. The
    original is read again as on import: criteria it has unchanged keep their entries byte for byte."""
    if fmt not in EXPORTS:  # a format of per-prompt items: its export writes them (export_items)
        raise InputError(original, f"a {fmt} file holds items, not a rubric: export the import's config.yaml")
    imported = read(fmt, original, root)
    for c in rubric.criteria:
        theirs = imported.rubric.scale_of(c.id) if c.id in imported.rubric.ids else imported.rubric.scale
        ours = rubric.scale_of(c.id)
        if (ours.tokens, ours.values) != (theirs.tokens, theirs.values):
            raise InputError(
                original,
                f"the rubric scores {c.id} on {ours.name}, the file's judge on {theirs.name}; export a rubric "
                "on the scale it was imported with",
            )
    account = changes(imported.rubric, rubric)
    source = read_text(Path(original))
    if all(line.startswith("kept: ") for line in account):  # nothing to write: the file as it is, byte for byte
        return source, account
    text = _module(fmt).write(Path(original), imported, rubric, account)
    if not source.endswith("\n"):  # the writers end with a line break; the file's own last line may have none
        text = text.removesuffix("\n")
    try:
        account += _reads_back(fmt, Path(original), text, rubric, root)
    except PermissionError:
        account.append(f"not checked by importing it again: {Path(original).parent} is not writable")
    return text, account


def tasks_with_items(path: Path) -> tuple[Task, ...]:
    """The tasks an export of per-prompt items writes back: the `tasks` of a config (the import's config.yaml,
    edited) or of a tasks file, each with its items."""
    data = read_mapping(path)
    if not isinstance(data.get("tasks"), list):
        raise InputError(path, "names no tasks with items; give the import's config.yaml (its `tasks`, edited)")
    return parse_model(TaskFile, {"tasks": data["tasks"]}, path).tasks


def holds_items(path: Path) -> bool:
    """Whether the file is a config (or tasks file) whose tasks carry items of their own: what a format that holds
    both a rubric and per-test items (promptfoo) exports as items."""
    tasks = read_mapping(path).get("tasks")
    return isinstance(tasks, list) and any(isinstance(t, dict) and t.get("items") for t in tasks)


def export_items(
    fmt: str, original: str | Path, tasks: tuple[Task, ...], root: Path | None = None
) -> tuple[str, list[str]]:
    """The original file's new text with each task's items, and the account; written only where importing it
    gives those items back."""
    text, account = _module(fmt).write_items(Path(original), read(fmt, original, root), tasks)
    if text == read_text(Path(original)):  # the file as it is: it was imported just now
        return text, account
    try:
        back = {t.id: t for t in _imported_again(fmt, Path(original), text, root, "the items").tasks}
    except PermissionError:
        return text, [*account, f"not checked by importing it again: {Path(original).parent} is not writable"]
    for task in tasks:
        again = [(i.text, i.points, i.tags) for i in back[task.id].items] if task.id in back else []  # none left
        if again != [(i.text, i.points, i.tags) for i in task.items]:
            raise InputError(original, f"task '{task.id}': its items would not import again as given; reword them")
    return text, account


def _reads_back(fmt: str, original: Path, text: str, rubric: Rubric, root: Path | None) -> list[str]:
    """An export is only written where importing it gives this rubric back: a criterion text the format reads
    another way (braces promptfoo takes for a variable, say) is one line, before any file is written. Returns the
    account's lines for criteria that come back under another id."""
    back = _imported_again(fmt, original, text, root, "the rubric")
    mine, theirs = carried(rubric), carried(back.rubric)
    named = {value: cid for cid, value in theirs.items()}
    differ = [cid for cid, kept in mine.items() if kept not in named]
    if differ or len(theirs) != len(mine):
        raise InputError(
            original,
            f"the exported file would import as another rubric ({', '.join(differ) or 'its criteria differ'}); "
            "reword the rubric",
        )
    # the same criteria, one named again by its new text (a format with no name for it: a g-eval list element)
    return [f"{cid}: imports again as '{named[kept]}' (the file names it by its text)"
            for cid, kept in mine.items() if named[kept] != cid]  # fmt: skip


def _imported_again(fmt: str, original: Path, text: str, root: Path | None, what: str) -> Imported:
    """`text` read as a `fmt` file beside the original (so that its file references read the same files); one
    line naming the original where it would not import, telling to reword `what`."""
    fd, name = tempfile.mkstemp(dir=original.parent, prefix=".radar-export-", suffix=original.suffix)
    trial = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return read(fmt, trial, root)
    except InputError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise InputError(original, f"the exported file would not import again ({reason}); reword {what}") from None
    finally:
        trial.unlink(missing_ok=True)


def _legible(data: object) -> str:
    """YAML radar reads back as `data` (PyYAML's reading: `yes` stays a string), texts with line breaks as
    literal blocks so a judge template stays readable."""

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value and all(line == line.rstrip() for line in value.splitlines()) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=4096)


PER_PROMPT_N = 10  # probes a side an import with per-prompt items asks: the smallest N its findings confirm at


def write_import(
    imported: Imported, out: Path, engine: str, generator: str, verifier: str, force: bool = False
) -> list[Path]:
    """rubric.yaml, config.yaml (ready for `radar audit`) and import.md (the account) in `out`; a file there that
    an earlier import did not write as it is now is refused (one line) unless `force`."""
    make_folder(out)
    spec = {"engine": engine, "model": generator}
    judge: dict = {"engine": engine, "model": verifier, "name": f"{imported.format}-judge"}
    if imported.judge is not None:
        judge["judge"] = imported.judge.model_dump(mode="json", exclude_none=True)
    config: dict = {"rubric": "rubric.yaml"}
    config["tasks"] = [t.model_dump(exclude_defaults=True) for t in imported.tasks] or "helpsteer2"
    if imported.rubric.ids and set(imported.rubric.ids) <= set(load_benchmark("helpsteer2").rubric.ids):
        config["human"] = "helpsteer2"
    # an item lives in one prompt: at N = 4 no sign error or pair of it can be confirmed (docs/per-prompt.md)
    n = PER_PROMPT_N if any(t.items for t in imported.tasks) else 4
    config |= {"generator": spec, "verifier": judge, "n": n, "seed": 0, "out": str(out / "run")}
    if imported.pairwise is not None:  # asked of the verifier's model beside radar's pointwise judge
        config["pairwise"] = imported.pairwise
    lines = [f"# Imported from {imported.source} ({imported.format})", ""]
    lines += [f"- {line}" for line in imported.account] + [""]
    files = {
        "rubric.yaml": _legible(imported.rubric.model_dump(mode="json", exclude_none=True)),
        "config.yaml": _legible(config),
        "import.md": "\n".join(lines),
    }
    written = out / WRITTEN
    mine = read_json(written) if written.is_file() else {}
    for name in files:
        target = out / name
        if target.exists() and not force and mine.get(name) != _digest(target):
            raise InputError(
                target,
                "exists, and radar did not write it as it is now (edited since, or another's); pass --force to "
                "replace it, or choose another --out",
            )
    for name, text in files.items():
        write_atomic(out / name, text)
    write_atomic(written, json.dumps({name: _digest(out / name) for name in files}, indent=2))
    return [out / name for name in files]


WRITTEN = ".radar-import.json"  # the digest of each file an import wrote: what a later import may replace


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    except OSError:
        return None
