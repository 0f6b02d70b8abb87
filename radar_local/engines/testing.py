"""A deterministic engine with a planted coupling, for testing the orchestration in seconds.

Never a stand-in for a model in an end-to-end test: it exists so that chunking, waves, resume, locks and signals are
tested without loading weights. It answers from the fields radar's requests carry (prompts.Prompt: a probe's target
and direction, the response and criteria a verdict rates), never from their wording, so any judge template and answer
shape serve. Its generator writes which criterion a probe was steered on and in which direction; its verifier reads
that back from the response and answers with a score from the planted coupling: 4 / 0 on the steered criterion, 2 +
2 * sign * coupling[target][criterion] (rounded, clipped to 0-4) on the others, put on the criterion's scale (the
nearest level to the same share of its span). In a joint call (all criteria in one answer) it adds 2 * sign * `halo`
to every other criterion: the halo a joint judge adds. With `noise`, the planted judge's belief is spread around that
value (a discretized normal, sd `noise` Likert points) whose centre also moves with the verdict (uniform within
+-noise/2: each probe is a different response): a reasoned verdict is one seeded draw from the belief, an expected-
mode verdict reads the whole distribution.

With `wording`, coupling comes from the rubric's own text instead (rubric repair's planted mechanism): a + probe
carries (each with probability 0.8) the words of its target's description, a - probe none, and the verifier scores a
criterion by the share of its description's words a probe contains. Two criteria whose descriptions share words are
then coupled through their wording. `edits` scripts the rubric editor: "Candidate k of C" is answered edits[k-1].
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from pydantic import Field

from radar_local.answer import Answer, GradeShape, JsonShape, Shape
from radar_local.attack_probes import carries, talked_into
from radar_local.defences import obeys
from radar_local.engines.base import (
    BatchStream,
    Completion,
    EngineCounters,
    EngineOptions,
    Finished,
    Sampling,
    ScoreFormat,
)
from radar_local.errors import RadarError
from radar_local.prompts import Messages
from radar_local.scale import Scale

# What the planted generator writes, read back from a response (its own text, as a judge reads it). Labels
# are any text, newlines and brackets included: a criterion is known by its label's first line.
STEER = re.compile(r"Steered ([+-]) on <(.*?)>: reply \(seed")
REWRITTEN = re.compile(r"Rewritten (up|down) on <([^>]+)>")
CANDIDATE = re.compile(r"Candidate (\d+) of \d+")  # the scripted rubric editor's prompt


def words(text: str) -> set[str]:
    """The planted wording mechanism's vocabulary: lower-case words of four letters or more."""
    return set(re.findall(r"[a-z]{4,}", text.lower()))


def first_line(label: str) -> str:
    """How the planted engine knows a criterion: its label's first line."""
    return label.split("\n", 1)[0]


def after_reasoning(messages: Messages) -> bool:
    """A verdict that continues the judge's own reasoning (reasoning.continued), not an empty block of it."""
    last = messages[-1]
    return last["role"] == "assistant" and bool(re.sub(r"</?think>", "", last["content"]).strip())


def fields(messages: Messages) -> dict:
    """What radar asked in a request (prompts.Prompt), which the planted engine answers from."""
    found = getattr(messages, "fields", None)
    if found is None:
        raise ValueError("the planted engine answers radar's own requests (plan.py), which carry their fields")
    return found


