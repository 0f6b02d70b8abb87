"""Expand an audit into requests with deterministic seeds and content keys (pure, no model)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from radar_local.config import AuditConfig, ModelSpec
from radar_local.prompts import PROMPT_VERSION, Messages, generation_messages, verification_messages
from radar_local.rubric import Rubric, Task


def digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:24]


def cell_seed(run_seed: int, task: str, target: str, direction: str) -> int:
    """The sampling seed of one (task, target, direction) prompt: stable across runs and machines."""
    return int(digest([run_seed, task, target, direction])[:8], 16)


def model_identity(spec: ModelSpec) -> dict:
    return {"engine": spec.engine, "model": spec.model, "options": spec.options}


@dataclass(frozen=True)
class GenerationRequest:
    key: str  # content key of the prompt; variant v is stored as f"{key}:{v}"
    task: Task
    target: str  # criterion id, "" when unconditioned
    direction: str
    n: int
    seed: int
    messages: Messages

    def variant_key(self, v: int) -> str:
        return f"{self.key}:{v}"


@dataclass(frozen=True)
class ScoreRequest:
    key: str
    probe_key: str
    criterion: str
    messages: Messages


@dataclass(frozen=True)
class Plan:
    """What an audit asks of its models: the config, the rubric and the tasks, as keyed requests."""

    config: AuditConfig
    rubric: Rubric
    tasks: tuple[Task, ...]

    def generation_requests(self) -> list[GenerationRequest]:
        config, rubric = self.config, self.rubric
        # Keyed by the target criterion's own text, not the rubric's digest: a rubric edit re-generates
        # only the probes of the criteria it touches (rubric repair re-audits many such edits).
        base = {"generator": model_identity(config.generator), "template": PROMPT_VERSION,
                "sampling": config.generation.model_dump()}
        cells = [(t, c.id, d) for t in self.tasks for c in rubric.criteria for d in ("+", "-")]
        cells += [(t, "", "none") for t in self.tasks] if config.unconditioned else []
        out = []
        for task, target, direction in cells:
            n = config.unconditioned if direction == "none" else config.n
            seed = cell_seed(config.seed, task.id, target, direction)
            crit = rubric.criterion(target) if target else None
            key = digest({**base, "task": task.model_dump(), "target": target, "direction": direction, "n": n, "seed": seed,
                          "criterion": crit.model_dump() if crit else None})
            out.append(GenerationRequest(key, task, target, direction, n, seed, generation_messages(task, crit, direction)))
        return out

    def score_requests(self, probes: list[dict], verifier: ModelSpec) -> list[ScoreRequest]:
        """One request per (probe, criterion), probe-major so a probe's K calls run together."""
        config, rubric = self.config, self.rubric
        by_id = {t.id: t for t in self.tasks}
        base = {"verifier": model_identity(verifier), "template": PROMPT_VERSION, "layout": config.layout,
                "format": config.scoring.model_dump()}
        out = []
        for probe in probes:
            task = by_id[probe["task_id"]]
            for crit in rubric.criteria:
                key = digest({**base, "probe": probe["key"], "criterion": crit.model_dump()})  # its text, not the rubric's
                out.append(ScoreRequest(key, probe["key"], crit.id,
                                        verification_messages(task, probe["text"], crit, config.layout,
                                                              config.scoring.expected)))
        return out
