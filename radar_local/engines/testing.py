"""A deterministic engine with a planted coupling, for testing the orchestration in seconds.

Never a stand-in for a model in an end-to-end test: it exists so that chunking, waves, resume,
locks and signals are tested without loading weights. Its generator writes which criterion a probe
was steered on and in which direction; its verifier reads that back and answers with a score from
the planted coupling: 4 / 0 on the steered criterion, 2 + 2 * sign * coupling[target][criterion]
(rounded, clipped to 0-4) on the others.
"""

from __future__ import annotations

import json
import re
import time

from pydantic import BaseModel, ConfigDict, Field

from radar_local.engines.base import Completion, EngineStats
from radar_local.prompts import Messages
from radar_local.scoring import SCORE_MAX, SCORE_MIN, ScoreFormat

STEER = re.compile(r"Steered ([+-]) on <([^>]+)>")
CRITERION_LINE = re.compile(r"^Criterion: (.+)$", re.MULTILINE)
RATED = re.compile(r"Rate the (.+?) of the")


class PlantedEngine:
    name = "testing"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        coupling: dict[str, dict[str, float]] = Field(
            default_factory=dict, description="coupling[target label][criterion label]; 0 where absent")
        delay_s: float = Field(0.0, ge=0, le=60, description="Sleep per generate call, for interrupting a stage")
        inject: dict[str, str] = Field(default_factory=dict, description="Text appended to + probes of a criterion label")

    def __init__(self, model: str, options: Options | None = None):
        self.model = model
        self.options = options or self.Options()

    def generate(self, prompts: list[Messages], *, n: int, temperature: float, max_tokens: int,
                 seeds: list[int]) -> list[list[Completion]]:
        time.sleep(self.options.delay_s)
        out = []
        for messages, seed in zip(prompts, seeds):
            user = messages[-1]["content"]
            label = CRITERION_LINE.search(user)
            if label is None:
                texts = [f"Unsteered reply {v} (seed {seed})." for v in range(n)]
            else:
                sign = "+" if "strongly satisfies" in user or "HIGH-word" in user else "-"
                extra = f" {self.options.inject[label.group(1)]}" if sign == "+" and label.group(1) in self.options.inject else ""
                texts = [f"Steered {sign} on <{label.group(1)}>: reply {v} (seed {seed}).{extra}" for v in range(n)]
            out.append([Completion(t, len(user.split()), len(t.split()), "stop") for t in texts])
        return out

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        out = []
        for messages in prompts:
            text = "\n".join(m["content"] for m in messages)
            rated = RATED.search(text).group(1)
            steer = STEER.search(text)
            score = 2
            if steer is not None:
                sign = 1 if steer.group(1) == "+" else -1
                level = 1.0 if steer.group(2) == rated else self.options.coupling.get(steer.group(2), {}).get(rated, 0.0)
                score = int(min(SCORE_MAX, max(SCORE_MIN, round(2 + 2 * sign * level))))
            answer = json.dumps({"reasoning": "planted", "score": score, "rationale": "planted"})
            out.append(Completion(answer, len(text.split()), len(answer.split()), "stop"))
        return out

    def stats(self) -> EngineStats:
        return EngineStats()

    def close(self) -> None:
        pass
