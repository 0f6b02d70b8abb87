"""The engine interface: generate N samples for many chat prompts; score many prompts under a constraint."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from radar_local.errors import RadarError
from radar_local.prompts import Messages


class JsonFormat(Protocol):
    """A constrained answer: a strict regex, the token bound it implies, and the same as a JSON schema."""

    @property
    def regex(self) -> str: ...

    @property
    def max_tokens(self) -> int: ...

    def json_schema(self) -> dict: ...


class ScoreFormat(JsonFormat, Protocol):
    """A verdict's constraint (radar_local.answer.Answer, scoring.ScoreFormat): in expected mode the answer
    is one token, read as the distribution over `tokens` (the scale's levels as written)."""

    @property
    def expected(self) -> bool: ...

    @property
    def tokens(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Sampling:
    """How each prompt of a `generate` call is sampled: `n` samples of at most `max_tokens` tokens at `temperature`,
    each ending at the first of `stop` it writes, which its text keeps (a thinking judge's reasoning ends at its
    marker)."""

    n: int
    temperature: float
    max_tokens: int
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    output_tokens: int
    finish_reason: str = ""
    # expected mode: the log-probability of each score token (a server's top list as sent: checked when read)
    score_logprobs: dict[str, float] | list[tuple[object, object]] | None = None
    constraint: str | None = None  # a server's: the constraint it was sent (regex, json_schema); local engines: regex
    # a server's reasoning field (`vllm serve --reasoning-parser`: message.reasoning or reasoning_content), the text it
    # split off the answer; radar reads a judge's reasoning from the answer's whole text itself (reasoning.py)
    reasoning: str | None = None


@dataclass
class EngineCounters:
    """Cumulative counters an engine exposes; None where it cannot know."""

    prefix_cache_queries: int | None = None
    prefix_cache_hits: int | None = None
    # prompt tokens no prefix cache could avoid computing: each distinct full block of every prompt once,
    # plus what follows a prompt's last cacheable block (the engine computes at least its last token)
    prompt_token_floor: int | None = None
    steps: int | None = None  # engine steps, and the running requests summed over them (occupancy)
    running_sum: int | None = None
    fed_steps: int | None = None  # the same over steps with a full queue behind them (before the drain)
    fed_running_sum: int | None = None
    kv_sum: float | None = None  # the share of KV-cache blocks in use, summed over the steps and the fed ones
    fed_kv_sum: float | None = None


# A stream's items: the answers that finished together, each with its index in the request list.
Finished = list[tuple[int, "Completion"]]
FinishedSamples = list[tuple[int, list["Completion"]]]


class Engine(Protocol):
    name: str  # engine kind: vllm, transformers, openai
    model: str  # model id as configured

    def generate(self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int]) -> list[list[Completion]]:
        """`sampling.n` samples per prompt; prompt i samples with seed seeds[i] so reruns reproduce it."""

    def constrained(
        self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        """One answer per prompt matching `fmt.regex` (at most `fmt.max_tokens` tokens); sampled with
        seeds[i] when temperature > 0. A reasoned verdict is one; so is a rubric editor's edit."""

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        """One greedy answer per prompt, constrained to `fmt`; in expected mode (`fmt.expected`) one
        token, with the log-probability of every level (`fmt.tokens`) at that position."""

    def generate_stream(
        self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int], chunk: int
    ) -> Iterator[FinishedSamples]:
        """`generate`, yielding answers as they finish; `chunk` bounds a batch where the engine answers
        in batches (the vLLM and OpenAI engines keep their schedulers full instead)."""

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int) -> Iterator[Finished]:
        """`score`, yielding verdicts as they finish (in submission order where the engine queues)."""

    def continuation_problem(self, messages: Messages) -> str | None:
        """What keeps the engine from continuing `messages`' final assistant turn (a thinking judge's reasoning,
        reasoning.py), asked once before a stage; None where it continues it."""

    def settings(self) -> dict:
        """What the engine resolved from this machine (dtype and why, threads, KV cache, limits)."""

    def counters(self) -> EngineCounters:
        """Cumulative counters since the engine started."""

    def close(self) -> None:
        """Free the model's memory."""


