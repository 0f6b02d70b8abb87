"""The verifier's answer: the constraint every engine enforces, and parsing to a score or unscored.

Two modes. `reasoned` (the paper's, default): a constrained JSON object {reasoning, score, rationale}.
`expected`: the score token alone, one decode step; the engine returns the log-probability of every
allowed score token at that position, and the verdict is the probability-weighted mean (G-Eval), a
continuous score on the same scale, with the distribution kept as the verdict's confidence.

A plain JSON-schema constraint lets a small model emit whitespace until max_tokens (measured: 24 of
32 answers unparseable with SmolLM2-135M). The strict regex below allows no free whitespace, bounds
every string, and admits only printable ASCII inside strings, so every character costs at least one
token and `max_tokens` can be set to the longest admissible answer: the object always closes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

# The Likert scale, in one place: a verifier answers an integer SCORE_MIN..SCORE_MAX (the paper's
# 5-point 0-4); the statistics normalize by SCORE_MAX; a table on a shifted scale (1-5) is mapped here.
SCORE_MIN, SCORE_MAX = 0, 4
SCALE = f"{SCORE_MIN}-{SCORE_MAX}"
SCALES = {SCALE: 0, f"{SCORE_MIN + 1}-{SCORE_MAX + 1}": 1}  # table scale -> offset subtracted to land on SCALE
LIKERT = f"a {SCORE_MAX - SCORE_MIN + 1}-point Likert scale"
SCORE_TOKENS = tuple(str(k) for k in range(SCORE_MIN, SCORE_MAX + 1))  # what an expected-mode verdict reads
SAFE_CHAR = r"[ !#-\[\]-~]"  # printable ASCII without " and \


class ScoreFormat(BaseModel):
    """The verifier's answer: its mode and, for `reasoned`, the bounds of {reasoning, score, rationale}."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["reasoned", "expected"] = Field(
        "reasoned", description="reasoned: the paper's JSON answer; expected: the probability-weighted score token"
    )
    max_reasoning_chars: int = Field(300, ge=1, le=4000, description="Longest reasoning string")
    max_rationale_chars: int = Field(200, ge=1, le=2000, description="Longest rationale string")

    @property
    def expected(self) -> bool:
        return self.mode == "expected"

    @property
    def regex(self) -> str:
        if self.expected:
            return f"[{SCORE_MIN}-{SCORE_MAX}]"
        return (
            r'\{"reasoning": "'
            + SAFE_CHAR
            + "{1,%d}" % self.max_reasoning_chars
            + r'", "score": [%d-%d], "rationale": "' % (SCORE_MIN, SCORE_MAX)
            + SAFE_CHAR
            + "{1,%d}" % self.max_rationale_chars
            + r'"\}'
        )

    @property
    def max_tokens(self) -> int:
        """The longest admissible answer in characters, hence an upper bound in tokens."""
        if self.expected:
            return 1
        fixed = len('{"reasoning": "", "score": 0, "rationale": ""}')
        return fixed + self.max_reasoning_chars + self.max_rationale_chars

    def json_schema(self) -> dict:
        """The same answer as a JSON schema, for servers that take only `response_format`."""
        if self.expected:
            return {"type": "integer", "minimum": SCORE_MIN, "maximum": SCORE_MAX}
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
    as_text = lambda v: v if isinstance(v, str) else None
    return ParsedScore(score, as_text(obj.get("reasoning")), as_text(obj.get("rationale")))


@dataclass(frozen=True)
class ExpectedScore:
    score: float | None  # probability-weighted mean on the scale; None: unscored (see `reason`)
    distribution: tuple[float, ...] | None  # P(SCORE_MIN..SCORE_MAX), renormalized over the score tokens
    mass: float | None  # the share of the next-token probability on score tokens before renormalizing
    reason: str | None = None  # why the answer is unscored, where it is


# A log-probability from a softmax is <= 0; float rounding can leave the top token a hair above it.
LOGPROB_SLACK = 1e-6


def expected_score(logprobs: Mapping[str, object] | Sequence[tuple[object, object]]) -> ExpectedScore:
    """G-Eval's score from the log-probabilities of the score tokens at the answer's one position.
    A token the engine did not report (outside a server's top-k) counts as probability 0. What is not
    a distribution (a NaN, a positive log-probability, a non-number, probabilities summing past 1) is
    unscored with the reason: an engine's output is untrusted input, never a silent 0."""
    pairs = list(logprobs.items() if isinstance(logprobs, Mapping) else logprobs)  # a server's list, as sent
    tokens = [token for token, _ in pairs]
    if not all(isinstance(t, str) for t in tokens):
        return _unscored(f"token {next(t for t in tokens if not isinstance(t, str))!r:.20} is not a string")
    if len(set(tokens)) < len(tokens):
        twice = next(t for t in tokens if tokens.count(t) > 1)
        return _unscored(f"token {twice!r:.20} is listed {tokens.count(twice)} times")
    probs = dict.fromkeys(SCORE_TOKENS, 0.0)
    total = 0.0
    for token, logprob in pairs:  # "3" and " 3" are the same answer
        if isinstance(logprob, bool) or not isinstance(logprob, (int, float)) or not logprob <= LOGPROB_SLACK:
            return _unscored(f"log-probability {logprob!r:.40} of token {token!r:.20} is not a number <= 0")
        p = math.exp(min(float(logprob), 0.0))
        total += p
        if str(token).strip() in probs:
            probs[str(token).strip()] += p
    if total > 1 + LOGPROB_SLACK * len(logprobs) + 1e-9:
        return _unscored(f"the reported probabilities sum to {total:.6g} > 1")
    mass = math.fsum(probs.values())
    if mass == 0.0:
        return _unscored("no score token has any probability")
    dist = tuple(probs[t] / mass for t in SCORE_TOKENS)
    mean = math.fsum(p * k for p, k in zip(dist, range(SCORE_MIN, SCORE_MAX + 1)))
    return ExpectedScore(min(float(SCORE_MAX), max(float(SCORE_MIN), mean)), dist, mass)


def _unscored(reason: str) -> ExpectedScore:
    return ExpectedScore(None, None, None, reason)


def matches(fmt: ScoreFormat, text: str) -> bool:
    return re.fullmatch(fmt.regex, text) is not None


def continuous_scores(scores: np.ndarray) -> bool:
    """Expected-score verdicts (any number on the scale) rather than integer Likert verdicts."""
    seen = scores[~np.isnan(scores)]
    return bool((seen != np.round(seen)).any())
