"""The stored records of a run directory, typed: a probe (one generated response) and a verdict (one
criterion's score of one probe). The writer builds them, the store checks each line against them, and
every reader reads their fields; a field is added here and nowhere else.

A line is JSON of the record's fields in their declared order with its format version `v` first; fields
that were not set are not written, so a record reads back as it was written (and a run stored by an
earlier radar resumes).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

RECORD_VERSION = 1


class Record(BaseModel):
    """Strict (a number is no text, a bool no integer) and frozen: records are shared, never edited."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", allow_inf_nan=False)

    v: int = Field(RECORD_VERSION, description="The record format's version")
    key: str = Field(description="The content key of the request that made it (plan.py)")


class ProbeRecord(Record):
    """A generated response: steered on `target` in `direction` (+, -; none for an unconditioned probe;
    up, down for a nuisance rewrite, whose target is the attribute; attack for an attacked probe, whose target is
    the attack's kind and `base` the probe attacked), variant `variant` of its stratum."""

    generator: str
    task_id: str
    target: str
    direction: str
    variant: int
    seed: int | None = None
    text: str = Field(description="The response, without a reasoning model's think block")
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    raw: str | None = Field(None, description="The model's text where `text` was cut from it")
    base: str | None = Field(None, description="An attacked probe's base: the probe it is with one insertion")


class VerdictRecord(Record):
    """One criterion's verdict on one probe. `score` is None where none parsed (`unscored` says why);
    never a silent 0. `call` is the key of the call that gave it where one call scored several criteria
    (a joint call's K verdicts share it, `position` says where the prompt showed this criterion, and the
    call's text is kept once, in `raw` of its first verdict); None for a call of its own."""

    probe_key: str
    verifier: str
    criterion: str
    score: int | float | None = Field(description="On the criterion's scale, as written: an integer stays one")
    reasoning: str | None = None
    rationale: str | None = None
    distribution: tuple[float, ...] | None = Field(None, description="Expected mode: each score's probability")
    score_mass: float | None = None
    unscored: str | None = None
    call: str | None = None
    position: int | None = None
    raw: str | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    constraint: str | None = Field(None, description="A server's verdict: the constraint it was sent")
    thought: str | None = Field(None, description="A thinking judge's reasoning before the verdict (reasoning.py)")
    thought_tokens: int | None = None


def record_line(record: Record) -> str:
    """The record as one line of its JSONL file: `v` first, the fields that were set."""
    fields = record.model_dump(exclude_unset=True, exclude={"v"})
    return json.dumps({"v": record.v, **fields}) + "\n"


class Info(BaseModel):
    """A part of run.json: a file radar wrote, read back checked (a hand-edited or damaged one is one line
    naming the key, never a traceback in a renderer)."""

    model_config = ConfigDict(allow_inf_nan=False)


class Stage(Info):
    """One stage's counters (generate, rewrite, score); the engine's own settings and a cluster's replicas
    are kept as the engine reported them."""

    model_config = ConfigDict(extra="forbid")

    requests: int | None = None
    calls: int
    prompt_tokens: int
    output_tokens: int
    seconds: float
    layout: str | None = None
    mode: str | None = Field(None, description="The scoring mode (reasoned, expected)")
    call_mode: str | None = Field(None, description="per-criterion, or joint: one call for all criteria")
    prompt_tokens_cached: int | None = None
    prompt_tokens_computed: int | None = None
    prefix_cache_hit_rate: float | None = None
    prompt_tokens_floor: int | None = Field(None, description="The prompt tokens no prefix cache could go below")
    computed_over_floor: float | None = None
    occupancy: float | None = Field(
        None,
        description="How full the scheduler's binding limit was: the larger of mean running requests over "
        "max_num_seqs and the mean share of KV-cache blocks in use, per engine step",
    )
    occupancy_fed: float | None = Field(None, description="The same over the steps with a full queue behind them")
    capped_by: Literal["sequences", "kv_blocks"] | None = Field(
        None, description="Which limit bound the fed steps: max_num_seqs, or the KV cache's blocks"
    )
    occupancy_parts: dict[str, float] | None = Field(None, description="The fed steps' fill of each limit")
    engine: dict | None = Field(None, description="The settings the engine resolved on this machine")
    cluster: dict | None = Field(None, description="A cluster run: its nodes and each replica's share")
    parsed: int | None = None
    unscored: int | None = None
    parse_rate: float | None = None
    short_answers: int | None = Field(None, description="Samples a server left out, asked for one at a time")
    waves: int | None = Field(None, description="An adaptive audit: the waves the counters sum over")
    reasoning_tokens: int | None = Field(
        None, description="A thinking judge: the tokens of its reasoning requests, apart from its verdicts' (above)"
    )
    reasoning_unended: int | None = Field(
        None, description="A thinking judge: reasonings that hit the budget or never ended (their verdicts unscored)"
    )


class ModelRef(Info):
    label: str
    engine: str
    model: str


class Injection(Info):
    """The scan of the planted probes for text that addresses the judge (radar_local.injection)."""

    flagged: int
    probes: int
    by_target_direction: dict[str, int]
    excluded: bool
    examples: list[dict] = []
    keys: list[str] = []


class RunInfo(Info):
    """run.json: what one verifier's audit of a run cost and ran on. Keys a run made by an earlier radar
    lacks are None."""

    radar_local_prompt_version: str | None = None
    generator: ModelRef | None = None
    verifier: ModelRef | None = None
    probes: int | None = None
    injection: Injection | None = None
    stages: dict[str, Stage]
    libraries: dict[str, str | None] = {}
    reproducibility: dict = {}
    adaptive: dict | None = None
    jurors: dict | None = Field(
        None,
        description="A jury's audit: each juror's engine (seconds to start and close, memory free before it loaded, "
        "while held and after it closed) and the jurors that failed, with why",
    )
    previous_runs: list[dict] = Field([], description="The run.json of each earlier run of this audit")
