"""The verifier's answer under any judge: its shape (a JSON object with named fields, a grade pattern, or the
bare score), the strict constraint every engine enforces derived from that shape, and parsing back to one
score per criterion.

The constraint keeps scoring.py's guarantees for every shape: no free whitespace, every string bounded and
made of printable ASCII without quotes or backslashes (each character costs at least one token), so
`max_tokens` is the longest admissible answer and the answer always closes. A joint call (all criteria in
one answer) is a JSON object keyed by criterion id, each value the per-criterion answer.
"""

from __future__ import annotations

import json
import re
import re._parser as sre  # the standard library's own regex parser: the tree `re` compiles
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

from pydantic import Field, model_validator

from radar_local.common import Frozen
from radar_local.scale import Scale, literal_regex

SAFE_CHAR = r"[ !#-\[\]-~]"  # printable ASCII without " and \
# A grade answer's reasoning: printable ASCII over lines (a judge's feedback runs to paragraphs, and Flow-Judge and
# GLIDER open their tags with a newline); ASCII, so each character is a token at most and `max_tokens` bounds it.
GRADE_TEXT = r"[ -~\n]"
PAD_MOST = 2
PAD = rf"[ \n]{{0,{PAD_MOST}}}"  # between a grade's literal text and its level: "<score>\n3\n</score>"
FIELD_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,39}$"
FieldName = Annotated[str, Field(pattern=FIELD_NAME)]
Bound = Annotated[int, Field(ge=1, le=4000)]
_META = set(".^$*+?{}[]|()")


class JsonShape(Frozen):
    """`{"<before>": "...", "<score>": N, "<after>": "..."}` in that order: the paper's answer is
    before {reasoning: 300}, score `score`, after {rationale: 200}. A level's name is written as a string."""

    kind: Literal["json"] = "json"
    before: dict[FieldName, Bound] = Field(default_factory=lambda: {"reasoning": 300}, description="Text fields first")
    score: FieldName = Field("score", description="The score field's name")
    after: dict[FieldName, Bound] = Field(default_factory=lambda: {"rationale": 200}, description="Text fields last")

    @model_validator(mode="after")
    def _distinct_fields(self) -> JsonShape:
        names = [*self.before, self.score, *self.after]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"the answer names the field '{twice}' twice")
        return self


class GradeShape(Frozen):
    """Reasoning (up to `reasoning` characters of printable text over any lines, 0 for none), then the grade:
    `pattern` is a regex with one group, the level (inspect_ai's `GRADE: ([CPI])`); the text around the group is
    literal, and up to two spaces or newlines may stand between it and the level."""

    kind: Literal["grade"]
    pattern: str = Field(min_length=3, max_length=200)
    reasoning: int = Field(0, ge=0, le=4000, description="Longest reasoning before the grade, any lines (0: none)")

    @model_validator(mode="after")
    def _one_group_in_literal_text(self) -> GradeShape:
        _ = self.parts  # raises on a pattern radar cannot bound
        return self

    @property
    def parts(self) -> tuple[str, str, str]:
        """(literal text before the group, the group's regex, literal text after it)."""
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"the grade pattern does not compile ({exc})") from None
        if compiled.groups != 1:
            raise ValueError(f"the grade pattern needs exactly one group, the level; it has {compiled.groups}")
        # inline flags (inspect's `(?i)`) are no group: radar writes the text as given, which they read too
        flags = re.match(r"\(\?[aiLmsux]+\)", self.pattern)
        body = self.pattern[flags.end() if flags else 0 :]
        start = _group_start(body)
        end = _matching_paren(body, start)
        prefix, group, suffix = body[:start], body[start + 1 : end], body[end + 1 :]
        if named := re.match(r"\?P<\w+>", group):  # a named group is the capturing group too
            group = group[named.end() :]
        if group.startswith("?"):
            raise ValueError(f"the grade pattern's group '({group[:30]})' must be a plain capturing group ( ... )")
        if _nested_repeat(compiled.pattern):
            raise ValueError(
                "the grade pattern repeats a repeated part (such as ([0-4]+)+), which can take minutes to match a "
                "long answer; write the level's group without nested repeats"
            )
        for side in (prefix, suffix):
            literal = _literal(side)
            if literal is None:
                raise ValueError(
                    f"the grade pattern's text around its group ('{side}') must be literal text; radar bounds "
                    "the answer from it"
                )
        return _literal(prefix) or "", group, _literal(suffix) or ""

    def check(self, scale: Scale) -> str | None:
        """What keeps this pattern from reading `scale`, in one line; None where every level matches."""
        group = re.compile(self.parts[1])
        missed = [t for t in scale.tokens if not group.fullmatch(t)]
        if len(missed) == len(scale.tokens):
            return f"the grade pattern's group ({self.parts[1]}) matches no level of the scale ({scale.name})"
        if missed:
            return f"the grade pattern's group ({self.parts[1]}) does not match the level '{missed[0]}'"
        return None


