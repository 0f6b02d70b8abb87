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

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from radar_local.answer import Answer, BareShape, JsonShape, Parsed, first_object
from radar_local.scale import LIKERT, Scale

__all__ = ["first_object", "Parsed"]

# The default judge's scale (the paper's 5-point 0-4); a rubric may declare another (radar_local.scale).
SCORE_MIN, SCORE_MAX = LIKERT.min, LIKERT.max
SCALE = LIKERT.name
LIKERT_WORDS = f"a {len(LIKERT.tokens)}-point Likert scale"
SCORE_TOKENS = LIKERT.tokens  # what an expected-mode verdict reads on the default scale


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
    def shape(self) -> JsonShape | BareShape:
        """The default judge's answer shape: the paper's JSON object, or the bare score token."""
        if self.expected:
            return BareShape(kind="bare")
        return JsonShape(before={"reasoning": self.max_reasoning_chars}, after={"rationale": self.max_rationale_chars})

    def answer(self, criterion: str = "score", scale: Scale = LIKERT) -> Answer:
        return Answer(self.shape, ((criterion, scale),), expected=self.expected)

    # the default answer on the default scale, as engines and benchmarks take it
    @property
    def regex(self) -> str:
        return self.answer().regex

    @property
    def max_tokens(self) -> int:
        return self.answer().max_tokens

    @property
    def tokens(self) -> tuple[str, ...]:
        return SCORE_TOKENS

    def json_schema(self) -> dict:
        return self.answer().json_schema()


def parse_score(text: str) -> Parsed:
    """The default answer's score on 0-4 (the paper's JSON object); anything else is unscored."""
    return ScoreFormat().answer().parse(text)["score"]


@dataclass(frozen=True)
class ExpectedScore:
    score: float | None  # probability-weighted mean on the scale; None: unscored (see `reason`)
    distribution: tuple[float, ...] | None  # P(SCORE_MIN..SCORE_MAX), renormalized over the score tokens
    mass: float | None  # the share of the next-token probability on score tokens before renormalizing
    reason: str | None = None  # why the answer is unscored, where it is


# A log-probability from a softmax is <= 0; float rounding can leave the top token a hair above it.
LOGPROB_SLACK = 1e-6


def expected_score(
    logprobs: Mapping[str, object] | Sequence[tuple[object, object]], scale: Scale = LIKERT
) -> ExpectedScore:
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
    probs = dict.fromkeys(scale.tokens, 0.0)
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
    dist = tuple(probs[t] / mass for t in scale.tokens)
    mean = math.fsum(p * v for p, v in zip(dist, scale.values))
    return ExpectedScore(min(float(scale.high), max(float(scale.low), mean)), dist, mass)


def _unscored(reason: str) -> ExpectedScore:
    return ExpectedScore(None, None, None, reason)


def matches(fmt: ScoreFormat | Answer, text: str) -> bool:
    return re.fullmatch(fmt.regex, text) is not None


def continuous_scores(scores: np.ndarray) -> bool:
    """Expected-score verdicts (any number on the scale) rather than integer Likert verdicts."""
    seen = scores[~np.isnan(scores)]
    return bool((seen != np.round(seen)).any())
