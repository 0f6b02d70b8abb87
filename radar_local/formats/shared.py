"""What every format shares: the imported rubric and judge with their account, criterion ids made from a
source's names, template variables bound to radar's, and YAML read and written keeping comments."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString

from radar_local import inputs
from radar_local.errors import InputError
from radar_local.inputs import read_text
from radar_local.judge import Judge
from radar_local.rubric import Criterion, Rubric, Task
from radar_local.scale import Scale


@dataclass
class Imported:
    """A source file as radar reads it. `thresholds`: a criterion's pass mark on its own scale, where the
    source gates on one (the audit keeps the underlying scores; the threshold is recorded, not applied)."""

    format: str
    source: Path
    rubric: Rubric
    judge: Judge | None = None
    tasks: tuple[Task, ...] = ()
    thresholds: dict[str, float] = field(default_factory=dict)
    account: list[str] = field(default_factory=list)
    root: Path | None = None  # the folder its file references were read from, where not the source's own
    pairwise: dict | None = None  # a pairwise judge (config.PairwiseJudge's fields), where the source holds one


def criterion_id(text: str, taken: set[str]) -> str:
    """A criterion id from a source's name or text: the name itself where it is an id already, else its
    first words, lowercase; unique among `taken`."""
    if re.fullmatch(r"[a-z][a-z0-9_]{0,39}", text) and text not in taken:
        taken.add(text)
        return text
    words = re.findall(r"[a-z0-9]+", text.lower())[:4] or ["criterion"]
    base = "_".join(words)[:40].strip("_")
    base = base if base[0].isalpha() else f"c_{base}"
    cid, k = base, 2
    while cid in taken:
        cid, k = f"{base}_{k}", k + 1
    taken.add(cid)
    return cid


def label_of(cid: str) -> str:
    return cid.replace("_", " ").capitalize()


def criterion(path: Path, where: str, **fields: Any) -> Criterion:
    try:
        return Criterion(**fields)
    except ValidationError as exc:
        raise InputError(path, f"{where}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def rubric(path: Path, rid: str, name: str, criteria: list[Criterion], scale: Scale) -> Rubric:
    if not criteria:
        raise InputError(path, "holds no criterion: nothing a judge scores")
    try:
        return Rubric(id=criterion_id(rid, set()), name=name, criteria=tuple(criteria), scale=scale)
    except ValidationError as exc:
        raise InputError(path, exc.errors()[0]["msg"].removeprefix("Value error, ")) from None


def judge(path: Path, **fields: Any) -> Judge:
    try:
        return Judge(**fields)
    except ValidationError as exc:
        raise InputError(path, f"the judge does not map: {exc.errors()[0]['msg']}") from None


_JINJA_VAR = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_FORMAT_VAR = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def literal(text: str) -> str:
    """Source text as Jinja that renders to itself, whatever it holds (`{% endraw %}` too): each `{` that would
    open a Jinja construct, or would with what follows the text, is written as the expression `{{ "{" }}`."""
    return re.sub(r"\{(?=[{%#]|$)", '{{ "{" }}', text)


def bind(text: str, names: dict[str, str], path: Path, where: str, style: str = "jinja") -> str:
    """A source template as radar's Jinja: each variable (`{{ output }}`; `{completion}` in Python's format
    style) becomes the radar expression `names` maps it to; any other variable, filter or block is refused
    in one line naming it (a template radar cannot bind would score with a hole in the prompt)."""
    out, at, plain = [], 0, ""  # plain: source text since the last variable, escaped as one piece
    pattern = _JINJA_VAR if style == "jinja" else _FORMAT_VAR
    for m in pattern.finditer(text):
        plain += text[at : m.start()]
        at = m.end()
        token = m.group(0)
        if style == "format" and token in ("{{", "}}"):  # Python's escapes of a literal brace
            plain += token[0]
            continue
        var = (m.group(1) or "").strip() if m.group(1) is not None else None
        if var is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
            raise InputError(
                path, f"{where}: '{token[:60]}' is not a plain variable; radar binds {', '.join(names)} only"
            )
        if var not in names:
            raise InputError(path, f"{where}: the variable '{var}' has no counterpart in radar ({', '.join(names)})")
        out += [literal(plain), "{{ " + names[var] + " }}"]
        plain = ""
    out.append(literal(plain + text[at:]))
    return "".join(out)


def variables(text: str, style: str = "jinja") -> set[str]:
    pattern = _JINJA_VAR if style == "jinja" else _FORMAT_VAR
    return {m.group(1).strip() for m in pattern.finditer(text) if m.group(1)}


def changes(old: Rubric, new: Rubric) -> list[str]:
    """The account of an export: which criteria keep their entry, which are rewritten, added, dropped."""
    before = {c.id: c for c in old.criteria}
    kept = [c.id for c in new.criteria if before.get(c.id) == c and old.scale_of(c.id) == new.scale_of(c.id)]
    rewritten = [c.id for c in new.criteria if c.id in before and c.id not in kept]
    added = [c.id for c in new.criteria if c.id not in before]
    dropped = [cid for cid in before if cid not in new.ids]
    lines = [f"{what}: {', '.join(ids)}" for what, ids in (("kept", kept), ("rewritten", rewritten)) if ids]
    lines += [f"{what}: {', '.join(ids)}" for what, ids in (("added", added), ("dropped", dropped)) if ids]
    return lines


def unchanged(old: Rubric, new: Rubric, cid: str) -> bool:
    return cid in old.ids and old.criterion(cid) == new.criterion(cid) and old.scale_of(cid) == new.scale_of(cid)


def named_texts(path: Path, criteria: Any, where: str) -> dict:
    """A source's `name: text` criteria, each text non-empty text (a number or a list is no criterion)."""
    if not isinstance(criteria, dict) or not criteria:
        raise InputError(path, f"'{where}' (name -> text, one per criterion) is missing or empty")
    for name, text in criteria.items():
        if not isinstance(text, str) or not text.strip():
            raise InputError(path, f"{where}.{name}: a criterion's text must be non-empty text")
    return criteria


