"""A deterministic engine with a planted coupling, for testing the orchestration in seconds.

Never a stand-in for a model in an end-to-end test: it exists so that chunking, waves, resume,
locks and signals are tested without loading weights. Its generator writes which criterion a probe
was steered on and in which direction; its verifier reads that back and answers with a score from
the planted coupling: 4 / 0 on the steered criterion, 2 + 2 * sign * coupling[target][criterion]
(rounded, clipped to 0-4) on the others. With `noise`, the planted judge's belief is spread around
that value (a discretized normal, sd `noise` Likert points) whose centre also moves with the verdict
(uniform within +-noise/2: each probe is a different response): a reasoned verdict is one seeded
draw from the belief, an expected-mode verdict reads the whole distribution.

With `wording`, coupling comes from the rubric's own text instead (rubric repair's planted
mechanism): a + probe carries (each with probability 0.8) the words of its target's description, a
- probe none, and the verifier scores a criterion by the share of its description's words a probe
contains. Two criteria whose descriptions share words are then coupled through their wording.
`edits` scripts the rubric editor: the answer to "Candidate k of C" is edits[k - 1].
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import time
from collections.abc import Iterator
from typing import ClassVar, Literal

from pydantic import Field

from radar_local.engines.base import BatchStream, Completion, EngineCounters, EngineOptions, Finished
from radar_local.prompts import Messages
from radar_local.scoring import SCORE_MAX, SCORE_MIN, SCORE_TOKENS, ScoreFormat

# Labels and descriptions are any text, newlines and brackets included: a criterion is known by its
# label's first line (the generator sees "Criterion: <label>\n<description>"), and patterns span lines.
STEER = re.compile(r"Steered ([+-]) on <(.*?)>: reply \(seed")
REWRITE = re.compile(r"^Change: (\S+) (up|down)$", re.MULTILINE)  # a nuisance rewrite prompt (prompts.py)
REWRITTEN = re.compile(r"Rewritten (up|down) on <([^>]+)>")
CRITERION_BLOCK = re.compile(r"\nCriterion: ([\s\S]*)\nImportant:\n")
RATED = re.compile(r"Rate the ([\s\S]+?) of the (?:following response|response above) on")
RATED_DESCRIPTION = re.compile(
    r"### Criterion\n[\s\S]*?: ([\s\S]+?)\nRate the |rating only the [\s\S]+? \(\d to \d\)\. ([\s\S]+?)\nRate the "
)
RESPONSE = re.compile(r"<<<RESPONSE-[0-9a-f]{16}>>>\n(.*?)\n<<<END RESPONSE-", re.DOTALL)
CANDIDATE = re.compile(r"Candidate (\d+) of \d+")


def words(text: str) -> set[str]:
    """The planted wording mechanism's vocabulary: lower-case words of four letters or more."""
    return set(re.findall(r"[a-z]{4,}", text.lower()))


def first_line(label: str) -> str:
    """How the planted engine knows a criterion: its label's first line."""
    return label.split("\n", 1)[0]


def found(pattern: re.Pattern[str], text: str) -> re.Match[str]:
    """The match in one of radar's own prompts, which always holds it."""
    match = pattern.search(text)
    if match is None:
        raise ValueError(f"the planted engine found no {pattern.pattern!r} in its prompt")
    return match


