"""The engine interface: generate N samples for many chat prompts; score many prompts under a constraint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from radar_local.prompts import Messages
from radar_local.scoring import ScoreFormat


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    output_tokens: int
    finish_reason: str = ""


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

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        """One greedy answer per prompt, constrained to `fmt`."""

    def stats(self) -> EngineStats:
        """Cumulative counters since the engine started."""

    def close(self) -> None:
        """Free the model's memory."""