def named_ids(names: Any) -> dict[str, str]:
    """name -> criterion id for a source that names its criteria (a mapping's keys)."""
    taken: set[str] = set()
    return {str(name): criterion_id(str(name), taken) for name in names}


def write_named(criteria: dict, old: Rubric, new: Rubric) -> None:
    """A source's `name: text` criteria made `new`'s in place: unchanged entries untouched, rewritten ones
    given their new text under their name, dropped ones removed, new ones added under their id."""
    for key, cid in named_ids(list(criteria)).items():
        if cid not in new.ids:
            del criteria[key]
        elif not unchanged(old, new, cid):
            criteria[key] = block(new.criterion(cid).description)
    for c in new.criteria:
        if c.id not in old.ids:
            criteria[c.id] = block(c.description)


def carried(rub: Rubric) -> dict[str, tuple[str, tuple[str, ...], tuple[float, ...]]]:
    """What every format carries of a rubric: each criterion's id, description and scale levels (labels,
    kinds, anchors and weights only where a format has a place for them)."""
    return {c.id: (c.description, rub.scale_of(c.id).tokens, rub.scale_of(c.id).values) for c in rub.criteria}


# ---- JSON written in the layout of the file it came from ------------------------------------------------
def json_like(original: str, data: Any, lines: bool = False) -> str:
    """`data` as JSON in `original`'s layout: its indent (none where compact), its separators, and `\\u` escapes
    where it has them, so that an edit changes only the lines of what changed. `lines`: JSONL, one value a line."""
    escaped = "\\u" in original
    compact = re.search(r'":\S', original) is not None  # `"key":value`, no space after the colon
    separators = (",", ":") if compact else (", ", ": ")
    if lines:
        return "".join(json.dumps(o, ensure_ascii=escaped, separators=separators) + "\n" for o in data)
    indent_seen = re.search(r"^([ \t]+)\S", original, re.M)
    if indent_seen is None:
        return json.dumps(data, ensure_ascii=escaped, separators=separators) + "\n"
    unit = indent_seen.group(1)
    return json.dumps(data, ensure_ascii=escaped, indent="\t" if unit[0] == "\t" else len(unit)) + "\n"