class BareShape(Frozen):
    """The score alone (a range's integer, a level's name); expected-score mode reads its distribution."""

    kind: Literal["bare"]


Shape = Annotated[JsonShape | GradeShape | BareShape, Field(discriminator="kind")]


def _nested_repeat(pattern: str) -> bool:
    """Whether a repeat holds another repeat: the shape whose matching can take exponential time."""
    repeats = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}

    def walk(items: object, inside: bool) -> bool:
        for op, arg in items:  # type: ignore[attr-defined]
            if op in repeats:
                if inside or walk(arg[2], True):
                    return True
            elif op == sre.SUBPATTERN and walk(arg[3], inside):
                return True
            elif op == sre.BRANCH and any(walk(branch, inside) for branch in arg[1]):
                return True
        return False

    return walk(sre.parse(pattern), False)


def _group_start(pattern: str) -> int:
    escaped = False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "(" and (not pattern.startswith("?", i + 1) or pattern.startswith("?P<", i + 1)):
            return i  # the capturing group, past any (?:...) or (?i) before it
    raise ValueError("the grade pattern has no group")


def _closing(text: str, start: int, brackets: str, quotes: str) -> int | None:
    """Where the bracket at `start` closes (`brackets`: its opening and closing characters), past backslash escapes
    and what stands between `quotes` (a regex's character class, a JSON string); None where it does not close."""
    depth, escaped, quoted = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif quoted:
            quoted = ch != quotes[1]
        elif ch == quotes[0]:
            quoted = True
        elif ch == brackets[0]:
            depth += 1
        elif ch == brackets[1]:
            depth -= 1
            if depth == 0:
                return i
    return None


def _matching_paren(pattern: str, start: int) -> int:
    if (end := _closing(pattern, start, "()", "[]")) is None:
        raise ValueError("the grade pattern's group does not close")
    return end


def _literal(regex: str) -> str | None:
    """The text a regex of literal characters (escapes allowed) matches, None where it is not literal."""
    out, escaped = [], False
    for ch in regex:
        if escaped:
            if ch.isalnum():
                return None  # \d, \w, \s: classes, not literal text
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in _META:
            return None
        else:
            out.append(ch)
    text = "".join(out)
    return text if not escaped and all(" " <= c <= "~" for c in text) else None


@dataclass(frozen=True)
class Parsed:
    score: int | float | None  # None: unscored, the raw text is kept
    reasoning: str | None = None
    rationale: str | None = None


def _text(fields: Sequence[str], obj: dict) -> str | None:
    parts = [obj[f] for f in fields if isinstance(obj.get(f), str)]
    return "\n".join(parts) if parts else None


