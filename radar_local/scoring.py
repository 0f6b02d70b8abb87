"""The verifier's answer: the constraint every engine enforces, and parsing to a score or unscored.

A plain JSON-schema constraint lets a small model emit whitespace until max_tokens (measured: 24 of
32 answers unparseable with SmolLM2-135M). The strict regex below allows no free whitespace, bounds
every string, and admits only printable ASCII inside strings, so every character costs at least one
token and `max_tokens` can be set to the longest admissible answer: the object always closes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

# The Likert scale, in one place: a verifier answers an integer SCORE_MIN..SCORE_MAX (the paper's
# 5-point 0-4); the statistics normalize by SCORE_MAX; a table on a shifted scale (1-5) is mapped here.
SCORE_MIN, SCORE_MAX = 0, 4
SCALE = f"{SCORE_MIN}-{SCORE_MAX}"
SCALES = {SCALE: 0, f"{SCORE_MIN + 1}-{SCORE_MAX + 1}": 1}  # table scale -> offset subtracted to land on SCALE
LIKERT = f"a {SCORE_MAX - SCORE_MIN + 1}-point Likert scale"
_CHAR = r'[ !#-\[\]-~]'  # printable ASCII without " and \


class ScoreFormat(BaseModel):
    """Bounds of the constrained answer {reasoning, score, rationale}."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_reasoning_chars: int = Field(300, ge=1, le=4000, description="Longest reasoning string")
    max_rationale_chars: int = Field(200, ge=1, le=2000, description="Longest rationale string")

    @property
    def regex(self) -> str:
        return (
            r'\{"reasoning": "' + _CHAR + "{1,%d}" % self.max_reasoning_chars
            + r'", "score": [%d-%d], "rationale": "' % (SCORE_MIN, SCORE_MAX)
            + _CHAR + "{1,%d}" % self.max_rationale_chars + r'"\}'
        )

    @property
    def max_tokens(self) -> int:
        """The longest admissible answer in characters, hence an upper bound in tokens."""
        fixed = len('{"reasoning": "", "score": 0, "rationale": ""}')
        return fixed + self.max_reasoning_chars + self.max_rationale_chars

    def json_schema(self) -> dict:
        """The same object as a JSON schema, for servers that take only `response_format`."""
        return {
            "type": "object",
            "properties": {
                "reasoning": {"type": "string", "minLength": 1, "maxLength": self.max_reasoning_chars},
                "score": {"type": "integer", "minimum": SCORE_MIN, "maximum": SCORE_MAX},
                "rationale": {"type": "string", "minLength": 1, "maxLength": self.max_rationale_chars},
            },
            "required": ["reasoning", "score", "rationale"],
            "additionalProperties": False,
        }


@dataclass(frozen=True)
class ParsedScore:
    score: int | None  # None: unscored, the raw text is kept
    reasoning: str | None
    rationale: str | None


def first_object(text: str) -> str | None:
    """The first balanced {...} in `text`, respecting strings (App. D: 'parse the first balanced {...}')."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_str, escape = 0, False, False
    for i, ch in enumerate(text[start:], start):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def parse_score(text: str) -> ParsedScore:
    """Read the integer score on the scale from the first balanced object; anything else is unscored."""
    blob = first_object(text)
    try:
        obj = json.loads(blob) if blob else None
    except json.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict):
        return ParsedScore(None, None, None)
    score = obj.get("score")
    if isinstance(score, bool) or not isinstance(score, int) or not SCORE_MIN <= score <= SCORE_MAX:
        score = None
    as_text = lambda v: v if isinstance(v, str) else None  # noqa: E731
    return ParsedScore(score, as_text(obj.get("reasoning")), as_text(obj.get("rationale")))


def matches(fmt: ScoreFormat, text: str) -> bool:
    return re.fullmatch(fmt.regex, text) is not None