def lines_replaced(source: str, records: dict[int, Any]) -> str:
    """JSONL `source` with its k-th record (k counting the lines that hold one) written anew for each k of
    `records`, in the file's layout and line ending; every other line byte for byte."""
    lines = source.splitlines(keepends=True)
    held = [n for n, line in enumerate(lines) if line.strip()]
    for k, record in records.items():
        line = lines[held[k]]
        ending = line[len(line.rstrip("\r\n")) :]
        lines[held[k]] = json_like(source, [record], lines=True).removesuffix("\n") + ending
    return "".join(lines)


# ---- YAML that keeps a file's comments and layout (ruamel.yaml's round trip) ------------------------
def load_yaml(path: Path) -> Any:
    """A YAML file in ruamel's round trip (its comments kept for export), once radar's one reader has
    checked it (size, depth, an alias bomb: inputs.py)."""
    text = read_text(path)
    inputs.load_yaml(text, path)
    yaml = YAML()
    yaml.preserve_quotes = True
    try:
        return yaml.load(text)
    except DuplicateKeyError as exc:  # PyYAML keeps the last, ruamel refuses: the file means two things
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise InputError(
            path, f"line {line}: {str(exc.problem)[:120]}; YAML readers disagree on which one counts: keep one"
        ) from None
    except YAMLError as exc:
        raise InputError(path, f"is not valid YAML ({str(exc).splitlines()[0][:120]})") from None


LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0))  # (mapping, sequence, dash offset) indents


def _dumped(data: Any, layout: tuple[int, int, int]) -> str:
    yaml = YAML()
    yaml.width = 4096  # keep long lines as the team wrote them
    mapping, sequence, offset = layout
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def dump_yaml(data: Any, like: Path) -> str:
    """`data` in the indentation of the file it was read from (`like`): the layout under which that file reads back
    as itself, else the one that keeps most of its lines, so an edit changes the lines it edits only."""
    text = read_text(like)
    original = YAML().load(text)
    lines = set(text.splitlines())
    layout = max(
        LAYOUTS, key=lambda ly: (_dumped(original, ly) == text, len(lines & set(_dumped(original, ly).splitlines())))
    )
    return _dumped(data, layout)


def block(text: str) -> Any:
    """A text as YAML writes it legibly: a literal block where it has line breaks."""
    return LiteralScalarString(text) if "\n" in text else text


def mapping(path: Path, data: Any, what: str) -> dict:
    if not isinstance(data, dict):
        raise InputError(path, f"expected {what} (a mapping at the top level); is this the right format?")
    return data


def text_field(path: Path, obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, f"{where}: '{key}' must be non-empty text")
    return value


def referenced(source: Path, ref: str, root: Path | None = None) -> Path:
    """A file that `source` names (promptfoo's `file://x`), relative to its folder and inside `root` (default that
    folder): no absolute path, no `..` and no link out of it, so an imported file reads nothing else on the machine."""
    name = ref.removeprefix("file://")
    base = (root or source.parent).resolve()
    where = f"radar reads referenced files inside {base} only (name another folder with --root)"
    if not name or Path(name).is_absolute():
        raise InputError(source, f"'{ref[:80]}' is not a path relative to the file's folder; {where}")
    real = (source.parent / name).resolve()
    if not real.is_relative_to(base):
        raise InputError(source, f"'{ref[:80]}' leads outside {base} (through .. or a link); {where}")
    return real


def items_changed(before: Task, after: Task) -> str:
    """What an export changed of one task's items, by item id (a new item without one: its text)."""
    old = {i.id: i for i in before.items}
    parts: dict[str, list[str]] = {
        "rewritten": [str(i.id) for i in after.items if i.id in old and i != old[i.id]],
        "added": [i.id or repr(i.text[:30]) for i in after.items if i.id not in old],
        "dropped": [str(k) for k in old if k not in {i.id for i in after.items}],
    }
    said = "; ".join(f"{what} {', '.join(ids)}" for what, ids in parts.items() if ids)
    return f"{after.id}: {said or 'items reordered'} (ids are places: imported again, the items are numbered anew)"


def points(value: float) -> int | float:
    """Points (or a weight) as a file writes them: an integer where the value is one."""
    return int(value) if float(value).is_integer() else value