class PlantedOptions(EngineOptions):
    # left out of content keys
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset(
        {"delay_s", "finish", "gpus", "start_s", "hang", "chatter", "fail_start", "fail_after"}
    )
    coupling: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="coupling[target label][criterion label]; 0 where absent"
    )
    blind: list[str] = Field(
        default_factory=list,
        description="Criterion labels the judge cannot read: a probe steered on one leaves its verdict in the middle",
    )
    backwards: list[str] = Field(
        default_factory=list,
        description="Criterion labels the judge reads backwards (a sign error): a probe steered + on one gets the "
        "verdict a - probe would, and the reverse",
    )
    halo: float = Field(0.0, ge=-1, le=1, description="Joint calls: coupling added into every other criterion")
    first: float = Field(0.0, ge=-4, le=4, description="Joint calls: points added to the criterion shown first")
    position: float = Field(
        0.0, ge=-0.49, le=0.49, description="Pairwise calls: the first slot's rate on a tie, minus 1/2"
    )
    pair_ties: float = Field(0.0, ge=0, le=1, description="Pairwise calls: a tie's rate on a gap under half a point")
    primed: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Joint calls: {C: {D: points}} added to D's verdict when C is shown before it (order leakage)",
    )
    reward: dict[str, float] = Field(
        default_factory=dict,
        description="A reward model's weights by criterion label: its reward is the weighted sum of the "
        "response's planted values (-1 to 1 each) plus `noise` / 2 of seeded normal noise",
    )
    think: int = Field(
        0, ge=0, le=100_000, description="A thinking judge's reasoning (reasoning.py): its length in tokens"
    )
    think_unended: float = Field(
        0.0, ge=0, le=1, description="The share of reasonings that never end (they run to the budget)"
    )
    reasoned: dict[str, Any] = Field(
        default_factory=dict,
        description="A thinking judge's verdicts after a reasoning are those of the planted judge with these "
        "options changed (say {noise: 0.3, coupling: {}}): what thinking buys, for its ablation",
    )
    delay_s: float = Field(0.0, ge=0, le=60, description="Sleep per generate call, for interrupting a stage")
    inject: dict[str, str] = Field(default_factory=dict, description="Text appended to + probes of a criterion label")
    noise: float = Field(0.0, ge=0, le=4, description="Spread (sd, Likert points) of the judge's belief")
    gullible: float = Field(0.0, ge=0, le=1, description="Obeys an attack (attack_probes.py) with this probability")
    heeds: dict[Literal["fence", "untrusted"], float] = Field({}, description="Obeyed less with (defences.obeys)")
    draw: int = Field(
        0, ge=0, description="The judge's own random draws: another value is an independent judge of equal beliefs"
    )
    fresh_draws: bool = Field(
        False,
        description="Each asking of a prompt draws its verdict afresh from the belief (a judge whose verdicts "
        "vary between calls, by sampling or batch variance); off: the same prompt, the same verdict",
    )
    wording: bool = Field(False, description="Couple criteria through the words their descriptions share")
    phrases: dict[str, float] = Field(
        default_factory=dict,
        description="Points added to every verdict whose prompt holds the phrase (a judge swayed by its "
        "template's wording)",
    )
    edits: list[dict] = Field(default_factory=list, description="The scripted editor's answers, one per candidate")
    steers: list[str] = Field(
        default_factory=lambda: ["length"],
        description="Nuisance attributes the generator's rewrites change (by length: words added up, "
        "dropped down); it rewrites others without change",
    )
    bias: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="bias[attribute][criterion label]: the judge adds 2 * bias to an up rewrite's score and "
        "takes it from a down rewrite's (a sensitivity of `bias`)",
    )
    finish: Literal["batch", "shuffled"] = Field(
        "batch",
        description="shuffled: a stream yields answers one at a time in a seeded random order, as a "
        "continuously fed engine finishes them (delay_s before each score)",
    )
    # For the cluster's placement and fault tests: it computes on nothing, but is placed as if it did.
    gpus: int = Field(0, ge=0, le=8, description="GPUs one engine takes where the cluster has GPUs")
    start_s: float = Field(0.0, ge=0, le=600, description="Seconds to start, as a model loads")
    chatter: bool = Field(False, description="Write a line to descriptor 2 when built, as vLLM's engine does")
    fail_constraints: bool = Field(
        False,
        description="Fail every constrained request as vLLM does one whose constraint did not compile: "
        "no text, finish reason 'error'",
    )
    hang: str | None = Field(
        None, description="A file: the engine that creates it first never answers its first score call"
    )
    fail_start: bool = Field(False, description="Fail to start, as a model that does not load (a jury's juror)")
    fail_after: int | None = Field(
        None, ge=0, description="Answer this many score calls, then fail as a server that dies mid-stage"
    )

    def engine_gpus(self) -> int:
        return self.gpus