THINK = "<think>"


def chat_text(tokenizer, messages: Messages, thinking: bool = True) -> str:
    """The chat prompt as text: the template with its generation prompt; a final assistant message (a thinking
    judge's reasoning, reasoning.py, or the ablation's empty one) continued as written after the generation prompt,
    whatever the template would make of an assistant turn (some move a turn's <think> block, which would no longer
    be continued), its <think> not opened twice where the generation prompt opens one (Qwen3-*-Thinking-2507,
    QwQ, DeepSeek-R1-Distill). `thinking` False: an answer asked at once (a verdict), rendered with
    enable_thinking=False, so a hybrid template (Qwen3) asks in the mode its model card gives for that; other
    templates ignore the variable."""
    pinned = {"strftime_now": pinned_strftime}
    if messages and messages[-1]["role"] == "assistant":
        head = tokenizer.apply_chat_template(list(messages[:-1]), add_generation_prompt=True, tokenize=False, **pinned)
        return head + _after_opened(head, messages[-1]["content"])
    options = pinned if thinking else {**pinned, "enable_thinking": False}
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **options)


def prompt_token_ids(tokenizer, messages: Messages, thinking: bool = True) -> list[int]:
    """The chat prompt's token ids, rendered as vLLM's `LLM.chat` renders it (template text, no extra specials);
    `thinking` False for an answer asked at once (chat_text). A Mistral-format checkpoint (vLLM's MistralTokenizer,
    picked by tokenizer_mode=auto for a folder holding consolidated weights and a Mistral tokenizer file,
    models.mistral_tokenizer_file) renders its control tokens as ids only: its `encode` reads `<s>[INST]` as plain
    text (13 tokens where the prompt is 7 ids), so its own template makes the ids."""
    if getattr(tokenizer, "IS_MISTRAL_TOKENIZER", False):
        final = bool(messages) and messages[-1]["role"] == "assistant"  # a reasoning continued
        turn = {"continue_final_message": True} if final else {"add_generation_prompt": True}
        return list(tokenizer.apply_chat_template(list(messages), tokenize=True, **turn))
    return tokenizer.encode(chat_text(tokenizer, messages, thinking), add_special_tokens=False)


PINNED_DATE = datetime.datetime(2026, 1, 1)


def pinned_strftime(fmt: str) -> str:
    """What a chat template's `strftime_now` shows (Llama 3.x's "Today Date: ..."): one fixed date, so a prompt
    is the same text every day under its content key, as a key promises."""
    return PINNED_DATE.strftime(fmt)


def _after_opened(head: str, content: str) -> str:
    """`content` without the <think> (and the white space after it) that `head`, a generation prompt, already
    ends with."""
    opened = head.rstrip()
    if not (content.startswith(THINK) and opened.endswith(THINK)):
        return content
    rest, after = content[len(THINK) :], head[len(opened) :]
    return rest[len(after) :] if rest.startswith(after) else rest


def single_token_ids(tokenizer, model: str, tokens: tuple[str, ...]) -> list[int]:
    """The token id of each level; expected mode reads one position, so each level must be one token."""
    ids = [tokenizer.encode(t, add_special_tokens=False) for t in tokens]
    split = [t for t, i in zip(tokens, ids) if len(i) != 1]
    if split:
        raise RadarError(
            f"{model}'s tokenizer splits the level(s) {', '.join(split)} into several tokens; "
            "expected mode needs one token per level: use scoring mode 'reasoned'"
        )
    return [i[0] for i in ids]


class EngineOptions(BaseModel):
    """An engine's options, checked when a config is read (an unknown key or a bad value is one line) and
    carried parsed from there on (config.ModelSpec.parsed)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # an infinite timeout is no setting
    # The options that change where and how fast the engine runs, not what it writes: left out of keys.
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset()
    # Options the engine's library has that radar refuses when the config is read, each with what instead.
    REFUSED: ClassVar[dict[str, str]] = {}

    def engine_gpus(self) -> int:
        """GPUs one engine of these options takes where there are GPUs (0: it runs on CPUs, or elsewhere)."""
        return 0

    def gpu_memory_share(self) -> float | None:
        """The share of its GPUs' memory the engine needs free to start (None: it does not check)."""
        return None


