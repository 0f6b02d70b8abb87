"""The engine interface: generate N samples for many chat prompts; score many prompts under a constraint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from radar_local.prompts import Messages
from radar_local.scoring import SCORE_TOKENS, ScoreFormat


class JsonFormat(Protocol):
    """A constrained answer: a strict regex, the token bound it implies, and the same as a JSON schema."""

    @property
    def regex(self) -> str: ...

    @property
    def max_tokens(self) -> int: ...

    def json_schema(self) -> dict: ...


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    output_tokens: int
    finish_reason: str = ""
    score_logprobs: dict[str, float] | None = None  # expected mode: log-probability of each score token


@dataclass
class EngineStats:
    """Counters an engine exposes; None where it cannot know."""

    prefix_cache_queries: int | None = None
    prefix_cache_hits: int | None = None


class Engine(Protocol):
    name: str  # engine kind: vllm, transformers, openai
    model: str  # model id as configured

    def generate(self, prompts: list[Messages], *, n: int, temperature: float, max_tokens: int,
                 seeds: list[int]) -> list[list[Completion]]:
        """n samples per prompt; prompt i samples with seed seeds[i] so reruns reproduce it."""

    def constrained(self, prompts: list[Messages], *, fmt: "JsonFormat", temperature: float = 0.0,
                    seeds: list[int] | None = None) -> list[Completion]:
        """One answer per prompt matching `fmt.regex` (at most `fmt.max_tokens` tokens); sampled with
        seeds[i] when temperature > 0. A reasoned verdict is one; so is a rubric editor's edit."""

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        """One greedy answer per prompt, constrained to `fmt`; in expected mode (`fmt.expected`) one
        token, with the log-probability of every score token (SCORE_TOKENS) at that position."""

    def stats(self) -> EngineStats:
        """Cumulative counters since the engine started."""

    def close(self) -> None:
        """Free the model's memory."""


def single_token_ids(tokenizer, model: str) -> list[int]:
    """The token id of each score; expected mode reads one position, so each score must be one token."""
    from radar_local.errors import RadarError

    ids = [tokenizer.encode(t, add_special_tokens=False) for t in SCORE_TOKENS]
    split = [t for t, i in zip(SCORE_TOKENS, ids) if len(i) != 1]
    if split:
        raise RadarError(f"{model}'s tokenizer splits the score(s) {', '.join(split)} into several tokens; "
                         "expected mode needs one token per score: use scoring mode 'reasoned'")
    return [i[0] for i in ids]
