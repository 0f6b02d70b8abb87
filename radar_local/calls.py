"""Engine calls and their records: the order a stage feeds requests in (the prefix-shared layout's
stagger, one constraint per call, only the variants not stored yet) and an answer turned into the probe or
verdict records the store keeps."""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import replace

from radar_local.plan import REWARD, GenerationRequest, RewardRequest, ScoreRequest
from radar_local.prompts import strip_think
from radar_local.reasoning import Thought
from radar_local.records import ProbeRecord, VerdictRecord
from radar_local.scoring import expected_score


def prefix_order(todo: list, layout: str, stagger: int = 32) -> list:
    """Prefix-shared layout: each probe's first verdict `stagger` requests ahead of its other K-1, so
    its shared blocks are computed and cached before they are admitted (requests admitted in the same
    step cannot share), yet close enough behind that a finite KV cache still holds them. The engine
    admits in submission order, so the order does it, not a barrier. `stagger` is at least the number
    of prompts an engine step admits."""
    if layout != "prefix-shared":
        return todo
    groups: dict[str, list] = {}
    for r in todo:
        groups.setdefault(r.probe_key, []).append(r)
    probes = list(groups.values())
    out = []
    for i, verdicts in enumerate(probes):
        out.append(verdicts[0])
        if i >= stagger:
            out += probes[i - stagger][1:]
    for verdicts in probes[max(0, len(probes) - stagger) :]:
        out += verdicts[1:]
    return out


def admitted_per_step(settings: dict) -> int:
    """At most how many verdict prompts (256 tokens or more) one engine step admits: its token budget's
    worth, or its sequence limit where that is lower."""
    budget = settings.get("max_num_batched_tokens") or 8192
    return max(1, min(settings.get("max_num_seqs") or budget, budget // 256))


def missing_variants(requests: list[GenerationRequest], stored: Container[str]) -> list[GenerationRequest]:
    """The variants of `requests` not stored yet, as requests for each run of consecutive ones: variant v
    is the sample of seed + v (plan.GenerationRequest) however it is asked for, so raising n, or a probe
    lost from the middle, costs only the missing calls."""
    out = []
    for r in requests:
        missing = [v for v in r.variants if r.variant_key(v) not in stored]
        for start, stop in _runs(missing):
            out.append(r if (start, stop) == (r.first, r.first + r.n) else replace(r, first=start, n=stop - start))
    return out


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as half-open runs of consecutive ones: [0, 1, 2, 5] -> [(0, 3), (5, 6)]."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][1] == v:
            runs[-1] = (runs[-1][0], v + 1)
        else:
            runs.append((v, v + 1))
    return runs


SHORT_REFILLS = 2  # further calls for the samples an engine left out of its answer


def probe_record(req: GenerationRequest, variant: int, c, generator: str) -> ProbeRecord:
    text = strip_think(c.text)
    return ProbeRecord(
        key=req.variant_key(variant),
        generator=generator,
        task_id=req.task.id,
        target=req.target,
        direction=req.direction,
        variant=variant,
        seed=req.seed,
        text=text,
        **({"raw": c.text} if text != c.text else {}),
        prompt_tokens=c.prompt_tokens,
        output_tokens=c.output_tokens,
        finish_reason=c.finish_reason,
    )


# vLLM's finish reason for a request it failed itself (its answer constraint did not compile in time, say):
# the engine's failure, never the model's.
ENGINE_FAILED = (
    "the engine failed the request before the model answered (finish reason 'error': its answer constraint "
    "did not compile, or the engine erred; see engine.log)"
)
# A server's reasoning parser moved the judge's answer out of `content` (vllm serve --reasoning-parser).
IN_REASONING = (
    "the server put the answer in message.reasoning (vllm serve --reasoning-parser), not in its content; serve the "
    "judge without --reasoning-parser"
)


def constraint_groups(requests: list[ScoreRequest]) -> list[list[ScoreRequest]]:
    """Requests by the constraint their answers share, each group in the order given (an engine call takes
    one constraint)."""
    groups: dict[tuple[str, bool], list[ScoreRequest]] = {}
    for r in requests:
        groups.setdefault((r.answer.regex, r.answer.expected), []).append(r)
    return list(groups.values())


def verdict_records(req: ScoreRequest, c, verifier: str, thought: Thought | None = None) -> list[VerdictRecord]:
    """A call's verdicts: one per criterion it scored, unscored (with why) where its score does not read; a
    thinking judge's with its reasoning, unscored where that did not end (reasoning.py)."""
    joint = req.answer.joint
    common: dict = {"probe_key": req.probe_key, "verifier": verifier}
    if c.score_logprobs is not None:  # expected mode: the probability-weighted score and its distribution
        exp = expected_score(c.score_logprobs, req.answer.scales[0][1])
        fields: list[dict] = [
            {
                "score": exp.score,
                "distribution": exp.distribution,
                "score_mass": exp.mass,
                "reasoning": None,
                "rationale": None,
            }
        ]
        if exp.reason:
            fields[0]["unscored"] = exp.reason
    else:
        parsed = req.answer.parse(c.text)
        fields = [
            {"score": parsed[cid].score, "reasoning": parsed[cid].reasoning, "rationale": parsed[cid].rationale}
            for cid in req.criteria
        ]
    out = []
    for position, (cid, rec) in enumerate(zip(req.criteria, fields)):
        if c.finish_reason == "error":
            rec.update(score=None, unscored=ENGINE_FAILED)
        elif rec["score"] is None and c.reasoning is not None and not rec.get("unscored"):
            rec.update(unscored=IN_REASONING)  # the answer is in the field a server's reasoning parser filled
        if thought is not None:
            rec.update(thought=thought.text or None, thought_tokens=thought.tokens if position == 0 else None)
            if thought.unscored:
                rec.update(score=None, unscored=thought.unscored, reasoning=None, rationale=None)
        if joint:
            rec.update(call=req.key, position=position)
        out.append(
            VerdictRecord(
                key=req.verdict_key(cid),
                criterion=cid,
                **common,
                **rec,
                # the call's text and tokens once, on its first verdict (a joint call's others leave them unset)
                **(
                    {"raw": c.text, "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens}
                    if position == 0
                    else {}
                ),
                finish_reason=c.finish_reason,
                **({"constraint": c.constraint} if c.constraint else {}),
            )
        )
    return out


NO_REWARD = "the reward model gave no finite number"


def reward_record(req: RewardRequest, reward: object, model: str) -> VerdictRecord:
    """A reward model's scalar on one probe, as its verdict on `reward` (unscored where it is no finite number)."""
    ok = isinstance(reward, (int, float)) and not isinstance(reward, bool) and math.isfinite(reward)
    return VerdictRecord(
        key=req.key,
        probe_key=req.probe_key,
        verifier=model,
        criterion=REWARD,
        score=float(reward) if ok else None,  # type: ignore[arg-type]
        unscored=None if ok else NO_REWARD,
    )