class EngineKind:
    """What every engine class declares (docs/ARCHITECTURE.md, "Adding an engine")."""

    name: str  # its name in a config (engines/registry.ENGINES)
    Options: ClassVar[type[EngineOptions]]
    LOCAL_WEIGHTS: ClassVar[bool]  # weights on this machine, whose identity a content key includes
    SMOKE_OPTIONS: ClassVar[dict[str, Any]] = {}  # `radar doctor --smoke`: a quick start on a small model
    # (module, package, extras) it needs installed, checked before it is built: a missing one is one line
    REQUIRES: ClassVar[tuple[tuple[str, str, tuple[str, ...]], ...]] = ()

    @classmethod
    def load(cls, model: str, options: Any) -> Any:
        """The engine with its model loaded (after registry.build_engine's checks)."""
        return cls(model, options)  # type: ignore[call-arg]

    def continuation_problem(self, messages: Messages) -> str | None:
        return None  # a local engine renders the turn itself (chat_text): it always continues

    @staticmethod
    def replica_env(env: dict[str, str]) -> dict[str, str]:
        """The environment of a CPU replica on a node other replicas may share (cluster.py)."""
        return env


class BatchStream(EngineKind):
    """The streams of an engine that answers a batch at a time: its batches, in order, `chunk` each."""

    # The engine's batch calls, which its streams cut `chunk` at a time.
    def generate(self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int]) -> list[list[Completion]]:
        raise NotImplementedError

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        raise NotImplementedError

    def generate_stream(
        self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int], chunk: int
    ) -> Iterator[FinishedSamples]:
        for start in range(0, len(prompts), chunk):
            outs = self.generate(prompts[start : start + chunk], sampling, seeds=seeds[start : start + chunk])
            yield list(enumerate(outs, start))

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int) -> Iterator[Finished]:
        for start in range(0, len(prompts), chunk):
            yield list(enumerate(self.score(prompts[start : start + chunk], fmt=fmt), start))

    def settings(self) -> dict:
        return {}


class StreamBatch(EngineKind):
    """The batch calls of an engine that streams (vLLM, a server, a cluster): its streams collected in
    request order, the inverse of BatchStream."""

    def generate_stream(
        self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int], chunk: int = 0
    ) -> Iterator[FinishedSamples]:
        raise NotImplementedError

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int = 0) -> Iterator[Finished]:
        raise NotImplementedError

    def generate(self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int]) -> list[list[Completion]]:
        stream = self.generate_stream(prompts, sampling, seeds=seeds)
        return in_order(stream, len(prompts))

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        return in_order(self.score_stream(prompts, fmt=fmt), len(prompts))


def prompt_floor(token_ids: list[int], block: int, seen: set[int], sequences: int = 1) -> int:
    """The tokens of one prompt that no prefix cache could serve, given the full blocks in `seen`
    (updated): a block is cacheable when a later token follows it (vLLM computes at least the last one).
    A request for n samples runs as n sequences that share full blocks only: each computes the tail
    after the last cacheable block itself."""
    cacheable = (len(token_ids) - 1) // block if token_ids else 0
    new, prefix = 0, None
    for b in range(cacheable):
        prefix = hash((prefix, tuple(token_ids[b * block : (b + 1) * block])))
        if prefix not in seen:
            seen.add(prefix)
            new += 1
    return new * block + sequences * (len(token_ids) - cacheable * block)


Answer = TypeVar("Answer")


def in_order(stream: Iterator[list[tuple[int, Answer]]], count: int) -> list[Answer]:
    """A stream's answers as one list in request order (the batch form of a streaming engine)."""
    out: list = [None] * count
    for finished in stream:
        for i, answer in finished:
            out[i] = answer
    return out