@dataclass(frozen=True)
class Answer:
    """The constrained answer of one call: its shape, the criteria it scores in the prompt's order with
    their scales, and whether it is one call for all of them. Engines read `regex`, `max_tokens`,
    `json_schema()`, `expected` and `tokens`; the run reads `parse`."""

    shape: JsonShape | GradeShape | BareShape
    scales: tuple[tuple[str, Scale], ...]
    joint: bool = False
    expected: bool = False  # the score token's distribution (one bare per-criterion answer)

    def __post_init__(self) -> None:
        if self.joint and isinstance(self.shape, GradeShape):
            raise ValueError("a grade pattern answers one criterion; a joint call needs answer kind json or bare")
        if self.expected and (self.joint or not isinstance(self.shape, BareShape)):
            raise ValueError("expected-score mode reads one bare score token per call")

    @property
    def tokens(self) -> tuple[str, ...]:
        """Expected mode: the scale's levels as written, each one token of the verifier's tokenizer."""
        return self.scales[0][1].tokens

    def _value(self, scale: Scale, in_json: bool) -> str:
        return f'"{scale.regex}"' if in_json and scale.quoted else scale.regex

    def _one(self, scale: Scale) -> str:
        shape = self.shape
        if isinstance(shape, JsonShape):
            parts = [f'"{n}": "{SAFE_CHAR}{{1,{b}}}"' for n, b in shape.before.items()]
            parts.append(f'"{shape.score}": {self._value(scale, True)}')
            parts += [f'"{n}": "{SAFE_CHAR}{{1,{b}}}"' for n, b in shape.after.items()]
            return r"\{" + ", ".join(parts) + r"\}"
        if isinstance(shape, GradeShape):
            prefix, _, suffix = shape.parts
            reasoning = f"{GRADE_TEXT}{{1,{shape.reasoning}}}" if shape.reasoning else ""
            before, after = (PAD if prefix else ""), (PAD if suffix else "")
            return reasoning + literal_regex(prefix) + before + scale.regex + after + literal_regex(suffix)
        return self._value(scale, self.joint)

    @cached_property  # asked per request by engines and the run: built once per answer
    def regex(self) -> str:
        if not self.joint:
            return self._one(self.scales[0][1])
        return r"\{" + ", ".join(f'"{cid}": {self._one(scale)}' for cid, scale in self.scales) + r"\}"

    def _longest(self, scale: Scale) -> int:
        shape = self.shape
        value = scale.longest + (2 if scale.quoted and (self.joint or isinstance(shape, JsonShape)) else 0)
        if isinstance(shape, JsonShape):
            texts = {**shape.before, **shape.after}
            names = [*texts, shape.score]
            # {"name": "", ...}: quotes, colon, space per field, ", " between, braces
            return (
                2 + sum(len(n) + 4 for n in names) + 2 * len(texts) + 2 * (len(names) - 1) + sum(texts.values()) + value
            )
        if isinstance(shape, GradeShape):
            prefix, _, suffix = shape.parts
            pads = PAD_MOST * (bool(prefix) + bool(suffix))
            return shape.reasoning + len(prefix) + value + len(suffix) + pads
        return value

    @cached_property
    def max_tokens(self) -> int:
        """The longest admissible answer in characters, hence an upper bound in tokens."""
        if self.expected:
            return 1
        if not self.joint:
            return self._longest(self.scales[0][1])
        return 2 + sum(len(cid) + 4 + self._longest(scale) for cid, scale in self.scales) + 2 * (len(self.scales) - 1)

    def _schema_one(self, scale: Scale) -> dict:
        shape = self.shape
        if not isinstance(shape, JsonShape):
            if not self.joint and scale.quoted:
                raise ValueError(f"a bare level name ({scale.name}) is no JSON value; JSON would quote it")
            return scale.json_schema()
        text = lambda b: {"type": "string", "minLength": 1, "maxLength": b}
        props = {**{n: text(b) for n, b in shape.before.items()}, shape.score: scale.json_schema()}
        props |= {n: text(b) for n, b in shape.after.items()}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def json_schema(self) -> dict:
        """The same answer as a JSON schema, for servers that take only `response_format` (a grade
        pattern is no JSON: such a server needs `constraint: regex`; ValueError for it and for decimal levels)."""
        if isinstance(self.shape, GradeShape):
            raise ValueError("a grade pattern is no JSON answer")
        if not self.joint:
            return self._schema_one(self.scales[0][1])
        props = {cid: self._schema_one(scale) for cid, scale in self.scales}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def parse(self, text: str) -> dict[str, Parsed]:
        """Every criterion's score from the answer; a criterion whose score does not read is unscored."""
        if isinstance(self.shape, GradeShape):
            ((cid, scale),) = self.scales
            prefix, group, suffix = self.shape.parts
            pattern = re.compile(
                re.escape(prefix) + (PAD if prefix else "") + f"({group})" + (PAD if suffix else "") + re.escape(suffix)
            )
            # the grade ends the answer: a level the reasoning mentions before it (its own marker too) is no grade
            found = list(pattern.finditer(text)) if self.shape.reasoning else [m for m in [pattern.match(text)] if m]
            match = found[-1] if found else None
            value = scale.value(match.group(1)) if match else None
            reasoning = text[: match.start()].strip() or None if match else None
            return {cid: Parsed(value, reasoning)}
        if not self.joint and isinstance(self.shape, BareShape):
            ((cid, scale),) = self.scales
            return {cid: Parsed(scale.value(text.strip()))}
        obj = _first_json_object(text)
        if self.joint:
            return {cid: self._read(obj.get(cid) if obj else None, scale) for cid, scale in self.scales}
        ((cid, scale),) = self.scales
        return {cid: self._read(obj, scale)}

    def _read(self, answer: object, scale: Scale) -> Parsed:
        shape = self.shape
        if isinstance(shape, BareShape):
            return Parsed(scale.read(answer))
        if not isinstance(answer, dict) or not isinstance(shape, JsonShape):
            return Parsed(None)
        return Parsed(
            scale.read(answer.get(shape.score)), _text(list(shape.before), answer), _text(list(shape.after), answer)
        )


def first_object(text: str) -> str | None:
    """The first balanced {...} in `text`, respecting strings (App. D: 'parse the first balanced {...}')."""
    start = text.find("{")
    end = None if start < 0 else _closing(text, start, "{}", '""')
    return None if end is None else text[start : end + 1]


def _first_json_object(text: str) -> dict | None:
    blob = first_object(text)
    try:
        obj = json.loads(blob) if blob else None
    except (json.JSONDecodeError, RecursionError):  # a server's answer nested past Python's recursion limit
        return None
    return obj if isinstance(obj, dict) else None
