"""The one reader of radar's YAML and JSON inputs: configs, rubrics, task and reference files, the
model registry, stats files and a run directory's own JSON.

Every failure is one `InputError` naming the file: a missing or unreadable file, bytes that are not
UTF-8, a document over MAX_BYTES, nesting deeper than MAX_DEPTH, and YAML whose aliases would expand
past MAX_NODES (a "billion laughs" file: a few hundred bytes that expand to gigabytes in memory, in
the config snapshot and in the key digest). Aliases themselves stay allowed: sharing one block of
engine options between verifiers with `&opts` / `*opts` is ordinary YAML.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import TypeAdapter, ValidationError

from radar_local.errors import InputError

MAX_BYTES = 64 << 20
MAX_DEPTH = 64
MAX_NODES = 1_000_000  # scalars and collections after expanding every alias
# libyaml's parser when PyYAML was built with it (about ten times faster), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def regular_file(path: Path, what: str = "file") -> None:
    """Refuse what is not a regular file before a reader opens it: a FIFO would block it forever, and
    a folder or a device is no input either."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(path, f"{what} not found; check the path") from None
    except (OSError, ValueError) as exc:  # a name too long, a component that is a file, a NUL byte
        raise InputError(path, f"cannot read the {what} ({getattr(exc, 'strerror', None) or exc})") from None
    _refuse_unless_regular(path, mode, what)


def _refuse_unless_regular(path: Path, mode: int, what: str) -> None:
    if stat.S_ISDIR(mode):
        raise InputError(path, f"is a directory, not a {what}; check the path")
    if not stat.S_ISREG(mode):
        raise InputError(path, f"is not a regular file (a FIFO, socket or device); give the {what} itself")


def read_text(path: Path) -> str:
    """A file's text: UTF-8 (a byte-order mark is dropped), at most MAX_BYTES."""
    regular_file(path)
    try:
        # O_NONBLOCK: were the file swapped for a FIFO since the check, opening it does not wait for a writer
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as fh:
            _refuse_unless_regular(path, os.fstat(fh.fileno()).st_mode, "file")
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(path, "file not found; check the path") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise InputError(path, f"is larger than {MAX_BYTES >> 20} MiB; radar reads no input this large")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None


def load_yaml(text: str, where: object) -> object:
    """Parse YAML after checking, on the event stream, its depth and its size with aliases expanded."""
    try:
        _check_events(yaml.parse(text, Loader=_LOADER), where)
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        at = f" at line {line + 1}" if line is not None else ""
        raise InputError(where, f"malformed YAML{at}; fix the syntax") from None


def _check_events(events, where: object) -> None:
    sizes: dict[str, int] = {}  # nodes under each anchor, its aliases expanded
    open_sizes: list[list] = []  # [nodes so far, anchor] of each collection being read
    expanded = 0
    for event in events:
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            open_sizes.append([1, event.anchor])
            if len(open_sizes) > MAX_DEPTH:
                raise InputError(
                    where, f"is nested deeper than {MAX_DEPTH} levels; radar's inputs are shallow, check the file"
                )
            expanded += 1
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            nodes, anchor = open_sizes.pop()
        elif isinstance(event, yaml.ScalarEvent):
            nodes, anchor = 1, event.anchor
            expanded += 1
        elif isinstance(event, yaml.AliasEvent):
            nodes, anchor = sizes.get(event.anchor, 1), None
            expanded += nodes
        else:
            continue
        if anchor is not None:
            sizes[anchor] = nodes
        if open_sizes:
            open_sizes[-1][0] += nodes
        if expanded > MAX_NODES:
            raise InputError(
                where,
                f"expands past {MAX_NODES:,} values through its YAML aliases (*name); "
                "write the values out or share fewer of them",
            )


def load_json(text: str | bytes, where: object) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(where, "is nested too deeply to be radar's JSON; check the file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        at = f" at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise InputError(where, f"is not valid JSON{at}; fix the syntax") from None


def read_data(path: Path) -> object:
    """A YAML file, or JSON by its .json suffix (JSON is YAML too, but JSON's own parser is faster)."""
    text = read_text(path)
    return load_json(text, path) if path.suffix == ".json" else load_yaml(text, path)


def read_mapping(path: Path) -> dict:
    """A YAML or JSON file that must hold a mapping at the top level."""
    data = read_data(path)
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    return data


def read_json(path: Path, remedy: str = "re-run the command that wrote it") -> dict:
    """A JSON object a command wrote (a run directory's files, a stats file); `remedy` says what to do
    when it is damaged."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except (RecursionError, json.JSONDecodeError):
        raise InputError(path, f"is not valid JSON; {remedy}") from None
    if not isinstance(data, dict):
        raise InputError(path, f"is not a JSON object as radar writes it; {remedy}")
    return data


Schema = TypeVar("Schema")


def read_model(path: Path, schema: type[Schema], remedy: str = "re-run the command that wrote it") -> Schema:
    """A JSON file a command wrote, validated as `schema` (a pydantic model or any type pydantic takes,
    such as dict[str, ModelSpec]); one line naming the key that is wrong."""
    data = read_json(path, remedy)
    try:
        return TypeAdapter(schema).validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise InputError(path, f"key '{key}': {err['msg']}; {remedy}") from None


def yaml_text(data: object) -> str:
    """YAML that load_yaml reads back as `data`, keys in their order (libyaml's emitter where built)."""
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=True)