class PlantedEngine(BatchStream):
    name = "testing"
    LOCAL_WEIGHTS = False

    Options = PlantedOptions

    def __init__(self, model: str, options: PlantedOptions | None = None):
        self.model = model
        self.options = options or self.Options()
        self._scored = 0  # score calls answered (fail_after)
        self._asked: Counter[bytes] = Counter()  # askings of each verdict so far (fresh_draws)
        if self.options.fail_start:
            # what vLLM's LLM() raises when its engine core fails to start (vllm/v1/engine/utils.py)
            raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
        time.sleep(self.options.start_s)
        if self.options.chatter:
            os.write(2, b"planted-engine-chatter: INFO loading weights\n")

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int) -> Iterator[Finished]:
        limit = self.options.fail_after
        for finished in self._answers(prompts, fmt=fmt, chunk=chunk):
            if limit is not None and self._scored + len(finished) > limit:
                if kept := finished[: limit - self._scored]:
                    yield kept
                raise RadarError(f"the planted engine '{self.model}' stopped after {limit} calls (fail_after)")
            self._scored += len(finished)
            yield finished

    def _answers(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int) -> Iterator[Finished]:
        if self.options.finish == "batch":
            yield from super().score_stream(prompts, fmt=fmt, chunk=chunk)
            return
        order = list(range(len(prompts)))
        random.Random(len(prompts)).shuffle(order)  # answers finish in any order, never in request order
        for i in order:
            time.sleep(self.options.delay_s)
            yield [(i, self.score([prompts[i]], fmt=fmt)[0])]

    def generate(self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int]) -> list[list[Completion]]:
        time.sleep(self.options.delay_s)
        n = sampling.n
        out = []
        for messages, seed in zip(prompts, seeds):
            asked, size = fields(messages), len(messages[-1]["content"].split())
            if asked["kind"] == "rewrite":
                out.append([self._rewritten(asked, size)])
                continue
            if asked["kind"] in ("score", "pair"):  # a thinking judge's first request (reasoning.py)
                out.append(
                    [self._thought("\n".join(m["content"] for m in messages), size, sampling.max_tokens, sampling.stop)]
                )
                continue
            # Sample v of a prompt under seed s is the sample of seed s + v, as in vLLM: a cell's variants
            # are the same whether they are asked for at once or in waves.
            if "target" not in asked:
                texts = [f"Unsteered reply (seed {seed + v})." for v in range(n)]
            else:
                sign = asked["direction"]
                if self.options.wording:
                    out.append([self._worded(asked["description"], sign, seed + v, size) for v in range(n)])
                    continue
                steered = first_line(asked["target"])
                inject = {first_line(label): text for label, text in self.options.inject.items()}
                extra = f" {inject[steered]}" if sign == "+" and steered in inject else ""
                texts = [f"Steered {sign} on <{steered}>: reply (seed {seed + v}).{extra}" for v in range(n)]
            out.append([Completion(t, size, len(t.split()), "stop") for t in texts])
        return out

    def reward(self, prompts: list[Messages]) -> list[float]:
        """A planted reward model: sum over `reward`'s criteria of weight x (value - 2) / 2, plus noise."""
        out = []
        for messages in prompts:
            asked, text = fields(messages), "\n".join(m["content"] for m in messages)
            value = math.fsum(
                w * (planted_value(self.options, asked["response"], label, "", text, False, []) - 2) / 2
                for label, w in self.options.reward.items()
            )
            rng = random.Random(hashlib.sha256(planted_salt(self.options) + b"reward" + text.encode()).digest())
            out.append(value + self.options.noise / 2 * rng.gauss(0, 1))
        return out

    def _with_reasoned(self, prompts: list[Messages], fmt: ScoreFormat) -> list[Completion]:
        """The verdicts that follow a reasoning from the planted judge of `reasoned`'s options, the others from this."""
        changed = {**self.options.model_dump(), **self.options.reasoned, "reasoned": {}}
        thinking = PlantedEngine(self.model, self.Options(**changed))
        split = [after_reasoning(m) for m in prompts]
        theirs = iter(thinking.score([m for m, t in zip(prompts, split) if t], fmt=fmt))
        mine = iter(self.score([m for m, t in zip(prompts, split) if not t], fmt=fmt))
        return [next(theirs) if t else next(mine) for t in split]

    def _thought(self, text: str, prompt_tokens: int, max_tokens: int, stop: tuple[str, ...] = ()) -> Completion:
        """`think` tokens of reasoning and its end, then an answer the constrained request replaces (none where the
        request stops at the end: the stop string kept, as the engines keep it); a reasoning longer than the budget,
        or one of the `think_unended` share, runs to the budget without its end."""
        rng = random.Random(hashlib.sha256(planted_salt(self.options) + b"think" + text.encode()).digest())
        if rng.random() < self.options.think_unended or self.options.think + 2 > max_tokens:
            return Completion(" ".join(["Hmm,"] * max_tokens), prompt_tokens, max_tokens, "length")
        thought = "<think> " + " ".join(["step"] * self.options.think) + " </think> It is a 3."
        for end in stop:
            if (at := thought.find(end)) >= 0:
                thought = thought[: at + len(end)]
        return Completion(thought, prompt_tokens, len(thought.split()), "stop")

    def _rewritten(self, asked: dict, prompt_tokens: int) -> Completion:
        """The base response, marked with the rewrite; longer (up) or shorter (down) where it steers."""
        base, attribute, way = asked["response"], asked["attribute"], asked["way"]
        if attribute in self.options.steers:
            base = (
                f"{base} {' '.join(['It says the same again, at length.'] * 8)}"
                if way == "up"
                else " ".join(base.split()[-1:])
            )
        text = f"Rewritten {way} on <{attribute}>: {base}"
        return Completion(text, prompt_tokens, len(text.split()), "stop")

    def _worded(self, description: str, sign: str, seed: int, prompt_tokens: int) -> Completion:
        """A + probe made of (a seeded 80% of) its target's description words; a - probe of none."""
        vocab = sorted(words(description))
        rng = random.Random(seed)
        text = "Reply: " + " ".join(w for w in vocab if rng.random() < 0.8) if sign == "+" else "Ok."
        return Completion(text, prompt_tokens, len(text.split()), "stop")

    def constrained(
        self, prompts: list[Messages], *, fmt, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        """The scripted rubric editor (verdicts go through `score`)."""
        out = []
        for messages in prompts:
            text = "\n".join(m["content"] for m in messages)
            if self.options.fail_constraints:
                out.append(Completion("", len(text.split()), 0, "error"))
                continue
            k = CANDIDATE.search(text)
            # Without a script (or asked something else) it answers an empty object: no edit, as a model may.
            script = self.options.edits
            answer = json.dumps(script[(int(k.group(1)) - 1) % len(script)] if k is not None and script else {})
            out.append(Completion(answer, len(text.split()), len(answer.split()), "stop"))
        return out

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        if self.options.hang is not None:
            try:
                open(self.options.hang, "x").close()  # the first engine to get here hangs, the others go on
                time.sleep(3600)
            except FileExistsError:
                pass
        if self.options.reasoned and any(map(after_reasoning, prompts)):
            return self._with_reasoned(prompts, fmt)
        answer = fmt if isinstance(fmt, Answer) else fmt.answer()  # type: ignore[attr-defined]
        out = []
        for messages in prompts:
            asked = fields(messages)
            text = "\n".join(m["content"] for m in messages)
            size = len(text.split())
            if self.options.fail_constraints and not answer.expected:
                out.append(Completion("", size, 0, "error"))
                continue
            if asked.get("kind") == "pair":
                (cid, scale), choice = answer.scales[0], planted_choice(self.options, asked, text, answer.shape)
                word = dict(zip(scale.values, scale.tokens))[PAIR_SCORE[choice]]  # in the judge's words (Yes/No)
                reply = written(answer, {cid: word})
                out.append(Completion(reply, size, len(reply.split()), "stop"))
                continue
            scales = dict(answer.scales)
            shown = [first_line(c["label"]) for c in asked["criteria"]]  # a joint call's order
            beliefs = {
                cid: planted_belief(
                    self.options, asked, c["label"], c["description"], text, scales[cid], answer.joint, shown[:k]
                )
                for k, ((cid, _), c) in enumerate(zip(answer.scales, asked["criteria"]))
            }
            if answer.expected:
                (cid, belief), scale = next(iter(beliefs.items())), answer.scales[0][1]
                best = max(range(len(belief)), key=belief.__getitem__)
                logprobs = {t: math.log(p) for t, p in zip(scale.tokens, belief) if p > 0}
                out.append(Completion(scale.tokens[best], size, 1, "length", logprobs))
                continue
            levels = {}
            for cid, belief in beliefs.items():
                # the same prompt, the same verdict (or, with fresh_draws, a new draw each asking); a joint
                # call's criteria draw apart
                seed = planted_salt(self.options) + b"draw" + text.encode() + (cid.encode() if answer.joint else b"")
                if self.options.fresh_draws:
                    self._asked[seed] += 1
                    seed += b"#%d" % self._asked[seed]
                rng = random.Random(hashlib.sha256(seed).digest())
                levels[cid] = rng.choices(scales[cid].tokens, weights=belief)[0]
            obey = obeys(self.options.gullible, self.options.heeds, asked.get("defences", ()))
            if obey and carries(asked.get("response", ""), answer.shape):  # obeyed: the top level
                for cid in levels:
                    salt = hashlib.sha256(planted_salt(self.options) + b"gullible" + text.encode() + cid.encode())
                    if random.Random(salt.digest()).random() < obey:
                        levels[cid] = scales[cid].top
            reply = written(answer, levels)
            out.append(Completion(reply, size, len(reply.split()), "stop"))
        return out

    def counters(self) -> EngineCounters:
        return EngineCounters()

    def close(self) -> None:
        pass


def planted_belief(
    options: PlantedOptions,
    asked: dict,
    rated: str,
    description: str,
    text: str,
    scale: Scale,
    joint: bool,
    before: list[str],
) -> list[float]:
    """P(level) for this criterion: all mass on the level nearest the planted value without noise. The
    value is on the 0-4 footing, each level at its share of the scale's span times 4."""
    value = planted_value(options, asked["response"], rated, description, text, joint, before)
    at = [4 * share for share in scale.footing]
    if options.noise == 0:
        nearest = min(range(len(at)), key=lambda i: (abs(at[i] - value), at[i] != round(value)))  # as round()
        return [float(i == nearest) for i in range(len(at))]
    value += options.noise * (
        random.Random(hashlib.sha256(planted_salt(options) + text.encode()).digest()).random() - 0.5
    )
    weights = [math.exp(-((x - value) ** 2) / (2 * options.noise**2)) for x in at]
    total = math.fsum(weights)
    return [w / total for w in weights]


def planted_value(
    options: PlantedOptions, response: str, rated: str, description: str, text: str, joint: bool, before: list[str]
) -> float:
    """The planted value of `response` on the criterion `rated`, 0-4, before the judge's noise."""
    rated = first_line(rated)
    steer = STEER.search(response)
    value = 2.0
    if options.wording:
        wanted = words(description)
        seen = wanted & words(response)
        value = 4 * len(seen) / len(wanted) if wanted else 2.0  # no word to find: the middle
    elif steer is not None:
        sign = 1 if steer.group(1) == "+" else -1
        steered = steer.group(2)
        row = next((row for label, row in options.coupling.items() if first_line(label) == steered), {})
        reads = 0.0 if any(first_line(label) == steered for label in options.blind) else 1.0
        if any(first_line(label) == steered for label in options.backwards):
            reads = -1.0
        level = reads if rated == steered else row.get(rated, 0.0) + (options.halo if joint else 0.0)
        value = min(4.0, max(0.0, 2 + 2 * sign * level))
    elif (rewritten := REWRITTEN.search(response)) is not None:
        sign = 1 if rewritten.group(1) == "up" else -1
        value = 2 + 2 * sign * options.bias.get(rewritten.group(2), {}).get(rated, 0.0)
    if joint and not before and options.first:
        value = min(4.0, max(0.0, value + options.first))
    if joint and (primed := sum(options.primed.get(c, {}).get(rated, 0.0) for c in before)):
        value = min(4.0, max(0.0, value + primed))
    if swayed := sum(points for phrase, points in options.phrases.items() if phrase in text):
        value = min(4.0, max(0.0, value + swayed))
    return value


def planted_choice(options: PlantedOptions, asked: dict, text: str, shape: Shape) -> str:
    """A pairwise verdict: A with probability Phi(gap / noise + z), the gap the planted values' of response A over
    response B on the criterion asked, z = Phi^-1(1/2 + position): a position bias of `position` on a tie; with
    `pair_ties`, a tie where the gap is under half a point, at that rate; `gullible`: talked into a slot."""
    rated, description = asked["criterion"]["label"], asked["criterion"]["description"]
    # overall quality: the mean of the response's values on the rubric's criteria
    on, pitfalls = asked["rubric"] if rated == "Overall quality" else [rated], asked.get("pitfalls", [])

    def value(response: str) -> float:  # on a pitfall, the better response commits less of it
        return statistics.fmean(
            abs(4 * (c in pitfalls) - planted_value(options, response, c, description, text, False, [])) for c in on
        )

    gap = value(asked["response_a"]) - value(asked["response_b"])
    z = statistics.NormalDist().inv_cdf(0.5 + options.position)
    sd = max(options.noise, 1e-9)
    rng = random.Random(hashlib.sha256(planted_salt(options) + b"pair" + text.encode()).digest())
    if (slot := talked_into(asked["response_a"], asked["response_b"], shape)) and rng.random() < options.gullible:
        return slot
    if abs(gap) < 0.5 and rng.random() < options.pair_ties:
        return "tie"
    return "A" if rng.random() < statistics.NormalDist().cdf(gap / sd + z) else "B"


def planted_salt(options: PlantedOptions) -> bytes:
    return f"{options.draw}:".encode() if options.draw else b""


PAIR_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}  # a choice's level value (config.PairwiseJudge.choices)


def written(answer: Answer, levels: dict[str, str]) -> str:
    """The planted verdicts as the answer's shape writes them (a level as written; a JSON value as a number
    on a range or a numeric level, true or false, a string for other named levels)."""
    scales = dict(answer.scales)
    shape = answer.shape

    def value(cid: str) -> object:
        scale = scales[cid]
        return scale.json_value(levels[cid])

    def one(cid: str) -> object:
        if isinstance(shape, JsonShape):
            return {
                **dict.fromkeys(shape.before, "planted"),
                shape.score: value(cid),
                **dict.fromkeys(shape.after, "planted"),
            }
        return value(cid)

    if answer.joint:
        return json.dumps({cid: one(cid) for cid in levels})
    (cid,) = levels
    if isinstance(shape, GradeShape):
        prefix, _, suffix = shape.parts
        return ("planted\n" if shape.reasoning else "") + prefix + levels[cid] + suffix
    return json.dumps(one(cid)) if isinstance(shape, JsonShape) else levels[cid]