class PlantedEngine(BatchStream):
    name = "testing"
    LOCAL_WEIGHTS = False

    class Options(EngineOptions):
        # left out of content keys
        OPERATIONAL: ClassVar[frozenset[str]] = frozenset({"delay_s", "finish", "gpus", "start_s", "hang", "chatter"})
        coupling: dict[str, dict[str, float]] = Field(
            default_factory=dict, description="coupling[target label][criterion label]; 0 where absent"
        )
        delay_s: float = Field(0.0, ge=0, le=60, description="Sleep per generate call, for interrupting a stage")
        inject: dict[str, str] = Field(
            default_factory=dict, description="Text appended to + probes of a criterion label"
        )
        noise: float = Field(0.0, ge=0, le=4, description="Spread (sd, Likert points) of the judge's belief")
        wording: bool = Field(False, description="Couple criteria through the words their descriptions share")
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

        def engine_gpus(self) -> int:
            return self.gpus

    def __init__(self, model: str, options: Options | None = None):
        self.model = model
        self.options = options or self.Options()
        time.sleep(self.options.start_s)
        if self.options.chatter:
            os.write(2, b"planted-engine-chatter: INFO loading weights\n")

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int) -> Iterator[Finished]:
        if self.options.finish == "batch":
            yield from super().score_stream(prompts, fmt=fmt, chunk=chunk)
            return
        order = list(range(len(prompts)))
        random.Random(len(prompts)).shuffle(order)  # answers finish in any order, never in request order
        for i in order:
            time.sleep(self.options.delay_s)
            yield [(i, self.score([prompts[i]], fmt=fmt)[0])]

    def generate(
        self, prompts: list[Messages], *, n: int, temperature: float, max_tokens: int, seeds: list[int]
    ) -> list[list[Completion]]:
        time.sleep(self.options.delay_s)
        out = []
        for messages, seed in zip(prompts, seeds):
            user = messages[-1]["content"]
            if (rewrite := REWRITE.search(user)) is not None:
                out.append([self._rewritten(user, *rewrite.groups())])
                continue
            block = CRITERION_BLOCK.search(user)
            # Sample v of a prompt under seed s is the sample of seed s + v, as in vLLM: a cell's variants
            # are the same whether they are asked for at once or in waves.
            if block is None:
                texts = [f"Unsteered reply (seed {seed + v})." for v in range(n)]
            else:
                sign = "+" if "strongly satisfies" in user or "HIGH-word" in user else "-"
                if self.options.wording:
                    out.append([self._worded(block.group(1), sign, seed + v, len(user.split())) for v in range(n)])
                    continue
                steered = first_line(block.group(1))
                inject = {first_line(label): text for label, text in self.options.inject.items()}
                extra = f" {inject[steered]}" if sign == "+" and steered in inject else ""
                texts = [f"Steered {sign} on <{steered}>: reply (seed {seed + v}).{extra}" for v in range(n)]
            out.append([Completion(t, len(user.split()), len(t.split()), "stop") for t in texts])
        return out

    def _rewritten(self, user: str, attribute: str, way: str) -> Completion:
        """The base response, marked with the rewrite; longer (up) or shorter (down) where it steers."""
        base = found(RESPONSE, user).group(1)
        if attribute in self.options.steers:
            base = (
                f"{base} {' '.join(['It says the same again, at length.'] * 8)}"
                if way == "up"
                else " ".join(base.split()[-1:])
            )
        text = f"Rewritten {way} on <{attribute}>: {base}"
        return Completion(text, len(user.split()), len(text.split()), "stop")

    def _worded(self, block: str, sign: str, seed: int, prompt_tokens: int) -> Completion:
        """A + probe made of (a seeded 80% of) its target's description words; a - probe of none."""
        vocab = sorted(words(block.split("\n", 1)[-1]))  # the description follows the label's line
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
        out = []
        for messages in prompts:
            text = "\n".join(m["content"] for m in messages)
            if self.options.fail_constraints and not fmt.expected:
                out.append(Completion("", len(text.split()), 0, "error"))
                continue
            belief = self._belief(text)
            if fmt.expected:
                best = max(range(len(belief)), key=belief.__getitem__)
                logprobs = {t: math.log(p) for t, p in zip(SCORE_TOKENS, belief) if p > 0}
                out.append(Completion(SCORE_TOKENS[best], len(text.split()), 1, "length", logprobs))
                continue
            rng = random.Random(hashlib.sha256(b"draw" + text.encode()).digest())  # the same prompt, the same verdict
            score = rng.choices(range(SCORE_MIN, SCORE_MAX + 1), weights=belief)[0]
            answer = json.dumps({"reasoning": "planted", "score": score, "rationale": "planted"})
            out.append(Completion(answer, len(text.split()), len(answer.split()), "stop"))
        return out

    def _belief(self, text: str) -> list[float]:
        """P(score) for this prompt: all mass on the rounded planted value without noise."""
        rated = found(RATED, text).group(1)
        steer = STEER.search(text)
        value = 2.0
        if self.options.wording:
            wanted = words(next(g for g in found(RATED_DESCRIPTION, text).groups() if g))
            seen = wanted & words(found(RESPONSE, text).group(1))
            value = SCORE_MAX * len(seen) / len(wanted) if wanted else 2.0  # no word to find: the middle
        elif steer is not None:
            sign = 1 if steer.group(1) == "+" else -1
            steered = steer.group(2)
            row = next((row for label, row in self.options.coupling.items() if first_line(label) == steered), {})
            level = 1.0 if first_line(rated) == steered else row.get(rated, 0.0)
            value = min(SCORE_MAX, max(SCORE_MIN, 2 + 2 * sign * level))
        elif (rewritten := REWRITTEN.search(text)) is not None:
            sign = 1 if rewritten.group(1) == "up" else -1
            value = 2 + 2 * sign * self.options.bias.get(rewritten.group(2), {}).get(rated, 0.0)
        scores = range(SCORE_MIN, SCORE_MAX + 1)
        if self.options.noise == 0:
            return [float(k == round(value)) for k in scores]
        value += self.options.noise * (random.Random(hashlib.sha256(text.encode()).digest()).random() - 0.5)
        weights = [math.exp(-((k - value) ** 2) / (2 * self.options.noise**2)) for k in scores]
        total = math.fsum(weights)
        return [w / total for w in weights]

    def counters(self) -> EngineCounters:
        return EngineCounters()

    def close(self) -> None:
        pass
