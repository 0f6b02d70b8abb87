"""A criterion's scale: an integer range or named levels with values, and optional anchors per level.

The statistics put every scale on one footing, its 0-1 range: a self-effect or a leakage is a
difference of mean scores divided by the scale's span (largest value minus smallest), so `tau` and the
flag thresholds mean the same on 0-4, 1-10, pass/fail or C/P/I. The span is kept as an exact Fraction.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cached_property
from typing import Annotated

from pydantic import Field, ValidationError, model_validator

from radar_local.common import Frozen, one_line

MAX_LEVELS = 101  # a bounded answer: an integer range of at most this many values
# A level's name is what the judge writes: printable ASCII without quotes, backslashes or spaces.
LEVEL_NAME = r"^[!#-\[\]-~]{1,16}$"
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
JSON_INTEGER = re.compile(r"0|-?[1-9][0-9]*")


_REGEX_META = frozenset(".^$*+?{}[]\\|()")


def literal_regex(text: str) -> str:
    """`text` as a regex matching it alone, escaping only regex metacharacters: xgrammar (vLLM's) warns on every
    other escape Python's re.escape writes (a space, '-', '#'), once per verdict, into engine.log."""
    return "".join("\\" + ch if ch in _REGEX_META else ch for ch in text)


class Scale(Frozen):
    """`{min: 1, max: 10}` (binary: `{min: 0, max: 1}`) or `{levels: {C: 1, P: 0.5, I: 0}}`; `anchors` say
    what a level means (Prometheus' score descriptions), keyed by the level as the judge writes it."""

    min: int | None = Field(None, ge=-1000, le=1000, description="Smallest integer of a range")
    max: int | None = Field(None, ge=-1000, le=1000, description="Largest integer of a range")
    levels: dict[Annotated[str, Field(pattern=LEVEL_NAME)], Annotated[float, Field(ge=-1e6, le=1e6)]] | None = Field(
        None, description="Named levels and their values, as the judge writes them"
    )
    anchors: dict[str, Annotated[str, Field(min_length=1)]] | None = Field(
        None, description="What each level means, keyed by the level ('3', or 'C')"
    )

    @model_validator(mode="after")
    def _one_kind_of_scale(self) -> Scale:
        if self.levels is not None:
            if self.min is not None or self.max is not None:
                raise ValueError("a scale is a range (min, max) or named levels, not both")
            if len(self.levels) < 2:
                raise ValueError("a scale needs at least two levels")
            values = list(self.levels.values())
            twice = next((v for v in values if values.count(v) > 1), None)
            if twice is not None:
                raise ValueError(f"two levels have the value {twice:g}; give each level its own value")
        elif self.min is None or self.max is None:
            raise ValueError("a scale needs both 'min' and 'max' (or 'levels')")
        elif self.max <= self.min:
            raise ValueError(f"max ({self.max}) must be above min ({self.min}): a scale needs at least two levels")
        elif self.max - self.min + 1 > MAX_LEVELS:
            raise ValueError(
                f"a range of {self.max - self.min + 1} integers; at most {MAX_LEVELS} keep the answer bounded"
            )
        unknown = [a for a in self.anchors or {} if a not in self.tokens]
        if unknown:
            raise ValueError(f"anchor '{unknown[0]}' names no level of the scale ({', '.join(self.tokens)})")
        return self

    @property
    def is_range(self) -> bool:
        return self.levels is None

    @property
    def numeric(self) -> bool:
        """Written as a JSON number: a range, or levels each named by its own value (promptfoo's 0.0-1.0
        score as `{levels: {"0": 0, "0.1": 0.1, ...}}`); other named levels are JSON strings."""
        return self.levels is None or all(
            JSON_NUMBER.fullmatch(t) is not None and float(t) == v for t, v in self.levels.items()
        )

    @property
    def boolean(self) -> bool:
        """Levels named `true` and `false` (HealthBench's `criteria_met`): written as JSON's true and false."""
        return self.levels is not None and set(self.levels) == {"true", "false"}

    @property
    def quoted(self) -> bool:
        """Written as a JSON string: named levels that are neither numbers nor JSON's true and false."""
        return not self.numeric and not self.boolean

    def json_value(self, token: str) -> object:
        """A level as a JSON answer holds it: a number, true or false, or its name."""
        return self.value(token) if self.numeric else (token == "true") if self.boolean else token

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        """Each level as the judge writes it, in the scale's order (a range: lowest first)."""
        if self.levels is not None:
            return tuple(self.levels)
        assert self.min is not None and self.max is not None
        return tuple(str(k) for k in range(self.min, self.max + 1))

    @cached_property
    def values(self) -> tuple[int | float, ...]:
        return tuple(self.levels.values()) if self.levels is not None else tuple(int(t) for t in self.tokens)

    def value(self, token: str) -> int | float | None:
        """The value of a level as written, None where it names none."""
        return dict(zip(self.tokens, self.values)).get(token)

    @cached_property
    def low(self) -> int | float:
        return min(self.values)

    @cached_property
    def high(self) -> int | float:
        return max(self.values)

    @cached_property
    def top(self) -> str:
        """The best level as the judge writes it."""
        return self.tokens[self.values.index(self.high)]

    @cached_property
    def span(self) -> Fraction:
        """The 0-1 footing's divisor, exact."""
        return Fraction(self.high) - Fraction(self.low)

    @cached_property
    def footing(self) -> tuple[float, ...]:
        """Each level on the 0-1 footing, (value - low) / span, as a float."""
        return tuple(float((v - self.low) / self.span) for v in self.values)

    def contains(self, score: float) -> bool:
        """A score on the scale: a level's value, or (an expected score) any number between the ends."""
        return self.low <= score <= self.high

    @property
    def name(self) -> str:
        """'0-4', '1-10', or 'C/P/I'."""
        return f"{self.min}-{self.max}" if self.is_range else "/".join(self.tokens)

    def describe(self) -> str:
        """The scale in words, as a prompt states it."""
        if self.is_range:
            return f"an integer from {self.min} to {self.max}"
        return "one of " + ", ".join(f"{t} ({v:g})" for t, v in zip(self.tokens, self.values))

    @property
    def regex(self) -> str:
        """One level as written: a character class for a range of single digits (0-4: `[0-4]`), else the
        levels as alternatives, longest first so none stops at another's prefix."""
        if self.is_range and self.min is not None and self.max is not None and 0 <= self.min and self.max <= 9:
            return f"[{self.min}-{self.max}]"
        return "(?:" + "|".join(literal_regex(t) for t in sorted(self.tokens, key=len, reverse=True)) + ")"

    @property
    def longest(self) -> int:
        return max(len(t) for t in self.tokens)

    @property
    def decimal(self) -> bool:
        """Numeric levels not all integers (promptfoo's 0.0-1.0): a JSON-schema constraint cannot hold them as
        written, since xgrammar (vLLM's) writes the enum 0.1 as 0.10000000000000001; a regex can."""
        return self.numeric and not all(JSON_INTEGER.fullmatch(t) for t in self.tokens)

    def json_schema(self) -> dict:
        """The score as a JSON schema; ValueError for decimal levels, which no JSON schema holds as written."""
        if self.is_range:
            return {"type": "integer", "minimum": self.min, "maximum": self.max}
        if self.decimal:
            raise ValueError(
                f"the scale {self.name} has decimal levels, which a JSON-schema constraint cannot hold as written "
                "(vLLM's xgrammar writes 0.1 as 0.10000000000000001)"
            )
        if self.numeric:
            return {"type": "integer", "enum": [int(v) for v in self.values]}
        if self.boolean:
            return {"type": "boolean"}
        return {"type": "string", "enum": list(self.tokens)}

    def read(self, answer: object) -> int | float | None:
        """A JSON answer's value on the scale (an integer of a range, a numeric level's number, true or false, a
        level's name), None otherwise."""
        if self.is_range:
            ok = isinstance(answer, int) and not isinstance(answer, bool) and self.low <= answer <= self.high
            return answer if ok else None  # type: ignore[return-value]
        if self.numeric:
            number = isinstance(answer, int | float) and not isinstance(answer, bool)
            return next((v for v in self.values if number and v == answer), None)
        if self.boolean:
            return self.value("true" if answer else "false") if isinstance(answer, bool) else None
        return self.value(answer) if isinstance(answer, str) else None


LIKERT = Scale(min=0, max=4)  # the paper's 5-point scale, every bundled rubric's


def range_scale(name: str) -> Scale:
    """'1-10' (as `radar stats --scale` takes it) as a Scale; ValueError saying what a name is otherwise."""
    match = re.fullmatch(r"(-?\d{1,4})-(-?\d{1,4})", name.strip())
    if match is None:
        raise ValueError(f"'{name}' is no scale; name an integer range such as 0-4, 1-5 or 1-10")
    try:
        return Scale(min=int(match.group(1)), max=int(match.group(2)))
    except ValidationError as exc:
        raise ValueError(f"--scale {name}: {one_line(exc)}") from None
